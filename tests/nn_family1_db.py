"""torch's ModuleInfo samples (common_modules.module_db) run on torch and on tensorlab for the module
classes of issue 34 family 1: construct both with the sample's arguments, copy torch's state_dict into
ours, run forward, then backward with one grad_output per output, and compare outputs, input grads and
parameter grads; the module_error_inputs must raise torch's exception class. Used by
tests/test_nn_modules_family1.py (a fixed subset in CI) and, as a script, for the per-class report:

    PYTHONPATH=.. python nn_family1_db.py [--device cuda] [--classes A,B] [--limit samples-per-mode] [--dtype float32]
"""
from __future__ import annotations

import collections
import sys
import warnings

import numpy as np

import tensorlab as tl

FAMILY1 = ("CELU GLU Hardshrink Hardswish PReLU SELU Softmax2d Softmin Softshrink Threshold "
           "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d "
           "ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d ZeroPad1d ZeroPad2d "
           "ZeroPad3d CosineEmbeddingLoss GaussianNLLLoss HingeEmbeddingLoss LinearCrossEntropyLoss "
           "MarginRankingLoss MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss PoissonNLLLoss "
           "SoftMarginLoss").split()
TOL = {"float64": dict(rtol=1e-7, atol=1e-7), "float32": dict(rtol=2e-4, atol=2e-5)}


def _to_ours(obj, device, torch):
    if isinstance(obj, torch.Tensor):
        t = tl.tensor(obj.detach().cpu().numpy(), device=device)
        return t.requires_grad_(True) if obj.requires_grad else t
    if isinstance(obj, tuple):
        return tuple(_to_ours(o, device, torch) for o in obj)
    if isinstance(obj, list):
        return [_to_ours(o, device, torch) for o in obj]
    if isinstance(obj, dict):
        return {k: _to_ours(v, device, torch) for k, v in obj.items()}
    if isinstance(obj, torch.dtype):
        return getattr(tl, str(obj).split(".")[-1])
    if isinstance(obj, torch.device):
        return device
    return obj


def _leaves(obj, torch):
    """torch's inputs as fresh leaves (the samples build some as non-leaf views, e.g. x.abs())"""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone().requires_grad_(obj.requires_grad)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_leaves(o, torch) for o in obj)
    if isinstance(obj, dict):
        return {k: _leaves(v, torch) for k, v in obj.items()}
    return obj


def _tensors(obj, kind):
    if isinstance(obj, kind):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _tensors(o, kind)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o, kind)]
    return []


def _np(t):
    return t.detach().cpu().numpy()


def _close(a, b, what, tol=None):
    tol = tol or TOL["float64"]
    a, b = np.asarray(_np(a)), np.asarray(_np(b))
    if a.shape != b.shape:
        raise AssertionError(f"{what}: shape {a.shape} != torch's {b.shape}")
    if a.dtype.kind in "fc":
        np.testing.assert_allclose(a, b, err_msg=what, equal_nan=True, **tol)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def module_infos(torch, classes=FAMILY1):
    from torch.testing._internal.common_modules import module_db
    return [m for m in module_db if m.module_cls.__name__ in classes]


