"""A PyTorch script that reaches for a part of torch tensorlab does not have (TensorBoard logging)
after training works: under tensorlab.compat it stops there with a clear message."""
import torch
import torch.nn as nn
import torch.utils.tensorboard

model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
x = torch.ones(1, 3)
print("forward ok", tuple(model(x).shape))
torch.utils.tensorboard.SummaryWriter("runs")
