"""Training-step benchmarks: small models as public PyTorch programs write them, run on tensorlab and
on torch from the same initial weights and data, timed per optimizer step.

Each model is written once against a library namespace `lib` (torch, or tensorlab, whose names
mirror torch's), as the compat programs in tests/compat_scripts/ are: the MLP of issue 20
(128x256 -> 512 -> 10, SGD), a nanoGPT-style transformer (char_models.py's Block: LayerNorm,
nn.MultiheadAttention with a causal mask, GELU MLP, tied embeddings; AdamW), pytorch/examples'
MNIST convnet (mnist_convnet.py's Net: two convolutions, max pooling, two linear layers,
log_softmax + nll_loss; Adadelta), word_language_model's LSTM language model (nn.LSTM,
gradient clipping, SGD), a small torchvision-style ResNet (BasicBlocks with BatchNorm, SGD with
momentum), a ViT (vit_einops.py's, Adam), the nn.Transformer translation tutorial's seq2seq
model (transformer_translation.py's: padding masks, a causal target mask; Adam) and
pytorch/examples' DCGAN (dcgan.py's: a discriminator and a generator step, BCELoss, two Adams). Initial weights come from NumPy (one generator per parameter name, so
both libraries get the same values whatever order they list parameters in), so the first step's
loss must agree between the two: `check_first_loss` compares it before anything is timed.

`measure` times each model's step on both libraries in interleaved rounds, at one thread and at
the default thread count (tl.set_num_threads where tensorlab has it, torch.set_num_threads)."""
from __future__ import annotations

import math
import statistics
import time
import zlib

import numpy as np

import tensorlab as tl

from . import threads as thread_counts
from .libs import torch_module

# per mode: batch sizes (the models keep their shapes); "tiny" is a smoke run
BATCH = {"tiny": {"mlp": 16, "gpt": 2, "convnet": 4, "lstm": 2, "resnet": 2, "vit": 2, "seq2seq": 2, "dcgan": 2,
                  "small_mlp": 8, "small_mlp_graphed": 8},
         "quick": {"mlp": 128, "gpt": 16, "convnet": 32, "lstm": 16, "resnet": 16, "vit": 16, "seq2seq": 16,
                   "dcgan": 16, "small_mlp": 16, "small_mlp_graphed": 16},
         "full": {"mlp": 128, "gpt": 16, "convnet": 64, "lstm": 16, "resnet": 32, "vit": 32, "seq2seq": 32,
                  "dcgan": 32, "small_mlp": 16, "small_mlp_graphed": 16}}
VOCAB, CONTEXT = 65, 32


class Model:
    """One benchmark model: build(lib, batch) -> (module, optimizer, step) where step() runs one
    training step and returns the loss tensor."""

    def __init__(self, name, title, build, devices=("cpu", "cuda")):
        self.name, self.title, self.build = name, title, build
        self.devices = devices  # the device types it runs on (CUDA graphs: cuda only)


def _init(module, lib, scale, tied=()):
    """Load weights drawn from NumPy (a generator seeded by each parameter's name) into `module`.
    `tied`: (name, same-as name) pairs whose tensors are one parameter (weight tying)."""
    state = module.state_dict()
    init = {}
    for k, v in state.items():
        rng = np.random.default_rng(zlib.crc32(k.encode()))
        s = scale(k, v) if callable(scale) else scale
        if v.dtype == lib.float32:
            init[k] = lib.from_numpy((s * rng.standard_normal(tuple(v.shape))).astype(np.float32))
        else:
            init[k] = v
    for name, same in tied:
        init[name] = init[same]
    module.load_state_dict(init)


def _rng(name):
    return np.random.default_rng(zlib.crc32(("data:" + name).encode()))


def _to(lib, array, device):
    return lib.from_numpy(array).to(device)