def samples(info, torch, training, limit=None, dtype="float64"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = info.module_inputs_func(info, device="cpu", dtype=getattr(torch, dtype), requires_grad=True,
                                     training=training)
    return out[:limit] if limit else out


def run_sample(info, sample, device, torch, training, dtype="float64"):
    """Run one ModuleInput on both libraries and compare; raise AssertionError on disagreement."""
    name = info.module_cls.__name__
    cargs, ckw = sample.constructor_input.args, sample.constructor_input.kwargs
    fargs, fkw = sample.forward_input.args, sample.forward_input.kwargs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = info.module_cls(*cargs, **ckw).to(getattr(torch, dtype))
        m = getattr(tl.nn, name)(*_to_ours(cargs, device, torch), **_to_ours(ckw, device, torch))
    m.to(device)
    m.to(getattr(tl, dtype))
    tol = TOL[dtype]
    tm.train(training)
    m.train(training)
    sd = tm.state_dict()
    assert list(m.state_dict()) == list(sd), (list(m.state_dict()), list(sd))
    m.load_state_dict({k: tl.tensor(v.detach().numpy(), device=device) for k, v in sd.items()})
    assert repr(m) == repr(tm), (repr(m), repr(tm))
    targs, tkw = _leaves(fargs, torch), _leaves(fkw, torch)
    oargs, okw = _to_ours(targs, device, torch), _to_ours(tkw, device, torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ty = tm(*targs, **tkw)
        y = m(*oargs, **okw)
    touts, outs = _tensors(ty, torch.Tensor), _tensors(y, tl.Tensor)
    assert len(touts) == len(outs), (len(outs), len(touts))
    for i, (a, b) in enumerate(zip(outs, touts)):
        _close(a, b, f"{name} output {i}", tol)
    pairs = [(a, b) for a, b in zip(outs, touts) if b.requires_grad and b.dtype.is_floating_point]
    if not pairs:
        return
    rng = np.random.default_rng(7)
    gs = [rng.standard_normal(tuple(b.shape)).astype(np.dtype(dtype)) for _, b in pairs]
    torch.autograd.backward([b for _, b in pairs], [torch.tensor(g) for g in gs])
    tl.autograd.backward([a for a, _ in pairs], [tl.tensor(g, device=device) for g in gs])
    tin = [t for t in _tensors((targs, tkw), torch.Tensor) if t.requires_grad]
    oin = [t for t in _tensors((oargs, okw), tl.Tensor) if t.requires_grad]
    for i, (a, b) in enumerate(zip(oin, tin)):
        if b.grad is None:
            assert a.grad is None or not _np(a.grad).any(), f"{name} input {i} grad"
        else:
            assert a.grad is not None, f"{name}: input {i} has no grad, torch's has"
            _close(a.grad, b.grad, f"{name} input {i} grad", tol)
    tparams = dict(tm.named_parameters())
    for pname, p in m.named_parameters():
        tp = tparams[pname]
        if tp.grad is None:
            assert p.grad is None or not _np(p.grad).any(), f"{name} {pname} grad"
        else:
            assert p.grad is not None, f"{name}: parameter {pname} has no grad"
            _close(p.grad, tp.grad, f"{name} {pname} grad", tol)


def error_samples(info, torch):
    if info.module_error_inputs_func is None:
        return []
    return info.module_error_inputs_func(info, device="cpu", dtype=torch.float64, requires_grad=False,
                                         training=True)


def run_error_sample(info, err, device, torch):
    """The error sample raises torch's exception class on ours, at the same stage (construction/forward)."""
    from torch.testing._internal.common_modules import ModuleErrorEnum
    name = info.module_cls.__name__
    mi = err.module_error_input
    cargs = _to_ours(mi.constructor_input.args, device, torch)
    ckw = _to_ours(mi.constructor_input.kwargs, device, torch)
    cls = getattr(tl.nn, name)
    if err.error_on == ModuleErrorEnum.CONSTRUCTION_ERROR:
        try:
            cls(*cargs, **ckw)
        except err.error_type:
            return
        raise AssertionError(f"{name}({cargs}, {ckw}) did not raise {err.error_type.__name__}")
    m = cls(*cargs, **ckw).to(device)
    fargs = _to_ours(mi.forward_input.args, device, torch)
    fkw = _to_ours(mi.forward_input.kwargs, device, torch)
    try:
        m(*fargs, **fkw)
    except err.error_type:
        return
    raise AssertionError(f"{name} forward did not raise {err.error_type.__name__}")


def report(device="cpu", classes=FAMILY1, limit=None, dtype="float64"):
    import torch
    counts = collections.OrderedDict()
    fails = []
    for info in module_infos(torch, classes):
        name = info.module_cls.__name__
        ok = n = 0
        for training in (True, False):
            for s in samples(info, torch, training, limit, dtype):
                n += 1
                try:
                    run_sample(info, s, device, torch, training, dtype)
                    ok += 1
                except Exception as e:  # noqa: BLE001  (the report lists every disagreement)
                    fails.append(f"{name} [{s.desc}] training={training}: {type(e).__name__}: {str(e)[:300]}")
        eok = en = 0
        for e in error_samples(info, torch):
            en += 1
            try:
                run_error_sample(info, e, device, torch)
                eok += 1
            except Exception as ex:  # noqa: BLE001
                fails.append(f"{name} error sample: {type(ex).__name__}: {str(ex)[:300]}")
        counts[name] = (ok, n, eok, en)
    for name, (ok, n, eok, en) in counts.items():
        print(f"{name:32s} samples {ok}/{n}  error inputs {eok}/{en}")
    tot = [sum(c[i] for c in counts.values()) for i in range(4)]
    print(f"{'total':32s} samples {tot[0]}/{tot[1]}  error inputs {tot[2]}/{tot[3]}")
    for f in fails:
        print("FAIL", f)
    return counts, fails


if __name__ == "__main__":
    dev = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
    cls = sys.argv[sys.argv.index("--classes") + 1].split(",") if "--classes" in sys.argv else FAMILY1
    lim = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else None
    dt = sys.argv[sys.argv.index("--dtype") + 1] if "--dtype" in sys.argv else "float64"
    report(dev, cls, lim, dt)
