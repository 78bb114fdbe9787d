"""pytorch/examples' VAE (784-400-20 encoder, 20-400-784 decoder, BCE + KL divergence) trained for a
few steps on synthetic binary 28x28 images. Nothing here is tensorlab-specific; the weights, the data
and the reparameterization noise come from a fixed NumPy seed (torch's and tensorlab's random
generators differ), so the script prints the same losses on torch and under
`python -m tensorlab.compat`."""
import argparse

import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--device", default="cpu")
args = parser.parse_args()
device = torch.device(args.device)
rng = np.random.default_rng(0)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


model = VAE()
init = {k: torch.from_numpy((0.05 * rng.standard_normal(tuple(v.shape))).astype(np.float32))
        for k, v in model.state_dict().items()}
print(model.load_state_dict(init))
model = model.to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)
images = torch.from_numpy((rng.random((4, 32, 1, 28, 28)) < 0.3).astype(np.float32))
model.train()
for step in range(args.steps):
    data = images[step % 4].to(device)
    eps = torch.from_numpy(rng.standard_normal((32, 20)).astype(np.float32)).to(device)
    optimizer.zero_grad()
    recon_batch, mu, logvar = model(data, eps)
    loss = loss_function(recon_batch, data, mu, logvar)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item() / len(data):.6f}")
model.eval()
with torch.no_grad():
    sample = model.decode(torch.zeros(4, 20, device=device))
    print(f"sample mean loss {sample.mean().item():.7f}")
