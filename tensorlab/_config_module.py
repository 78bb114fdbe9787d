"""The config objects of torch._dynamo.config and torch._inductor.config as scripts use them:
attribute reads and writes of torch's keys (nested ones too: inductor.config.triton.cudagraphs),
remembered and read back; an unknown key raises AttributeError as torch's does; patch() as a
context manager or decorator; get_config_copy/save_config/load_config. tensorlab compiles
nothing, so no key changes a result. The key names and defaults are torch 2.13's
(tensorlab/_config_keys.json, written by tools/gen_config_keys.py from the installed torch)."""
from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import pickle
import types

_KEYS = None
_STORES = {}  # kind -> the live {key: value} of that config (aliases may point across configs)


def _keys(kind):
    global _KEYS
    if _KEYS is None:
        with open(os.path.join(os.path.dirname(__file__), "_config_keys.json")) as f:
            _KEYS = json.load(f)
    return _KEYS[kind], _KEYS.get(kind + "_aliases", {})


# defaults torch computes where it runs, not constants of its release (the key file holds the generating
# machine's values): recomputed here as torch computes them
_COMPUTED = {"debug_dir_root": lambda: os.path.join(os.getcwd(), "torch_compile_debug")}


def _store(kind):
    if kind not in _STORES:
        store = copy.deepcopy(_keys(kind)[0])
        for key, default in _COMPUTED.items():
            if key in store:
                store[key] = default()
        _STORES[kind] = store
    return _STORES[kind]


def _resolve(kind, key):
    """(store, key) that `key` of config `kind` reads and writes: itself, or its alias's target."""
    target = _keys(kind)[1].get(key)
    if target is not None:
        return _store(target[0]), target[1]
    return _store(kind), key


class _Node:
    """Attribute access over the flat {dotted key: value} store of one config, under `prefix`."""

    def __init__(self, kind, torch_name, prefix=""):
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_store", _store(kind))
        object.__setattr__(self, "_torch_name", torch_name)
        object.__setattr__(self, "_prefix", prefix)

    def _full(self, name):
        return self._prefix + name

    def _is_group(self, full):
        dotted = full + "."
        return any(k.startswith(dotted) for k in self._store)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        full = self._full(name)
        store, key = _resolve(self._kind, full)
        if key in store:
            return store[key]
        if self._is_group(full):
            return _Node(self._kind, self._torch_name, full + ".")
        raise AttributeError(f"{self._torch_name}.{full} does not exist")

    def __setattr__(self, name, value):
        full = self._full(name)
        store, key = _resolve(self._kind, full)
        if key not in store:
            raise AttributeError(f"{self._torch_name}.{full} does not exist")
        store[key] = value

    def __dir__(self):
        n = len(self._prefix)
        return sorted({k[n:].split(".")[0] for k in self._store if k.startswith(self._prefix)})


class ConfigModule(types.ModuleType):
    """A config module: its keys are attributes; patch, get_config_copy, save_config, load_config."""

    def _setup(self, kind, torch_name):
        d = self.__dict__
        d["_store"] = _store(kind)
        d["_torch_name"] = torch_name
        d["_root"] = _Node(kind, torch_name)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["_root"], name)

    def __setattr__(self, name, value):
        if name.startswith("__") or name in type(self).__dict__:
            return super().__setattr__(name, value)
        setattr(self.__dict__["_root"], name, value)

    def __dir__(self):
        return sorted(set(dir(self.__dict__["_root"])) | {"patch", "get_config_copy", "save_config", "load_config"})

    def _check(self, changes):
        for k in changes:
            if k not in self._store:
                raise AttributeError(f"{self._torch_name}.{k} does not exist")

    def get_config_copy(self):
        """{key: value} of every key (dotted names for nested ones)."""
        return copy.deepcopy(self._store)

    def save_config(self):
        """The current values, pickled (load_config restores them)."""
        return pickle.dumps(self._store, protocol=2)

    def load_config(self, maybe_pickled_config):
        """Restore values from save_config()'s bytes or a {key: value} dict."""
        changes = (pickle.loads(maybe_pickled_config) if isinstance(maybe_pickled_config, (bytes, bytearray))
                   else dict(maybe_pickled_config))
        self._check(changes)
        self._store.update(changes)

    def patch(self, arg1=None, arg2=None, **kwargs):
        """Set keys for a `with` block or a decorated function, then restore them:
        patch("key", value), patch({"key": value}) or patch(key=value)."""
        if isinstance(arg1, str):
            changes = {arg1: arg2}
        elif isinstance(arg1, dict):
            changes = dict(arg1)
        else:
            changes = {}
        changes.update(kwargs)
        self._check(changes)
        return _Patch(self._store, changes)


class _Patch(contextlib.ContextDecorator):
    def __init__(self, store, changes):
        self._store, self._changes, self._saved = store, changes, []

    def __enter__(self):
        self._saved.append({k: self._store[k] for k in self._changes})
        self._store.update(self._changes)
        return self

    def __exit__(self, *exc):
        self._store.update(self._saved.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return inner


def install(module_name, kind, torch_name):
    import sys
    module = sys.modules[module_name]
    module.__class__ = ConfigModule
    module._setup(kind, torch_name)
