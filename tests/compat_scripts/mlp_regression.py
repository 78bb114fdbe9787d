"""An ordinary PyTorch training script (nothing tensorlab-specific): an MLP fit to a synthetic
regression with SGD (momentum) then Adam. Weights and data come from a fixed NumPy seed, so the
same script prints the same losses under real torch and under `python -m tensorlab.compat`."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.nn import functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--device", default="cpu")
args = parser.parse_args()

torch.manual_seed(0)
torch.backends.cudnn.benchmark = True
device = torch.device(args.device)


class MLP(nn.Module):
    def __init__(self, d_in, hidden, d_out):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, d_out)

    def forward(self, x):
        x = self.act(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


rng = np.random.default_rng(0)
X = rng.standard_normal((64, 4)).astype(np.float32)
w_true = rng.standard_normal((4, 1)).astype(np.float32)
Y = (np.sin(X) @ w_true + 0.1 * rng.standard_normal((64, 1))).astype(np.float32)

model = MLP(4, 16, 1)
init = {k: torch.from_numpy((0.3 * rng.standard_normal(tuple(v.shape))).astype(np.float32))
        for k, v in model.state_dict().items()}
print(model.load_state_dict(init))
model = model.to(device)
print(model)
print("params:", sum(p.numel() for p in model.parameters()))

x = torch.from_numpy(X).to(device)
y = torch.tensor(Y, device=device)
loss_fn = nn.MSELoss()

for name, opt in (("sgd", optim.SGD(model.parameters(), lr=0.05, momentum=0.9)),
                  ("adam", optim.Adam(model.parameters(), lr=0.01))):
    for step in range(args.steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        opt.step()
        print(f"{name} step {step} loss {loss.item():.9g}")

model.eval()
with torch.no_grad():
    final = F.mse_loss(model(x), y)
print(f"final loss {final.item():.9g}")
print("keys:", list(model.state_dict().keys()))
