"""tl.save / tl.load when things go wrong (issue 38, items 3, 4 and 6): saves killed at random
points leave the old or the new checkpoint whole; mmap'ed tensors outlive a re-save; crafted
files (internal attributes set through BUILD, float layouts, allocations the file does not back,
zip bombs) are refused; a fuzz over mutated checkpoints never crashes, hangs or over-allocates;
a checkpoint taken while another thread trains always loads.

The kill and fuzz sweeps run a fixed-seed subset; TENSORLAB_FULL_SWEEPS=1 runs the full ones."""
from __future__ import annotations

import collections
import io
import json
import os
import pickle
import random
import signal
import struct
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import storage as tl_storage
from tensorlab.interop import serialization as S

FULL = os.environ.get("TENSORLAB_FULL_SWEEPS") == "1"
ROOT = Path(__file__).resolve().parent.parent


def _ck(obj) -> bytes:
    b = io.BytesIO()
    tl.save(obj, b)
    return b.getvalue()


def _rezip(data: bytes, pkl: bytes = None, edit=None) -> io.BytesIO:
    """The checkpoint `data` with its data.pkl replaced (valid CRCs), or its records edited."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for info in src.infolist():
            payload = src.read(info)
            if pkl is not None and info.filename.endswith("/data.pkl"):
                payload = pkl
            if edit is not None:
                payload = edit(info.filename, payload)
            zf.writestr(info.filename, payload)
    out.seek(0)
    return out


# -- 3: atomic saves ------------------------------------------------------------------------------
def _version(k, n=1 << 18):
    return {"step": k, "w": tl.full((n,), float(k)), "b": tl.full((n // 4,), float(-k))}


def _check_version(path, versions):
    got = tl.load(path)
    k = got["step"]
    assert k in versions
    assert np.all(got["w"].numpy() == k) and np.all(got["b"].numpy() == -k)
    return k


def test_save_killed_at_random_points_leaves_a_whole_checkpoint(tmp_path):
    # a forked child re-saves versions 1, 2, ... over version 0 until it is SIGKILLed at a random
    # moment; what is left must load whole and be one of the versions (the old code truncated
    # the file first: a kill mid-write lost the old checkpoint)
    rng = random.Random(38)
    path = tmp_path / "ck.pt"
    tl.save(_version(0), path)
    lost = newer = 0
    kills = 60 if FULL else 8
    for trial in range(kills):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: save until killed
            try:
                os.close(r)
                os.write(w, b"go")
                k = 1000 * (trial + 1)
                while True:
                    k += 1
                    tl.save(_version(k), path)
            finally:
                os._exit(1)
        os.close(w)
        os.read(r, 2)
        os.close(r)
        time.sleep(rng.uniform(0.0, 0.15))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        try:
            newer += _check_version(path, range(0, 1000 * (kills + 2))) > 1000 * (trial + 1)
        except Exception:
            lost += 1
    assert lost == 0, f"{lost} of {kills} kills lost the checkpoint"
    assert newer >= kills // 2, f"the children saved a new version before only {newer} of {kills} kills"
    for leftover in tmp_path.glob(".ck.pt.*.tmp"):  # a kill may leave its temporary file behind
        leftover.unlink()


def test_save_replaces_by_rename_and_keeps_mode(tmp_path):
    path = tmp_path / "m.pt"
    tl.save({"a": tl.arange(3.)}, path)
    os.chmod(path, 0o640)
    ino = os.stat(path).st_ino
    tl.save({"a": tl.arange(4.)}, path)
    st = os.stat(path)
    assert st.st_ino != ino and (st.st_mode & 0o777) == 0o640
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    # a symbolic link is followed (the file it names is replaced, the link stays)
    link = tmp_path / "link.pt"
    link.symlink_to(path)
    tl.save({"a": tl.arange(5.)}, link)
    assert link.is_symlink() and tl.load(path)["a"].shape == (5,)
    # a failing pickle leaves the old file and no temporary file
    with pytest.raises(Exception):
        tl.save({"a": tl.arange(6.), "f": lambda: 0}, path)
    assert tl.load(path)["a"].shape == (5,)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.pt", "m.pt"]
    with pytest.raises(FileNotFoundError, match="nowhere"):  # the target's own path, as open() names it
        tl.save(tl.arange(2.), tmp_path / "nowhere" / "x.pt")
    # file objects keep torch's behaviour: written where they stand
    b = io.BytesIO(b"xx")
    b.seek(2)
    tl.save(tl.arange(2.), b)
    b.seek(2)
    assert tl.load(b).tolist() == [0.0, 1.0]


def test_mmap_tensors_survive_a_resave(tmp_path):
    # mapped tensors of the old file keep their values; a shrinking save used to SIGBUS the process
    path = tmp_path / "mm.pt"
    tl.save({"a": tl.arange(200000.)}, path)
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            got = tl.load(path, mmap=True)
            tl.save({"a": tl.arange(3.)}, path)  # shrinks the file
            ok = np.array_equal(got["a"].numpy(), np.arange(200000.)) and tl.load(path)["a"].tolist() == [0, 1, 2]
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), f"the process died of signal {os.WTERMSIG(status)}"
    assert os.WEXITSTATUS(status) == 0


# -- 4: a loader that trusts nothing -------------------------------------------------------------
def _param_pkl(build_state):
    """_rebuild_parameter(_rebuild_tensor_v2(...), True, OrderedDict()) then BUILD state."""
    base = _ck(tl.nn.Parameter(tl.arange(3.)))
    pkl = zipfile.ZipFile(io.BytesIO(base)).read("archive/data.pkl")
    assert pkl.endswith(b".")
    return base, pkl[:-1] + pickle.dumps(build_state, protocol=2)[2:-1] + b"b."


@pytest.mark.parametrize("state", [{"_dtype": 1}, {"_meta": None}, {"_vc": [0]}, {"_requires_grad": "yes"},
                                   (None, {"_dtype": 1}), ({"requires_grad": False}, None), {"grad": None}])
def test_forged_tensor_state_refused(state):
    base, pkl = _param_pkl(state)
    with pytest.raises(pickle.UnpicklingError, match="(?s)Weights only load failed.*(Can only build|internal)"):
        tl.load(_rezip(base, pkl))


def _tensor_pkl(offset=0, size=(3,), stride=(1,), requires_grad=False, numel=3):
    """A hand-made data.pkl: _rebuild_tensor_v2 over storage 0 (FloatStorage)."""
    g = pickle.GLOBAL
    p = io.BytesIO()
    p.write(b"\x80\x02" + g + b"torch._utils\n_rebuild_tensor_v2\n(")
    p.write(b"(X\x07\x00\x00\x00storage" + g + b"torch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu")
    p.write(pickle.dumps(numel, 2)[2:-1] + b"tQ")
    for v in (offset, size, stride, requires_grad):
        p.write(pickle.dumps(v, 2)[2:-1])
    p.write(g + b"collections\nOrderedDict\n)RtR.")
    return p.getvalue()


def test_hand_made_tensor_pickle_loads():
    base = _ck(tl.arange(3.))
    assert tl.load(_rezip(base, _tensor_pkl())).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("kw, what", [(dict(size=(2.5,)), "element 2.5 is float"), (dict(stride=(1.0,)), "is float"),
                                      (dict(offset=0.0), "storage_offset must be an int"),
                                      (dict(requires_grad="yes"), "requires_grad must be a bool"),
                                      (dict(size=3), "size must be a tuple"),
                                      (dict(size=(1,) * 65, stride=(1,) * 65), "65 dimensions")])
def test_layouts_must_be_ints(kw, what):
    with pytest.raises(pickle.UnpicklingError, match=what):
        tl.load(_rezip(_ck(tl.arange(3.)), _tensor_pkl(**kw)))


def test_allocations_checked_against_the_record():
    base = _ck(tl.arange(3.))
    # a storage of 2**32 floats over a 12-byte record: refused before allocating 16 GiB
    with pytest.raises(RuntimeError, match="holds 12 bytes but its storage needs 17179869184"):
        tl.load(_rezip(base, _tensor_pkl(numel=2 ** 32)))
    # a 16 GiB bytearray from a tiny file (GLOBAL builtins.bytearray, REDUCE (2**34,))
    bomb = b"\x80\x02c__builtin__\nbytearray\n\x8a\x05\x00\x00\x00\x00\x04\x85R."
    ck = _rezip(base, bomb)
    assert len(ck.getvalue()) < 2048
    with pytest.raises(pickle.UnpicklingError, match=r"bytearray\(17179869184\)"):
        tl.load(ck)
    # protocol 5's BYTEARRAY8 allocates its length before reading it
    with pytest.raises(pickle.UnpicklingError, match="BYTEARRAY8 of 17179869184 bytes"):
        tl.load(_rezip(base, b"\x80\x05\x96" + struct.pack("<Q", 1 << 34) + b"."))
    # bytearrays pickled from real data still load (under the default)
    assert tl.load(io.BytesIO(_ck({"b": bytearray(b"\x00\xffab")})))["b"] == bytearray(b"\x00\xffab")


def test_zip_bomb_refused_before_inflating():
    base = _ck(tl.arange(3.))
    src = zipfile.ZipFile(io.BytesIO(base))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            payload = src.read(info)
            if info.filename.endswith("/data/0"):
                payload = b"\x00" * (8 << 20)
            zf.writestr(info.filename, payload, compress_type=zipfile.ZIP_DEFLATED)
    data = out.getvalue()
    with pytest.raises(RuntimeError, match="would inflate from .* to 8388608 bytes, beyond the limit"):
        tl.load(io.BytesIO(data))
    tl.serialization.MAX_DECOMPRESSED_BYTES = 16 << 20  # an explicit limit lets a trusted file in
    try:
        assert S.MAX_DECOMPRESSED_BYTES == 16 << 20
        assert tl.load(io.BytesIO(data)).tolist() == [0.0, 0.0, 0.0]
    finally:
        tl.serialization.MAX_DECOMPRESSED_BYTES = None
    # a stored record that claims more bytes than the file holds
    bad = bytearray(base)
    central = bad.rindex(b"archive/data/0") - 46
    struct.pack_into("<I", bad, central + 20, 1 << 30)  # compressed size in the central directory
    struct.pack_into("<I", bad, central + 24, 1 << 30)
    with pytest.raises(RuntimeError, match="past the end of the file|truncated or damaged"):
        tl.load(io.BytesIO(bytes(bad)))


def test_a_stream_of_two_checkpoints_loads_the_first(torch):
    b = io.BytesIO()
    tl.save({"x": tl.tensor([1.0])}, b)
    tl.save({"x": tl.tensor([2.0])}, b)
    b.seek(0)
    assert tl.load(b)["x"].tolist() == [1.0]
    assert tl.load(b)["x"].tolist() == [2.0]  # the next load reads the next one
    b.seek(0)
    assert torch.load(b)["x"].tolist() == [1.0]
    tb = io.BytesIO()
    torch.save({"x": torch.tensor([3.0])}, tb)
    torch.save({"x": torch.tensor([4.0])}, tb)
    tb.seek(0)
    assert tl.load(tb)["x"].tolist() == [3.0]
    # the first checkpoint loads even when what follows it is damaged
    for data in (b.getvalue(), tb.getvalue()):
        damaged = io.BytesIO(data[:len(data) * 3 // 4])
        assert tl.load(damaged)["x"].tolist() in ([1.0], [3.0])


def test_everything_save_writes_loads_under_the_default(tmp_path):
    m = tl.nn.Linear(3, 2)
    objs = {"counter": collections.Counter({1: 2, "a": 3}),
            "dd": collections.defaultdict(list, {"a": [1]}), "dds": collections.defaultdict(set, {1: {2}}),
            "dd0": collections.defaultdict(None, {1: 1}), "od": collections.OrderedDict(a=1), "c": 1 + 2j,
            "ba": bytearray(b"xy"), "set": {1, 2}, "fs": frozenset({3}), "bytes": b"\x00\x01"}
    opts = [tl.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), tl.optim.Adam(m.parameters()),
            tl.optim.AdamW(m.parameters()), tl.optim.RMSprop(m.parameters())]
    for o in opts:
        m(tl.randn(4, 3)).sum().backward()
        o.step()
        objs[type(o).__name__] = o.state_dict()
    sched = tl.optim.lr_scheduler
    o = tl.optim.SGD(m.parameters(), lr=0.1)
    for s in (sched.MultiStepLR(o, [1, 2]), sched.StepLR(o, 2), sched.OneCycleLR(o, 1.0, total_steps=10),
              sched.ReduceLROnPlateau(o), sched.CosineAnnealingWarmRestarts(o, 3)):
        objs[type(s).__name__] = s.state_dict()
    objs["model"] = m.state_dict()
    tl.save(objs, tmp_path / "all.pt")
    got = tl.load(tmp_path / "all.pt")
    assert got["counter"] == objs["counter"] and type(got["counter"]) is collections.Counter
    assert got["dd"]["zz"] == [] and got["dds"]["q"] == set() and got["dd0"].default_factory is None
    assert got["MultiStepLR"]["milestones"] == objs["MultiStepLR"]["milestones"]
    assert type(got["MultiStepLR"]["milestones"]) is collections.Counter
    assert got["c"] == 1 + 2j and got["ba"] == bytearray(b"xy")
    assert set(got["Adam"]["state"]) == set(objs["Adam"]["state"])
    # a defaultdict whose factory is not a plain builtin type is refused
    evil = b"\x80\x02ccollections\ndefaultdict\ncos\nsystem\n\x85R."
    with pytest.raises(pickle.UnpicklingError, match="os.system"):
        tl.load(_rezip(_ck(1), evil))
    lister = b"\x80\x02c__builtin__\nlist\n)R."  # builtins.list only as a default_factory
    with pytest.raises(pickle.UnpicklingError, match="default_factory"):
        tl.load(_rezip(_ck(1), lister))


_FUZZ = r'''
import io, json, pickle, random, sys, time, tracemalloc, zipfile
import tensorlab as tl
seed, count = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
m = tl.nn.Sequential(tl.nn.Linear(8, 4), tl.nn.BatchNorm1d(4))
opt = tl.optim.Adam(m.parameters())
m(tl.randn(3, 8)).sum().backward(); opt.step()
b = io.BytesIO()
tl.save({"model": m.state_dict(), "opt": opt.state_dict(), "view": tl.arange(12.).reshape(3, 4)[1:, ::2],
         "p": tl.nn.Parameter(tl.ones(2))}, b)
base = b.getvalue()
src = zipfile.ZipFile(io.BytesIO(base))
pkl = src.read("archive/data.pkl")
def rezip(newpkl):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            zf.writestr(info.filename, newpkl if info.filename.endswith("data.pkl") else src.read(info))
    return out.getvalue()
def mutate(data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(5)
        i = rng.randrange(len(data))
        if kind == 0:
            data[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[i] = rng.choice([0, 1, 0x7f, 0x80, 0xff, rng.randrange(256)])
        elif kind == 2:
            del data[i:i + rng.randint(1, 16)]
        elif kind == 3:
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        else:
            struct_at = rng.randrange(max(1, len(data) - 4))
            data[struct_at:struct_at + 4] = rng.choice([b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\x00\x00\x01\x00"])
    return bytes(data)
stats = {"cases": 0, "kinds": {}, "slowest": 0.0, "peak": 0, "loaded": 0}
for k in range(count):
    data = rezip(mutate(pkl)) if k % 2 else mutate(base)
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        tl.load(io.BytesIO(data))
        kind = "ok"
    except (RuntimeError, pickle.UnpicklingError) as e:
        kind = type(e).__name__
    except BaseException as e:
        kind = "BAD " + type(e).__name__ + ": " + str(e)[:200]
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    stats["cases"] += 1
    stats["kinds"][kind] = stats["kinds"].get(kind, 0) + 1
    stats["slowest"] = max(stats["slowest"], dt)
    stats["peak"] = max(stats["peak"], peak)
print(json.dumps(stats))
'''


def test_fuzzed_checkpoints_fail_cleanly(tmp_path):
    # mutated bytes (raw, and re-zipped with valid CRCs so the unpickler sees them): only
    # RuntimeError/UnpicklingError, no crash (a subprocess), no hang, no allocation beyond 64 MiB
    script = tmp_path / "fuzz.py"
    script.write_text(_FUZZ)
    count = 4000 if FULL else 300
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, str(script), "38", str(count)], capture_output=True, text=True,
                         timeout=1800 if FULL else 240, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    stats = json.loads(run.stdout.strip().splitlines()[-1])
    bad = {k: v for k, v in stats["kinds"].items() if k.startswith("BAD")}
    assert not bad, bad
    assert stats["cases"] == count
    assert stats["slowest"] < 10.0, stats
    assert stats["peak"] < 64 << 20, stats


# -- 6: consistent snapshots ----------------------------------------------------------------------
def test_checkpoints_taken_while_training_always_load(tmp_path):
    # a thread updates the weights in place (under storage.write_lock, as a step publishes) while
    # the main thread saves: every checkpoint loads (the CRC is computed over the bytes written)
    # and holds one step's values in every tensor
    w = tl.zeros(1 << 18)
    v = tl.zeros(1 << 16)
    stop = threading.Event()

    def train():
        while not stop.is_set():
            with tl_storage.write_lock:
                w.add_(1.0)
                v.add_(1.0)

    def scribble():  # and one that writes without the lock: records must still be whole
        u = tl.zeros(1 << 18)
        while not stop.is_set():
            u.add_(1.0)
            w2[:] = u

    w2 = tl.zeros(1 << 18)
    threads = [threading.Thread(target=train), threading.Thread(target=scribble)]
    for t in threads:
        t.start()
    unloadable = torn = 0
    try:
        saves = 60 if FULL else 15
        for i in range(saves):
            path = tmp_path / f"s{i % 3}.pt"
            tl.save({"w": w, "v": v, "w2": w2}, path)
            try:
                got = tl.load(path)
            except Exception:
                unloadable += 1
                continue
            a, b = got["w"].numpy(), got["v"].numpy()
            if not (np.all(a == a[0]) and np.all(b == a[0])):
                torn += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert unloadable == 0 and torn == 0, (unloadable, torn)


def test_damaged_files_say_what_is_wrong(tmp_path, torch):
    """The commonest damage, an interrupted download or save: torch's exception kinds, and a message that says
    the file is truncated or empty (not advice to re-save it with torch)."""
    path = tmp_path / "ck.pt"
    tl.save({"w": tl.ones(3)}, path)
    data = path.read_bytes()
    for name, cut in (("half", data[: len(data) // 2]), ("tail", data[:-10]), ("three", data[:3])):
        p = tmp_path / f"{name}.pt"
        p.write_bytes(cut)
        with pytest.raises(RuntimeError, match="truncated") as ours:
            tl.load(p)
        if name != "three":  # torch reads a 3-byte stub as a pickle (UnpicklingError)
            with pytest.raises(RuntimeError):
                torch.load(p)
        assert "Re-save" not in str(ours.value)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(EOFError, match="empty"):
        tl.load(empty)
    with pytest.raises(EOFError):
        torch.load(empty)


def test_checkpoints_taken_while_an_optimizer_steps_hold_one_step(tmp_path):
    """A real training thread (SGD steps, which publish under storage.write_lock) and checkpoints of the model
    taken meanwhile: every parameter of every checkpoint has taken the same number of steps."""
    model = tl.nn.Sequential(tl.nn.Linear(256, 256), tl.nn.Linear(256, 256))
    with tl.no_grad():
        for p in model.parameters():
            p.zero_()
    opt = tl.optim.SGD(model.parameters(), lr=1.0)
    stop = threading.Event()

    def train():
        while not stop.is_set():
            for p in model.parameters():
                p.grad = tl.ones_like(p)  # each step subtracts exactly 1 from every element
            opt.step()

    t = threading.Thread(target=train)
    t.start()
    mixed = 0
    try:
        for i in range(12):
            path = tmp_path / f"m{i % 2}.pt"
            tl.save(model.state_dict(), path)
            values = {float(v.reshape(-1)[0]) for v in tl.load(path).values()}
            got = {float(x) for v in tl.load(path).values() for x in np.unique(v.numpy())}
            mixed += len(got) != 1 or got != values
    finally:
        stop.set()
        t.join(30)
    assert mixed == 0, f"{mixed} of 12 checkpoints mix parameters of different steps"