def _image_classifier(lib, model, name, batch, size, device, make_opt):
    """(model, optimizer, step) of a 10-class image classifier on `device`: a batch of 3 x size x size
    images and labels drawn from the model's data generator, cross-entropy, the optimizer `make_opt`
    builds from the parameters."""
    model = model.to(device)
    rng = _rng(name)
    x = _to(lib, rng.standard_normal((batch, 3, size, size)).astype(np.float32), device)
    y = _to(lib, rng.integers(0, 10, batch), device)
    opt = make_opt(model.parameters())
    F = lib.nn.functional

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, opt, step


# -- the MLP of issue 20 ---------------------------------------------------------------------------
def build_mlp(lib, batch, device="cpu"):
    nn, F = lib.nn, lib.nn.functional
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    _init(model, lib, lambda k, v: 0.05 if v.dim() > 1 else 0.1)
    model = model.to(device)
    rng = _rng("mlp")
    x = _to(lib, rng.standard_normal((batch, 256)).astype(np.float32), device)
    y = _to(lib, rng.integers(0, 10, batch), device)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, opt, step


# -- a launch-bound step: a small MLP, eager and replayed from CUDA graphs --------------------------
def _small_mlp(lib, batch, device, graphed):
    nn, F = lib.nn, lib.nn.functional
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    _init(model, lib, lambda k, v: 0.1)
    model = model.to(device)
    rng = _rng("small_mlp")
    x = _to(lib, rng.standard_normal((batch, 32)).astype(np.float32), device)
    y = _to(lib, rng.integers(0, 10, batch), device)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    # the graphed forward and backward: one graph launch each instead of one launch per kernel (the
    # optimizer step runs eagerly, as in torch's make_graphed_callables recipe)
    net = lib.cuda.make_graphed_callables(model, (x,)) if graphed else model

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, opt, step


def build_small_mlp(lib, batch, device="cpu"):
    return _small_mlp(lib, batch, device, graphed=False)


def build_small_mlp_graphed(lib, batch, device="cpu"):
    if device == "cpu":
        raise RuntimeError("CUDA graphs need a CUDA device")
    return _small_mlp(lib, batch, device, graphed=True)


# -- a nanoGPT-style transformer (tests/compat_scripts/char_models.py's GPT) -----------------------
def build_gpt(lib, batch, device="cpu", n_embd=64, n_head=4, n_layer=2):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

        def forward(self, x, mask):
            h = self.ln_1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, n_embd)
            self.wpe = nn.Embedding(CONTEXT, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, VOCAB, bias=False)
            self.wte.weight = self.lm_head.weight  # weight tying

        def forward(self, idx):
            L = idx.size(1)
            pos = lib.arange(0, L, dtype=lib.long, device=idx.device)
            mask = lib.triu(lib.ones(L, L, dtype=lib.bool, device=idx.device), diagonal=1)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x, mask)
            return self.lm_head(self.ln_f(x))

    model = GPT()
    _init(model, lib, lambda k, v: 0.02 if v.dim() > 1 else 0.1, tied=[("wte.weight", "lm_head.weight")])
    model = model.to(device)
    rng = _rng("gpt")
    data = rng.integers(0, VOCAB, (batch, CONTEXT + 1))
    x, y = _to(lib, data[:, :-1].copy(), device), _to(lib, data[:, 1:].copy(), device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = lib.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=3e-3, betas=(0.9, 0.95))

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return model, opt, step


