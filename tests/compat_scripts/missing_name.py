"""A PyTorch script that reaches for a part of torch tensorlab does not have (TorchScript's mobile
optimizer) after its model works: under tensorlab.compat it stops there with a clear message."""
import torch
import torch.nn as nn
import torch.utils.mobile_optimizer

model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
x = torch.ones(1, 3)
print("forward ok", tuple(model(x).shape))
torch.utils.mobile_optimizer.optimize_for_mobile(model)
