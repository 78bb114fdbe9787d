"""Acceptance: the small models the public torch training programs build (a GPT-style character
transformer, from hand-written blocks and from TransformerEncoderLayer, and LSTM/GRU character
language models) trained for a few steps on tensorlab and on torch from identical initial weights;
the losses agree step by step at float32 tolerance (on CPU; at a tiny size on the CUDA backend)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from layers_oracle import copy_weights

TEXT = "the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. " * 3
VOCAB = sorted(set(TEXT))
DATA = np.array([VOCAB.index(c) for c in TEXT], dtype=np.int64)


def _batches(steps, batch, block):
    rng = np.random.default_rng(0)
    for _ in range(steps):
        starts = rng.integers(0, len(DATA) - block - 1, batch)
        x = np.stack([DATA[s:s + block] for s in starts])
        y = np.stack([DATA[s + 1:s + block + 1] for s in starts])
        yield x, y


def _sizes(device):
    # the CUDA backend runs on the emulation driver in CI: a tiny model keeps it fast
    return dict(d=16, heads=2, layers=2, block=8, batch=4, steps=6) if device == "cpu" else \
        dict(d=8, heads=2, layers=1, block=4, batch=2, steps=3)


def _gpt_classes(lib):
    """The same model source for both libraries (the way programs are written)."""
    nn_, F_ = lib.nn, lib.nn.functional

    class Block(nn_.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1 = nn_.LayerNorm(d)
            self.attn = nn_.MultiheadAttention(d, heads, batch_first=True)
            self.ln2 = nn_.LayerNorm(d)
            self.mlp = nn_.Sequential(nn_.Linear(d, 4 * d), nn_.GELU(), nn_.Linear(4 * d, d), nn_.Dropout(0.0))

        def forward(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class GPT(nn_.Module):
        def __init__(self, vocab, d, heads, layers, block, use_encoder_layer):
            super().__init__()
            self.tok = nn_.Embedding(vocab, d)
            self.pos = nn_.Embedding(block, d)
            if use_encoder_layer:
                layer = nn_.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                                    norm_first=True)
                self.blocks = nn_.TransformerEncoder(layer, layers)
            else:
                self.blocks = nn_.ModuleList([Block(d, heads) for _ in range(layers)])
            self.ln_f = nn_.LayerNorm(d)
            self.head = nn_.Linear(d, vocab, bias=False)
            self.use_encoder_layer = use_encoder_layer

        def forward(self, idx, targets):
            b, t = idx.shape
            pos = lib.arange(t, device=idx.device)
            x = self.tok(idx) + self.pos(pos)
            mask = lib.ones(t, t, dtype=lib.bool, device=idx.device).triu(1)  # True: may not attend
            if self.use_encoder_layer:
                x = self.blocks(x, mask=mask, is_causal=True)
            else:
                for blk in self.blocks:
                    x = blk(x, mask)
            logits = self.head(self.ln_f(x))
            return F_.cross_entropy(logits.reshape(b * t, -1), targets.reshape(-1))

    return GPT


def _train(torch, device, make, opt_name, steps, batch, block, lr):
    tm, m = make(torch), make(tl)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    copy_weights(tm, m, device)
    topt = getattr(torch.optim, opt_name)(tm.parameters(), lr=lr)
    opt = getattr(tl.optim, opt_name)(m.parameters(), lr=lr)
    ours, theirs = [], []
    for x, y in _batches(steps, batch, block):
        loss = m(tl.tensor(x, device=device), tl.tensor(y, device=device))
        tloss = tm(torch.tensor(x), torch.tensor(y))
        opt.zero_grad()
        topt.zero_grad()
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
        ours.append(loss.item())
        theirs.append(tloss.item())
    _check_learned(torch, device, m, tm, ours, theirs, block, batch)
    return ours


def _check_learned(torch, device, m, tm, ours, theirs, block, batch):
    """Losses equal step by step, and the first batch's loss went down (the models learned, so the
    comparison is not of constants)."""
    x, y = next(_batches(1, batch, block))
    ours.append(m(tl.tensor(x, device=device), tl.tensor(y, device=device)).item())
    theirs.append(tm(torch.tensor(x), torch.tensor(y)).item())
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-5)
    assert theirs[-1] < theirs[0]


@pytest.mark.parametrize("use_encoder_layer", [False, True])
@pytest.mark.parametrize("opt_name", ["AdamW", "SGD"])
def test_gpt_char_transformer_trains_like_torch(device, torch, use_encoder_layer, opt_name):
    s = _sizes(device)
    torch.manual_seed(0)

    def make(lib):
        return _gpt_classes(lib)(len(VOCAB), s["d"], s["heads"], s["layers"], s["block"], use_encoder_layer)

    _train(torch, device, make, opt_name, s["steps"], s["batch"], s["block"], 3e-3 if opt_name == "AdamW" else 0.5)


def _rnn_lm(lib, kind, vocab, d, layers):
    nn_, F_ = lib.nn, lib.nn.functional

    class CharRNN(nn_.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn_.Embedding(vocab, d)
            self.rnn = getattr(nn_, kind)(d, d, num_layers=layers, batch_first=True)
            self.drop = nn_.Dropout(0.0)
            self.out = nn_.Linear(d, vocab)

        def forward(self, idx, targets):
            h, _ = self.rnn(self.drop(self.emb(idx)))
            logits = self.out(h)
            return F_.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))

    return CharRNN()


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_rnn_char_lm_trains_like_torch(device, torch, kind):
    s = _sizes(device)
    torch.manual_seed(1)
    _train(torch, device, lambda lib: _rnn_lm(lib, kind, len(VOCAB), s["d"], s["layers"]), "Adam", s["steps"],
           s["batch"], s["block"], 1e-2)


def test_bag_of_words_mlp_lm_trains_like_torch(device, torch):
    """An MLP language model over a window of character embeddings (Bengio-style, as makemore)."""
    s = _sizes(device)
    torch.manual_seed(2)
    vocab, d = len(VOCAB), s["d"]

    def make(lib):
        nn_, F_ = lib.nn, lib.nn.functional

        class MLP(nn_.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn_.Embedding(vocab, d)
                self.net = nn_.Sequential(nn_.Flatten(), nn_.Linear(d * s["block"], 32), nn_.LayerNorm(32),
                                          nn_.Tanh(), nn_.Linear(32, vocab))

            def forward(self, idx, targets):
                return F_.cross_entropy(self.net(self.emb(idx)), targets[:, -1], label_smoothing=0.05)

        return MLP()

    losses = _train(torch, device, make, "SGD", s["steps"], s["batch"], s["block"], 0.3)
    assert all(np.isfinite(losses))


def _nanogpt(lib, vocab, d, heads, layers, block):
    """nanoGPT's structure: ModuleDict/ModuleList, F.layer_norm with an optional bias, one qkv Linear,
    F.scaled_dot_product_attention(is_causal=True), tied input/output embeddings, AdamW param groups."""
    nn_, F_ = lib.nn, lib.nn.functional

    class LayerNorm(nn_.Module):
        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn_.Parameter(lib.ones(ndim))
            self.bias = nn_.Parameter(lib.zeros(ndim)) if bias else None

        def forward(self, x):
            return F_.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)

    class Attn(nn_.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn_.Linear(d, 3 * d)
            self.c_proj = nn_.Linear(d, d)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(x).split(d, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F_.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class Block(nn_.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = LayerNorm(d, bias=False), Attn(), LayerNorm(d, bias=False)
            self.mlp = nn_.ModuleDict(dict(c_fc=nn_.Linear(d, 4 * d), gelu=nn_.GELU(), c_proj=nn_.Linear(4 * d, d)))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            m = self.mlp
            return x + m["c_proj"](m["gelu"](m["c_fc"](self.ln_2(x))))

    class GPT(nn_.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn_.ModuleDict(dict(wte=nn_.Embedding(vocab, d), wpe=nn_.Embedding(block, d),
                                                   drop=nn_.Dropout(0.0), h=nn_.ModuleList([Block()
                                                                                            for _ in range(layers)]),
                                                   ln_f=LayerNorm(d, bias=True)))
            self.lm_head = nn_.Linear(d, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying

        def forward(self, idx, targets):
            t = idx.shape[1]
            pos = lib.arange(0, t, dtype=lib.long, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for blk in self.transformer.h:
                x = blk(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F_.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    return GPT()


def test_nanogpt_style_trains_like_torch(device, torch):
    s = _sizes(device)
    torch.manual_seed(3)
    make = lambda lib: _nanogpt(lib, len(VOCAB), s["d"], s["heads"], s["layers"], s["block"])  # noqa: E731
    tm, m = make(torch), make(tl)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    copy_weights(tm, m, device)
    assert m.transformer.wte.weight is m.lm_head.weight

    def groups(model):
        params = [p for p in model.parameters() if p.requires_grad]
        return [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]

    topt = torch.optim.AdamW(groups(tm), lr=3e-3, betas=(0.9, 0.95))
    opt = tl.optim.AdamW(groups(m), lr=3e-3, betas=(0.9, 0.95))
    ours, theirs = [], []
    for x, y in _batches(s["steps"], s["batch"], s["block"]):
        loss, tloss = m(tl.tensor(x, device=device), tl.tensor(y, device=device)), tm(torch.tensor(x), torch.tensor(y))
        for o, l_ in ((opt, loss), (topt, tloss)):
            o.zero_grad(set_to_none=True)
            l_.backward()
        tl.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        torch.nn.utils.clip_grad_norm_(tm.parameters(), 1.0)
        opt.step()
        topt.step()
        ours.append(loss.item())
        theirs.append(tloss.item())
    _check_learned(torch, device, m, tm, ours, theirs, s["block"], s["batch"])