# -- pytorch/examples' MNIST convnet (tests/compat_scripts/mnist_convnet.py's Net) ------------------
def build_convnet(lib, batch, device="cpu", size=28):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3, 1)
            self.conv2 = nn.Conv2d(8, 16, 3, 1)
            side = (size - 4) // 2
            self.fc1 = nn.Linear(16 * side * side, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.max_pool2d(x, 2)
            x = lib.flatten(x, 1)
            x = F.relu(self.fc1(x))
            return F.log_softmax(self.fc2(x), dim=1)

    model = Net()
    _init(model, lib, 0.1)
    model = model.to(device)
    rng = _rng("convnet")
    x = _to(lib, rng.random((batch, 1, size, size)).astype(np.float32), device)
    y = _to(lib, rng.integers(0, 10, batch), device)
    opt = lib.optim.Adadelta(model.parameters(), lr=1.0)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, opt, step


# -- word_language_model's LSTM language model (char_models.py's RNNLM("lstm")) ---------------------
def build_lstm(lib, batch, device="cpu", n_embd=64, hidden=128, layers=2):
    nn, F = lib.nn, lib.nn.functional

    class RNNLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(VOCAB, n_embd)
            self.rnn = nn.LSTM(n_embd, hidden, layers, batch_first=True)
            self.decoder = nn.Linear(hidden, VOCAB)

        def forward(self, idx):
            out, _ = self.rnn(self.encoder(idx))
            return self.decoder(out)

    model = RNNLM()
    _init(model, lib, 0.1)
    model = model.to(device)
    rng = _rng("lstm")
    data = rng.integers(0, VOCAB, (batch, CONTEXT + 1))
    x, y = _to(lib, data[:, :-1].copy(), device), _to(lib, data[:, 1:].copy(), device)
    opt = lib.optim.SGD(model.parameters(), lr=1.0)

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        return loss
    return model, opt, step


# -- a small ResNet (torchvision's BasicBlock: conv3x3 + BatchNorm2d + ReLU, a strided 1x1 downsample) ----
def build_resnet(lib, batch, device="cpu", size=16, width=8):
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                                nn.BatchNorm2d(planes))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return self.relu(out)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = nn.Sequential(BasicBlock(width, width), BasicBlock(width, width))
            self.layer2 = nn.Sequential(BasicBlock(width, 2 * width, 2), BasicBlock(2 * width, 2 * width))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(2 * width, 10)

        def forward(self, x):
            x = self.relu(self.bn1(self.conv1(x)))
            x = self.layer2(self.layer1(x))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    model = ResNet()
    _init(model, lib, lambda k, v: 0.2 if v.dim() > 1 else (1.0 if k.endswith("running_var") else 0.1))
    return _image_classifier(lib, model, "resnet", batch, size, device,
                             lambda ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=5e-4))


# -- a ViT (tests/compat_scripts/vit_einops.py's, the einops rearranges written as reshape/permute) -----
def build_vit(lib, batch, device="cpu", size=16, patch=4, dim=32, depth=2, heads=4, dim_head=8, mlp_dim=64):
    nn = lib.nn
    inner = heads * dim_head
    grid = size // patch

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.attend = nn.Softmax(dim=-1)
            self.to_qkv = nn.Linear(dim, 3 * inner, bias=False)
            self.to_out = nn.Linear(inner, dim)

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = (t.reshape(b, n, heads, dim_head).transpose(1, 2) for t in self.to_qkv(self.norm(x)).chunk(3, -1))
            attn = self.attend(lib.matmul(q, k.transpose(-1, -2)) * dim_head ** -0.5)
            return self.to_out(lib.matmul(attn, v).transpose(1, 2).reshape(b, n, inner))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            patch_dim = 3 * patch * patch
            self.to_patch_embedding = nn.Sequential(nn.LayerNorm(patch_dim), nn.Linear(patch_dim, dim),
                                                    nn.LayerNorm(dim))
            self.pos_embedding = nn.Parameter(lib.zeros(1, grid * grid + 1, dim))
            self.cls_token = nn.Parameter(lib.zeros(1, 1, dim))
            self.layers = nn.ModuleList([nn.ModuleList([
                Attention(), nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim))])
                for _ in range(depth)])
            self.norm = nn.LayerNorm(dim)
            self.mlp_head = nn.Linear(dim, 10)

        def forward(self, img):
            b = img.shape[0]
            # 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)'
            x = img.reshape(b, 3, grid, patch, grid, patch).permute(0, 2, 4, 3, 5, 1).reshape(b, grid * grid, -1)
            x = self.to_patch_embedding(x)
            x = lib.cat((self.cls_token.expand(b, -1, -1), x), dim=1)
            x = x + self.pos_embedding
            for attn, ff in self.layers:
                x = attn(x) + x
                x = ff(x) + x
            return self.mlp_head(self.norm(x)[:, 0])

    model = ViT()
    _init(model, lib, lambda k, v: 0.1 if v.dim() > 1 else (0.02 if k.endswith("bias") else 0.1))
    return _image_classifier(lib, model, "vit", batch, size, device, lambda ps: lib.optim.Adam(ps, lr=1e-3))


