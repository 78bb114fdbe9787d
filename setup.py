"""Builds the compiled hot path (tensorlab/_build.py's HOT_PATH) with Cython from the .py sources
themselves, where Cython and a C compiler exist; anywhere else the same package installs as pure
Python (the .py files are always shipped and are the fallback). Everything else about the package
is in pyproject.toml. TENSORLAB_NO_COMPILE=1 skips the compiled build on purpose."""
import ast
import os
import shutil
import sysconfig

from setuptools import setup


def _hot_path():
    """tensorlab/_build.py's HOT_PATH: the one list, read without importing the package."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorlab", "_build.py")) as f:
        tree = ast.parse(f.read())
    return next(ast.literal_eval(node.value) for node in tree.body
                if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["HOT_PATH"])


def _compiler():
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(cc.split()[0]) is not None


def ext_modules():
    if os.environ.get("TENSORLAB_NO_COMPILE", "") not in ("", "0") or not _compiler():
        return []
    try:
        from Cython.Build import cythonize
        from Cython.Compiler import Options
    except ImportError:
        return []
    from setuptools import Extension
    Options.docstrings = True
    exts = [Extension(name, [name.replace(".", "/") + ".py"]) for name in _hot_path()]
    return cythonize(exts, quiet=True, build_dir="build/cython", nthreads=0, language_level=3, compiler_directives={
        # the .py semantics exactly: annotations are not C types, Python's integers and division
        "annotation_typing": False, "cdivision": False, "binding": True, "embedsignature": False,
        "always_allow_keywords": True, "profile": False, "linetrace": False,
        "warn.undeclared": False, "show_performance_hints": False})


setup(ext_modules=ext_modules())
