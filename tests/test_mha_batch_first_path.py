"""MultiheadAttention's batch-first self-attention path (nn/functional_attention.py's
_self_attention_batch_first): outputs and gradients equal torch's, and the path runs exactly
where it applies (other calls take multi_head_attention_forward)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
from tensorlab.nn import functional_attention as FA, transformer as T
from layers_oracle import close, copy_weights, pair, randn

TOL = dict(rtol=1e-4, atol=1e-5)
N, L, E, H = 3, 5, 8, 2


def _mask(kind):
    if kind == "bool":
        m = np.random.default_rng(1).random((L, L)) > 0.6
        m[:, 0] = False
        return m
    if kind in ("causal", "float"):
        return np.triu(np.full((L, L), -np.inf, dtype=np.float32), 1)
    return None


CASES = [({}, None, {}), ({}, "bool", {}), ({"bias": False}, "float", {}),
         ({}, "causal", {"is_causal": True}), ({"dropout": 0.5}, "bool", {"eval": True})]


@pytest.mark.parametrize("ctor,mask,call", CASES, ids=str)
def test_batch_first_self_attention_matches_torch(device, torch, monkeypatch, ctor, mask, call):
    runs = []
    real = FA._self_attention_batch_first
    monkeypatch.setattr(T, "_self_attention_batch_first", lambda *a: runs.append(1) or real(*a))
    tm = torch.nn.MultiheadAttention(E, H, batch_first=True, **ctor)
    with torch.no_grad():
        for p in tm.parameters():
            if p.dim() == 1:
                p.copy_(torch.randn(p.shape) * 0.1)
    m = copy_weights(tm, nn.MultiheadAttention(E, H, batch_first=True, **ctor), device)
    if call.get("eval"):
        m.eval(), tm.eval()
    x, tx = pair(torch, device, randn(N, L, E), True)
    kw, tkw = {"need_weights": False}, {"need_weights": False}
    if mask is not None:
        kw["attn_mask"], tkw["attn_mask"] = pair(torch, device, _mask(mask))
    if call.get("is_causal"):
        kw["is_causal"] = tkw["is_causal"] = True
    out, w = m(x, x, x, **kw)
    tout, tw = tm(tx, tx, tx, **tkw)
    assert w is None and tw is None and runs
    close(out, tout, **TOL)
    g = randn(N, L, E, seed=5)
    out.backward(tl.tensor(g, device=device))
    tout.backward(torch.tensor(g))
    close(x.grad, tx.grad, **TOL)
    for (n, p), (tn, tp) in zip(m.named_parameters(), tm.named_parameters()):
        assert n == tn
        close(p.grad, tp.grad, **TOL)


def test_other_calls_take_the_general_path(device, monkeypatch):
    runs = []
    real = FA._self_attention_batch_first
    monkeypatch.setattr(T, "_self_attention_batch_first", lambda *a: runs.append(1) or real(*a))
    m = nn.MultiheadAttention(E, H, batch_first=True).to(device)
    x = tl.randn(N, L, E, device=device)
    y = tl.randn(N, L, E, device=device)
    assert m(x, x, x)[1] is not None and not runs               # weights wanted
    m(x, y, y, need_weights=False)                               # cross attention
    assert not runs
    with pytest.raises(RuntimeError, match="attn_mask"):         # a bad mask: the general path's error
        m(x, x, x, need_weights=False, attn_mask=tl.zeros(L, L + 1, dtype=tl.bool, device=device))
    with pytest.raises(RuntimeError, match="is_causal"):
        m(x, x, x, need_weights=False, is_causal=True)
