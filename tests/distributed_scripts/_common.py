"""Shared by the scripts tests/test_distributed.py launches on several ranks: deterministic per-rank
data and the NumPy reference of every reduction."""
from __future__ import annotations

import numpy as np

import tensorlab as tl

DTYPES = {"float32": tl.float32, "float64": tl.float64, "int64": tl.int64, "bool": tl.bool, "int32": tl.int32,
          "float16": tl.float16, "bfloat16": tl.bfloat16, "int8": tl.int8, "uint8": tl.uint8}


def data(rank, shape, dtype, seed, small=False):
    """Rank `rank`'s array (NumPy) of `shape`: the same on every rank that asks for it."""
    rng = np.random.default_rng(1000 * seed + rank)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int64", "int32", "int8"):
        lo, hi = (-3, 4) if small else (-50, 51)
        return rng.integers(lo, hi, size=shape).astype(dtype)
    if dtype == "uint8":
        return rng.integers(0, 4 if small else 60, size=shape).astype(np.uint8)
    a = rng.standard_normal(shape)
    if small:  # products of many ranks stay near 1
        a = 0.5 + rng.random(shape)
    if dtype in ("float16", "bfloat16"):
        return a.astype(np.float32)
    return a.astype(dtype)


def reference(op, arrays, dtype):
    """What reducing `arrays` (one per rank) with `op` gives, as torch defines it."""
    a = np.stack(arrays)
    n = len(arrays)
    if dtype == "bool":
        return {"SUM": a.any(0), "MAX": a.any(0), "PRODUCT": a.all(0), "MIN": a.all(0), "BAND": a.all(0),
                "BOR": a.any(0), "BXOR": np.bitwise_xor.reduce(a, 0)}[op]
    if op == "SUM":
        return a.sum(0)
    if op == "PRODUCT":
        return a.prod(0)
    if op == "MIN":
        return a.min(0)
    if op == "MAX":
        return a.max(0)
    if op == "AVG":
        if a.dtype.kind == "f":
            return a.sum(0) / n
        s = a.sum(0)
        return np.where(s < 0, -(np.abs(s) // n), s // n)
    if op == "BAND":
        return np.bitwise_and.reduce(a, 0)
    if op == "BOR":
        return np.bitwise_or.reduce(a, 0)
    if op == "BXOR":
        return np.bitwise_xor.reduce(a, 0)
    raise ValueError(op)


def host(t):
    """A tensor's values as NumPy (float16/bfloat16 as float32)."""
    t = t.cpu()
    if t.dtype in (tl.float16, tl.bfloat16):
        t = t.float()
    return t.numpy()


def close(t, expected, dtype, what):
    got = host(t)
    expected = np.asarray(expected)
    if dtype in ("float32",):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=what)
    elif dtype in ("float16", "bfloat16"):
        np.testing.assert_allclose(got, expected, rtol=2e-2, atol=2e-2, err_msg=what)
    elif dtype == "float64":
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype), err_msg=what)


def tensor(a, dtype, device):
    return tl.tensor(a, dtype=DTYPES[dtype], device=device)
