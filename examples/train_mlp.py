"""Train a small MLP on the two-moons problem with tensorlab.nn and tensorlab.optim.

    python examples/train_mlp.py                 # cuda when available, else cpu
    python examples/train_mlp.py --device cpu --optimizer sgd --steps 300

Prints the loss as it falls and the final accuracy; exits with status 1 if the loss did not
fall (to half its first value) so the script doubles as a smoke test."""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

try:
    import tensorlab as tl
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.optim as optim


def two_moons(n, noise, device, generator):
    """n points on two interleaved half circles (labels 0 and 1) plus Gaussian noise."""
    half = n // 2
    t = tl.rand(half, generator=generator, device=device) * math.pi
    upper = tl.stack([t.cos(), t.sin()], dim=1)
    lower = tl.stack([1.0 - t.cos(), 0.5 - t.sin()], dim=1)
    x = tl.cat([upper, lower]) + noise * tl.randn(2 * half, 2, generator=generator, device=device)
    y = tl.cat([tl.zeros(half, dtype=tl.int64, device=device), tl.ones(half, dtype=tl.int64, device=device)])
    return x, y


def pick_device(requested):
    if requested in (None, "cuda") and tl.cuda.is_available():
        return "cuda"
    if requested == "cuda":
        print("note: CUDA is not available here, training on the cpu instead")
    return "cpu"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None)
    ap.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    device = pick_device(args.device)
    tl.manual_seed(args.seed)
    gen = tl.Generator(device=device).manual_seed(args.seed)
    x, y = two_moons(args.n, 0.1, device, gen)

    model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    if args.optimizer == "adam":
        opt = optim.Adam(model.parameters(), lr=args.lr or 0.01)
    else:
        opt = optim.SGD(model.parameters(), lr=args.lr or 0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    print(f"training {sum(p.numel() for p in model.parameters())} parameters on {device} with "
          f"{type(opt).__name__}, {args.n} points, {args.steps} steps")

    start = time.perf_counter()
    first = loss = None
    for step in range(args.steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if step == 0:
            first = loss.item()
        if step % max(1, args.steps // 10) == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    elapsed = time.perf_counter() - start

    model.eval()
    with tl.no_grad():
        final = loss_fn(model(x), y).item()
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    print(f"final loss {final:.4f} (first {first:.4f}), accuracy {accuracy:.1%}, {elapsed:.2f} s")
    if not final < 0.5 * first:
        print("FAILED: the loss did not fall", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
