"""tl.cuda seeding: the per-device default generators of tensorlab.ops.random (Philox, the same
numbers as on the CPU for the same seed and offset). As in torch, seeding is silently skipped
when CUDA is not available, so portable scripts can always call manual_seed_all."""
from __future__ import annotations

from ..device import Device
from ..ops import random as _random
from ._devices import _driver, _index, _usable


def _generator(idx):
    return _random._default_for(Device("cuda", idx))


def manual_seed(seed):
    """Seed the default generator of the current CUDA device."""
    seed = _random._check_seed(seed)
    if _usable():
        _generator(_driver().current_device()).manual_seed(seed)


def manual_seed_all(seed):
    """Seed the default generator of every CUDA device."""
    seed = _random._check_seed(seed)
    if _usable():
        for i in range(_driver().device_count()):
            _generator(i).manual_seed(seed)


def seed():
    """Seed the current device's default generator from the OS's entropy."""
    if _usable():
        _generator(_driver().current_device()).seed()


def seed_all():
    """Seed every device's default generator with one seed from the OS's entropy."""
    if _usable():
        s = _random._random_seed()
        for i in range(_driver().device_count()):
            _generator(i).manual_seed(s)


def initial_seed():
    """The seed of the current device's default generator."""
    return _generator(_driver().current_device()).initial_seed()


def get_rng_state(device="cuda"):
    """The default generator state of a CUDA device (a uint8 CPU tensor: seed and offset)."""
    return _generator(_index(device)).get_state()


def set_rng_state(new_state, device="cuda"):
    _generator(_index(device)).set_state(new_state)


def get_rng_state_all():
    return [_generator(i).get_state() for i in range(_driver().device_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        _generator(i).set_state(state)
