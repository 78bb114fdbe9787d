import pytest

import tensorlab as tl


def test_parse_and_compare():
    d = tl.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and d == "cuda:1" and str(d) == "cuda:1"
    assert tl.device("cpu") == "cpu" and tl.device("cpu").index is None
    assert tl.device("cuda", 2) == tl.device("cuda:2")
    assert hash(tl.device("cuda:0")) == hash(tl.device("cuda:0"))
    assert {tl.device("cpu"): 1}[tl.device("cpu")] == 1
    assert tl.device("cuda") != tl.device("cuda:0")
    assert repr(tl.device("cuda:3")) == "device(type='cuda', index=3)"


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "cuda:-1", "cpu:1x", "", "CUDA"])
def test_bad_strings_raise_runtime_error_naming_valid_forms(bad):
    with pytest.raises(RuntimeError, match="cpu"):
        tl.device(bad)


def test_cuda_unavailable_is_reported_not_crashing():
    if tl.cuda.is_available():
        pytest.skip("a GPU is present")
    assert tl.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="CUDA was asked for but is not available"):
        tl.zeros(2, device="cuda")


def test_tensor_device_attributes(device):
    t = tl.zeros(2, device=device)
    assert t.device.type == device
    assert t.is_cuda == (device == "cuda") and t.is_cpu == (device == "cpu")
