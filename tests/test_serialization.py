"""tl.save / tl.load: PyTorch's zip checkpoints without torch. Files torch 2.13 wrote are committed
under tests/fixtures/torch_checkpoints (make_fixtures.py regenerates them); with torch installed
the test also writes fresh ones and reads ours back with torch.load(weights_only=True)."""
from __future__ import annotations

import io
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import serialization
from tensorlab.interop import serialization as S

FIXTURES = Path(__file__).parent / "fixtures" / "torch_checkpoints"
DTYPES = [tl.float32, tl.float64, tl.float16, tl.bfloat16, tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8, tl.bool]


def _fixture_values(dt, n=6):
    """make_fixtures.values, in NumPy."""
    if dt is tl.bool:
        return np.arange(n) % 2 == 0
    if dt is tl.uint8:
        return (np.arange(n) * 40).astype(np.uint8)
    return (np.arange(n) * 1.5 - 3.0).astype(dt.np)


def _host(t):
    return t.cpu().numpy()


# -- files torch wrote ---------------------------------------------------------------------------
def test_every_dtype_from_a_torch_file():
    sd = tl.load(FIXTURES / "dtypes.pt")
    assert set(sd) == {d.name for d in DTYPES}
    for dt in DTYPES:
        t = sd[dt.name]
        assert t.dtype is dt
        np.testing.assert_array_equal(_host(t), _fixture_values(dt))


def test_views_keep_their_layout_and_share():
    sd = tl.load(FIXTURES / "views.pt")
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    want = {"base": base, "col": base[:, 2], "t": base.T, "block": base[1:3, 2:5], "flat": base.reshape(-1)[5:]}
    for k, v in want.items():
        np.testing.assert_array_equal(sd[k].numpy(), v)
        assert sd[k].untyped_storage() is sd["base"].untyped_storage()
    assert sd["col"].stride() == (6,) and sd["col"].storage_offset() == 2
    assert sd["t"].stride() == (1, 6)
    sd["base"][1, 2] = -1  # one storage: every view sees it
    assert sd["col"][1].item() == -1 and sd["block"][0, 0].item() == -1 and sd["t"][2, 1].item() == -1


