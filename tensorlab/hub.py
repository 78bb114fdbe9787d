"""tl.hub (torch.hub): models published as a directory with a hubconf.py. Loading from a local
directory (source="local") works as in torch; tensorlab never reaches the network, so a GitHub
repository (source="github") loads only from torch's hub cache (get_dir()/owner_repo_ref, as
torch.hub saved it), and load_state_dict_from_url / download_url_to_file read only files already
cached (or file:// URLs), otherwise they raise, naming the path to put the file at.

The cache directory is torch's: $TORCH_HOME/hub (default ~/.cache/torch/hub, or
$XDG_CACHE_HOME/torch/hub), so what torch downloaded is found."""
from __future__ import annotations

import builtins
import hashlib
import importlib.util
import os
import shutil
import sys
import uuid
from urllib.parse import urlparse

MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"

_hub_dir = None

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]


def _torch_home():
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME,
                                        os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")))


_get_torch_home = _torch_home  # torch's private name, which torchvision imports


try:  # torch.hub.tqdm: the tqdm package's progress bar when it is installed, else a plain one
    from tqdm import tqdm
except ImportError:
    class tqdm:  # noqa: N801 - torch's name
        """A text progress bar on stderr with the part of tqdm's interface torch.hub's users call:
        update(n), close(), a context manager; total=None shows the count only."""

        def __init__(self, iterable=None, total=None, disable=False, unit="it", unit_scale=False, unit_divisor=1000,
                     desc=None, file=None, **kwargs):
            self.iterable, self.total, self.disable, self.unit = iterable, total, disable, unit
            self.desc, self.file, self.n = desc, file, 0

        def __iter__(self):
            for x in self.iterable:
                yield x
                self.update(1)
            self.close()

        def update(self, n=1):
            self.n += n
            if self.disable:
                return
            out = self.file or sys.stderr
            head = f"{self.desc}: " if self.desc else ""
            if self.total:
                out.write(f"\r{head}{100.0 * self.n / self.total:.1f}%")
            else:
                out.write(f"\r{head}{self.n} {self.unit}")
            out.flush()

        def close(self):
            if not self.disable:
                (self.file or sys.stderr).write("\n")
            self.disable = True

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()
            return False


def get_dir():
    """The hub cache directory: set_dir()'s, else $TORCH_HOME/hub."""
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_torch_home(), "hub")


def set_dir(d):
    """Use directory `d` as the hub cache."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _import_hubconf(repo_dir):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    name = f"tensorlab_hubconf_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, repo_dir)  # hubconf.py imports its repository's modules
    try:
        spec.loader.exec_module(module)
    finally:
        try:
            sys.path.remove(repo_dir)
        except ValueError:
            pass
    missing = [d for d in getattr(module, VAR_DEPENDENCY, []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entrypoint(hubconf, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    fn = getattr(hubconf, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def _cached_repo(github, force_reload):
    """The directory torch.hub cached `owner/repo[:ref]` in; refuses when it is not there."""
    repo, _, ref = github.partition(":")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise ValueError(f'Invalid input: repo_or_dir should be of the form "repo_owner/repo_name[:ref]", got '
                         f"{github!r}")
    owner, name = repo.split("/")
    refs = [ref] if ref else ["main", "master"]
    candidates = [os.path.join(get_dir(), "_".join([owner, name, r.replace("/", "_")])) for r in refs]
    if not force_reload:
        for c in candidates:
            if os.path.isfile(os.path.join(c, MODULE_HUBCONF)):
                return c
    why = "force_reload=True asks for a fresh download" if force_reload else "it is not in the hub cache"
    raise RuntimeError(f"tl.hub: cannot load {github!r} from GitHub: {why}, and tensorlab does not download "
                       f"(no network access). Clone the repository and call load(path, model, source='local'), or "
                       f"put it at {candidates[0]}")


def _repo_dir(repo_or_dir, source, force_reload):
    source = source.lower() if isinstance(source, str) else source
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return os.fspath(repo_or_dir)
    return _cached_repo(repo_or_dir, force_reload)


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """Call entrypoint `model` of the hubconf.py in `repo_or_dir` with *args, **kwargs and return
    what it returns (source="local": a directory; "github": owner/repo[:ref] from the hub cache)."""
    repo_dir = _repo_dir(repo_or_dir, source, force_reload)
    return _entrypoint(_import_hubconf(repo_dir), model)(*args, **kwargs)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """The entrypoints (public callables) of a cached repository's hubconf.py (a local directory
    with a hubconf.py is accepted too)."""
    repo_dir = os.fspath(github) if os.path.isdir(os.fspath(github)) else _cached_repo(github, force_reload)
    hubconf = _import_hubconf(repo_dir)
    return [f for f in dir(hubconf) if callable(getattr(hubconf, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """The docstring of entrypoint `model` (a cached repository or a local directory)."""
    repo_dir = os.fspath(github) if os.path.isdir(os.fspath(github)) else _cached_repo(github, force_reload)
    return _entrypoint(_import_hubconf(repo_dir), model).__doc__


def _local_source(url):
    parsed = urlparse(url)
    return parsed.path if parsed.scheme == "file" else None


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Copy a file:// URL to `dst` (checking the SHA-256 prefix when given); any other URL is
    refused: tensorlab does not reach the network."""
    src = _local_source(url)
    if src is None:
        raise RuntimeError(f"tl.hub.download_url_to_file: tensorlab does not download ({url}); fetch the file "
                           f"yourself and save it as {dst}")
    dst = os.path.expanduser(os.fspath(dst))
    tmp = f"{dst}.{uuid.uuid4().hex}.partial"
    try:
        shutil.copyfile(src, tmp)
        if hash_prefix is not None:
            with builtins.open(tmp, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False, file_name=None,
                             weights_only=False):
    """tl.load of the checkpoint `url` names, from get_dir()/checkpoints (torch's cache layout) or
    model_dir; a file:// URL is copied there first. A file that is not cached is not downloaded:
    the error names where to put it."""
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        if _local_source(url) is None:
            raise RuntimeError(f"tl.hub.load_state_dict_from_url: {filename} is not cached and tensorlab does not "
                               f"download ({url}). Download it yourself and save it as {cached}")
        download_url_to_file(url, cached, None, progress)
    from .serialization import load as _load
    return _load(cached, map_location=map_location, weights_only=weights_only)
