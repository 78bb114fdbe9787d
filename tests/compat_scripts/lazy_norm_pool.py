"""An ordinary PyTorch script (nothing tensorlab-specific) using issue 34's module surface: lazy layers
(LazyConv2d, LazyBatchNorm2d, LazyLinear) materialized by a dummy batch, InstanceNorm2d,
LocalResponseNorm, LPPool2d, Bilinear, SyncBatchNorm (one process) and DataParallel (no GPU: the
module itself), trained a few Adam steps. Weights and data come from NumPy, so the printed losses are
the same under torch and under `python -m tensorlab.compat`."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((8, 3, 8, 8)).astype("float32"))
side = torch.tensor(rng.standard_normal((8, 5)).astype("float32"))
y = torch.tensor(rng.standard_normal((8, 2)).astype("float32"))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.LazyConv2d(6, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(),
                                      nn.InstanceNorm2d(6, affine=True), nn.LocalResponseNorm(3),
                                      nn.LPPool2d(2, 2), nn.SyncBatchNorm(6), nn.Flatten())
        self.head = nn.LazyLinear(4)
        self.mix = nn.Bilinear(4, 5, 2)

    def forward(self, a, b):
        return self.mix(torch.tanh(self.head(self.features(a))), b)


net = Net()
net(x[:2], side[:2])  # materializes the lazy layers
print(type(net.features[0]).__name__, type(net.head).__name__, tuple(net.head.weight.shape))
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype("float32") * 0.3))
model = nn.DataParallel(net)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(5):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x, side), y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
print(sorted(k for k in model.state_dict() if "features.1" in k))