class _Tied(tl.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = tl.nn.Linear(4, 3, bias=False)
        self.head = tl.nn.Linear(4, 3, bias=False)
        self.out = tl.nn.Linear(3, 2)
        self.head.weight = self.enc.weight


def test_tied_state_dict_into_a_tl_module():
    sd = tl.load(FIXTURES / "tied.pt")
    assert sd["enc.weight"].untyped_storage() is sd["head.weight"].untyped_storage()
    assert sd._metadata[""] == {"version": 1}  # state_dict()'s _metadata survives (an OrderedDict's BUILD)
    m = _Tied()
    m.load_state_dict(sd)
    x = tl.arange(4.).reshape(1, 4)
    enc = np.arange(12., dtype=np.float32).reshape(3, 4) / 10
    want = (x.numpy() @ enc.T) @ (np.arange(6., dtype=np.float32).reshape(2, 3) - 2).T + np.arange(2.)
    np.testing.assert_allclose(m.out(m.enc(x)).detach().numpy(), want, rtol=1e-6)
    assert m.head.weight is m.enc.weight


def test_malicious_pickle_refused_with_its_name(tmp_path):
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL (posix|os)\.system was not an allowed"):
        tl.load(FIXTURES / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        tl.load(FIXTURES / "evil.pt", weights_only=True)


def test_legacy_format_read_with_the_same_rules(tmp_path, torch):
    """torch's pre-1.6 format (torch.save(..., _use_new_zipfile_serialization=False)): read, views and dtypes
    intact, under the weights_only allowlist, storages checked against the file before they are allocated."""
    assert tl.load(FIXTURES / "legacy.pt").tolist() == [0.0, 1.0, 2.0]
    base = torch.arange(10.0)
    obj = {"w": torch.arange(6.0).reshape(2, 3), "i": torch.tensor([1, 2], dtype=torch.int64), "view": base[2:5],
           "base": base, "sd": torch.nn.Linear(3, 2).state_dict(), "n": 7}
    path = tmp_path / "legacy.pt"
    torch.save(obj, path, _use_new_zipfile_serialization=False)
    got = tl.load(path)
    assert got["w"].tolist() == obj["w"].tolist() and got["i"].dtype is tl.int64 and got["n"] == 7
    assert got["view"].tolist() == [2.0, 3.0, 4.0] and got["view"].untyped_storage().data_ptr() == \
        got["base"].untyped_storage().data_ptr()  # one storage, as in the file
    assert got["sd"]["weight"].tolist() == obj["sd"]["weight"].tolist()
    data = path.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[:-20])
    with pytest.raises(RuntimeError, match="truncated"):
        tl.load(cut)

    class Evil:
        def __reduce__(self):
            return (print, ("owned",))
    evil = tmp_path / "evil_legacy.pt"
    torch.save({"x": Evil()}, evil, _use_new_zipfile_serialization=False)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        tl.load(evil)


def test_foreign_files_refused_clearly(tmp_path):
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(RuntimeError, match="neither a zip archive"):
        tl.load(junk)


def test_complex_checkpoint_loads():
    t = tl.load(FIXTURES / "complex.pt")
    ts = t if isinstance(t, tl.Tensor) else next(v for v in (t.values() if isinstance(t, dict) else t)
                                                  if isinstance(v, tl.Tensor))
    assert ts.dtype in (tl.complex64, tl.complex128)


# -- files tensorlab writes ----------------------------------------------------------------------
def _zip_records(path_or_bytes):
    data = path_or_bytes if isinstance(path_or_bytes, bytes) else Path(path_or_bytes).read_bytes()
    zf = zipfile.ZipFile(io.BytesIO(data))
    return zf, data


def test_format_records_and_alignment(tmp_path):
    f = tmp_path / "model.pt"
    tl.save({"a": tl.arange(5.), "b": tl.ones(3, dtype=tl.int8)}, f)
    zf, data = _zip_records(f)
    names = zf.namelist()
    assert names[0] == "model/data.pkl"
    assert {"model/byteorder", "model/version", "model/.format_version", "model/.storage_alignment",
            "model/data/0", "model/data/1", "model/.data/serialization_id"} <= set(names)
    assert zf.read("model/version") == b"3\n" and zf.read("model/byteorder") == b"little"
    for info in zf.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        start = info.header_offset + 30 + len(info.filename) + int.from_bytes(data[info.header_offset + 28:
                                                                                   info.header_offset + 30], "little")
        assert start % 64 == 0, info.filename
    assert zf.read("model/data/0") == np.arange(5, dtype=np.float32).tobytes()
    buf = io.BytesIO()
    tl.save({"a": tl.ones(1)}, buf)
    assert zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist()[0] == "archive/data.pkl"


def test_round_trip_without_torch(device):
    w = tl.nn.Parameter(tl.arange(12., device=device).reshape(3, 4))
    obj = {"w": w, "same": w, "col": w.detach()[:, 1], "dtypes": [tl.arange(4, device=device).to(d) for d in DTYPES],
           "meta": {"dtype": tl.float16, "size": tl.Size([2, 3]), "device": tl.device("cpu"), "n": 3, "s": "x",
                    "b": b"raw"}}
    buf = io.BytesIO()
    tl.save(obj, buf)
    buf.seek(0)
    got = tl.load(buf)
    assert isinstance(got["w"], tl.nn.Parameter) and got["w"].requires_grad and got["same"] is got["w"]
    assert got["w"].device == w.device
    assert got["col"].untyped_storage() is got["w"].untyped_storage() and got["col"].stride() == (4,)
    for d, t in zip(DTYPES, got["dtypes"]):
        assert t.dtype is d
        np.testing.assert_array_equal(_host(t), np.arange(4).astype(d.np))
    assert got["meta"] == {"dtype": tl.float16, "size": tl.Size([2, 3]), "device": tl.device("cpu"), "n": 3, "s": "x",
                           "b": b"raw"}
    with tl.no_grad():
        got["w"][0, 1] = 100
    assert got["col"][0].item() == 100  # tied after loading


def test_map_location(device, tmp_path):
    f = tmp_path / "x.pt"
    tl.save({"a": tl.arange(3., device=device)}, f)
    assert tl.load(f, map_location="cpu")["a"].device.type == "cpu"
    assert tl.load(f, map_location=tl.device("cpu"))["a"].device.type == "cpu"
    loc = "cpu" if device == "cpu" else "cuda:0"
    assert tl.load(f, map_location={loc: "cpu"})["a"].device.type == "cpu"
    seen = []
    got = tl.load(f, map_location=lambda storage, location: seen.append(location))
    assert seen == [loc] and got["a"].device.type == device
    np.testing.assert_array_equal(_host(got["a"]), [0., 1., 2.])


def test_cuda_checkpoint_without_cuda(tmp_path, monkeypatch):
    from tensorlab import backends
    if backends.cuda_emulated() or backends.cuda_diagnosis() is None:
        pytest.skip("CUDA is usable here")
    real = S._Pickler.persistent_id

    def on_cuda(self, obj):
        pid = real(self, obj)
        return pid if pid is None else pid[:3] + ("cuda:0",) + pid[4:]
    monkeypatch.setattr(S._Pickler, "persistent_id", on_cuda)
    f = tmp_path / "gpu.pt"
    tl.save({"a": tl.ones(2)}, f)
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        tl.load(f)
    assert tl.load(f, map_location="cpu")["a"].tolist() == [1., 1.]


def test_one_storage_two_dtypes_refused():
    t = tl.arange(4, dtype=tl.int32)
    other = tl.Tensor._make(t.untyped_storage(), t._meta.layout, tl.float32)
    with pytest.raises(RuntimeError, match="Cannot save multiple tensors or storages that view the same data as "
                                           "different types"):
        tl.save([t, other], io.BytesIO())


# -- the allowlist -------------------------------------------------------------------------------
def _checkpoint(pkl: bytes) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/version", "3\n")
    buf.seek(0)
    return buf


class Point:
    def __init__(self, x=0):
        self.x = x


def test_hand_made_malicious_pickles(tmp_path):
    marker = tmp_path / "pwned"
    evil = b"cos\nsystem\n(V touch " + str(marker).encode() + b"\ntR."
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL os\.system"):
        tl.load(_checkpoint(evil))
    assert not marker.exists()
    # BUILD on an allowed object that is no container: refused (it could set any attribute)
    sneaky = b"\x80\x02ctorch\nSize\n)R}X\x01\x00\x00\x00aK\x01sb."  # torch.Size() then BUILD {'a': 1}
    with pytest.raises(pickle.UnpicklingError, match="Can only build Tensor, Parameter, OrderedDict"):
        tl.load(_checkpoint(sneaky))


def test_safe_globals_allow_a_class():
    pkl = pickle.dumps(Point(3), protocol=2)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL test_serialization\.Point|GLOBAL .*Point was not"):
        tl.load(_checkpoint(pkl))
    with serialization.safe_globals([Point]):
        assert tl.load(_checkpoint(pkl)).x == 3
    assert Point not in serialization.get_safe_globals()
    serialization.add_safe_globals([(Point, f"{Point.__module__}.Point")])
    try:
        assert tl.load(_checkpoint(pkl)).x == 3
    finally:
        serialization.clear_safe_globals()
    assert tl.load(_checkpoint(pkl), weights_only=False).x == 3  # the trusted path runs the pickle


# -- torch as the other side ---------------------------------------------------------------------
def test_torch_saves_tensorlab_loads(torch, tmp_path):
    class TorchTied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.Linear(4, 3, bias=False)
            self.head = torch.nn.Linear(4, 3, bias=False)
            self.out = torch.nn.Linear(3, 2)
            self.head.weight = self.enc.weight

    torch.manual_seed(0)
    tm = TorchTied()
    f = tmp_path / "torch_tied.pt"
    torch.save(tm.state_dict(), f)
    m = _Tied()
    m.load_state_dict(tl.load(f))
    x = np.random.rand(5, 4).astype(np.float32)
    want = tm.out(tm.enc(torch.from_numpy(x))).detach().numpy()
    np.testing.assert_allclose(m.out(m.enc(tl.tensor(x))).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    mixed = {d.name: torch.arange(6).to(getattr(torch, d.name)).reshape(2, 3).t() for d in DTYPES}
    torch.save(mixed, f)
    got = tl.load(f)
    for d in DTYPES:
        assert got[d.name].dtype is d and got[d.name].stride() == (1, 3)
        np.testing.assert_array_equal(_host(got[d.name]), np.arange(6).astype(d.np).reshape(2, 3).T)


def test_tensorlab_saves_torch_loads(torch, tmp_path):
    w = tl.nn.Parameter(tl.arange(12.).reshape(3, 4))
    obj = {"w": w, "row": w.detach()[1], "col": w.detach()[:, 2], "dtypes": {d.name: tl.arange(5).to(d) for d in DTYPES},
           "dtype": tl.bfloat16, "size": tl.Size([4])}
    f = tmp_path / "ours.pt"
    tl.save(obj, f)
    got = torch.load(f, weights_only=True)
    assert isinstance(got["w"], torch.nn.Parameter) and got["w"].requires_grad
    assert got["row"].untyped_storage().data_ptr() == got["w"].untyped_storage().data_ptr()
    assert got["col"].stride() == (4,) and got["col"].storage_offset() == 2
    np.testing.assert_array_equal(got["col"].numpy(), [2., 6., 10.])
    for d in DTYPES:
        t = got["dtypes"][d.name]
        assert str(t.dtype) == f"torch.{d.name}"
        np.testing.assert_array_equal(t.float().numpy(), np.arange(5).astype(d.np).astype(np.float32))
    assert got["dtype"] is torch.bfloat16 and got["size"] == torch.Size([4])
    sd = _Tied().state_dict()
    tl.save(sd, f)
    loaded = torch.load(f, weights_only=True)
    assert list(loaded) == list(sd)
    assert loaded["enc.weight"].data_ptr() == loaded["head.weight"].data_ptr()  # tied stays tied


def test_files_exist_and_are_small():
    for name in ("dtypes.pt", "views.pt", "tied.pt", "evil.pt", "legacy.pt", "complex.pt"):
        p = FIXTURES / name
        assert p.exists() and os.path.getsize(p) < 8192


def test_cuda_tensors_keep_their_location(cuda, torch, tmp_path):
    f = tmp_path / "gpu.pt"
    t = tl.arange(6., device=cuda).reshape(2, 3)
    tl.save({"t": t, "col": t[:, 1]}, f)
    zf, _ = _zip_records(f)
    assert b"cuda:0" in zf.read("gpu/data.pkl")
    got = torch.load(f, map_location="cpu", weights_only=True)
    np.testing.assert_array_equal(got["col"].numpy(), [1., 4.])
    assert got["col"].untyped_storage().data_ptr() == got["t"].untyped_storage().data_ptr()
    back = tl.load(f)
    assert back["t"].device == t.device and back["col"].untyped_storage() is back["t"].untyped_storage()


def test_containers_and_parameter_flags(tmp_path):
    frozen = tl.nn.Parameter(tl.ones(2), requires_grad=False)
    obj = [(1, 2.5, None, True), {"s": {1, 2}, "fs": frozenset({3})}, frozen, [tl.zeros(0), tl.zeros(2, 0)],
           tl.tensor(3.5)]
    buf = io.BytesIO()
    tl.save(obj, buf)
    buf.seek(0)
    got = tl.load(buf)
    assert got[0] == (1, 2.5, None, True) and got[1] == {"s": {1, 2}, "fs": frozenset({3})}
    assert isinstance(got[2], tl.nn.Parameter) and not got[2].requires_grad
    assert got[3][0].shape == (0,) and got[3][1].shape == (2, 0)
    assert got[4].shape == () and got[4].item() == 3.5


def test_damaged_files(monkeypatch):
    buf = io.BytesIO()
    tl.save({"a": tl.arange(4.)}, buf)
    data = bytearray(buf.getvalue())
    zf = zipfile.ZipFile(io.BytesIO(bytes(data)))
    short = io.BytesIO()
    with zipfile.ZipFile(short, "w") as out:
        for info in zf.infolist():
            payload = zf.read(info)
            out.writestr(info.filename, payload[:8] if info.filename.endswith("data/0") else payload)
    short.seek(0)
    with pytest.raises(RuntimeError, match="holds 8 bytes but its storage needs 16"):
        tl.load(short)
    # a layout that reaches past its storage is refused before any tensor exists
    real = S._Pickler.reducer_override

    def too_big(self, obj):
        rv = real(self, obj)
        if rv is NotImplemented or not isinstance(obj, tl.Tensor):
            return rv
        return rv[0], (rv[1][0], rv[1][1], (1000,), (1,)) + rv[1][4:]
    monkeypatch.setattr(S._Pickler, "reducer_override", too_big)
    ck = io.BytesIO()
    tl.save(tl.arange(4.), ck)
    monkeypatch.undo()
    ck.seek(0)
    with pytest.raises(RuntimeError, match="out of bounds"):
        tl.load(ck)


def test_mmap_maps_the_records(tmp_path):
    f = tmp_path / "big.pt"
    tl.save({"a": tl.arange(1000.), "tied": [tl.arange(5, dtype=tl.int16)] * 2}, f)
    got = tl.load(f, mmap=True)
    buf = got["a"].untyped_storage()._buf
    assert isinstance(buf.base, np.memmap) and not got["a"].untyped_storage().resizable()
    np.testing.assert_array_equal(got["a"].numpy(), np.arange(1000.))
    got["a"][0] = -1  # copy-on-write: the file keeps its bytes
    np.testing.assert_array_equal(tl.load(f)["a"].numpy(), np.arange(1000.))
    assert got["tied"][0] is got["tied"][1]
    with pytest.raises(ValueError, match="must be a file path in order to use the mmap argument"):
        tl.load(io.BytesIO(f.read_bytes()), mmap=True)


def test_mmap_of_a_torch_file():
    sd = tl.load(FIXTURES / "views.pt", mmap=True)
    np.testing.assert_array_equal(sd["block"].numpy(), np.arange(24, dtype=np.float32).reshape(4, 6)[1:3, 2:5])


def test_fuzzed_legacy_checkpoints_fail_cleanly(tmp_path, torch):
    """Mutated legacy files: a result or torch's kinds of error (RuntimeError, UnpicklingError, EOFError), never
    another exception, a crash or an allocation beyond the file."""
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.arange(12.0).reshape(3, 4), "b": torch.ones(3, dtype=torch.int64)}, path,
               _use_new_zipfile_serialization=False)
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(0)
    for _ in range(200):
        bad = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            bad[int(rng.integers(0, len(bad)))] = int(rng.integers(0, 256))
        try:
            tl.load(io.BytesIO(bytes(bad)))
        except (RuntimeError, pickle.UnpicklingError, EOFError):
            pass