# -- the nn.Transformer translation tutorial (tests/compat_scripts/transformer_translation.py) ----------
def build_seq2seq(lib, batch, device="cpu", emb=32, nhead=4, layers=2, ff=64, vocab=16, src_len=10, tgt_len=9):
    nn = lib.nn
    pad = 1

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.Transformer(d_model=emb, nhead=nhead, num_encoder_layers=layers,
                                              num_decoder_layers=layers, dim_feedforward=ff, dropout=0.0)
            self.generator = nn.Linear(emb, vocab)
            self.src_tok_emb = nn.Embedding(vocab, emb)
            self.tgt_tok_emb = nn.Embedding(vocab, emb)
            self.register_buffer("pos_embedding", lib.from_numpy(_positions(64, emb)).unsqueeze(-2))

        def embed(self, table, tokens):
            return table(tokens) * math.sqrt(emb) + self.pos_embedding[:tokens.size(0), :]

        def forward(self, src, tgt, tgt_mask, src_padding_mask, tgt_padding_mask):
            out = self.transformer(self.embed(self.src_tok_emb, src), self.embed(self.tgt_tok_emb, tgt),
                                   None, tgt_mask, None, src_padding_mask, tgt_padding_mask, src_padding_mask)
            return self.generator(out)

    model = Seq2Seq()
    _init(model, lib, lambda k, v: 0.1 if v.dim() > 1 else 0.02)
    model = model.to(device)
    rng = _rng("seq2seq")
    # sequence-first token batches padded at the end, as pad_sequence makes them
    src = rng.integers(4, vocab, (src_len, batch))
    tgt = rng.integers(4, vocab, (tgt_len + 1, batch))
    for j in range(batch):
        src[src_len - j % 3:, j] = pad
        tgt[tgt_len + 1 - j % 2:, j] = pad
    src, tgt = _to(lib, src, device), _to(lib, tgt, device)
    tgt_in, tgt_out = tgt[:-1, :], tgt[1:, :]
    loss_fn = nn.CrossEntropyLoss(ignore_index=pad)
    opt = lib.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98), eps=1e-9)

    def step():
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_len, device=src.device)
        src_padding_mask = (src == pad).transpose(0, 1)
        tgt_padding_mask = (tgt_in == pad).transpose(0, 1)
        logits = model(src, tgt_in, tgt_mask, src_padding_mask, tgt_padding_mask)
        opt.zero_grad()
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        opt.step()
        return loss
    return model, opt, step


def _positions(maxlen, emb):
    """The tutorial's sinusoidal PositionalEncoding table, (maxlen, emb) float32."""
    den = np.exp(-np.arange(0, emb, 2) * math.log(10000) / emb)
    pos = np.arange(maxlen)[:, None]
    table = np.zeros((maxlen, emb))
    table[:, 0::2], table[:, 1::2] = np.sin(pos * den), np.cos(pos * den)
    return table.astype(np.float32)


