"""pytorch/examples' fast_neural_style/ (Johnson et al.'s feed-forward style transfer): the
TransformerNet of transformer_net.py (ConvLayer = ReflectionPad2d + Conv2d, InstanceNorm2d(affine=True),
residual blocks, nearest-neighbour UpsampleConvLayer) trained with neural_style.py's loss: content MSE
on a fixed feature network's relu2_2 plus style MSE between Gram matrices (utils.gram_matrix) of
several layers, images normalized with utils.normalize_batch, Adam. The pretrained VGG16 is replaced
by a small frozen convolutional feature network, the widths are reduced and the images are 16x16
from a fixed NumPy seed (as are all weights: torch's and tensorlab's random generators differ), so
the losses print the same on torch and under `python -m tensorlab.compat`."""
import argparse
from collections import namedtuple

import numpy as np
import torch
from torch.optim import Adam

from _npinit import init_from_numpy

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=4)
parser.add_argument("--device", default="cpu")
parser.add_argument("--content-weight", type=float, default=1e5)
parser.add_argument("--style-weight", type=float, default=1e10)
args = parser.parse_args()
device = torch.device(args.device)
rng = np.random.default_rng(0)


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.reflection_pad = torch.nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        return self.conv2d(self.reflection_pad(x))


class ResidualBlock(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        out = self.relu(self.in1(self.conv1(x)))
        return self.in2(self.conv2(out)) + x


class UpsampleConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = torch.nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        if self.upsample:
            x = torch.nn.functional.interpolate(x, mode="nearest", scale_factor=self.upsample)
        return self.conv2d(self.reflection_pad(x))


class TransformerNet(torch.nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.conv1 = ConvLayer(3, c, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(c, affine=True)
        self.conv2 = ConvLayer(c, 2 * c, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(2 * c, affine=True)
        self.conv3 = ConvLayer(2 * c, 4 * c, kernel_size=3, stride=2)
        self.in3 = torch.nn.InstanceNorm2d(4 * c, affine=True)
        self.res1 = ResidualBlock(4 * c)
        self.res2 = ResidualBlock(4 * c)
        self.deconv1 = UpsampleConvLayer(4 * c, 2 * c, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(2 * c, affine=True)
        self.deconv2 = UpsampleConvLayer(2 * c, c, kernel_size=3, stride=1, upsample=2)
        self.in5 = torch.nn.InstanceNorm2d(c, affine=True)
        self.deconv3 = ConvLayer(c, 3, kernel_size=9, stride=1)
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res2(self.res1(y))
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        return self.deconv3(y)


class Features(torch.nn.Module):  # stands for vgg.Vgg16: four slices, namedtuple of activations
    def __init__(self):
        super().__init__()
        self.slice1 = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU())
        self.slice2 = torch.nn.Sequential(torch.nn.MaxPool2d(2, 2), torch.nn.Conv2d(8, 12, 3, padding=1), torch.nn.ReLU())
        self.slice3 = torch.nn.Sequential(torch.nn.MaxPool2d(2, 2), torch.nn.Conv2d(12, 16, 3, padding=1), torch.nn.ReLU())
        for param in self.parameters():
            param.requires_grad = False

    def forward(self, X):
        h1 = self.slice1(X)
        h2 = self.slice2(h1)
        h3 = self.slice3(h2)
        return namedtuple("VggOutputs", ["relu1_2", "relu2_2", "relu3_3"])(h1, h2, h3)


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    return features.bmm(features_t) / (ch * h * w)


def normalize_batch(batch):
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


transformer = init_from_numpy(TransformerNet(), rng).to(device)
vgg = init_from_numpy(Features(), rng, scale=1.5).to(device)
optimizer = Adam(transformer.parameters(), 1e-3)
mse_loss = torch.nn.MSELoss()
style = torch.from_numpy(rng.uniform(0, 255, (1, 3, 16, 16)).astype(np.float32)).to(device)
features_style = vgg(normalize_batch(style.repeat(2, 1, 1, 1)))
gram_style = [gram_matrix(y) for y in features_style]
transformer.train()
for batch_id in range(args.steps):
    x = torch.from_numpy(rng.uniform(0, 255, (2, 3, 16, 16)).astype(np.float32)).to(device)
    n_batch = len(x)
    optimizer.zero_grad()
    y = transformer(x)
    y = normalize_batch(y)
    x = normalize_batch(x)
    features_y = vgg(y)
    features_x = vgg(x)
    content_loss = args.content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)
    style_loss = 0.
    for ft_y, gm_s in zip(features_y, gram_style):
        gm_y = gram_matrix(ft_y)
        style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
    style_loss *= args.style_weight
    total_loss = content_loss + style_loss
    total_loss.backward()
    optimizer.step()
    print(f"batch {batch_id} content loss {content_loss.item():.3f}")
    print(f"batch {batch_id} style loss {style_loss.item():.3f}")
transformer.eval()
with torch.no_grad():
    # a content image, as the example stylizes (a constant one is ill-conditioned: every InstanceNorm2d
    # divides its rounding noise by sqrt(eps), so the result depended on the CPU's reduction order)
    content = torch.from_numpy(rng.uniform(0, 255, (1, 3, 16, 16)).astype(np.float32)).to(device)
    out = transformer(content).abs()
print("stylized", tuple(out.shape), "loss", f"{out.mean().item():.8f}")
