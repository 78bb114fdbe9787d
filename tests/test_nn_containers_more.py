"""ModuleList and ModuleDict against torch: registration names, reprs (torch's compact runs),
indexing, deletion with renumbering, update from mappings and pairs, and modules run on each device."""
from __future__ import annotations

import pytest

import tensorlab as tl
import tensorlab.nn as nn
from layers_oracle import close, copy_weights, pair, randn


def _both(torch, build):
    return build(nn), build(torch.nn)


def test_module_list(device, torch):
    m, tm = _both(torch, lambda n: n.ModuleList([n.Linear(3, 3) for _ in range(3)] + [n.Tanh()]))
    assert repr(m) == repr(tm)
    assert [k for k, _ in m.named_parameters()] == [k for k, _ in tm.named_parameters()]
    copy_weights(tm, m, device)
    x, tx = pair(torch, device, randn(2, 3))
    for layer, tlayer in zip(m, tm):
        x, tx = layer(x), tlayer(tx)
    close(x, tx)
    assert len(m) == 4 and isinstance(m[-1], nn.Tanh) and len(m[1:3]) == 2
    del m[0]
    del tm[0]
    assert list(m._modules) == list(tm._modules) == ["0", "1", "2"]
    m.insert(1, nn.ReLU())
    tm.insert(1, torch.nn.ReLU())
    m.append(nn.Sigmoid()).extend([nn.Identity()])
    tm.append(torch.nn.Sigmoid()).extend([torch.nn.Identity()])
    assert repr(m) == repr(tm)
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())
    with pytest.raises(IndexError, match="index 9 is out of range"):
        m[9]
    with pytest.raises(NotImplementedError, match='missing the required "forward" function'):
        m(tl.zeros(1, device=device))


def test_module_dict(device, torch):
    m, tm = _both(torch, lambda n: n.ModuleDict({"emb": n.Embedding(5, 3), "blocks": n.ModuleList([n.Linear(3, 3)])}))
    m.update([("head", nn.Linear(3, 2))])
    tm.update([("head", torch.nn.Linear(3, 2))])
    assert repr(m) == repr(tm)
    assert [k for k, _ in m.named_parameters()] == [k for k, _ in tm.named_parameters()]
    copy_weights(tm, m, device)
    i, ti = pair(torch, device, [[1, 4]])
    close(m["head"](m["blocks"][0](m["emb"](i))), tm["head"](tm["blocks"][0](tm["emb"](ti))))
    assert list(m.keys()) == ["emb", "blocks", "head"] and "head" in m and len(m) == 3
    assert isinstance(m.pop("head"), nn.Linear) and "head" not in m
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        m.update([("x",)])
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable"):
        m.update(3)
