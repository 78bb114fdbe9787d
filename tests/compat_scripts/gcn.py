"""A two-layer graph convolution network (Kipf & Welling) as pytorch/examples' gcn/main.py and
tkipf/pygcn write it: GraphConv layers holding a `kernel` Parameter (xavier_normal_), support =
torch.mm(features, kernel), output = torch.sparse.mm(adj, support) + bias, where adj is the sparse
COO renormalized adjacency D^-1/2 (A + I) D^-1/2 built with torch.sparse_coo_tensor and sparse
diagonal degree matrices (torch.diag(..).to_sparse()); log_softmax + NLLLoss on the training nodes,
Adam with weight decay, validation loss and accuracy per epoch. Cora is replaced by a synthetic
three-community graph from a fixed NumPy seed (as are the weights: torch's and tensorlab's random
generators differ), so the losses print the same on torch and under `python -m tensorlab.compat`."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--device", default="cpu")
args = parser.parse_args()
device = torch.device(args.device)
rng = np.random.default_rng(0)


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim, use_bias=False):
        super().__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.sparse.mm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.0):
        super().__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


# a synthetic citation graph: 3 communities of 15 nodes, dense inside, sparse across
V, C, Fdim = 45, 3, 12
labels_np = np.repeat(np.arange(C), V // C)
same = labels_np[:, None] == labels_np[None, :]
upper = np.triu(rng.random((V, V)) < np.where(same, 0.3, 0.03), 1)
edges = np.argwhere(upper | upper.T)
features_np = (rng.random((V, Fdim)) < 0.2 + 0.4 * (np.arange(Fdim)[None] % C == labels_np[:, None])).astype(np.float32)

features = torch.FloatTensor(features_np)
scale_vector = torch.sum(features, dim=1)
scale_vector = 1 / scale_vector
scale_vector[scale_vector == float('inf')] = 0
scale_vector = torch.diag(scale_vector).to_sparse()
features = scale_vector @ features  # row-normalized features (sparse @ dense)
labels = torch.LongTensor(labels_np)
adj_mat = torch.sparse_coo_tensor(torch.from_numpy(edges.T.copy()), torch.ones(len(edges)), (V, V))
adj_mat = (torch.eye(V) + adj_mat).to_sparse()  # self-loops
degree_mat = torch.sum(adj_mat.to_dense(), dim=1)
degree_mat = torch.sqrt(1 / degree_mat)
degree_mat[degree_mat == float('inf')] = 0
degree_mat = torch.diag(degree_mat).to_sparse()
adj_mat = torch.sparse.mm(degree_mat, torch.sparse.mm(adj_mat, degree_mat.to_dense())).to_sparse().coalesce()
print("adjacency", adj_mat.layout, tuple(adj_mat.shape), "nnz", adj_mat._nnz())
features, labels, adj_mat = features.to(device), labels.to(device), adj_mat.to(device)

order = rng.permutation(V)
mask_train = torch.zeros(V, dtype=torch.bool)
mask_train[torch.from_numpy(order[:18])] = True
mask_val = ~mask_train
mask_train, mask_val = mask_train.to(device), mask_val.to(device)

model = GCN(Fdim, 16, C).to(device)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * 0.3).astype(np.float32)))
optimizer = optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
criterion = nn.NLLLoss()
for epoch in range(args.epochs):
    model.train()
    optimizer.zero_grad()
    y_pred = model(features, adj_mat)
    train_loss = criterion(y_pred[mask_train], labels[mask_train])
    train_loss.backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        y_pred = model(features, adj_mat)
        val_loss = criterion(y_pred[mask_val], labels[mask_val])
        val_acc = (y_pred[mask_val].argmax(dim=1) == labels[mask_val]).float().mean()
    print(f"Epoch {epoch} train loss {train_loss.item():.6f}")
    print(f"Epoch {epoch} val acc {val_acc.item():.4f} val loss {val_loss.item():.6f}")
