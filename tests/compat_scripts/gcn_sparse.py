"""A two-layer graph convolutional network (Kipf & Welling) with learned node embeddings, as PyTorch users
write it: the symmetric-normalized adjacency as a sparse COO tensor (torch.sparse_coo_tensor, coalesce),
torch.sparse.mm for propagation, nn.Embedding(sparse=True) trained by SparseAdam and the dense weights by
Adam. The graph, features and weights come from a fixed NumPy seed, so the script prints the same losses
on torch and under `python -m tensorlab.compat`."""
import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F

rng = np.random.default_rng(0)
n, feats, hidden, classes = 40, 8, 16, 3
a = (rng.random((n, n)) < 0.1).astype(np.float32)
a = np.maximum(a, a.T)
np.fill_diagonal(a, 1.0)
rows, cols = np.nonzero(a)
deg = a.sum(1)
vals = (1.0 / np.sqrt(deg[rows] * deg[cols])).astype(np.float32)
adj = torch.sparse_coo_tensor(torch.tensor(np.stack([rows, cols])), torch.tensor(vals), (n, n)).coalesce()
x = torch.tensor(rng.standard_normal((n, feats)).astype(np.float32))
y = torch.tensor(rng.integers(0, classes, n))


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(n, 4, sparse=True)
        self.w1 = nn.Parameter(torch.tensor(rng.standard_normal((feats + 4, hidden)).astype(np.float32) * 0.3))
        self.w2 = nn.Parameter(torch.tensor(rng.standard_normal((hidden, classes)).astype(np.float32) * 0.3))
        with torch.no_grad():
            self.emb.weight.copy_(torch.tensor(rng.standard_normal((n, 4)).astype(np.float32)))

    def forward(self, adj, x, ids):
        h = torch.cat([x, self.emb(ids)], 1)
        h = F.relu(torch.sparse.mm(adj, h @ self.w1))
        return torch.sparse.mm(adj, h @ self.w2)


model = GCN()
dense_opt = optim.Adam([model.w1, model.w2], lr=0.05)
sparse_opt = optim.SparseAdam(list(model.emb.parameters()), lr=0.05)
ids = torch.arange(n)
for step in range(8):
    dense_opt.zero_grad()
    sparse_opt.zero_grad()
    loss = F.cross_entropy(model(adj, x, ids), y)
    loss.backward()
    assert model.emb.weight.grad.is_sparse and model.emb.weight.grad.layout == torch.sparse_coo
    dense_opt.step()
    sparse_opt.step()
    print(f"step {step} loss {loss.item():.6f}")
print("nnz", adj._nnz(), adj.is_coalesced(), tuple(adj.indices().shape))
