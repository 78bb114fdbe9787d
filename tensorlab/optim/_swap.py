"""swap_in_optimizer_params_and_state (torch.optim's): for a `with` block the optimizer's
parameters and state are the ones supplied (a step acts on them), then the live ones come back."""
from __future__ import annotations

import contextlib
from collections import defaultdict
from itertools import chain

from .optimizer import _optimizer_lock


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Install `swapin_parameters` (a dict of tensors in the optimizer's parameter order, as
    named_parameters() gives them) and `swapin_optim_state` (a state_dict()-shaped dict: state by
    packed index, param_groups with each group's hyperparameters) into `optimizer` for the block.
    In-place changes to the supplied state tensors are kept; everything else is restored on exit."""
    params = list(swapin_parameters.values())
    live = list(chain.from_iterable(g["params"] for g in optimizer.param_groups))
    saved_groups = swapin_optim_state["param_groups"]
    if len(params) != len(live) or len(saved_groups) != len(optimizer.param_groups) or any(
            len(s["params"]) != len(g["params"]) for s, g in zip(saved_groups, optimizer.param_groups)):
        raise RuntimeError("swap_in_optimizer_params_and_state requires the explicit parameter state to match "
                           "optimizer.param_groups ordering.")
    by_index = {}
    groups = []
    it = iter(params)
    for saved in saved_groups:
        g = {k: v for k, v in saved.items() if k != "params"}
        g["params"] = [next(it) for _ in saved["params"]]
        by_index.update(zip(saved["params"], g["params"]))
        groups.append(g)
    state = defaultdict(dict)
    for index, value in swapin_optim_state["state"].items():
        if index in by_index:
            state[by_index[index]] = dict(value)  # the same tensors: in-place updates reach the caller's dict
    with _optimizer_lock(optimizer):
        old = optimizer.param_groups, optimizer.state
        optimizer.param_groups, optimizer.state = groups, state
        try:
            yield
        finally:
            optimizer.param_groups, optimizer.state = old
