"""pytorch/examples' MNIST convnet (two convolutions, max pooling, dropout, two linear layers,
log_softmax + nll_loss, Adadelta with StepLR) trained for a few steps on synthetic 28x28 digits.
Nothing here is tensorlab-specific. Dropout is 0 and the weights and data come from a fixed NumPy
seed (torch's and tensorlab's random generators differ), so the script prints the same losses on
torch and under `python -m tensorlab.compat`."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5)
parser.add_argument("--size", type=int, default=28)
parser.add_argument("--device", default="cpu")
args = parser.parse_args()
device = torch.device(args.device)


class Net(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.0)
        self.dropout2 = nn.Dropout(0.0)
        side = (size - 4) // 2
        self.fc1 = nn.Linear(16 * side * side, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


rng = np.random.default_rng(0)
model = Net(args.size)
init = {k: torch.from_numpy((0.1 * rng.standard_normal(tuple(v.shape))).astype(np.float32))
        for k, v in model.state_dict().items()}
print(model.load_state_dict(init))
model = model.to(device)
images = torch.from_numpy(rng.random((64, 1, args.size, args.size)).astype(np.float32))
labels = torch.from_numpy(rng.integers(0, 10, 64))
loader = DataLoader(TensorDataset(images, labels), batch_size=16, shuffle=False)
optimizer = optim.Adadelta(model.parameters(), lr=1.0)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
model.train()
step = 0
while step < args.steps:
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
        step += 1
        if step == args.steps:
            break
    scheduler.step()
model.eval()
with torch.no_grad():
    out = model(images[:16].to(device))
    correct = out.argmax(dim=1, keepdim=True).eq(labels[:16].to(device).view_as(out.argmax(1, keepdim=True))).sum()
    print(f"eval correct {correct.item()} loss {F.nll_loss(out, labels[:16].to(device), reduction='sum').item():.5f}")
