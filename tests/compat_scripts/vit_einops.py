"""A Vision Transformer as lucidrains/vit-pytorch's vit.py writes it with einops: patch embedding by
the einops layer Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)') + LayerNorm + Linear + LayerNorm,
a cls token expanded with einops.repeat, learned position embeddings, pre-norm Attention blocks whose
heads are split and merged with einops.rearrange, GELU FeedForward blocks, cls pooling and an MLP head;
cross-entropy with Adam, as pytorch/examples' vision_transformer/ trains it. The images are 16x16
synthetic three-class patterns; all weights and data come from a fixed NumPy seed (torch's and
tensorlab's random generators differ), so the losses print the same on torch and under
`python -m tensorlab.compat` (where einops finds `torch` in sys.modules and takes tensorlab's tensors
for torch's). The end exercises the rest of einops' torch backend: reduce, pack/unpack, einsum and the
Reduce layer."""
import argparse

import numpy as np
import torch
from einops import rearrange, repeat
from einops.layers.torch import Rearrange
from torch import nn

from _npinit import init_from_numpy

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5)
parser.add_argument("--device", default="cpu")
args = parser.parse_args()
device = torch.device(args.device)
rng = np.random.default_rng(0)


def pair(t):
    return t if isinstance(t, tuple) else (t, t)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, dropout=0.):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, hidden_dim), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(hidden_dim, dim), nn.Dropout(dropout))

    def forward(self, x):
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64, dropout=0.):
        super().__init__()
        inner_dim = dim_head * heads
        project_out = not (heads == 1 and dim_head == dim)
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.norm = nn.LayerNorm(dim)
        self.attend = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(dropout)
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout)) if project_out else nn.Identity()

    def forward(self, x):
        x = self.norm(x)
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), qkv)
        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        attn = self.dropout(self.attend(dots))
        out = torch.matmul(attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.to_out(out)


class Transformer(nn.Module):
    def __init__(self, dim, depth, heads, dim_head, mlp_dim, dropout=0.):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([Attention(dim, heads=heads, dim_head=dim_head, dropout=dropout),
                                              FeedForward(dim, mlp_dim, dropout=dropout)]))

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return self.norm(x)


class ViT(nn.Module):
    def __init__(self, *, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, pool='cls', channels=3,
                 dim_head=64, dropout=0., emb_dropout=0.):
        super().__init__()
        image_height, image_width = pair(image_size)
        patch_height, patch_width = pair(patch_size)
        assert image_height % patch_height == 0 and image_width % patch_width == 0
        num_patches = (image_height // patch_height) * (image_width // patch_width)
        patch_dim = channels * patch_height * patch_width
        self.to_patch_embedding = nn.Sequential(
            Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=patch_height, p2=patch_width),
            nn.LayerNorm(patch_dim),
            nn.Linear(patch_dim, dim),
            nn.LayerNorm(dim),
        )
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.dropout = nn.Dropout(emb_dropout)
        self.transformer = Transformer(dim, depth, heads, dim_head, mlp_dim, dropout)
        self.pool = pool
        self.to_latent = nn.Identity()
        self.mlp_head = nn.Linear(dim, num_classes)

    def forward(self, img):
        x = self.to_patch_embedding(img)
        b, n, _ = x.shape
        cls_tokens = repeat(self.cls_token, '1 1 d -> b 1 d', b=b)
        x = torch.cat((cls_tokens, x), dim=1)
        x += self.pos_embedding[:, :(n + 1)]
        x = self.dropout(x)
        x = self.transformer(x)
        x = x.mean(dim=1) if self.pool == 'mean' else x[:, 0]
        return self.mlp_head(self.to_latent(x))


model = ViT(image_size=16, patch_size=4, num_classes=3, dim=32, depth=2, heads=4, dim_head=8, mlp_dim=64)
init_from_numpy(model, rng)
model = model.to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
yy, xx = np.mgrid[0:16, 0:16]
patterns = np.stack([np.sin(yy / 2.0), np.sin(xx / 2.0), np.sin((xx + yy) / 3.0)])[:, None].repeat(3, 1)
for step in range(args.steps):
    labels = rng.integers(0, 3, 16)
    images = patterns[labels] + 0.5 * rng.standard_normal((16, 3, 16, 16))
    data = torch.from_numpy(images.astype(np.float32)).to(device)
    label = torch.from_numpy(labels).to(device)
    output = model(data)
    loss = criterion(output, label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    acc = (output.argmax(dim=1) == label).float().mean()
    print(f"step {step} acc {acc.item():.4f} loss {loss.item():.6f}")
patches = Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=4, p2=4)(torch.zeros(2, 3, 16, 16))
print("patches", tuple(patches.shape), "einops backend:", type(model.cls_token).__name__)
# the rest of einops' torch backend on the last batch: reduce, pack/unpack, einsum, the Reduce layer
from einops import einsum, pack, reduce, unpack
from einops.layers.torch import Reduce

with torch.no_grad():
    pooled = reduce(data, 'b c (h p1) (w p2) -> b c h w', 'max', p1=2, p2=2)
    packed, ps = pack([pooled.flatten(1), output], 'b *')
    first, second = unpack(packed, ps, 'b *')
    gram = einsum(first, first, 'b d, c d -> b c')
    head_mean = Reduce('b n d -> b d', 'mean')(model.to_patch_embedding(data))
print("einops shapes", tuple(pooled.shape), tuple(packed.shape), torch.equal(second, output))
print(f"einops reduce/pack/einsum loss {gram.mean().item() + head_mean.abs().mean().item():.6f}")
