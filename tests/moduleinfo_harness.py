"""torch's own ModuleInfo database (torch.testing._internal.common_modules.module_db) run against
tensorlab, as tests/opinfo_harness.py runs op_db: for each ModuleInfo and each of its samples, in
train and in eval mode, torch's module and ours are built with the same constructor arguments
(converted by opinfo_harness.to_tl), torch's parameters and buffers are copied into ours, both run
forward on the converted inputs; the outputs are compared (opinfo_harness.compare: torch's
tolerances per dtype), then backward with the same grad_outputs: the gradients of the inputs and of
every parameter, and the buffers after forward. Where torch raises (module_error_inputs_func) the
exception's kind is compared. Used by tests/test_moduleinfo_db.py and runnable on its own:

    python tests/moduleinfo_harness.py [--full] [--device cuda] [--modules nn.Linear,nn.Conv2d] [--json FILE]

prints the classes existing (of torch's 114 ModuleInfos), the samples agreeing and the missing
classes. --full adds float64 to float32. Regenerating the known-failures file after a merge (run from
tests/, once per device; the file is merged into, so delete it first to drop fixed entries):

    PYTHONPATH=.. python moduleinfo_harness.py --write-known moduleinfo_known_failures.json
    PYTHONPATH=.. python -m tensorlab.backends.cuda.emulation moduleinfo_harness.py --device cuda \\
        --every 3 --write-known moduleinfo_known_failures.json
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings

import numpy as np

import tensorlab as tl
import opinfo_harness as OH  # noqa: E402
from device_waits import settle_all  # noqa: E402  (a bad index found on a CUDA device raises at the next wait)
from opinfo_harness import (BOTH_RAISED, MISMATCH, OURS_RAISED, PASS, SKIPPED, TOLERANCES, TORCH_RAISED,
                            Unsupported, _error_kind, compare, to_tl, to_torch)

# modules whose forward draws random numbers (dropout masks, rrelu slopes, fractional pooling regions):
# in training mode only the shapes and dtypes are compared, and no gradients
RANDOM_IN_TRAINING = ("Dropout", "RReLU", "FractionalMaxPool", "Transformer", "MultiheadAttention")
# gradients of float32 composites round many times more than a forward does
GRAD_SCALE = 10.0


def _torch():
    import torch
    return torch


def module_db():
    from torch.testing._internal.common_modules import module_db as db
    return db


def key(info):
    return info.name


def our_class(info):
    """tensorlab's class of the ModuleInfo's name (nn.Linear -> tl.nn.Linear), or None."""
    obj = tl
    for part in info.name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def exists(info):
    return our_class(info) is not None


# -- constructor arguments: torch's callables (activation=F.gelu) are tensorlab's of the same name ----------
def _module_arg(m, device):
    """A torch module passed to a constructor (TransformerEncoder's encoder_layer, a norm) as ours, built
    from its attributes; its parameters are copied from torch's later, with the outer module's."""
    torch = _torch()
    name = type(m).__name__
    if name == "TransformerEncoderLayer":
        act = m.activation
        act = _convert(act, device) if not isinstance(act, torch.nn.Module) else _module_arg(act, device)
        return tl.nn.TransformerEncoderLayer(m.self_attn.embed_dim, m.self_attn.num_heads, m.linear1.out_features,
                                             m.dropout.p, act, m.norm1.eps, m.self_attn.batch_first, m.norm_first,
                                             m.linear1.bias is not None)
    if name == "LayerNorm":
        return tl.nn.LayerNorm(m.normalized_shape, m.eps, m.elementwise_affine, m.bias is not None)
    if name in ("ReLU", "GELU", "Tanh", "Sigmoid", "Identity"):
        return getattr(tl.nn, name)()
    raise Unsupported(f"a module argument ({name})")


def _convert(x, device):
    torch = _torch()
    if isinstance(x, torch.nn.Module):
        return _module_arg(x, device)
    if callable(x) and not isinstance(x, (type, torch.Tensor)) and getattr(x, "__module__", "") and \
            x.__module__.startswith("torch"):
        name = getattr(x, "__name__", None)
        for ns in (tl.nn.functional, tl):
            if name and getattr(ns, name, None) is not None:
                return getattr(ns, name)
        raise Unsupported(f"callable {x!r}")
    if isinstance(x, list):
        return [_convert(v, device) for v in x]
    if isinstance(x, tuple) and not isinstance(x, torch.Size):
        return tuple(_convert(v, device) for v in x)
    if isinstance(x, dict):
        return {k: _convert(v, device) for k, v in x.items()}
    return to_tl(x, device)


def _outcome(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn()
            settle_all()
            return r, None
        except Exception as e:  # noqa: BLE001 (the exception is the outcome)
            try:
                settle_all()  # a check the call launched before it raised is not left for a later sample
            except Exception:  # noqa: BLE001
                pass
            return None, e


def _tensors(r):
    torch = _torch()
    if isinstance(r, (torch.Tensor, tl.Tensor)):
        return [r]
    if isinstance(r, (list, tuple)):
        return [t for v in r for t in _tensors(v)]
    if isinstance(r, dict):
        return [t for k in sorted(r) for t in _tensors(r[k])]
    return []


def _build(info, sample, device, dtype):
    """(torch module, our module or an exception, outcome of torch's construction)."""
    torch = _torch()
    ci = sample.constructor_input
    tm, terr = _outcome(lambda: info.module_cls(*ci.args, **ci.kwargs).to(dtype))
    args = _convert((ci.args, ci.kwargs), device)
    cls = our_class(info)
    om, oerr = _outcome(lambda: cls(*args[0], **args[1]).to(device=device, dtype=to_tl(dtype, device)))
    del torch
    return tm, terr, om, oerr


def _forward_args(sample, device):
    fi = sample.forward_input
    return (fi.args, fi.kwargs), to_tl((fi.args, fi.kwargs), device)


def _copy_state(tm, om):
    """torch's parameters and buffers into ours (by name); None, or the first difference of names."""
    tp, op = dict(tm.named_parameters()), dict(om.named_parameters())
    tb = {k: v for k, v in tm.named_buffers()}
    ob = {k: v for k, v in om.named_buffers()}
    if sorted(tp) != sorted(op):
        return f"parameters {sorted(op)} vs torch's {sorted(tp)}"
    if sorted(tb) != sorted(ob):
        return f"buffers {sorted(ob)} vs torch's {sorted(tb)}"
    with tl.no_grad():
        for src, dst in ((tp, op), (tb, ob)):
            for name, t in src.items():
                o = dst[name]
                if tuple(o.shape) != tuple(t.shape):
                    return f"{name} shape {tuple(o.shape)} vs torch's {tuple(t.shape)}"
                o.copy_(to_tl(t.detach(), o.device).to(o.dtype))
    return None


def _materialize(tm, om, targs, oargs):
    """Lazy modules: one eval-mode forward each without grad infers the shapes (no buffer moves in eval)."""
    torch = _torch()
    tm.eval()
    om.eval()
    with torch.no_grad():
        tm(*targs[0], **targs[1])
    with tl.no_grad():
        om(*oargs[0], **oargs[1])


def _grad_tol(dt):
    tol = TOLERANCES.get(str(dt).replace("torch.", ""), {"rtol": 1e-5, "atol": 1e-5})
    return {k: v * GRAD_SCALE for k, v in tol.items()}


def run_sample(info, sample, device, dtype, training, index):
    """(status, detail) of one sample in one mode: forward, buffers, gradients."""
    torch = _torch()
    try:
        targs, oargs = _forward_args(sample, device)
    except Unsupported as e:
        return SKIPPED, str(e)
    try:
        tm, terr, om, oerr = _build(info, sample, device, dtype)
    except Unsupported as e:
        return SKIPPED, str(e)
    if terr is not None or oerr is not None:
        if terr is not None and oerr is not None:
            return (BOTH_RAISED, None) if _error_kind(terr) is _error_kind(oerr) else (
                MISMATCH, f"construction: tensorlab raised {type(oerr).__name__}, torch {type(terr).__name__}")
        if oerr is not None:
            return OURS_RAISED, f"construction: {type(oerr).__name__}: {oerr}"[:300]
        return TORCH_RAISED, f"construction: torch raised {type(terr).__name__}: {terr}"[:300]
    if getattr(info, "is_lazy", False) or hasattr(tm, "has_uninitialized_params"):
        _, e1 = _outcome(lambda: _materialize(tm, om, targs, oargs))
        if e1 is not None:
            return OURS_RAISED, f"materializing: {type(e1).__name__}: {e1}"[:300]
    diff = _copy_state(tm, om)
    if diff is not None:
        return MISMATCH, diff
    tm.train(training)
    om.train(training)
    random = training and any(w in info.name for w in RANDOM_IN_TRAINING)
    torch.manual_seed(index)
    want, terr = _outcome(lambda: tm(*targs[0], **targs[1]))
    got, oerr = _outcome(lambda: om(*oargs[0], **oargs[1]))
    if terr is not None and oerr is not None:
        return (BOTH_RAISED, None) if _error_kind(terr) is _error_kind(oerr) else (
            MISMATCH, f"forward: tensorlab raised {type(oerr).__name__}, torch {type(terr).__name__}: {terr}"[:300])
    if oerr is not None:
        return OURS_RAISED, f"forward: {type(oerr).__name__}: {oerr}"[:300]
    if terr is not None:
        return TORCH_RAISED, f"forward: torch raised {type(terr).__name__}: {terr}"[:300]
    t_out, o_out = _tensors(want), _tensors(got)
    if len(t_out) != len(o_out):
        return MISMATCH, f"forward: {len(o_out)} output tensors, torch has {len(t_out)}"
    d = compare(tuple(o_out), tuple(t_out), values=not random)
    if d is not None:
        return MISMATCH, "forward: " + d
    ob = dict(om.named_buffers())
    for name, b in tm.named_buffers():
        d = compare(ob[name], b.detach(), values=not random)
        if d is not None:
            return MISMATCH, f"buffer {name} after forward: {d}"
    if random:
        return PASS, None
    # backward: the same grad_outputs into every differentiable output
    t_leaves = [t for t in _tensors(targs) if t.requires_grad] + [p for _, p in tm.named_parameters()
                                                                     if p.requires_grad]
    o_leaves = [t for t in _tensors(oargs) if t.requires_grad] + [p for _, p in om.named_parameters()
                                                                     if p.requires_grad]
    pairs = [(t, o) for t, o in zip(t_out, o_out) if t.requires_grad and t.dtype.is_floating_point]
    if not t_leaves or not pairs:
        return PASS, None
    if len(t_leaves) != len(o_leaves):
        return MISMATCH, f"{len(o_leaves)} tensors require grad, torch has {len(t_leaves)}"
    rng = np.random.default_rng(index)
    ws = [rng.standard_normal(tuple(t.shape)) for t, _ in pairs]
    tg, terr = _outcome(lambda: torch.autograd.grad([t for t, _ in pairs],
                                                    t_leaves, [torch.tensor(w, dtype=t.dtype) for (t, _), w in
                                                               zip(pairs, ws)], allow_unused=True))
    if terr is not None:
        return PASS, None  # torch cannot differentiate it either
    o_pairs = [(o, w) for (_, o), w in zip(pairs, ws) if isinstance(o, tl.Tensor) and o.requires_grad]
    if not o_pairs:
        return MISMATCH, "backward: no output of ours requires grad"
    og, oerr = _outcome(lambda: tl.autograd.grad([o for o, _ in o_pairs], o_leaves,
                                                 [tl.tensor(w, dtype=o.dtype, device=device) for o, w in o_pairs],
                                                 allow_unused=True))
    if oerr is not None:
        return OURS_RAISED, f"backward: {type(oerr).__name__}: {oerr}"[:300]
    names = [f"input {i}" for i in range(len(t_leaves) - len(list(tm.parameters())))] + \
        [n for n, p in tm.named_parameters() if p.requires_grad]
    for i, (a, b) in enumerate(zip(og, tg)):
        if a is None and b is None:
            continue
        a = to_torch(a) if a is not None else torch.zeros_like(b)
        b = b if b is not None else torch.zeros_like(a)
        try:
            torch.testing.assert_close(a, b, equal_nan=True, check_stride=False, **_grad_tol(b.dtype))
        except AssertionError as e:
            name = names[i] if i < len(names) else str(i)
            return MISMATCH, f"gradient of {name}: " + " ".join(str(e).split("\n")[:3])[:300]
    return PASS, None


def run_error_sample(info, err, device, dtype):
    """(status, detail) of one module_error_inputs_func entry: ours must raise the same kind."""
    from torch.testing._internal.common_modules import ModuleErrorEnum
    sample = err.module_error_input
    try:
        targs, oargs = _forward_args(sample, device) if sample.forward_input is not None else ((), ((), {}))
        tm, terr, om, oerr = _build(info, sample, device, dtype)
    except Unsupported as e:
        return SKIPPED, str(e)
    if err.error_on == ModuleErrorEnum.CONSTRUCTION_ERROR or terr is not None:
        if terr is None:
            return SKIPPED, "torch did not raise"
        if oerr is None:
            return MISMATCH, f"construction: torch raised {type(terr).__name__}, tensorlab did not"
        return (BOTH_RAISED, None) if _error_kind(terr) is _error_kind(oerr) else (
            MISMATCH, f"construction: tensorlab raised {type(oerr).__name__}: {oerr}, torch {type(terr).__name__}"[:300])
    if oerr is not None:
        return OURS_RAISED, f"construction: {type(oerr).__name__}: {oerr}"[:300]
    _, terr = _outcome(lambda: tm(*targs[0], **targs[1]))
    _, oerr = _outcome(lambda: om(*oargs[0], **oargs[1]))
    if terr is None:
        return SKIPPED, "torch did not raise"
    if oerr is None:
        return MISMATCH, f"forward: torch raised {type(terr).__name__}, tensorlab did not"
    return (BOTH_RAISED, None) if _error_kind(terr) is _error_kind(oerr) else (
        MISMATCH, f"forward: tensorlab raised {type(oerr).__name__}: {oerr}, torch {type(terr).__name__}"[:300])


def samples(info, dtype, training, seed=0):
    torch = _torch()
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(info.module_inputs_func(info, device="cpu", dtype=dtype, requires_grad=True, training=training))


def error_samples(info, dtype):
    if info.module_error_inputs_func is None:
        return []
    _torch().manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(info.module_error_inputs_func(info, device="cpu", dtype=dtype, requires_grad=False,
                                                  training=True))


def run_module(info, dtypes, device="cpu", every=1):
    """[(mode, dtype name, sample index, status, detail)] for one ModuleInfo."""
    out = []
    for dt in dtypes:
        dname = str(dt).replace("torch.", "")
        if dt not in info.supported_dtypes("cpu"):
            continue
        for training in (True, False):
            mode = "train" if training else "eval"
            try:
                ss = samples(info, dt, training)
            except Exception as e:  # noqa: BLE001 (torch's own sample generator failed here)
                out.append((mode, dname, -1, SKIPPED, f"module_inputs_func failed: {e}"[:200]))
                continue
            for i, s in enumerate(ss):
                if i % every:
                    continue
                status, detail = run_sample(info, s, device, dt, training, i)
                out.append((mode, dname, i, status, detail))
        try:
            es = error_samples(info, dt)
        except Exception as e:  # noqa: BLE001
            es = []
            out.append(("error", dname, -1, SKIPPED, f"module_error_inputs_func failed: {e}"[:200]))
        for i, e in enumerate(es):
            status, detail = run_error_sample(info, e, device, dt)
            out.append(("error", dname, i, status, detail))
    return out


def summarize(infos, results):
    have = [m for m in infos if exists(m)]
    return {"moduleinfos": len(infos), "exist": len(have), **OH.tally(results),
            "missing": sorted(key(m) for m in infos if not exists(m))}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--full", action="store_true", help="float64 samples too")
    p.add_argument("--device", default="cpu")
    p.add_argument("--modules", default=None, help="comma-separated ModuleInfo names (nn.Linear,...)")
    p.add_argument("--every", type=int, default=1, help="every n-th sample only (as the CUDA test's subset)")
    p.add_argument("--json", default=None)
    p.add_argument("--verbose", action="store_true", help="print every disagreement")
    p.add_argument("--write-known", default=None,
                   help="merge this run's failures into the known-failures file given (device|module|mode|dtype|i)")
    args = p.parse_args(argv)
    torch = _torch()
    infos = [m for m in module_db() if args.modules is None or m.name in args.modules.split(",")]
    dtypes = [torch.float32, torch.float64] if args.full else [torch.float32]
    results = {}
    for info in infos:
        if exists(info):
            results[key(info)] = run_module(info, dtypes, args.device, args.every)
    s = summarize(infos, results)
    failing = {f"{args.device}|{k}|{m}|{dt}|{i}": f"{st}: {d}" for k, rows in results.items()
               for m, dt, i, st, d in rows if st in (MISMATCH, OURS_RAISED, TORCH_RAISED)}
    if args.write_known:
        OH.merge_known(args.write_known, failing)
    if args.verbose:
        for k, v in sorted(failing.items()):
            print(f"  {k}: {v}")
    print(f"ModuleInfos: {s['exist']} / {s['moduleinfos']} classes exist in tensorlab; samples agreeing: "
          f"{s['agree']} / {s['samples_run']} ({s['agree_pct']:.1f}%); {s['counts']}")
    print("missing:", " ".join(s["missing"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": s, "results": results}, f, indent=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
