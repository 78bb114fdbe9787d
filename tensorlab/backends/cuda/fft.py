"""CUDA FFT primitive (the name of backends/cpu/fft.py): cuFFT through driver.fft on the current
stream. The transformed dims are moved last into a contiguous scratch copy, transformed in groups of
at most three (cuFFT's rank limit; separable: the leading groups as c2c), scaled once over the
result's (..., 2) real view, and copied into the output's view."""
from __future__ import annotations

from ...layout import Layout
from . import launch as K
from .active import driver
from .complex import parts
from .driver import Pointer
from .memory import copy, retire, temp

__all__ = ("fft",)


def _permuted(op, perm):
    lay = op.layout
    return K._operand_of(op.buffer, Layout(tuple(lay.shape[d] for d in perm), tuple(lay.stride[d] for d in perm),
                                           lay.offset), op.dtype)


def _prod(xs):
    n = 1
    for v in xs:
        n *= v
    return n


def _run(kind, src, dst, r, forward, cdt):
    """driver.fft over the last r dims of contiguous src -> contiguous dst (n from the real side)."""
    shape = tuple((dst if kind == "c2r" else src).layout.shape)
    n = shape[len(shape) - r:]
    batch = _prod(shape[:len(shape) - r])
    if batch == 0 or _prod(n) == 0:
        return
    if K._fault_plans:
        K._faults.hit("launch")
    device = src.buffer.device
    driver.fft(kind, Pointer(src.buffer, src.layout.offset * src.dtype.itemsize),
               Pointer(dst.buffer, dst.layout.offset * dst.dtype.itemsize), tuple(int(v) for v in n), int(batch),
               bool(forward), cdt.name, driver.current_stream(device))


def fft(out, x, kind, dims, forward, onesided, last_size, scale):
    xo, oo = K.operand(x), K.operand(out)
    device = oo.buffer.device
    nd = len(xo.layout.shape)
    dims = list(dims)
    perm = [d for d in range(nd) if d not in dims] + dims
    cdt = oo.dtype if oo.dtype.category == 3 else xo.dtype.to_complex()
    temps = []

    def scratch(shape, dt):
        t = temp(tuple(shape), dt, device)
        temps.append(t)
        return t

    try:
        xs = _permuted(xo, perm)
        os_ = _permuted(oo, perm)
        if kind == "r2c" and not onesided:  # two-sided: the real signal as complex, then c2c
            cur = scratch(xs.layout.shape, cdt)
            copy(cur, xs)
            kind = "c2c"
        else:
            cur = scratch(xs.layout.shape, xs.dtype)
            copy(cur, xs)
        r = len(dims)
        if kind == "c2c":
            done = 0
            while done < r:  # groups of <= 3 dims from the last
                g = min(3, r - done)
                rest = tuple(cur.layout.shape)
                front = len(rest) - done - g
                # transform dims [front, front+g): move them last, transform, move back
                order = [d for d in range(len(rest)) if not front <= d < front + g] + list(range(front, front + g))
                src = cur
                if done:
                    src = scratch(tuple(rest[d] for d in order), cdt)
                    copy(src, _permuted(cur, order))
                res = scratch(src.layout.shape, cdt)
                _run("c2c", src, res, g, forward, cdt)
                if done:
                    inv = [order.index(d) for d in range(len(rest))]
                    back = scratch(rest, cdt)
                    copy(back, _permuted(res, inv))
                    res = back
                cur = res
                done += g
        elif kind == "r2c":
            g = min(3, r)
            shape = list(cur.layout.shape)
            shape[-1] = shape[-1] // 2 + 1
            res = scratch(shape, cdt)
            _run("r2c", cur, res, g, True, cdt)
            cur = res
            if r > g:  # the leading dims as forward c2c (separable)
                lead = scratch(shape, cdt)
                copy(lead, cur)
                sub = K._operand_of(lead.buffer, lead.layout, cdt)
                cur = _c2c_leading(sub, r - g, g, True, cdt, scratch)
        else:  # c2r: the leading dims first as inverse c2c, then c2r over the last <= 3
            g = min(3, r)
            if r > g:
                cur = _c2c_leading(cur, r - g, g, False, cdt, scratch)
            src = scratch(cur.layout.shape, cdt)  # cuFFT's C2R may overwrite its input
            copy(src, cur)
            shape = list(cur.layout.shape)
            shape[-1] = last_size
            res = scratch(shape, cdt.to_real())
            _run("c2r", src, res, g, False, cdt)
            cur = res
        if scale != 1.0:
            from .elementwise import binary
            v = parts(cur) if cur.dtype.category == 3 else cur
            binary(v, "mul", v, float(scale), v.dtype)
        copy(os_, cur)
    finally:
        for t in temps:
            retire(t.buffer)


def _c2c_leading(cur, nlead, g_last, forward, cdt, scratch):
    """c2c over the `nlead` dims just before the last g_last dims of contiguous `cur` (groups of <= 3)."""
    shape = tuple(cur.layout.shape)
    nd = len(shape)
    first = nd - g_last - nlead
    done = 0
    while done < nlead:
        g = min(3, nlead - done)
        lo = first + nlead - done - g
        order = [d for d in range(nd) if not lo <= d < lo + g] + list(range(lo, lo + g))
        src = scratch(tuple(shape[d] for d in order), cdt)
        copy(src, _permuted(cur, order))
        res = scratch(src.layout.shape, cdt)
        _run("c2c", src, res, g, forward, cdt)
        inv = [order.index(d) for d in range(nd)]
        back = scratch(shape, cdt)
        copy(back, _permuted(res, inv))
        cur = back
        done += g
    return cur
