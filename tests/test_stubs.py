"""The type stubs (tensorlab/__init__.pyi, tensorlab/tensor.pyi; PEP 561 via tensorlab/py.typed) are what
`python -m tensorlab._stubs` generates from the running package: an op added without regenerating them fails
here. They parse, and list every public name of `tensorlab` and every public Tensor attribute."""
from __future__ import annotations

import ast
import os
import types

import tensorlab as tl
from tensorlab import _stubs

HERE = os.path.dirname(os.path.abspath(tl.__file__))


def test_committed_stubs_match_the_package():
    stale = []
    for name in _stubs.STUBS:
        path = os.path.join(HERE, name)
        with open(path) as f:
            if f.read() != _stubs.fresh(name):
                stale.append(name)
    assert not stale, f"stale stubs {stale}: run `python -m tensorlab._stubs` and commit the result"


def _defined(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def test_stubs_list_every_public_name():
    with open(os.path.join(HERE, "__init__.pyi")) as f:
        pkg = _defined(ast.parse(f.read()))
    missing = [n for n in dir(tl) if not n.startswith("_") and n.isidentifier() and n not in pkg
               and not isinstance(getattr(tl, n), types.ModuleType)]  # submodules a test imported later
    assert not missing, missing
    with open(os.path.join(HERE, "tensor.pyi")) as f:
        tree = ast.parse(f.read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = _defined(cls)
    missing = [n for n in dir(tl.Tensor) if not n.startswith("_") and n not in methods]
    assert not missing, missing
    add = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "add")
    assert [a.arg for a in add.args.kwonlyargs] == ["alpha", "out"]  # parameters as the runtime has them


def test_the_package_is_marked_typed():
    assert os.path.isfile(os.path.join(HERE, "py.typed"))
