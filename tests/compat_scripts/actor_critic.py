"""An advantage actor-critic / PPO-style update with torch.distributions: a Categorical policy head for a
discrete action and a Normal (Independent) head for a continuous one, a value head, the clipped ratio of
new to old log-probabilities, an entropy bonus and the KL to the old policy. Actions and rewards come
from a fixed NumPy seed (torch's and tensorlab's generators differ), so the script prints the same losses
on torch and under `python -m tensorlab.compat`."""
import numpy as np
import torch
from torch import nn, optim
from torch.distributions import Categorical, Independent, Normal, kl_divergence
from torch.distributions.transforms import TanhTransform
from torch.distributions.transformed_distribution import TransformedDistribution

rng = np.random.default_rng(0)
torch.set_default_dtype(torch.float64)


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 32), nn.Tanh())
        self.logits = nn.Linear(32, 4)
        self.mu = nn.Linear(32, 2)
        self.log_std = nn.Parameter(torch.zeros(2))
        self.value = nn.Linear(32, 1)

    def forward(self, obs):
        h = self.body(obs)
        cont = Independent(Normal(self.mu(h), self.log_std.exp()), 1)
        return Categorical(logits=self.logits(h)), cont, self.value(h).squeeze(-1)


model = Policy()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.3))
opt = optim.Adam(model.parameters(), lr=3e-3)
obs = torch.tensor(rng.standard_normal((64, 6)))
actions = torch.tensor(rng.integers(0, 4, size=64))
cont_actions = torch.tensor(rng.standard_normal((64, 2)) * 0.5)
returns = torch.tensor(rng.standard_normal(64))
with torch.no_grad():
    old_disc, old_cont, _ = model(obs)
    old_logp = old_disc.log_prob(actions) + old_cont.log_prob(cont_actions)
for step in range(6):
    disc, cont, value = model(obs)
    logp = disc.log_prob(actions) + cont.log_prob(cont_actions)
    adv = returns - value.detach()
    ratio = (logp - old_logp).exp()
    policy_loss = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
    value_loss = (returns - value).pow(2).mean()
    entropy = disc.entropy().mean() + cont.entropy().mean()
    kl = (kl_divergence(old_disc, disc) + kl_divergence(old_cont, cont)).mean()
    loss = policy_loss + 0.5 * value_loss - 0.01 * entropy + 0.1 * kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.8f}")
# a squashed Gaussian (SAC's policy) scores actions in (-1, 1)
squashed = TransformedDistribution(Normal(torch.zeros(2), torch.ones(2)), [TanhTransform()])
print(f"squashed loss {squashed.log_prob(torch.tensor([0.3, -0.7])).sum().item():.8f}")
