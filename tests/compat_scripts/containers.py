"""PyTorch containers and hooks: ModuleList, ModuleDict, ParameterList, ParameterDict, Sequential
slicing, forward hooks, state_dict round trip, a few Adam steps. Prints the module tree, the
state_dict keys and the losses (weights from a fixed NumPy seed)."""
import numpy as np
import torch
import torch.nn as nn
from torch.nn.modules.container import ModuleDict, ModuleList


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = ModuleList([nn.Linear(6, 6) for _ in range(3)])
        self.heads = ModuleDict({"reg": nn.Linear(6, 1), "aux": nn.Sequential(nn.Linear(6, 3), nn.ReLU())})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(6)) for _ in range(3)])
        self.bias = nn.ParameterDict({"b": nn.Parameter(torch.zeros(1))})
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.register_buffer("cache", torch.zeros(6), persistent=False)

    def forward(self, x):
        for block, scale in zip(self.blocks, self.scales):
            x = torch.tanh(block(x)) * scale
        self.steps += 1
        return self.heads["reg"](x) + self.bias["b"], self.heads["aux"](x)


net = Net()
rng = np.random.default_rng(1)
with torch.no_grad():
    for name, p in net.named_parameters():
        p.copy_(torch.from_numpy((0.4 * rng.standard_normal(tuple(p.shape))).astype(np.float32)))
print(net)
print("state_dict:", list(net.state_dict().keys()))
print("modules:", [n for n, _ in net.named_modules()])
print("blocks[1:]:", net.blocks[1:])

seen = []
handle = net.blocks[0].register_forward_hook(lambda m, inp, out: seen.append(tuple(out.shape)))
x = torch.from_numpy(rng.standard_normal((8, 6)).astype(np.float32))
target = torch.from_numpy(rng.standard_normal((8, 1)).astype(np.float32))
opt = torch.optim.Adam(net.parameters(), lr=0.02)
for step in range(8):
    opt.zero_grad()
    out, aux = net(x)
    loss = ((out - target) ** 2).mean() + 0.1 * aux.pow(2).mean()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.9g}")
handle.remove()
net(x)
print("hook calls:", len(seen), seen[0], "steps buffer:", int(net.steps))

copy = Net()
print(copy.load_state_dict(net.state_dict()))
print(copy.load_state_dict({k: v for k, v in net.state_dict().items() if k != "steps"}, strict=False))
print("same output:", (copy(x)[0] - net(x)[0]).abs().max().item() == 0.0)
