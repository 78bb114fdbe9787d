"""A PyTorch training loop over torch.utils.data (TensorDataset, DataLoader without shuffling) with
AdamW and torch.optim.lr_scheduler (StepLR, then a ReduceLROnPlateau on the epoch loss). Weights and
data from a fixed NumPy seed: the same losses and learning rates under torch and tensorlab.compat."""
import numpy as np
import torch
from torch import nn
from torch.optim.lr_scheduler import ReduceLROnPlateau, StepLR
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.dataloader import default_collate

rng = np.random.default_rng(2)
X = torch.from_numpy(rng.standard_normal((40, 3)).astype(np.float32))
Y = torch.from_numpy((rng.standard_normal((40, 1)) * 0.5).astype(np.float32)) + X[:, :1] * 2
loader = DataLoader(TensorDataset(X, Y), batch_size=8, shuffle=False, drop_last=False, collate_fn=default_collate)

model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy((0.5 * rng.standard_normal(tuple(p.shape))).astype(np.float32)))
opt = torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.01)
step = StepLR(opt, step_size=2, gamma=0.5)
plateau = ReduceLROnPlateau(opt, factor=0.5, patience=0)
loss_fn = nn.MSELoss()
print("batches:", len(loader))
for epoch in range(5):
    total = 0.0
    for xb, yb in loader:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
    step.step()
    plateau.step(total)
    print(f"epoch {epoch} lr {opt.param_groups[0]['lr']:.6g} loss {total / len(X):.9g}")
