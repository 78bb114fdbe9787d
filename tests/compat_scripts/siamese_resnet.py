"""pytorch/examples' siamese_network/main.py: a siamese network whose twin branch is a ResNet-18 with
its first convolution replaced for one-channel images and its fc layer removed
(nn.Sequential(*list(resnet.children())[:-1])), the two feature vectors concatenated into a small MLP
and a Sigmoid, BCELoss on same/different pairs, Adadelta with StepLR. The ResNet is written as
torchvision's models/resnet.py writes it (conv3x3/conv1x1 helpers, BasicBlock with expansion and
downsample, _make_layer, kaiming_normal_(mode="fan_out", nonlinearity="relu") and constant_ for the
batch norms, AdaptiveAvgPool2d((1, 1)), torch.flatten), narrower, one block per stage. Images are 16x16
digit-like patterns and all weights are redrawn from a fixed NumPy seed after the library's own
initialization (torch's and tensorlab's random generators differ), so the losses print the same on
torch and under `python -m tensorlab.compat`. The model takes a torch.save / torch.load round trip
(in memory) before the evaluation."""
import argparse
import io

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch import Tensor
from torch.optim.lr_scheduler import StepLR

from _npinit import init_from_numpy

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--device", default="cpu")
args = parser.parse_args()
device = torch.device(args.device)
rng = np.random.default_rng(0)


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    """3x3 convolution with padding"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion: int = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10, zero_init_residual=False, width=8):
        super().__init__()
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, 2 * width, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 4 * width, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 8 * width, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * width * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        norm_layer = self._norm_layer
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


class SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.resnet = ResNet(BasicBlock, [1, 1, 1, 1], zero_init_residual=True)
        self.resnet.conv1 = nn.Conv2d(1, 8, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
        self.fc_in_features = self.resnet.fc.in_features
        self.resnet = torch.nn.Sequential(*(list(self.resnet.children())[:-1]))
        self.fc = nn.Sequential(nn.Linear(self.fc_in_features * 2, 32), nn.ReLU(inplace=True), nn.Linear(32, 1))
        self.sigmoid = nn.Sigmoid()
        self.resnet.apply(self.init_weights)
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.resnet(x)
        return output.view(output.size()[0], -1)

    def forward(self, input1, input2):
        output = torch.cat((self.forward_once(input1), self.forward_once(input2)), 1)
        return self.sigmoid(self.fc(output))


def make_pairs(n):
    """Pairs of noisy 16x16 stroke patterns of classes 0..3; target 1 for the same class."""
    protos = np.zeros((4, 16, 16), np.float32)
    protos[0, 3:13, 7:9] = 1
    protos[1, 7:9, 3:13] = 1
    protos[2][np.eye(16, dtype=bool)] = 1
    protos[3, 4:12, 4:12] = 1
    protos[3, 6:10, 6:10] = 0
    a = rng.integers(0, 4, n)
    same = rng.random(n) < 0.5
    b = np.where(same, a, (a + rng.integers(1, 4, n)) % 4)
    noise = lambda: 0.3 * rng.standard_normal((n, 1, 16, 16)).astype(np.float32)
    return (torch.from_numpy(protos[a][:, None] + noise()), torch.from_numpy(protos[b][:, None] + noise()),
            torch.from_numpy(same.astype(np.float32)))


model = SiameseNetwork()
init_from_numpy(model, rng)
model = model.to(device)
optimizer = optim.Adadelta(model.parameters(), lr=1.0)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
criterion = nn.BCELoss()
batches = [make_pairs(8) for _ in range(3)]
for epoch in range(1, args.epochs + 1):
    model.train()
    for batch_idx, (images_1, images_2, targets) in enumerate(batches):
        images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        print(f"Train Epoch: {epoch} [{batch_idx}] loss {loss.item():.6f}")
    scheduler.step()
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
buf.seek(0)
restored = SiameseNetwork().to(device)
print(restored.load_state_dict(torch.load(buf, weights_only=True)))
print("running_mean restored:", torch.equal(restored.resnet[1].running_mean, model.resnet[1].running_mean))
restored.eval()
images_1, images_2, targets = make_pairs(16)
with torch.no_grad():
    outputs = restored(images_1.to(device), images_2.to(device)).squeeze()
    test_loss = criterion(outputs, targets.to(device))
    correct = outputs.gt(0.5).float().eq(targets.to(device)).sum().item()
print(f"Test set: correct {int(correct)}/16 average loss {test_loss.item():.6f}")
