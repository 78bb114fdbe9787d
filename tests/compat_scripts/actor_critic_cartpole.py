"""pytorch/examples' reinforcement_learning/actor_critic.py: a Policy with a shared hidden layer, an
action head (softmax probabilities) and a value head; actions drawn from
torch.distributions.Categorical(probs) with their log_prob saved; at the end of each episode the
discounted, normalized returns give the actor loss (-log_prob * advantage) and the critic loss
(F.smooth_l1_loss), summed with torch.stack and optimized with Adam. The gym CartPole-v1 environment
is replaced by a small NumPy cart-pole with the same equations of motion, and the action is drawn by
inverse CDF from a NumPy uniform (torch's and tensorlab's random generators differ), so the episodes
and losses print the same on torch and under `python -m tensorlab.compat`."""
import argparse
import math
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

from _npinit import init_from_numpy

parser = argparse.ArgumentParser()
parser.add_argument('--gamma', type=float, default=0.99)
parser.add_argument('--episodes', type=int, default=5)
parser.add_argument('--device', default='cpu')
args = parser.parse_args()
device = torch.device(args.device)
rng = np.random.default_rng(543)


class CartPole:
    """CartPole-v1's dynamics (Euler steps of 0.02 s; done past 2.4 m or 12 degrees, or after max_steps)."""

    def __init__(self, max_steps=40):
        self.max_steps = max_steps

    def reset(self):
        self.state = rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.state.astype(np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sintheta) / 1.1
        thetaacc = (9.8 * sintheta - costheta * temp) / (0.5 * (4.0 / 3.0 - 0.1 * costheta ** 2 / 1.1))
        xacc = temp - 0.05 * thetaacc * costheta / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * xacc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * thetaacc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.t += 1
        terminated = bool(abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360)
        return self.state.astype(np.float32), 1.0, terminated, self.t >= self.max_steps, {}


SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])


class Policy(nn.Module):
    """implements both actor and critic in one model"""

    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 32)
        self.action_head = nn.Linear(32, 2)
        self.value_head = nn.Linear(32, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


env = CartPole()
model = init_from_numpy(Policy(), rng).to(device)
optimizer = optim.Adam(model.parameters(), lr=3e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float().to(device)
    probs, state_value = model(state)
    m = Categorical(probs)
    u = rng.random()  # m.sample(), drawn from NumPy's generator
    action = torch.tensor(int(np.searchsorted(np.cumsum(m.probs.detach().cpu().numpy()), u)), device=device)
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item(), m.entropy().item()


def finish_episode():
    R = 0
    saved_actions = model.saved_actions
    policy_losses, value_losses, returns = [], [], []
    for r in model.rewards[::-1]:
        R = r + args.gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns, device=device)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R], device=device)))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]
    return loss.item()


running_reward = 10
for i_episode in range(1, args.episodes + 1):
    state, _ = env.reset()
    ep_reward, entropy = 0, 0.0
    for t in range(1, 10000):
        action, ent = select_action(state)
        entropy += ent
        state, reward, terminated, truncated, _ = env.step(action)
        model.rewards.append(reward)
        ep_reward += reward
        if terminated or truncated:
            break
    running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
    loss = finish_episode()
    print(f"Episode {i_episode}\tLast reward: {ep_reward:.2f}\tAverage reward: {running_reward:.2f}")
    print(f"Episode {i_episode} mean entropy loss {entropy / t:.6f}")
    print(f"Episode {i_episode} actor-critic loss {loss:.6f}")
