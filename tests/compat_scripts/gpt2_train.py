"""A GPT-2 trainer as karpathy/nanoGPT's model.py and train.py write it: GPTConfig dataclass;
CausalSelfAttention (fused c_attn projection, F.scaled_dot_product_attention(is_causal=True), c_proj),
MLP (c_fc, GELU(approximate='tanh'), c_proj), pre-LayerNorm Blocks, transformer = ModuleDict(wte, wpe,
drop, h, ln_f), lm_head weight-tied to wte, N(0, 0.02) init with c_proj scaled by 1/sqrt(2 n_layer);
configure_optimizers' AdamW groups (weight decay on >= 2-d parameters only, betas (0.9, 0.95));
get_lr's linear warmup then cosine decay to min_lr, written into every param group; gradient
accumulation over micro-steps with loss / gradient_accumulation_steps; clip_grad_norm_(1.0);
estimate_loss under torch.no_grad() and model.eval(); checkpoints with torch.save({'model', 'optimizer',
'model_args', 'iter_num', 'best_val_loss', 'config'}) and init_from='resume' with torch.load, stripping
the '_orig_mod.' prefix. Tiny sizes; the text batches and the initial weights come from a fixed NumPy
seed (torch's and tensorlab's random generators differ), so the losses print the same on torch and
under `python -m tensorlab.compat`; a checkpoint written by either library resumes on the other."""
import argparse
import inspect
import math
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--max_iters", type=int, default=6)
parser.add_argument("--device", default="cpu")
parser.add_argument("--save", default="")
parser.add_argument("--resume", default="")
args = parser.parse_args()


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 40
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 16
    dropout: float = 0.0
    bias: bool = True


class LayerNorm(nn.Module):
    """LayerNorm but with an optional bias."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config, rng):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.rng = rng
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                with torch.no_grad():
                    p.copy_(self._normal(p.shape, 0.02 / math.sqrt(2 * config.n_layer)))

    def _normal(self, shape, std):  # torch.nn.init.normal_, from NumPy's generator
        return torch.from_numpy((std * self.rng.standard_normal(tuple(shape))).astype(np.float32))

    def _init_weights(self, module):
        with torch.no_grad():
            if isinstance(module, nn.Linear):
                module.weight.copy_(self._normal(module.weight.shape, 0.02))
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                module.weight.copy_(self._normal(module.weight.shape, 0.02))

    def get_num_params(self, non_embedding=True):
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return n_params

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [{'params': decay_params, 'weight_decay': weight_decay},
                        {'params': nodecay_params, 'weight_decay': 0.0}]
        print(f"num decayed parameter tensors: {len(decay_params)}, with {sum(p.numel() for p in decay_params):,} parameters")
        print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {sum(p.numel() for p in nodecay_params):,} parameters")
        fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == 'cuda'
        extra_args = dict(fused=True) if use_fused else dict()
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)


# train.py's configuration, scaled down
gradient_accumulation_steps, batch_size, eval_iters = 2, 4, 2
learning_rate, weight_decay, beta1, beta2, grad_clip = 6e-3, 1e-1, 0.9, 0.95, 1.0
warmup_iters, lr_decay_iters, min_lr = 3, 10, 6e-4
device = args.device
device_type = 'cuda' if 'cuda' in device else 'cpu'
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=torch.float32)
rng = np.random.default_rng(1 if args.resume else 0)
text = np.random.default_rng(7).integers(0, 40, 2000)
text[1::3] = (text[::3][:len(text[1::3])] * 7 + 3) % 40  # some structure to learn
train_data, val_data = text[:1600], text[1600:]
config = GPTConfig()


def get_batch(split):
    data = train_data if split == 'train' else val_data
    ix = rng.integers(0, len(data) - config.block_size, batch_size)
    x = torch.stack([torch.from_numpy(data[i:i + config.block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + config.block_size].astype(np.int64)) for i in ix])
    return x.to(device), y.to(device)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ['train', 'val']:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


iter_num, best_val_loss = 0, 1e9
model = GPT(config, rng)
if args.resume:
    checkpoint = torch.load(args.resume, map_location=device)
    for k in ['n_layer', 'n_head', 'n_embd', 'block_size', 'bias', 'vocab_size']:
        assert getattr(config, k) == checkpoint['model_args'][k]
    state_dict = checkpoint['model']
    unwanted_prefix = '_orig_mod.'
    for k, v in list(state_dict.items()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
    print(model.load_state_dict(state_dict))
    iter_num, best_val_loss = checkpoint['iter_num'], checkpoint['best_val_loss']
    print(f"resuming from iter {iter_num}, best val loss {best_val_loss:.4f}")
print(f"number of parameters: {model.get_num_params():,}")
model.to(device)
optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)
if args.resume:
    optimizer.load_state_dict(checkpoint['optimizer'])
    checkpoint = None

X, Y = get_batch('train')
end = iter_num + args.max_iters
while True:
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group['lr'] = lr
    if iter_num % 3 == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.6f}")
        print(f"step {iter_num}: val loss {losses['val']:.6f}")
        best_val_loss = min(best_val_loss, losses['val'].item())
    for micro_step in range(gradient_accumulation_steps):
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        X, Y = get_batch('train')
        loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    lossf = loss.item() * gradient_accumulation_steps
    print(f"iter {iter_num}: lr {lr:.6f} grad norm loss {norm.item():.6f}")
    print(f"iter {iter_num}: loss {lossf:.6f}")
    iter_num += 1
    if iter_num >= end:
        break
if args.save:
    checkpoint = {'model': model.state_dict(), 'optimizer': optimizer.state_dict(),
                  'model_args': {k: v for k, v in asdict(config).items() if k != 'dropout'},
                  'iter_num': iter_num, 'best_val_loss': best_val_loss, 'config': asdict(config)}
    torch.save(checkpoint, args.save)
    print(f"saving checkpoint with {len(checkpoint['model'])} tensors")
model.eval()
with torch.no_grad():
    idx = torch.zeros((1, 1), dtype=torch.long, device=device)
    for _ in range(5):
        logits, _ = model(idx[:, -config.block_size:])
        idx = torch.cat((idx, logits[:, -1, :].argmax(dim=-1, keepdim=True)), dim=1)
print("generated", idx.shape[1], "tokens")
