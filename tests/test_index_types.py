"""Every CUDA launcher picks 32-bit indexing (Index = int) when the tensor fits, 64-bit only beyond 2**31:
statically, every kernel template with an Index parameter is instantiated for both index types in
tensorlab/kernel_table.py (so a launcher can choose); dynamically, a battery of small ops covering every
launcher runs on the (emulated) device and each launched instantiation must have Index = int. The few
kernels without an Index parameter are listed below with the reason."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.kernel_table import INDEX_TYPES, KERNELS

KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"

# Kernels that take no Index: what they index and why 64-bit (or nothing) is right there.
NO_INDEX = {
    "attention_fwd": "one block per (batch*head, query block); 64-bit row offsets computed once per block",
    "attention_bwd_delta": "as attention_fwd",
    "attention_bwd_dkdv": "as attention_fwd",
    "attention_bwd_dq": "as attention_fwd",
    "check_flag": "reads one bool",
}

_TEMPLATE = re.compile(r"template\s*<([^{;]*?)>\s*__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(",
                       re.S)


def _template_params():
    """kernel name -> its template parameter names, from kernels/*.cu."""
    params = {}
    for src in KERNELS:
        for m in _TEMPLATE.finditer((KERNELS_DIR / src).read_text()):
            params[m.group(2)] = [p.split()[-1] for p in _top_level(m.group(1))]
    return params


def _top_level(text):
    """The comma-separated items of a template list, not splitting inside nested <...>."""
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return items + [cur.strip()]


def _split(expr):
    """(kernel name, top-level template arguments) of a name expression."""
    if "<" not in expr:
        return expr, []
    name, inner = expr.split("<", 1)
    return name, _top_level(inner[:-1])


def _index_of(expr, params):
    name, args = _split(expr)
    names = params.get(name)
    if names is None or "Index" not in names:
        return None
    return args[names.index("Index")]


# kernels instantiated for 32-bit indexing only, with why: their launcher falls back to a kernel that has both
INT_ONLY = {
    "unary_vec": "the generated contiguous rows (kernel_table.elementwise_vec_expr); tensors of 2**31 elements or "
                 "more take the generic unary_kernel, which has both",
    "binary_vec": "as unary_vec (binary_kernel has both)",
    "ternary_vec": "as unary_vec (ternary_kernel has both)",
    "unary_strided": "the generated typed strided rows (kernel_table.elementwise_strided_expr); tensors of 2**31 "
                     "elements or more take the generic unary_kernel, which has both",
    "binary_strided": "as unary_strided (binary_kernel has both)",
    "ternary_strided": "as unary_strided (ternary_kernel has both)",
}


def test_every_indexed_kernel_has_both_index_types():
    params = _template_params()
    missing = []
    for src, exprs in KERNELS.items():
        seen = {}
        for e in exprs:
            name, args = _split(e)
            if name not in params and name not in NO_INDEX:
                missing.append(f"{src}: {name} has no template in the source")
                continue
            if name in NO_INDEX:
                assert "Index" not in params.get(name, ()), f"{name} takes an Index: drop it from NO_INDEX"
                continue
            k = params[name].index("Index") if "Index" in params[name] else None
            if k is None:
                missing.append(f"{src}: {name} has no Index parameter (add one, or list it in NO_INDEX with why)")
                continue
            key = (name, tuple(a for j, a in enumerate(args) if j != k))
            seen.setdefault(key, set()).add(args[k])
        missing += [f"{src}: {name}<{', '.join(rest)}> only for {sorted(ix)}" for (name, rest), ix in seen.items()
                    if set(ix) != set(INDEX_TYPES) and not (name in INT_ONLY and set(ix) == {"int"})]
    assert not missing, "\n".join(missing)


def _battery(dev):
    """Small inputs through every CUDA launcher family."""
    rng = np.random.default_rng(0)
    f = lambda *s: tl.tensor(rng.standard_normal(s).astype(np.float32), device=dev)  # noqa: E731
    x, y = f(4, 5, 6), f(6, 5)
    (x.transpose(0, 2).contiguous(), x + 1, x.sum(1), x.cumsum(2), x.cumprod(0), tl.softmax(x, 1),
     x.half().float(), tl.zeros(3, 4, device=dev).fill_(2), x[:, 1:3].clone(), x.permute(2, 0, 1) * 2)
    (x.reshape(20, 6) @ y, x @ f(6, 3), x.argmax(1), x.amax(0))
    i = tl.tensor([0, 2, 1], device=dev)
    (x[i], x.index_select(1, i), x.gather(2, i.reshape(1, 1, 3).expand(4, 5, 3)), x.nonzero(), x[x > 0])
    z = x.clone()
    z.index_put_((i,), tl.ones(3, 5, 6, device=dev), accumulate=True)
    z.scatter_add_(2, i.reshape(1, 1, 3).expand(4, 5, 3), tl.ones(4, 5, 3, device=dev))
    (tl.cat([x, x], 1), tl.roll(x, 2, 1), x.tril(), x.triu(1), x.sort(2), tl.eye(5, 7, device=dev),
     tl.arange(10, device=dev), tl.linspace(0, 1, 9, device=dev))
    tl.manual_seed(0)
    (tl.rand(5, 7, device=dev), tl.randn(3, 3, device=dev), tl.randint(0, 9, (4,), device=dev),
     tl.randperm(600, device=dev), tl.bernoulli(tl.full((5,), 0.5, device=dev)),
     tl.empty(4, 4, device=dev).t().uniform_())
    im = f(2, 3, 9, 9).requires_grad_()
    w = f(4, 3, 3, 3).requires_grad_()
    out = tl.nn.functional.conv2d(im, w, padding=1)
    out = tl.nn.functional.max_pool2d(out, 2) + tl.nn.functional.adaptive_max_pool2d(out, 4)
    out = tl.nn.functional.layer_norm(out, (4,)) + tl.nn.functional.batch_norm(out, None, None, training=True)
    out.sum().backward()
    c = tl.complex(x, x)
    (c * c, c.abs(), c.exp())
    emb = tl.nn.Embedding(10, 4).to(dev)
    emb(tl.tensor([1, 3, 3], device=dev)).sum().backward()
    cell = tl.nn.LSTMCell(3, 4).to(dev)
    cell(f(2, 3))[0].sum().backward()
    lstm = tl.nn.LSTM(3, 4).to(dev)
    lstm(f(5, 2, 3).requires_grad_())[0].sum().backward()


def test_small_tensors_launch_int_indexing(cuda_device):
    from tensorlab.backends.cuda.launch import LAUNCHES
    before = dict(LAUNCHES)
    _battery(cuda_device)
    tl.cuda.synchronize()
    launched = [key for key, n in LAUNCHES.items() if n != before.get(key, 0)]
    assert len({src for src, _ in launched}) >= 15, sorted({src for src, _ in launched})
    params = _template_params()
    wide = [f"{src}: {expr}" for src, expr in launched if _index_of(expr, params) not in (None, "int")]
    unknown = [f"{src}: {expr}" for src, expr in launched
               if _index_of(expr, params) is None and _split(expr)[0] not in NO_INDEX]
    assert not wide, "64-bit instantiations launched for small tensors:\n" + "\n".join(wide)
    assert not unknown, "kernels without an Index parameter (list them in NO_INDEX with why):\n" + "\n".join(unknown)


@pytest.fixture
def cuda_device(device):
    if device != "cuda":
        pytest.skip("the launchers' index choice is a CUDA kernel choice")
    return device
