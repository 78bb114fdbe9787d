"""Every keyword name torch's functions and Tensor methods take, tensorlab's take too: torch's own type stubs
(torch/_C/_VariableFunctions.pyi for torch.*, torch/_C/__init__.pyi's TensorBase for Tensor methods) list each
overload's parameters; for every name both have, each parameter name of any overload (but the named-tensor
ones) must be one tensorlab's signature accepts by keyword. The few names the stubs list that torch itself
refuses, or that tensorlab deliberately lacks, are data below, each with its reason."""
from __future__ import annotations

import ast
import inspect
import os

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle

# (namespace.name, parameter): why tensorlab does not take it by that name
ACCEPTED = {
    ("Tensor.requires_grad_", "mode"): "the stub's name; torch itself takes requires_grad= (checked below)",
    ("torch.isin", "element"): "the stub's scalar overloads; torch itself refuses element=/test_element=",
    ("torch.isin", "test_element"): "as element",
    ("torch.set_num_threads", "num"): "torch.set_num_threads takes no keyword arguments",
    ("torch.mm", "out_dtype"): "torch 2.13's out_dtype (a float32 result of 16-bit CUDA inputs) is not in tensorlab yet",
    ("torch.bmm", "out_dtype"): "as mm",
    ("torch.addmm", "out_dtype"): "as mm",
    ("torch.baddbmm", "out_dtype"): "as mm",
    ("torch.full", "names"): "named tensors are not part of tensorlab",
    ("torch.det", "input"): "one function is torch.det and torch.linalg.det, whose keyword is A",
    ("torch.matrix_exp", "input"): "one function is torch.matrix_exp and torch.linalg.matrix_exp, whose keyword is A",
}


def _stub_overloads(path, cls=None):
    tree = ast.parse(open(path).read())
    body = tree.body
    if cls is not None:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    found = {}
    for node in body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            if "Dimname" in ast.unparse(node.args):  # named-tensor overloads
                continue
            names = [a.arg for a in node.args.args + node.args.kwonlyargs if a.arg != "self"]
            found.setdefault(node.name, []).append(names)
    return found


def _refused(fn, names):
    """The names of `names` that fn does not take by keyword; None when fn has no Python signature."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return []
    by_keyword = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return [n for n in names if n not in by_keyword]


def _gaps(torch):
    stubs = os.path.join(os.path.dirname(torch.__file__), "_C")
    gaps, checked = [], 0
    for space, path, cls, ours_of in (
            ("torch", "_VariableFunctions.pyi", None, lambda n: getattr(tl, n, None)),
            ("Tensor", "__init__.pyi", "TensorBase", lambda n: getattr(tl.Tensor, n, None))):
        for name, overloads in _stub_overloads(os.path.join(stubs, path), cls).items():
            ours = ours_of(name)
            if ours is None or not callable(ours) or isinstance(ours, type):
                continue
            names = []
            for ov in overloads:
                names += [n for n in ov if n not in names]
            refused = _refused(ours, names)
            if refused is None:
                continue
            checked += 1
            gaps += [(f"{space}.{name}", n) for n in refused]
    return gaps, checked


def test_every_torch_keyword_name_is_accepted(torch):
    gaps, checked = _gaps(torch)
    assert checked > 500, checked
    new = sorted(g for g in gaps if g not in ACCEPTED)
    assert not new, f"{len(new)} keyword names torch takes and tensorlab does not:\n" + "\n".join(
        f"  {f}({p}=...)" for f, p in new)
    stale = sorted(k for k in ACCEPTED if k not in gaps)
    assert not stale, f"accepted gaps that are gone (remove them from ACCEPTED): {stale}"


def test_the_accepted_names_are_what_torch_does(torch):
    x = torch.ones(2)
    with pytest.raises(TypeError):
        x.requires_grad_(mode=True)
    x.requires_grad_(requires_grad=True)
    tl.ones(2).requires_grad_(requires_grad=True)
    with pytest.raises(TypeError):
        torch.isin(element=x, test_element=x)
    with pytest.raises(TypeError):
        torch.set_num_threads(num=1)


def test_keywords_in_use(device, torch):
    """A few of the keyword forms the audit added, with values, against torch."""
    x, tx = tl.arange(6.0, device=device).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    cases = [
        (lambda m, t: m.reshape(input=t, shape=(3, 2))),
        (lambda m, t: m.permute(t, dims=(1, 0))),
        (lambda m, t: t.permute(dims=(1, 0))),
        (lambda m, t: t.expand(size=(2, 2, 3))),
        (lambda m, t: t.repeat(repeats=(2, 1))),
        (lambda m, t: m.zeros(size=(2, 2))),
        (lambda m, t: t.new_ones(size=(3,))),
        (lambda m, t: m.swapaxes(t, axis0=0, axis1=1)),
        (lambda m, t: t.max(other=t * 0 + 2)),
        (lambda m, t: t.where(t > 2, other=-t)),
        (lambda m, t: m.dot(t[0], tensor=t[1])),
        (lambda m, t: t.hsplit(sections=3)[1]),
        (lambda m, t: m.flatten(input=t)),
        (lambda m, t: m.softmax(t, 1, out=m.empty(2, 3, device=t.device))),
        (lambda m, t: m.argsort(t, stable=True, dim=1, out=m.empty(2, 3, dtype=m.int64, device=t.device))),
        (lambda m, t: m.result_type(tensor=t, other=1)),
        (lambda m, t: m.promote_types(type1=m.int32, type2=m.float32)),
    ]
    for case in cases:
        ours, theirs = case(tl, x), case(torch, tx)
        if isinstance(ours, tl.Tensor):
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
            np.testing.assert_allclose(np.array(ours.cpu().tolist()), theirs.numpy(), rtol=1e-6)
        else:
            assert str(ours).split(".")[-1] == str(theirs).split(".")[-1]
