"""Character-level language models as public PyTorch tutorials write them (makemore-style MLP and
bag-of-words, an RNN/GRU/LSTM language model as in pytorch/examples' word_language_model, and a
GPT-style transformer as in nanoGPT/minGPT), trained for a few steps on a small text. Nothing here
is tensorlab-specific. Initial weights come from a fixed NumPy seed (torch's and tensorlab's random
generators differ), so the script prints the same losses on torch and under
`python -m tensorlab.compat`.

Usage: char_models.py {mlp,bow,rnn,gru,lstm,gpt} [--steps N] [--device cpu|cuda]"""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("model", choices=["mlp", "bow", "rnn", "gru", "lstm", "gpt"])
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--device", default="cpu")
args = parser.parse_args()
device = torch.device(args.device)
torch.manual_seed(1337)

text = ("to be or not to be that is the question whether tis nobler in the mind to suffer "
        "the slings and arrows of outrageous fortune or to take arms against a sea of troubles ") * 2
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
V, T = len(chars), 8


def batches():
    xs = torch.stack([data[i:i + T] for i in range(0, len(data) - T - 1, 3)])
    ys = torch.stack([data[i + 1:i + T + 1] for i in range(0, len(data) - T - 1, 3)])
    return DataLoader(TensorDataset(xs, ys), batch_size=16, shuffle=False, drop_last=True)


class MLP(nn.Module):  # makemore's MLP: embed the context, concatenate, two linear layers
    def __init__(self, n_embd=12, hidden=48):
        super().__init__()
        self.wte = nn.Embedding(V, n_embd)
        self.mlp = nn.Sequential(nn.Linear(3 * n_embd, hidden), nn.Tanh(), nn.Linear(hidden, V))

    def forward(self, idx):
        B, L = idx.shape
        pad = torch.zeros((B, 2), dtype=torch.long, device=idx.device)
        ctx = torch.cat([pad, idx], dim=1)
        embs = [self.wte(ctx[:, k:k + L]) for k in range(3)]
        return self.mlp(torch.cat(embs, -1))


class BoW(nn.Module):  # makemore's bag of words: causal average of the embeddings
    def __init__(self, n_embd=16):
        super().__init__()
        self.wte = nn.Embedding(V, n_embd)
        self.wpe = nn.Embedding(T, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, T, T))
        self.head = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.Tanh(), nn.Linear(4 * n_embd, V))

    def forward(self, idx):
        B, L = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(L, device=idx.device))
        att = torch.zeros((B, L, L), device=idx.device)
        att = att.masked_fill(self.bias[:, :L, :L] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return self.head(att @ x + x)


class RNNLM(nn.Module):  # pytorch/examples word_language_model's RNNModel, at character level
    def __init__(self, kind, n_embd=16, hidden=32, layers=2):
        super().__init__()
        self.drop = nn.Dropout(0.0)
        self.encoder = nn.Embedding(V, n_embd)
        rnn = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[kind]
        self.rnn = rnn(n_embd, hidden, layers, batch_first=True)
        self.decoder = nn.Linear(hidden, V)

    def forward(self, idx):
        out, _ = self.rnn(self.drop(self.encoder(idx)))
        return self.decoder(self.drop(out))


class Block(nn.Module):  # nanoGPT's block
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        L = x.size(1)
        mask = torch.triu(torch.ones(L, L, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_embd=16, n_head=2, n_layer=2):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(V, n_embd), wpe=nn.Embedding(T, n_embd),
                                              h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]),
                                              ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, V, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


model = {"mlp": MLP, "bow": BoW, "gpt": GPT}.get(args.model, lambda: RNNLM(args.model))()
rng = np.random.default_rng(0)
state = model.state_dict()
init = {}
for k, v in state.items():
    if k.endswith("bias") and v.dim() == 3:  # the causal mask buffer stays as built
        init[k] = v
        continue
    scale = 0.02 if v.dim() > 1 else 0.1
    init[k] = torch.from_numpy((scale * rng.standard_normal(tuple(v.shape))).astype(np.float32))
print(model.load_state_dict(init))
model = model.to(device)
print("params:", sum(p.numel() for p in model.parameters()))

decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=3e-3, betas=(0.9, 0.95))
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))
step = 0
model.train()
while step < args.steps:
    for xb, yb in batches():
        xb, yb = xb.to(device), yb.to(device)
        logits = model(xb)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), yb.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        print(f"step {step} lr {sched.get_last_lr()[0]:.6f} loss {loss.item():.7f}")
        step += 1
        if step == args.steps:
            break
model.eval()
with torch.no_grad():
    xb, yb = next(iter(batches()))
    logits = model(xb.to(device))
    loss = F.cross_entropy(logits.view(-1, V), yb.view(-1).to(device))
    print(f"eval perplexity {math.exp(loss.item()):.4f} loss {loss.item():.7f}")