# -- pytorch/examples' DCGAN (tests/compat_scripts/dcgan.py): one discriminator and one generator step ---
def build_dcgan(lib, batch, device="cpu", nz=8, ngf=8, ndf=8):
    nn = lib.nn

    class GAN(nn.Module):  # one module holding both networks, so _init and .to() see every parameter
        def __init__(self):
            super().__init__()
            self.G = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, 1, 4, 2, 1, bias=False), nn.Tanh())
            self.D = nn.Sequential(
                nn.Conv2d(1, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    gan = GAN()
    _init(gan, lib, lambda k, v: 0.02 if v.dim() > 1 else (1.0 if k.endswith("running_var") else 0.02))
    gan = gan.to(device)
    netG, netD = gan.G, gan.D
    rng = _rng("dcgan")
    real = _to(lib, np.tanh(rng.standard_normal((batch, 1, 16, 16))).astype(np.float32), device)
    noise = _to(lib, rng.standard_normal((batch, nz, 1, 1)).astype(np.float32), device)
    criterion = nn.BCELoss()
    optD = lib.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optG = lib.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))

    def step():
        netD.zero_grad()
        label = lib.full((batch,), 1.0, dtype=real.dtype, device=real.device)
        err_real = criterion(netD(real).view(-1), label)
        err_real.backward()
        fake = netG(noise)
        label.fill_(0.0)
        err_fake = criterion(netD(fake.detach()).view(-1), label)
        err_fake.backward()
        optD.step()
        netG.zero_grad()
        label.fill_(1.0)
        err_g = criterion(netD(fake).view(-1), label)
        err_g.backward()
        optG.step()
        return err_real + err_fake + err_g
    return gan, optD, step


MODELS = {m.name: m for m in [
    Model("mlp", "MLP 128x256 -> 512 -> 10, SGD", build_mlp),
    Model("gpt", "GPT 2 layers, d=64, 4 heads, context 32, vocab 65, AdamW", build_gpt),
    Model("convnet", "MNIST convnet 28x28 (conv 8, conv 16, fc 32), Adadelta", build_convnet),
    Model("lstm", "LSTM LM 2 layers, 64 -> 128, context 32, vocab 65, SGD + clip", build_lstm),
    Model("resnet", "ResNet 16x16x3 (stem + 2 stages of 2 BasicBlocks, width 8), SGD momentum", build_resnet),
    Model("vit", "ViT 16x16x3, patch 4, dim 32, 2 layers, 4 heads, Adam", build_vit),
    Model("seq2seq", "nn.Transformer seq2seq d=32, 4 heads, 2+2 layers, src 10 / tgt 9, vocab 16, Adam", build_seq2seq),
    Model("dcgan", "DCGAN 16x16 (nz 8, 8 features), a D and a G step, BCE, Adam", build_dcgan),
    Model("small_mlp", "launch-bound MLP 32 -> 64 -> 64 -> 10, SGD, eager", build_small_mlp),
    Model("small_mlp_graphed", "launch-bound MLP 32 -> 64 -> 64 -> 10, SGD, CUDA graphs", build_small_mlp_graphed,
          devices=("cuda",)),
]}


def title(name, mode):
    return f"{MODELS[name].title}, batch {BATCH[mode][name]}"


def libraries(device="cpu"):
    """{name: namespace} of the libraries that can train on `device`: tensorlab, and torch when
    installed (with CUDA, for a CUDA device)."""
    out = {"tensorlab": tl}
    torch = torch_module()
    if torch is not None and (device == "cpu" or _torch_cuda(torch)):
        out["torch"] = torch
    return out


def _torch_cuda(torch):
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def _torch_device(device):
    return device if device == "cpu" else f"cuda:{tl.device(device).index or 0}"


def build(name, lib_name, mode="quick", device="cpu"):
    """(module, optimizer, step) of model `name` on one library."""
    lib = libraries(device)[lib_name]
    return MODELS[name].build(lib, BATCH[mode][name], device if lib is tl else _torch_device(device))


def first_losses(name, mode="quick", device="cpu", steps=2):
    """{library: [loss of step 1, ..., step `steps`]} from the same initial weights and data. On a
    CUDA device also "cpu": the losses of torch on the CPU (tensorlab's where torch is missing), the
    oracle when torch has no CUDA here."""
    out = {}
    for lib_name in libraries(device):
        _, _, step = build(name, lib_name, mode, device)
        out[lib_name] = [float(step().item()) for _ in range(steps)]
    if device != "cpu":
        cpu = first_losses(name, mode, "cpu", steps)
        out["cpu"] = cpu.get("torch", cpu["tensorlab"])
    return out


