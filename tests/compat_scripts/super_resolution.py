"""The sub-pixel super-resolution network of pytorch/examples' super_resolution/ (model.py's Net:
conv 5x5 -> conv 3x3 -> conv 3x3 -> conv 3x3 to upscale_factor**2 channels -> nn.PixelShuffle,
init.orthogonal_ with calculate_gain('relu'); main.py's MSELoss, Adam and PSNR evaluation through a
DataLoader), with narrower layers and synthetic 8x8 -> 24x24 luminance images from a fixed NumPy
seed. The orthogonal initial weights are recomputed from the NumPy seed after init.orthogonal_ (torch's
and tensorlab's random generators differ), so the losses print the same on torch and under
`python -m tensorlab.compat`."""
import argparse
from math import log10

import numpy as np
import torch
import torch.nn as nn
import torch.nn.init as init
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--upscale_factor", type=int, default=3)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--device", default="cpu")
opt = parser.parse_args()
device = torch.device(opt.device)
rng = np.random.default_rng(0)


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)
        with torch.no_grad():  # the same orthogonal matrices on every library: from NumPy's generator
            for conv, gain in ((self.conv1, init.calculate_gain('relu')), (self.conv2, init.calculate_gain('relu')),
                               (self.conv3, init.calculate_gain('relu')), (self.conv4, 1.0)):
                rows, cols = conv.weight.shape[0], conv.weight[0].numel()
                q, r = np.linalg.qr(rng.standard_normal((max(rows, cols), min(rows, cols))))
                q = q * np.sign(np.diag(r))
                q = q if rows >= cols else q.T
                conv.weight.copy_(torch.from_numpy((gain * q).astype(np.float32)).view_as(conv.weight))
                conv.bias.copy_(torch.from_numpy(0.01 * rng.standard_normal(rows).astype(np.float32)))


def images(n, size):
    """Smooth random luminance images in [0, 1]: sums of a few sinusoids."""
    yy, xx = np.mgrid[0:size, 0:size] / size
    out = np.zeros((n, 1, size, size))
    for k in range(3):
        fy, fx, ph = rng.uniform(0.5, 3, (3, n, 1, 1))
        out[:, 0] += np.sin(2 * np.pi * (fy * yy + fx * xx) + 6 * ph)
    return ((out - out.min()) / (out.max() - out.min())).astype(np.float32)


r = opt.upscale_factor
target = images(24, 8 * r)
inp = target.reshape(24, 1, 8, r, 8, r).mean(axis=(3, 5))  # box downsampling
training_data_loader = DataLoader(TensorDataset(torch.from_numpy(inp[:16]), torch.from_numpy(target[:16])),
                                  batch_size=4, shuffle=False)
testing_data_loader = DataLoader(TensorDataset(torch.from_numpy(inp[16:]), torch.from_numpy(target[16:])),
                                 batch_size=4)
model = Net(upscale_factor=r).to(device)
criterion = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=opt.lr)


def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)
        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()
        print(f"===> Epoch[{epoch}]({iteration}/{len(training_data_loader)}): loss {loss.item():.6f}")


def test():
    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            input, target = batch[0].to(device), batch[1].to(device)
            prediction = model(input)
            mse = criterion(prediction, target)
            avg_psnr += 10 * log10(1 / mse.item())
    print(f"===> Avg. PSNR (dB) loss {avg_psnr / len(testing_data_loader):.5f}")


for epoch in range(1, opt.epochs + 1):
    train(epoch)
    test()
print("output shape", tuple(model(torch.from_numpy(inp[:1]).to(device)).shape))
