"""An ordinary PyTorch script (nothing tensorlab-specific) using issue 34's surface: Rprop, ASGD, Adamax over an activation-checkpointed model, stochastic
weight averaging (AveragedModel, SWALR, update_bn), torch.func per-sample gradients and
torch.autograd.functional. Weights and data come from NumPy, so the printed losses are the same
under torch and under `python -m tensorlab.compat`."""
import numpy as np
import torch
import torch.nn as nn
from torch.func import functional_call, grad, vmap
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.checkpoint import checkpoint

rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((32, 3)).astype("float32"))
y = torch.tensor((np.sin(x.numpy()).sum(1, keepdims=True)).astype("float32"))


def make():
    m = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.BatchNorm1d(16), nn.Linear(16, 1))
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype("float32") * 0.4))
    return m


model = make()
for name, opt in (("rprop", torch.optim.Rprop(model.parameters(), lr=0.01)),
                  ("asgd", torch.optim.ASGD(model.parameters(), lr=0.05, t0=2))):
    for step in range(3):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(f"{name} {step} loss {loss.item():.6f}")

opt = torch.optim.Adamax(model.parameters(), lr=0.01)
swa = AveragedModel(model)
sched = SWALR(opt, swa_lr=0.005, anneal_epochs=2)
for step in range(4):
    opt.zero_grad()
    loss = nn.functional.mse_loss(checkpoint(model, x, use_reentrant=False), y)
    loss.backward()
    opt.step()
    swa.update_parameters(model)
    sched.step()
    print(f"adamax+swa {step} loss {loss.item():.6f}")
update_bn([(x[:16],), (x[16:],)], swa)
swa.eval()
print(f"swa eval loss {nn.functional.mse_loss(swa(x), y).item():.6f}")

model.eval()
params = {k: v.detach() for k, v in model.named_parameters()}


def sample_loss(p, xi, yi):
    return nn.functional.mse_loss(functional_call(model, p, (xi[None],)), yi[None])


per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, x, y)
print(f"per-sample grad norm loss {sum(g.pow(2).sum() for g in per_sample.values()).item():.6f}")
jac = torch.autograd.functional.jacobian(lambda inp: model(inp).sum(), x[:4])
print(f"jacobian sum loss {jac.sum().item():.6f}")
