"""The torch names scripts import, set or test and never need in a tensorlab run (issue 34 item 7),
each at torch's path and answering as torch does: Tensor.is_xpu/... and the Tensor predicates, the
default device (set_default_device, `with tl.device(...)`), capability and debug switches,
torch.backends flags (checked as torch checks them, written through the compat alias),
torch._dynamo / torch._inductor / torch.compiler config objects (torch's keys, unknown keys
refused), torch.hub from local directories and the cache (never the network),
profiler.tensorboard_trace_handler, utils.tensorboard.SummaryWriter."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import tensorlab as tl

ROOT = Path(__file__).resolve().parents[1]


# -- Tensor ---------------------------------------------------------------------------------------------------------
def test_tensor_is_names_match_torch(torch):
    sparse_only = {"is_coalesced"}  # a sparse-tensor method (tensorlab's sparse tensors are another family)
    names = [n for n in dir(torch.Tensor) if n.startswith("is_") and n not in sparse_only]
    missing = [n for n in names if not hasattr(tl.Tensor, n)]
    assert not missing, missing
    t, r = tl.ones(2, 3), torch.ones(2, 3)
    for n in ("is_xpu", "is_mps", "is_ipu", "is_vulkan", "is_maia", "is_mtia", "is_xla", "is_meta", "is_mkldnn"):
        assert getattr(t, n) is getattr(r, n) is False, n
    assert t.is_distributed() == r.is_distributed() and t.is_neg() == r.is_neg()
    assert t.is_same_size(tl.zeros(2, 3)) and not t.is_same_size(tl.zeros(3, 2))
    assert t.is_set_to(t[:]) == r.is_set_to(r[:]) and t.is_set_to(t[1:]) == r.is_set_to(r[1:])
    assert t.is_set_to(t.t()) == r.is_set_to(r.t())
    assert tl.tensor([0.0]).is_nonzero() is False and tl.tensor([[2]]).is_nonzero() is True
    for shape in ((2,), (0,)):
        with pytest.raises(RuntimeError) as ours:
            tl.ones(shape).is_nonzero()
        with pytest.raises(RuntimeError) as theirs:
            torch.ones(shape).is_nonzero()
        assert str(ours.value) == str(theirs.value)
    assert tl.is_nonzero(tl.ones(1)) and tl.is_same_size(t, t) and not tl.is_neg(t) and not tl.is_distributed(t)


def test_is_shared(device):
    assert tl.ones(2, device=device).is_shared() == (device != "cpu")


# -- the default device -------------------------------------------------------------------------------------------------
def test_default_device_is_cpu(torch):
    assert tl.get_default_device() == tl.device("cpu") and str(tl.get_default_device()) == str(torch.get_default_device())


def test_set_default_device_and_context(device):
    other = "cpu" if device != "cpu" else None
    try:
        tl.set_default_device(device)
        want = tl.device(device) if device == "cpu" else tl.device("cuda:0")
        assert tl.get_default_device() == want
        made = [tl.zeros(2), tl.ones(2), tl.empty(2), tl.full((2,), 3.0), tl.tensor([1, 2]), tl.arange(3),
                tl.rand(2), tl.randn(2), tl.randint(0, 5, (2,)), tl.nn.Linear(2, 2).weight]
        assert all(t.device == want for t in made), [t.device for t in made]
        assert tl.zeros(2, device="cpu").device == tl.device("cpu")  # an explicit device wins
        x = tl.ones(2, device="cpu")
        assert tl.zeros_like(x).device == x.device  # ops that take the device from a tensor are unaffected
        if other:
            with tl.device(other):
                assert tl.zeros(1).device == tl.device(other) and tl.get_default_device() == tl.device(other)
            assert tl.zeros(1).device == want
        # per thread, as torch
        seen = []
        th = threading.Thread(target=lambda: seen.append(tl.zeros(1).device))
        th.start()
        th.join()
        assert seen == [tl.device("cpu")]
    finally:
        tl.set_default_device(None)
    assert tl.get_default_device() == tl.device("cpu") and tl.zeros(1).device == tl.device("cpu")


def test_device_context_nests_and_restores_on_error():
    with pytest.raises(ValueError):
        with tl.device("cpu"):
            with tl.device("cpu"):
                assert tl.ones(1).device == tl.device("cpu")
            raise ValueError
    assert tl.get_default_device() == tl.device("cpu")


def test_set_default_device_refuses_missing_cuda():
    if tl.cuda.device_count():
        pytest.skip("a CUDA device is available")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        tl.set_default_device("cuda")
    assert tl.get_default_device() == tl.device("cpu")


# -- top-level switches ---------------------------------------------------------------------------------------------------
def test_top_level_names_answer_as_torch(torch):
    for name in ("set_default_device", "get_default_device", "is_vulkan_available", "compiled_with_cxx11_abi",
                 "typename", "is_storage", "set_warn_always", "is_warn_always_enabled", "get_num_interop_threads",
                 "set_num_interop_threads", "set_flush_denormal", "set_deterministic_debug_mode",
                 "get_deterministic_debug_mode", "set_anomaly_enabled", "is_anomaly_enabled",
                 "is_anomaly_check_nan_enabled", "set_default_tensor_type", "get_device_module", "is_nonzero",
                 "is_same_size", "is_neg", "is_distributed", "newaxis", "has_lapack", "has_spectral", "hub",
                 "compiler", "compile"):
        assert hasattr(tl, name) and hasattr(torch, name), name
    assert tl.newaxis is torch.newaxis is None
    assert tl.is_vulkan_available() is torch.is_vulkan_available() is False
    assert tl.is_storage(tl.ones(1).untyped_storage()) and not tl.is_storage(tl.ones(1))
    assert tl.typename(3) == torch.typename(3) == "int"
    assert tl.get_device_module("cpu") is tl.cpu and tl.get_device_module("cuda") is tl.cuda
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        tl.get_device_module("xpu")


def test_deterministic_debug_mode_round_trip(torch):
    try:
        for mode, want in (("warn", 1), ("error", 2), (0, 0), (1, 1), ("default", 0)):
            tl.set_deterministic_debug_mode(mode)
            torch.set_deterministic_debug_mode(mode)
            assert tl.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == want
            assert tl.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            tl.set_deterministic_debug_mode("x")
    finally:
        tl.set_deterministic_debug_mode(0)
        torch.set_deterministic_debug_mode(0)


def test_warn_always_anomaly_threads_denormals():
    try:
        tl.set_warn_always(True)
        assert tl.is_warn_always_enabled()
        tl.set_anomaly_enabled(True)
        assert tl.is_anomaly_enabled() and tl.autograd.anomaly.is_anomaly_enabled()
    finally:
        tl.set_warn_always(False)
        tl.set_anomaly_enabled(False)
    assert not tl.is_anomaly_enabled()
    tl.set_num_interop_threads(3)
    assert tl.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="positive"):
        tl.set_num_interop_threads(0)
    assert tl.set_flush_denormal(True) is False


def test_set_default_tensor_type():
    try:
        tl.set_default_tensor_type(tl.DoubleTensor)
        assert tl.get_default_dtype() == tl.float64 and tl.zeros(1).dtype == tl.float64
        tl.set_default_tensor_type("torch.FloatTensor")
        assert tl.get_default_dtype() == tl.float32
        with pytest.raises(TypeError):
            tl.set_default_tensor_type(tl.LongTensor)
    finally:
        tl.set_default_dtype(tl.float32)
        tl.set_default_device(None)


# -- torch.backends ---------------------------------------------------------------------------------------------------------
def test_backend_flags_checked_as_torch(torch):
    from tensorlab.compat import backends as ours
    for mod, name, bad in (("cudnn", "enabled", "x"), ("cudnn", "benchmark", 1), ("cudnn", "deterministic", None),
                           ("cudnn", "allow_tf32", "y"), ("mkldnn", "enabled", 2)):
        before = getattr(getattr(ours, mod), name)
        with pytest.raises(RuntimeError) as mine:
            setattr(getattr(ours, mod), name, bad)
        # torch.testing's import (optim_db, op_db) freezes torch's flags: compare with torch's own check
        allow = getattr(torch.backends, "__allow_nonbracketed_mutation")
        with allow(), pytest.raises(RuntimeError) as theirs:
            setattr(getattr(torch.backends, mod), name, bad)
        assert str(mine.value) == str(theirs.value)
        assert getattr(getattr(ours, mod), name) == before
    with pytest.raises(RuntimeError, match="Unknown precision"):
        ours.cudnn.fp32_precision = "highest"
    with pytest.raises(RuntimeError, match="set_allow_tf32_cublas expects a bool"):
        ours.cuda.matmul.allow_tf32 = "x"
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        ours.cuda.matmul.foo = 1
    assert ours.cudnn.is_available() is False and ours.cudnn.version() is None
    assert ours.mps.is_available() is False and ours.mkldnn.is_available() is False
    assert ours.opt_einsum.enabled is False and ours.opt_einsum.get_opt_einsum() is None
    assert ours.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    assert ours.mha.get_fastpath_enabled() is True


def test_backend_flags_contexts():
    from tensorlab.compat import backends as ours
    cudnn = ours.cudnn
    cudnn.benchmark = True
    try:
        with cudnn.flags(enabled=False, benchmark=False, deterministic=True):
            assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, False, True)
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, True, False)
        prev = cudnn.set_flags(False)
        assert prev[0] is True and cudnn.enabled is False
        cudnn.set_flags(*prev)
        with ours.cuda.sdp_kernel(enable_flash=False):
            assert not ours.cuda.flash_sdp_enabled()
        assert ours.cuda.flash_sdp_enabled()
        with ours.mkldnn.flags(enabled=False):
            assert ours.mkldnn.enabled is False
        assert ours.mkldnn.enabled is True
    finally:
        cudnn.benchmark = False


COMPAT_SCRIPT = '''
import torch
import torch.backends.cudnn as cudnn
import torch._dynamo
import torch._inductor.config as inductor_config
cudnn.benchmark = True
torch.backends.cudnn.deterministic = True
assert torch.backends.cudnn.benchmark and cudnn.deterministic
import tensorlab.compat.backends.cudnn as real
assert real.benchmark is True and real.deterministic is True, "an assignment through torch.* must reach tensorlab"
try:
    torch.backends.cudnn.enabled = "yes"
except RuntimeError as e:
    assert "expects a bool" in str(e)
else:
    raise AssertionError("a str cudnn.enabled was accepted")
with torch.backends.cudnn.flags(enabled=False):
    assert torch.backends.cudnn.enabled is False
torch.backends.cuda.matmul.allow_tf32 = True
torch._dynamo.config.cache_size_limit = 32
assert torch._dynamo.config.recompile_limit == 32
inductor_config.coordinate_descent_tuning = True
inductor_config.triton.unique_kernel_names = True
try:
    inductor_config.not_a_key = 1
except AttributeError as e:
    assert "torch._inductor.config.not_a_key does not exist" in str(e)
else:
    raise AssertionError("an unknown inductor key was accepted")
torch._dynamo.reset()
model = torch.compile(torch.nn.Linear(2, 2))
assert not torch.compiler.is_compiling()
torch.set_default_device("cpu")
assert torch.get_default_device() == torch.device("cpu") and not torch.ones(1).is_xpu
assert torch.hub.get_dir()
from torch.profiler import tensorboard_trace_handler
from torch.utils.tensorboard import SummaryWriter
import torch.multiprocessing as mp
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.optim import LBFGS, Adafactor, Muon
device = ("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available()
          else "xpu" if torch.xpu.is_available() else "cpu")
assert device in ("cuda", "cpu") and not torch.jit.is_scripting() and mp.get_start_method(allow_none=True) in (
    None, "fork", "spawn", "forkserver")
with torch.random.fork_rng():
    torch.rand(3)
with torch.device("cpu"):
    assert torch.zeros(1).device.type == "cpu"
print("compat names OK")
'''


def test_names_under_compat(tmp_path):
    script = tmp_path / "names.py"
    script.write_text(COMPAT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.run([sys.executable, "-m", "tensorlab.compat", str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "compat names OK" in proc.stdout, proc.stdout + proc.stderr


# -- _dynamo, _inductor, compiler ---------------------------------------------------------------------------------------------
def test_config_objects_have_torchs_keys(torch):
    import torch._dynamo.config as tdc
    import torch._inductor.config as tic
    import torch.compiler.config as tcc

    import tensorlab._dynamo.config as dc
    import tensorlab._inductor.config as ic
    import tensorlab.compiler.config as cc
    for ours, theirs in ((dc, tdc), (ic, tic), (cc, tcc)):
        keys = [k for k in theirs.get_config_copy() if not k.startswith("_")]
        mine = ours.get_config_copy()
        assert not [k for k in keys if k not in mine]
        for k in keys[:: max(1, len(keys) // 40)]:  # a sample of dotted and plain keys read back
            node = ours
            for part in k.split("."):
                node = getattr(node, part)
            want = theirs.get_config_copy()[k]
            if isinstance(want, str) and os.path.isabs(want):
                continue  # a path of the machine torch runs on (its install, the working directory)
            if isinstance(want, (bool, int, float, str)) or want is None:
                assert node == want, k
    with pytest.raises(AttributeError) as mine:
        ic.foo_bar = 1
    with pytest.raises(AttributeError) as theirs:
        tic.foo_bar = 1
    assert str(mine.value) == str(theirs.value)
    with pytest.raises(AttributeError, match="does not exist"):
        dc.not_a_key  # noqa: B018


def test_config_set_patch_alias():
    import tensorlab._dynamo.config as dc
    import tensorlab._inductor.config as ic
    saved = ic.save_config()
    try:
        ic.max_autotune = True
        ic.triton.cudagraphs = True
        assert ic.max_autotune and ic.get_config_copy()["triton.cudagraphs"] is True
        with ic.patch(max_autotune=False):
            assert ic.max_autotune is False
        assert ic.max_autotune is True

        @ic.patch("epilogue_fusion", False)
        def inside():
            return ic.epilogue_fusion
        assert inside() is False
        before = dc.recompile_limit
        dc.cache_size_limit = before + 5  # a deprecated alias writes the key it stands for
        assert dc.recompile_limit == before + 5
        dc.recompile_limit = before
        with pytest.raises(AttributeError):
            ic.patch(not_a_key=1)
    finally:
        ic.load_config(saved)
    assert ic.max_autotune is False


def test_dynamo_and_compiler_passthrough():
    import tensorlab._dynamo as dynamo
    f = lambda x: x + 1  # noqa: E731
    assert dynamo.optimize("eager")(f) is f
    with pytest.raises(RuntimeError, match="backend 'inductor' is not available"):
        dynamo.optimize("inductor")(f)
    assert dynamo.disable(f) is f and dynamo.disable()(f) is f and tl.compiler.disable(f) is f
    assert dynamo.is_dynamo_supported() is False and dynamo.is_compiling() is False
    dynamo.reset()
    dynamo.mark_dynamic(tl.ones(2), 0)
    assert tl.compiler.list_backends() == ["eager"]
    with tl.compiler.set_stance("force_eager"):
        pass
    with pytest.raises(RuntimeError, match="invalid stance"):
        tl.compiler.set_stance("fast")


# -- hub ----------------------------------------------------------------------------------------------------------------------
HUBCONF = '''
dependencies = ["numpy"]
import helper


def tiny(width=2, scale=1.0):
    """A Linear model of the given width."""
    import tensorlab as tl
    tl.manual_seed(0)
    m = tl.nn.Linear(width, width)
    m.scale = scale
    return m


def _private():
    pass


constant = helper.VALUE
'''


@pytest.fixture
def hubrepo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    (repo / "helper.py").write_text("VALUE = 7\n")
    old = tl.hub._hub_dir
    tl.hub.set_dir(tmp_path / "hub")
    yield repo
    tl.hub._hub_dir = old


def test_hub_local_matches_torch(torch, hubrepo):
    m = tl.hub.load(str(hubrepo), "tiny", source="local", width=3, scale=2.0)
    assert isinstance(m, tl.nn.Linear) and m.weight.shape == (3, 3) and m.scale == 2.0
    assert tl.hub.list(str(hubrepo)) == ["tiny"]
    assert tl.hub.help(str(hubrepo), "tiny") == "A Linear model of the given width."
    assert "helper" not in sys.modules or sys.modules["helper"].VALUE == 7
    with pytest.raises(RuntimeError) as ours:
        tl.hub.load(str(hubrepo), "nope", source="local")
    assert str(ours.value) == "Cannot find callable nope in hubconf"
    with pytest.raises(ValueError) as ours:
        tl.hub.load(str(hubrepo), "tiny", source="ftp")
    with pytest.raises(ValueError) as theirs:
        torch.hub.load(str(hubrepo), "tiny", source="ftp")
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(FileNotFoundError):
        tl.hub.load(str(hubrepo / "missing"), "tiny", source="local")
    (hubrepo / "hubconf.py").write_text('dependencies = ["surely_not_a_module_xyz"]\ndef m():\n    pass\n')
    with pytest.raises(RuntimeError, match="Missing dependencies: surely_not_a_module_xyz"):
        tl.hub.load(str(hubrepo), "m", source="local")


def test_hub_github_only_from_cache(hubrepo, tmp_path):
    with pytest.raises(RuntimeError, match="does not download") as e:
        tl.hub.load("someone/models", "tiny")
    assert os.path.join(tl.hub.get_dir(), "someone_models_main") in str(e.value)
    cached = Path(tl.hub.get_dir()) / "someone_models_main"
    cached.parent.mkdir(parents=True)
    os.symlink(hubrepo, cached)
    assert tl.hub.load("someone/models", "tiny").weight.shape == (2, 2)
    assert tl.hub.list("someone/models") == ["tiny"]
    with pytest.raises(RuntimeError, match="force_reload"):
        tl.hub.load("someone/models", "tiny", force_reload=True)
    with pytest.raises(ValueError, match="repo_owner/repo_name"):
        tl.hub.load("not-a-repo", "tiny")


def test_hub_dir_follows_torch_home(monkeypatch):
    old = tl.hub._hub_dir
    tl.hub._hub_dir = None
    try:
        monkeypatch.setenv("TORCH_HOME", "/tmp/somewhere")
        assert tl.hub.get_dir() == "/tmp/somewhere/hub"
    finally:
        tl.hub._hub_dir = old


def test_load_state_dict_from_url_cache_only(hubrepo, tmp_path):
    sd = {"w": tl.arange(4.0)}
    src = tmp_path / "weights-abc123.pt"
    tl.save(sd, src)
    with pytest.raises(RuntimeError, match="does not download") as e:
        tl.hub.load_state_dict_from_url("https://example.com/models/weights-abc123.pt")
    cached = os.path.join(tl.hub.get_dir(), "checkpoints", "weights-abc123.pt")
    assert cached in str(e.value)
    got = tl.hub.load_state_dict_from_url(src.as_uri())  # file:// is copied into the cache, then loaded
    assert tl.equal(got["w"], sd["w"]) and os.path.exists(cached)
    got = tl.hub.load_state_dict_from_url("https://example.com/models/weights-abc123.pt")  # now cached
    assert tl.equal(got["w"], sd["w"])
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    tl.hub.download_url_to_file(src.as_uri(), tmp_path / "copy.pt", hash_prefix=digest[:8])
    with pytest.raises(RuntimeError, match="invalid hash value"):
        tl.hub.download_url_to_file(src.as_uri(), tmp_path / "bad.pt", hash_prefix="0000000")
    assert not (tmp_path / "bad.pt").exists()
    with pytest.raises(RuntimeError, match="does not download"):
        tl.hub.download_url_to_file("https://example.com/x.pt", tmp_path / "x.pt")


# -- profiler and TensorBoard ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("use_gzip", [False, True])
def test_tensorboard_trace_handler(tmp_path, use_gzip, device):
    out = tmp_path / "traces"
    sched = tl.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    with tl.profiler.profile(schedule=sched, on_trace_ready=tl.profiler.tensorboard_trace_handler(
            str(out), "worker0", use_gzip=use_gzip)) as prof:
        for _ in range(5):
            (tl.ones(16, device=device) * 2).sum()
            prof.step()
    files = os.listdir(out)
    assert len(files) == 1
    name = files[0]
    assert name.startswith("worker0.") and name.endswith(".pt.trace.json" + (".gz" if use_gzip else ""))
    raw = (out / name).read_bytes()
    doc = json.loads(gzip.decompress(raw) if use_gzip else raw)
    assert doc["schemaVersion"] == 1 and isinstance(doc["deviceProperties"], list)
    cats = {e.get("cat") for e in doc["traceEvents"]}
    assert "cpu_op" in cats
    assert [e["name"] for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep#")] == ["ProfilerStep#3"]
    if device != "cpu":
        assert "kernel" in cats and doc["deviceProperties"] and doc["deviceProperties"][0]["id"] == 0


def test_summary_writer_without_tensorboard(tmp_path):
    import importlib.util
    from tensorlab.utils.tensorboard import SummaryWriter  # the import works either way
    if importlib.util.find_spec("tensorboard") is not None:
        pytest.skip("tensorboard is installed")
    with pytest.raises(ImportError, match="pip install tensorboard"):
        SummaryWriter(str(tmp_path))


def test_summary_writer_matches_torch(tmp_path, torch):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from tensorlab.utils.tensorboard import SummaryWriter
    x = np.random.default_rng(0).standard_normal(200)

    def log(writer_cls, lib, d):
        with writer_cls(str(d)) as w:
            for s in range(3):
                w.add_scalar("loss", 1.0 / (s + 1), s)
            w.add_scalar("lr", lib.tensor(0.5), 3, new_style=True)
            w.add_scalars("acc", {"train": 0.5, "val": 0.25}, 1)
            w.add_histogram("w", lib.tensor(x), 2)
            w.add_histogram("w10", lib.tensor(x), 2, bins=10)
            w.add_histogram("wmax", lib.tensor(x), 2, bins=50, max_bins=7)
            w.add_text("note", "hello *world*", 0)
        ea = EventAccumulator(str(d), size_guidance={"tensors": 0, "histograms": 0})
        ea.Reload()
        return ea

    a, b = log(TorchWriter, torch, tmp_path / "torch"), log(SummaryWriter, tl, tmp_path / "tl")
    assert a.Tags() == b.Tags()
    assert [(e.step, e.value) for e in a.Scalars("loss")] == [(e.step, e.value) for e in b.Scalars("loss")]
    for tag in ("w", "w10", "wmax"):
        assert a.Histograms(tag)[0].histogram_value == b.Histograms(tag)[0].histogram_value, tag
    for tag in ("note/text_summary", "lr"):
        assert a.Tensors(tag)[0].tensor_proto == b.Tensors(tag)[0].tensor_proto, tag
    assert sorted(os.listdir(tmp_path / "torch")) == sorted(os.listdir(tmp_path / "tl")) or \
        {p for p in os.listdir(tmp_path / "tl") if os.path.isdir(tmp_path / "tl" / p)} == {"acc_train", "acc_val"}


# -- device modules tensorlab does not have, multiprocessing ---------------------------------------------------------------
def test_absent_device_modules(torch):
    for kind in ("xpu", "mps", "mtia"):
        ours, theirs = getattr(tl, kind), getattr(torch, kind)
        assert ours.is_available() is theirs.is_available() is False
        assert ours.device_count() == theirs.device_count() == 0
        ours.manual_seed(0)
        with pytest.raises(AssertionError if kind == "xpu" else RuntimeError, match="no .* backend"):
            ours.synchronize()
    assert tl.OutOfMemoryError is tl.cuda.OutOfMemoryError


MP_SCRIPT = '''
import os, sys
import tensorlab as tl
import tensorlab.multiprocessing as mp


def work(i, d):
    tl.save(tl.full((2,), float(i)), os.path.join(d, f"{i}.pt"))


def bad(i):
    if i == 1:
        raise ValueError("boom in 1")


if __name__ == "__main__":
    d = sys.argv[1]
    assert mp.spawn(work, args=(d,), nprocs=2) is None
    assert sorted(os.listdir(d)) == ["0.pt", "1.pt"] and tl.load(os.path.join(d, "1.pt")).tolist() == [1.0, 1.0]
    try:
        mp.spawn(bad, nprocs=2)
    except mp.ProcessRaisedException as e:
        assert e.error_index == 1 and "boom in 1" in str(e), str(e)
    else:
        raise AssertionError("a failing process did not raise")
    ctx = mp.spawn(work, args=(d,), nprocs=1, join=False)
    while not ctx.join():
        pass
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    assert mp.Queue is not None and mp.cpu_count() >= 1
    print("multiprocessing OK")
'''


def test_multiprocessing_spawn(tmp_path):
    script = tmp_path / "mp_script.py"
    script.write_text(MP_SCRIPT)
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "multiprocessing OK" in proc.stdout, proc.stdout + proc.stderr


def test_random_module_and_fork_rng(device, torch):
    assert tl.random.manual_seed is tl.manual_seed and tl.random.get_rng_state is tl.get_rng_state
    tl.manual_seed(0)
    want = tl.rand(3, device=device)
    tl.manual_seed(0)
    with tl.random.fork_rng():
        tl.rand(7, device=device)
        tl.randn(2)
    assert tl.equal(tl.rand(3, device=device), want)
    tl.manual_seed(0)
    with tl.random.fork_rng(enabled=False):
        tl.rand(7, device=device)
    assert not tl.equal(tl.rand(3, device=device), want)
    assert set(tl.random.__all__) <= {n for n in dir(torch.random)}


def test_summary_writer_images_match_torch(tmp_path, torch):
    pytest.importorskip("tensorboard")
    pytest.importorskip("PIL")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from tensorlab.utils.tensorboard import SummaryWriter
    rng = np.random.default_rng(0)
    img, gray, batch = rng.random((3, 8, 6)).astype(np.float32), rng.random((8, 6)), rng.random((10, 1, 4, 5))
    u8 = rng.integers(0, 255, (5, 7, 3)).astype(np.uint8)

    def log(writer_cls, lib, d):
        with writer_cls(str(d)) as w:
            w.add_image("rgb", lib.tensor(img), 0)
            w.add_image("gray", lib.tensor(gray), 0, dataformats="HW")
            w.add_images("batch", lib.tensor(batch), 0)
            w.add_image("u8", lib.tensor(u8), 0, dataformats="HWC")
            fig = plt.figure(figsize=(2, 2))
            plt.plot([0, 1], [1, 0])
            w.add_figure("fig", fig, 0)
        ea = EventAccumulator(str(d), size_guidance={"images": 0})
        ea.Reload()
        return ea

    a, b = log(TorchWriter, torch, tmp_path / "torch"), log(SummaryWriter, tl, tmp_path / "tl")
    for tag in ("rgb", "gray", "batch", "u8", "fig"):
        x, y = a.Images(tag)[0], b.Images(tag)[0]
        assert (x.width, x.height, x.encoded_image_string) == (y.width, y.height, y.encoded_image_string), tag


def test_summary_writer_hparams_match_torch(tmp_path, torch):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from tensorlab.utils.tensorboard import SummaryWriter
    hp = {"lr": 0.1, "layers": 3, "opt": "adam", "nesterov": True, "skip": None}
    metrics = {"hparam/loss": 0.25, "hparam/acc": 0.9}
    discrete = {"opt": ["adam", "sgd"], "layers": [2, 3]}

    def log(writer_cls, lib, d):
        with writer_cls(str(d)) as w:
            w.add_hparams(dict(hp, wd=lib.tensor([0.01])), metrics, discrete, run_name="run1", global_step=4)
        run = d / "run1"
        (f,) = [p for p in os.listdir(run) if "tfevents" in p]
        return [(e.step, e.summary) for e in EventFileLoader(str(run / f)).Load() if e.HasField("summary")]

    ours, theirs = log(SummaryWriter, tl, tmp_path / "tl"), log(TorchWriter, torch, tmp_path / "torch")
    assert ours == theirs
    with pytest.raises(TypeError, match="hparam_domain_discrete"):
        SummaryWriter(str(tmp_path / "bad")).add_hparams({"a": 1}, {}, {"a": ["x"]})


def test_jit_guards_answer_as_torch_outside_a_script(torch):
    from typing import Dict, List, Optional, Tuple
    assert tl.jit.is_scripting() is torch.jit.is_scripting() is False
    assert tl.jit.is_tracing() is torch.jit.is_tracing() is False
    f = lambda x: x  # noqa: E731
    assert tl.jit.unused(f) is f and tl.jit.ignore(f) is f and tl.jit.ignore(drop=True)(f) is f
    assert tl.jit.export(f) is f and tl.jit.annotate(List[int], [1]) == [1]
    assert tl.jit.Attribute(3, int) == (3, int) and tl.jit.Attribute(3, int).value == 3
    cases = [([1, 2], List[int]), ([1, "a"], List[int]), ({"a": 1}, Dict[str, int]), ({"a": "b"}, Dict[str, int]),
             (None, Optional[int]), (3, Optional[int]), ((1, "a"), Tuple[int, str]), ((1, 2), Tuple[int, str]),
             (tl.ones(1), tl.Tensor)]
    for obj, hint in cases:
        want = torch.jit.isinstance(obj if not isinstance(obj, tl.Tensor) else torch.ones(1),
                                    hint if hint is not tl.Tensor else torch.Tensor)
        assert tl.jit.isinstance(obj, hint) == want, (obj, hint)
    assert tl.jit.wait(tl.jit.fork(lambda a, b: a + b, 2, b=3)) == 5


def test_disable_global_flags(torch):
    from tensorlab.compat import backends as ours
    from tensorlab.compat.backends import _flags
    assert ours.flags_frozen() is False
    try:
        ours.disable_global_flags()
        assert ours.flags_frozen()
        with pytest.raises(RuntimeError) as mine:
            ours.cudnn.benchmark = True
        assert str(mine.value) == ("not allowed to set torch.backends.cudnn flags after disable_global_flags; please "
                                   "use flags() context manager instead")
        with pytest.raises(RuntimeError, match="torch.backends.mkldnn flags"):
            ours.mkldnn.enabled = False
        ours.cuda.matmul.allow_tf32 = False  # not a frozen flag in torch either
        with ours.cudnn.flags(enabled=True, benchmark=True):
            assert ours.cudnn.benchmark is True
        assert ours.cudnn.benchmark is False
    finally:
        _flags._mutation["allowed"] = True


def test_op_alias_names_match_torch(device, torch):
    from tensorlab._tensor_names import OP_ALIASES
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)) + 3.0
    for alias, base in OP_ALIASES.items():
        binary = alias not in ("absolute", "negative", "fix")
        ours_args = (tl.tensor(a, device=device),) + ((tl.tensor(b, device=device),) if binary else ())
        ref_args = (torch.tensor(a),) + ((torch.tensor(b),) if binary else ())
        want = getattr(torch, alias)(*ref_args).numpy()
        np.testing.assert_allclose(getattr(tl, alias)(*ours_args).cpu().numpy(), want, rtol=1e-12)
        np.testing.assert_allclose(getattr(ours_args[0], alias)(*ours_args[1:]).cpu().numpy(), want, rtol=1e-12)
        if hasattr(torch.Tensor, alias + "_") and alias not in ("greater", "greater_equal", "less", "less_equal",
                                                                 "not_equal"):
            t = ours_args[0].clone()
            getattr(t, alias + "_")(*ours_args[1:])
            np.testing.assert_allclose(t.cpu().numpy(), want, rtol=1e-12)
    x = tl.tensor([7.0, -7.0], device=device)
    np.testing.assert_array_equal(tl.divide(x, 2, rounding_mode="floor").cpu().numpy(),
                                  torch.divide(torch.tensor([7.0, -7.0]), 2, rounding_mode="floor").numpy())
    y = x.clone()
    y.subtract_(1, alpha=2)
    assert y.tolist() == [5.0, -9.0]
    assert tl.vmap is tl.func.vmap


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window"])
def test_window_functions_match_torch(device, torch, name):
    for n in (0, 1, 2, 3, 8, 11):
        for periodic in (True, False):
            for dtype in ("float32", "float64"):
                kw = {"alpha": 0.5, "beta": 0.3} if name == "hamming_window" and n == 8 else {}
                ours = getattr(tl, name)(n, periodic, dtype=getattr(tl, dtype), device=device, **kw)
                ref = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype), **kw)
                assert ours.dtype == getattr(tl, dtype) and ours.device.type == device
                np.testing.assert_allclose(ours.cpu().numpy(), ref.numpy(), rtol=0, atol=1e-6 if dtype == "float32"
                                           else 1e-15, err_msg=f"{name}({n}, periodic={periodic}, {dtype})")
    assert getattr(tl, name)(5).dtype == tl.float32
    with pytest.raises(RuntimeError) as ours:
        getattr(tl, name)(3, dtype=tl.int64)
    assert f"{name} expects floating point dtypes" in str(ours.value)
    with pytest.raises(RuntimeError, match=f"{name} requires non-negative window_length"):
        getattr(tl, name)(-1)
    assert getattr(tl, name)(4, requires_grad=True).requires_grad
