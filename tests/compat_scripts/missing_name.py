"""A PyTorch script that reaches for a part of torch tensorlab does not have (ONNX export) after
training works: under tensorlab.compat it stops there with a clear message."""
import torch
import torch.nn as nn
import torch.onnx

model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
x = torch.ones(1, 3)
print("forward ok", tuple(model(x).shape))
torch.onnx.export(model, (x,), "model.onnx")
