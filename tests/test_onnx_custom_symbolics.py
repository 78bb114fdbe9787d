"""torch.onnx.register_custom_op_symbolic for torch.library operators: the export writes the symbolic's
nodes for each call (not the kernel's ops), with parse_args' constant conversion and symbolic_opset11's
helpers; the ONNX model runs in onnxruntime to the eager result; without a symbolic (or after
unregister) the export traces into the kernel; a symbolic registered for a later opset is not used."""
from __future__ import annotations

import io
import itertools

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

_ids = itertools.count()


def _export(model, args, opset=17):
    f = io.BytesIO()
    tl.onnx.export(model, args, f, input_names=["x"], opset_version=opset)
    mp = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(mp, full_check=True)
    return f.getvalue(), mp


def _run(data, x):
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x.cpu().numpy()})[0]


def _define():
    ns = f"onnxtest{next(_ids)}"

    @tl.library.custom_op(f"{ns}::clip_gather", mutates_args=())
    def clip_gather(x: tl.Tensor, lo: float, col: int) -> tl.Tensor:
        return x.clamp(min=lo)[:, col].unsqueeze(0)

    @tl.onnx.symbolic_helper.parse_args("v", "f", "i")
    def symbolic(g, x, lo, col):
        clipped = g.op("Max", x, g.op("Constant", value_t=tl.tensor(lo)))
        picked = tl.onnx.symbolic_opset11.select(g, clipped, 1, [col])
        return tl.onnx.symbolic_opset11.unsqueeze(g, tl.onnx.symbolic_opset11.squeeze(g, picked, 1), 0)
    return ns, clip_gather, symbolic


class _Model(nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.op(self.lin(x), 0.25, 2) * 2


def test_symbolic_replaces_the_kernel_and_runs_in_onnxruntime():
    ns, op, symbolic = _define()
    tl.manual_seed(0)
    model = _Model(op).eval()
    x = tl.randn(4, 3)
    tl.onnx.register_custom_op_symbolic(f"{ns}::clip_gather", symbolic, 11)
    try:
        data, mp = _export(model, (x,))
    finally:
        tl.onnx.unregister_custom_op_symbolic(f"{ns}::clip_gather", 11)
    kinds = [n.op_type for n in mp.graph.node]
    assert "Max" in kinds and "Gather" in kinds and "Clip" not in kinds
    with tl.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(_run(data, x), want, rtol=1e-5, atol=1e-6)
    # unregistered: the export follows the kernel's own ops
    data2, mp2 = _export(model, (x,))
    assert "Max" not in [n.op_type for n in mp2.graph.node]
    np.testing.assert_allclose(_run(data2, x), want, rtol=1e-5, atol=1e-6)
    assert op(x, 0.25, 2).shape == (1, 4)  # the op itself is unchanged after the export


def test_a_symbolic_for_a_later_opset_is_not_used():
    ns, op, symbolic = _define()
    tl.onnx.register_custom_op_symbolic(f"{ns}::clip_gather", symbolic, 18)
    try:
        _, mp = _export(_Model(op).eval(), (tl.randn(2, 3),), opset=17)
        assert "Max" not in [n.op_type for n in mp.graph.node]
        _, mp = _export(_Model(op).eval(), (tl.randn(2, 3),), opset=18)
        assert "Max" in [n.op_type for n in mp.graph.node]
    finally:
        tl.onnx.unregister_custom_op_symbolic(f"{ns}::clip_gather", 18)


def test_registration_errors_and_parse_args_checks():
    with pytest.raises(ValueError, match="domain::name"):
        tl.onnx.register_custom_op_symbolic("nonamespace", lambda g, x: x, 11)
    with pytest.raises(TypeError, match="must be callable"):
        tl.onnx.register_custom_op_symbolic("a::b", 3, 11)

    @tl.onnx.symbolic_helper.parse_args("v", "i")
    def f(g, x, n):
        return n
    assert f(None, "x_value", 3.0) == 3 and isinstance(f(None, "x_value", 3.0), int)
    with pytest.raises(RuntimeError, match="declared 'i'"):
        f(None, "x_value", "other_value")
    assert int(tl.onnx.TensorProtoDataType.FLOAT) == onnx.TensorProto.FLOAT
    assert int(tl.onnx.TensorProtoDataType.INT64) == onnx.TensorProto.INT64
