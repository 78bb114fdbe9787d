"""A DCGAN as pytorch/examples' dcgan/main.py builds it (Generator: ConvTranspose2d + BatchNorm2d +
ReLU stacks ending in Tanh; Discriminator: strided Conv2d + BatchNorm2d + LeakyReLU(0.2) ending in
Sigmoid; weights_init's N(0, 0.02) convolutions and N(1, 0.02) batch-norm scales; BCELoss with real
and fake labels; one Adam optimizer per network with betas (0.5, 0.999)), scaled down to 16x16
single-channel images drawn from a fixed NumPy seed, as are the latent noise vectors (torch's and
tensorlab's random generators differ), so the losses print the same on torch and under
`python -m tensorlab.compat`.

--save PATH writes a checkpoint (both networks and both optimizers) with torch.save after training;
--resume PATH loads one with torch.load (written by either library) and trains on from it."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=4)
parser.add_argument("--device", default="cpu")
parser.add_argument("--save", default="")
parser.add_argument("--resume", default="")
args = parser.parse_args()
device = torch.device(args.device)
rng = np.random.default_rng(1 if args.resume else 0)
nz, ngf, ndf, nc, batch = 8, 8, 8, 1, 8


def weights_init(m):
    classname = m.__class__.__name__
    with torch.no_grad():
        if classname.find("Conv") != -1:
            m.weight.copy_(torch.from_numpy(rng.normal(0.0, 0.02, tuple(m.weight.shape)).astype(np.float32)))
        elif classname.find("BatchNorm") != -1:
            m.weight.copy_(torch.from_numpy(rng.normal(1.0, 0.02, tuple(m.weight.shape)).astype(np.float32)))
            nn.init.constant_(m.bias, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),  # 4x4
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),  # 8x8
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),  # 16x16
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),  # 8x8
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),  # 4x4
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),  # 1x1
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


netG = Generator().to(device)
netD = Discriminator().to(device)
netG.apply(weights_init)
netD.apply(weights_init)
criterion = nn.BCELoss()
real_label, fake_label = 1.0, 0.0
optimizerD = optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
if args.resume:
    ckpt = torch.load(args.resume, map_location=device)
    print(netG.load_state_dict(ckpt["netG"]), netD.load_state_dict(ckpt["netD"]))
    optimizerG.load_state_dict(ckpt["optG"])
    optimizerD.load_state_dict(ckpt["optD"])
    print("resumed at step", ckpt["step"])
else:
    print(netG)

# "real" images: blurred blobs in [-1, 1]
yy, xx = np.mgrid[0:16, 0:16]
for step in range(args.steps):
    centers = rng.uniform(4, 12, (batch, 2))
    blobs = np.exp(-((yy[None] - centers[:, :1, None]) ** 2 + (xx[None] - centers[:, 1:, None]) ** 2) / 8.0)
    real_cpu = torch.from_numpy((2 * blobs - 1).astype(np.float32)[:, None]).to(device)
    # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
    netD.zero_grad()
    label = torch.full((batch,), real_label, dtype=real_cpu.dtype, device=device)
    output = netD(real_cpu)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    noise = torch.from_numpy(rng.standard_normal((batch, nz, 1, 1)).astype(np.float32)).to(device)
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()
    # (2) Update G network: maximize log(D(G(z)))
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    print(f"[{step}] D(x) loss {D_x:.6f}")
    print(f"[{step}] D(G(z)) loss {D_G_z1:.6f}")
    print(f"[{step}] D(G(z)) after loss {D_G_z2:.6f}")
    print(f"[{step}] Loss_D loss {errD.item():.6f}")
    print(f"[{step}] Loss_G loss {errG.item():.6f}")
if args.save:
    torch.save({"netG": netG.state_dict(), "netD": netD.state_dict(), "optG": optimizerG.state_dict(),
                "optD": optimizerD.state_dict(), "step": args.steps}, args.save)
netG.eval()
with torch.no_grad():
    print(f"eval sample mean loss {netG(torch.zeros(2, nz, 1, 1, device=device)).abs().mean().item():.6f}")