def check_first_loss(losses, rtol=1e-4):
    """AssertionError unless every library's first-step loss matches tensorlab's within rtol."""
    ours = losses["tensorlab"][0]
    if not math.isfinite(ours):
        raise AssertionError(f"tensorlab's first-step loss is {ours}")
    for name, values in losses.items():
        if name != "tensorlab" and not math.isclose(values[0], ours, rel_tol=rtol, abs_tol=1e-6):
            raise AssertionError(f"first-step loss: tensorlab {ours!r}, {name} {values[0]!r} (rtol {rtol})")


def _sync(device, lib):
    if device == "cpu":
        return
    if lib is tl:
        tl.cuda.synchronize(device)
    else:
        lib.cuda.synchronize()


def measure(names=None, mode="quick", device="cpu", rounds=None, steps=None, progress=None):
    """Records {kind: "model", model, title, device, impl, thread_setting, threads, median_s, min_s,
    times_s, first_loss, losses} per (model, library, thread setting); on tensorlab's records
    `ratios` = {torch: torch's median / tensorlab's} and `loss_check` (None when the first-step
    losses agree, else the mismatch; a mismatching model is not timed)."""
    rounds = rounds or {"tiny": 2, "quick": 4, "full": 9}[mode]
    steps = steps or {"tiny": 1, "quick": 2, "full": 10}[mode]
    libs = libraries(device)
    torch = libs.get("torch")
    default = max(thread_counts.tensorlab_threads(), torch.get_num_threads() if torch is not None else 1)
    variants = [("1", 1), ("default", None)] if device == "cpu" and default > 1 else [("default", None)]
    out = []
    for name in names or list(MODELS):
        if device.split(":")[0] not in MODELS[name].devices:
            continue
        if progress:
            progress(f"{device} model {name}: first-step losses")
        try:
            losses = first_losses(name, mode, device)
            check_first_loss(losses)
            problem = None
        except AssertionError as e:
            problem = str(e)
            losses = locals().get("losses") or {}
        except Exception as e:  # a model tensorlab cannot run yet is reported, not fatal
            problem, losses = f"{type(e).__name__}: {e}".splitlines()[0][:200], {}
        for label, count in variants:
            with thread_counts.using(count, torch):
                group = []
                runners = {}
                for lib_name, lib in libs.items():
                    rec = {"kind": "model", "model": name, "title": title(name, mode), "device": device,
                           "emulated": device != "cpu" and not tl.cuda.is_available(),
                           "impl": lib_name, "thread_setting": label,
                           "threads": (thread_counts.tensorlab_threads() if lib is tl else lib.get_num_threads())
                           if device == "cpu" else None,
                           "losses": losses.get(lib_name), "error": problem}
                    group.append(rec)
                    if problem is None:
                        _, _, step = build(name, lib_name, mode, device)
                        step()  # warm-up
                        _sync(device, lib)
                        runners[lib_name] = (step, lib)
                if progress:
                    progress(f"{device} model {name} ({label} thread{'s' if label != '1' else ''})")
                times = {k: [] for k in runners}
                order = list(runners)
                for r in range(rounds):
                    for lib_name in (order if r % 2 == 0 else order[::-1]):
                        step, lib = runners[lib_name]
                        t0 = time.perf_counter()
                        for _ in range(steps):
                            step()
                        _sync(device, lib)
                        times[lib_name].append((time.perf_counter() - t0) / steps)
                for rec in group:
                    ts = times.get(rec["impl"])
                    if ts:
                        rec.update(times_s=ts, median_s=statistics.median(ts), min_s=min(ts), steps=steps,
                                   rounds=rounds)
                ours = next((r for r in group if r["impl"] == "tensorlab" and "median_s" in r), None)
                if ours is not None:
                    ours["ratios"] = {r["impl"]: r["median_s"] / ours["median_s"] for r in group
                                      if r is not ours and "median_s" in r}
                out += group
    return out
