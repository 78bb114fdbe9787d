"""tensorlab.onnx.export: the written model loads in `onnx`, passes onnx.checker (full check, with
shape inference) and runs in onnxruntime to tensorlab's own outputs; dynamic axes run at other
sizes; ops without a mapping raise torch's UnsupportedOperatorError. onnxruntime is the independent
reference (skipped without onnx/onnxruntime)."""
from __future__ import annotations

import io
import sys

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import nn
from tensorlab.nn import functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _export(model, args, **kw):
    f = io.BytesIO()
    tl.onnx.export(model, args, f, **kw)
    data = f.getvalue()
    mp = onnx.load_from_string(data)
    onnx.checker.check_model(mp, full_check=True)
    return data, mp


def _run(data, feeds):
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return s.run(None, {k: (v.cpu().numpy() if isinstance(v, tl.Tensor) else v) for k, v in feeds.items()})


def _forward(model, *args):
    with tl.no_grad():
        out = model(*args)
    out = _flat(out)
    return [o.cpu().numpy() for o in out]


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for v in out for t in _flat(v)]
    return [out]


def _agree(model, args, names, alt=(), rtol=1e-4, atol=1e-5, **kw):
    """Export model on args; every entry of [args] + alt runs in onnxruntime to model's outputs."""
    data, mp = _export(model, args, input_names=names, **kw)
    model.eval()
    for inp in [args] + list(alt):
        got = _run(data, dict(zip(names, inp)))
        want = _forward(model, *inp)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return mp


def _ops(mp):
    return [n.op_type for n in mp.graph.node]


def test_mlp_gemm_and_dynamic_batch(device):
    tl.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3), nn.Sigmoid()).to(device)
    x = tl.randn(3, 4, device=device)
    mp = _agree(m, (x,), ["x"], alt=[(tl.randn(7, 4, device=device),)], dynamic_axes={"x": {0: "batch"},
                                                                                    "output": {0: "batch"}})
    assert _ops(mp).count("Gemm") == 3 and {"Relu", "Tanh", "Sigmoid"} <= set(_ops(mp))
    assert [i.name for i in mp.graph.initializer] == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight",
                                                      "4.bias"]
    dims = mp.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and dims[1].dim_value == 4
    assert mp.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert mp.opset_import[0].version == 20


class _SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
            nn.AvgPool2d(2, ceil_mode=False), nn.Dropout(0.5))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        return self.head(self.pool(self.features(x)).flatten(1))


def test_cnn_batchnorm_pooling_eval_and_mode_restored():
    tl.manual_seed(1)
    m = _SmallCNN()
    for bn in (m.features[1], m.features[5]):  # running statistics that are not the defaults
        bn.running_mean.copy_(tl.randn(8) * 0.1)
        bn.running_var.copy_(tl.rand(8) + 0.5)
    m.train()
    x = tl.randn(2, 3, 16, 16)
    data, mp = _export(m, (x,), input_names=["img"], output_names=["logits"], dynamic_axes={"img": [0]})
    assert m.training  # export ran in eval mode (TrainingMode.EVAL) and gave the mode back
    ops = _ops(mp)
    for op in ("Conv", "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm"):
        assert op in ops, (op, ops)
    assert mp.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "img_dynamic_axes_1"
    m.eval()
    for xb in (x, tl.randn(5, 3, 16, 16)):
        (got,) = _run(data, {"img": xb})
        np.testing.assert_allclose(got, _forward(m, xb)[0], rtol=1e-4, atol=1e-5)


class _BasicBlock(nn.Module):
    """ResNet's basic block: two 3x3 convs with BatchNorm, a strided 1x1 shortcut, in-place add and ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.down(x)
        return self.relu(out)


def test_residual_block_inplace_add_and_relu(device):
    tl.manual_seed(2)
    m = _BasicBlock(4, 8, 2).to(device).eval()
    x = tl.randn(2, 4, 9, 9, device=device)
    mp = _agree(m, (x,), ["x"], alt=[(tl.randn(3, 4, 9, 9, device=device),)], dynamic_axes={"x": {0: "n"}})
    assert _ops(mp).count("Conv") == 3 and "Add" in _ops(mp)


def test_transformer_encoder_layer_dynamic_batch(device):
    tl.manual_seed(3)
    m = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True).to(device).eval()
    x = tl.randn(3, 5, 16, device=device)
    mp = _agree(m, (x,), ["src"], alt=[(tl.randn(2, 5, 16, device=device),)], dynamic_axes={"src": {0: "batch"}})
    ops = _ops(mp)
    assert "LayerNormalization" in ops and "Softmax" in ops and "Dropout" not in ops


def test_transformer_encoder_gelu_norm_first_with_mask():
    tl.manual_seed(4)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", norm_first=True, batch_first=True)
    m = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = tl.randn(2, 6, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(6)

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = m

        def forward(self, src, mask):
            return self.enc(src, mask=mask)

    w = Wrap().eval()
    mp = _agree(w, (x, mask), ["src", "mask"], rtol=1e-4, atol=1e-4)
    assert "Gelu" in _ops(mp)


class _EmbedClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 6, padding_idx=0)
        self.pos = nn.Parameter(tl.randn(1, 7, 6) * 0.1)
        self.norm = nn.LayerNorm(6)
        self.fc = nn.Linear(6, 4)

    def forward(self, tokens):
        h = self.norm(self.emb(tokens) + self.pos[:, :tokens.shape[1]])
        return self.fc(h.mean(dim=1)).log_softmax(-1)


def test_embedding_linear_int64_input():
    tl.manual_seed(5)
    m = _EmbedClassifier().eval()
    tok = tl.randint(0, 20, (3, 7))
    mp = _agree(m, (tok,), ["tokens"], alt=[(tl.randint(0, 20, (6, 7)),)], dynamic_axes={"tokens": {0: "b"}})
    assert "Gather" in _ops(mp) and "LogSoftmax" in _ops(mp)
    assert mp.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT64


class _Functional(nn.Module):
    """A mix of the tensor ops the tracer hears one by one."""

    def forward(self, x, y):
        a = tl.cat([x[:, :2] * 2.0 - 1, x[:, 3:] / 3], dim=1)
        b = F.pad(a, (1, 2, 0, 1), value=0.5).permute(0, 2, 1).contiguous().transpose(1, 2)
        c = tl.where(b > 0, b.sqrt(), -b).clamp(max=1.5) + y.unsqueeze(-1)
        d = F.interpolate(c.unsqueeze(1), scale_factor=2, mode="nearest").squeeze(1)
        e = F.softmax(d, dim=-1) + d.var(-1, keepdim=True) + d.amax(1, keepdim=True) + F.gelu(d, approximate="tanh")
        f = tl.stack([e.sum(-1), e.mean(-1).exp(), F.silu(e).abs().amin(-1)], dim=0)
        return f.reshape(3, -1), F.leaky_relu(d, 0.1)


def test_functional_ops_mix():
    tl.manual_seed(6)
    x, y = tl.randn(2, 5, 4), tl.randn(2, 5)
    mp = _agree(_Functional(), (x, y), ["x", "y"])
    assert "Resize" in _ops(mp) and "Pad" in _ops(mp)


@pytest.mark.parametrize("opset", [13, 17, 18, 20, 23])
def test_opsets(opset):
    tl.manual_seed(7)
    m = nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6), nn.GELU(), nn.Linear(6, 2)).eval()
    x = tl.randn(4, 3, 6)
    mp = _agree(m, (x,), ["x"], opset_version=opset)
    assert mp.opset_import[0].version == opset
    assert ("LayerNormalization" in _ops(mp)) == (opset >= 17) and ("Gelu" in _ops(mp)) == (opset >= 20)


def test_conv_transpose_upsample_and_group_conv():
    tl.manual_seed(8)
    m = nn.Sequential(nn.Conv2d(4, 4, 3, padding="same", groups=2), nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1,
                                                                                    output_padding=1),
                      nn.Upsample(scale_factor=2, mode="bilinear"), nn.Identity(), nn.Softmax(dim=1)).eval()
    x = tl.randn(1, 4, 5, 5)
    mp = _agree(m, (x,), ["x"])
    assert "ConvTranspose" in _ops(mp)


def test_conv1d_sequence_model_and_file_path(tmp_path):
    tl.manual_seed(9)
    m = nn.Sequential(nn.Conv1d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool1d(2), nn.Flatten(), nn.Linear(16, 2)).eval()
    x = tl.randn(2, 3, 8)
    path = tmp_path / "model.onnx"
    tl.onnx.export(m, (x,), str(path), input_names=["x"], output_names=["y"])
    mp = onnx.load(str(path))
    onnx.checker.check_model(mp, full_check=True)
    assert [o.name for o in mp.graph.output] == ["y"]
    (got,) = _run(path.read_bytes(), {"x": x})
    np.testing.assert_allclose(got, _forward(m, x)[0], rtol=1e-4, atol=1e-5)


def test_export_params_false_makes_parameters_inputs():
    m = nn.Linear(3, 2)
    x = tl.randn(4, 3)
    data, mp = _export(m, (x,), input_names=["x"], export_params=False, verify=True)
    assert not mp.graph.initializer
    assert [i.name for i in mp.graph.input] == ["x", "weight", "bias"]
    (got,) = _run(data, {"x": x, "weight": m.weight.detach(), "bias": m.bias.detach()})
    np.testing.assert_allclose(got, _forward(m, x)[0], rtol=1e-5, atol=1e-6)


def test_is_in_onnx_export_and_kwargs():
    seen = []

    class M(nn.Module):
        def forward(self, x, scale=None):
            seen.append(tl.onnx.is_in_onnx_export())
            return x * scale

    assert tl.onnx.is_in_onnx_export() is False
    x, s = tl.randn(2, 3), tl.randn(3)
    data, mp = _export(M(), (x,), kwargs={"scale": s})
    assert seen == [True] and tl.onnx.is_in_onnx_export() is False
    assert [i.name for i in mp.graph.input] == ["x", "scale"]
    (got,) = _run(data, {"x": x, "scale": s})
    np.testing.assert_allclose(got, (x * s).numpy(), rtol=1e-6)


def test_unsupported_op_raises_torch_error_class(torch):
    class M(nn.Module):
        def forward(self, x):
            return x.cumprod(0)

    with pytest.raises(tl.onnx.errors.UnsupportedOperatorError, match=r"'cumprod'.*opset version 17") as e:
        tl.onnx.export(M(), (tl.randn(3),), io.BytesIO(), opset_version=17)
    assert isinstance(e.value, tl.onnx.OnnxExporterError) and isinstance(e.value, RuntimeError)
    assert e.value.name == "cumprod" and e.value.version == 17
    # torch's hierarchy: UnsupportedOperatorError < OnnxExporterError < RuntimeError
    assert [c.__name__ for c in tl.onnx.errors.UnsupportedOperatorError.__mro__[:3]] == \
        [c.__name__ for c in torch.onnx.errors.UnsupportedOperatorError.__mro__[:3]]


def test_unsupported_mode_and_constant_folding():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(tl.randn(4))

        def forward(self, x):
            # cumprod on a parameter only: folded into a constant, not an error
            return x + self.w.cumprod(0)

    x = tl.randn(2, 4)
    m = M()
    data, mp = _export(m, (x,), input_names=["x"])
    (got,) = _run(data, {"x": x})
    np.testing.assert_allclose(got, _forward(m, x)[0], rtol=1e-6)
    with pytest.raises(tl.onnx.errors.UnsupportedOperatorError, match="cumprod"):
        tl.onnx.export(M(), (x,), io.BytesIO(), do_constant_folding=False)
    with pytest.raises(tl.onnx.errors.UnsupportedOperatorError, match="training"):
        tl.onnx.export(nn.Dropout(0.5), (x,), io.BytesIO(), training=tl.onnx.TrainingMode.TRAINING)


def test_constant_folding_matches_forward():
    tl.manual_seed(10)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(tl.randn(4))

        def forward(self, x):
            return x + self.w.cumprod(0) * tl.arange(4)

    m = M()
    x = tl.randn(2, 4)
    _agree(m, (x,), ["x"])


def test_bad_arguments():
    m = nn.Linear(2, 2)
    x = tl.randn(1, 2)
    with pytest.raises(ValueError, match="opset_version 9"):
        tl.onnx.export(m, (x,), io.BytesIO(), opset_version=9)
    with pytest.raises(ValueError, match="input_names"):
        tl.onnx.export(m, (x,), io.BytesIO(), input_names=["a", "b"])
    with pytest.raises(ValueError, match="axis 3"):
        tl.onnx.export(m, (x,), io.BytesIO(), input_names=["a"], dynamic_axes={"a": [3]})


def test_needs_onnx_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match="pip install onnx"):
        tl.onnx.export(nn.Linear(2, 2), (tl.randn(1, 2),), io.BytesIO())


def test_enums_match_torch(torch):
    for ours, theirs in ((tl.onnx.TrainingMode, torch.onnx.TrainingMode),
                         (tl.onnx.OperatorExportTypes, torch.onnx.OperatorExportTypes)):
        assert {k: int(v) for k, v in ours.__members__.items()} == \
            {k: int(v) for k, v in theirs.__members__.items()}
    assert torch.onnx.is_in_onnx_export() is tl.onnx.is_in_onnx_export()


def test_select_model_mode_for_export():
    m = nn.Dropout()
    with tl.onnx.select_model_mode_for_export(m, tl.onnx.TrainingMode.EVAL):
        assert not m.training
    assert m.training
    with tl.onnx.select_model_mode_for_export(m, tl.onnx.TrainingMode.PRESERVE):
        assert m.training


def test_multihead_attention_with_key_padding_mask_and_weights():
    tl.manual_seed(11)
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = mha

        def forward(self, q, kv, kpm):
            return self.attn(q, kv, kv, key_padding_mask=kpm)  # need_weights=True: the averaged weights too

    kpm = tl.tensor([[False, False, True, True], [False, False, False, False], [False, True, False, False]])
    mp = _agree(M(), (tl.randn(3, 5, 8), tl.randn(3, 4, 8), kpm), ["q", "kv", "kpm"])
    assert len(mp.graph.output) == 2


def test_encoder_layer_with_src_key_padding_mask():
    tl.manual_seed(12)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x, kpm):
            return self.layer(x, src_key_padding_mask=kpm)

    kpm = tl.tensor([[False, False, True, True], [False, False, False, False], [False, True, False, False]])
    _agree(M(), (tl.randn(3, 4, 8), kpm), ["x", "kpm"])


class _Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 4)
        self.conv = nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect")

    def forward(self, x, idx):
        y = self.gn(self.conv(x))
        z = F.pad(F.pad(y, (1, 1, 2, 0), mode="replicate"), (1, 1, 1, 1), mode="reflect")
        vals, ind = z[:, idx].max(dim=1)
        a = F.adaptive_avg_pool2d(z, (2, 5))
        b = F.interpolate(z, size=(5, 7), mode="bilinear", align_corners=True)
        q = F.scaled_dot_product_attention(z, z, z, is_causal=True)
        return vals, ind, a, b, q, z.expand(2, 4, z.shape[2], z.shape[3]) * 1


@pytest.mark.parametrize("opset", [13, 20])
def test_group_norm_padding_modes_pools_interpolate_attention(opset):
    tl.manual_seed(13)
    mp = _agree(_Mixed().eval(), (tl.randn(1, 4, 6, 6), tl.tensor([0, 2, 3])), ["x", "idx"], opset_version=opset)
    ops = _ops(mp)
    assert "ArgMax" in ops and "Resize" in ops and ops.count("Pad") == 3


class _Indexing(nn.Module):
    def forward(self, x, i, j):
        a, b, c = x[:, i, 1:], x[i, :, j], x[..., i, None]
        d = x[:, i][:, :, j]
        return a, b, c, d, x[:, i, j], x[1:, None, i], x[-1, ::2], x.narrow(2, 1, 3), x.split(2, dim=1)[1]


def test_indexing_with_tensor_indices_as_inputs():
    x = tl.randn(3, 4, 5)
    i, j = tl.tensor([0, 2]), tl.tensor([1, 3])
    data, mp = _export(_Indexing(), (x, i, j), input_names=["x", "i", "j"])
    i2, j2 = tl.tensor([2, 1]), tl.tensor([4, 0])  # other index values: they are graph inputs, not constants
    for args in ((x, i, j), (x, i2, j2)):
        got = _run(data, dict(zip(["x", "i", "j"], args)))
        for g_, w in zip(got, _forward(_Indexing(), *args)):
            np.testing.assert_array_equal(g_, w)


def test_boolean_mask_from_input_is_refused():
    class M(nn.Module):
        def forward(self, x):
            return x[x > 0]

    with pytest.raises(tl.onnx.errors.UnsupportedOperatorError, match="boolean mask"):
        tl.onnx.export(M(), (tl.randn(4),), io.BytesIO())


def test_inplace_write_through_a_view_is_refused():
    class M(nn.Module):
        def forward(self, x):
            y = x * 1
            y[:, 0].add_(1)
            return y

    with pytest.raises(tl.onnx.errors.OnnxExporterError, match="view"):
        tl.onnx.export(M(), (tl.randn(2, 3),), io.BytesIO())


@pytest.mark.parametrize("batch_first", [True, False])
def test_transformer_batch_and_sequence_axes_both_dynamic(batch_first):
    # batch 3 is also the size of the packed q/k/v dim: the probe run (axes at other sizes) tells them apart
    tl.manual_seed(14)
    m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first).eval()
    shape = (3, 5, 8) if batch_first else (5, 3, 8)
    axes = {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"}
    alts = [(tl.randn(2, 7, 8),), (tl.randn(6, 1, 8),)] if batch_first else [(tl.randn(7, 2, 8),), (tl.randn(1, 6, 8),)]
    mp = _agree(m, (tl.randn(*shape),), ["x"], alt=alts, dynamic_axes={"x": axes, "output": axes})
    dims = [d.dim_param for d in mp.graph.output[0].type.tensor_type.shape.dim]
    assert dims[:2] == (["batch", "seq"] if batch_first else ["seq", "batch"])


def test_dynamic_axes_when_the_model_takes_only_the_example_size():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            if x.shape[0] != 3:  # the probe run (another batch size) fails: sizes alone decide the reshapes
                raise ValueError("batch of 3 only")
            return self.fc(x.reshape(3, 2, 4).sum(1))

    m = M().eval()
    with pytest.warns(tl.onnx.errors.OnnxExporterWarning, match="other sizes"):
        data, mp = _export(m, (tl.randn(3, 8),), input_names=["x"], dynamic_axes={"x": {0: "n"}})
    (got,) = _run(data, {"x": tl.randn(3, 8)})
    assert got.shape == (3, 2)
    x5 = tl.randn(5, 8)
    (got,) = _run(data, {"x": x5})
    with tl.no_grad():
        want = m.fc(x5.reshape(5, 2, 4).sum(1))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


def test_same_model_as_torchs_exporter_writes(torch):
    """The same weights exported by torch (its TorchScript exporter) and by tensorlab: onnxruntime
    gives the same outputs for both files, at the example batch and another one."""
    import warnings

    def build(ns):
        return ns.Sequential(ns.Conv2d(3, 6, 3, padding=1), ns.BatchNorm2d(6), ns.ReLU(), ns.MaxPool2d(2),
                             ns.Conv2d(6, 6, 3, stride=2, padding=1, groups=2), ns.AdaptiveAvgPool2d(1), ns.Flatten(),
                             ns.Linear(6, 8), ns.LayerNorm(8), ns.GELU(), ns.Linear(8, 3), ns.Softmax(dim=-1))

    tl.manual_seed(15)
    ours = build(nn)
    ours[1].running_mean.copy_(tl.randn(6) * 0.1)
    ours[1].running_var.copy_(tl.rand(6) + 0.5)
    ours.eval()
    theirs = build(torch.nn).eval()
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in ours.state_dict().items()})
    x = tl.randn(2, 3, 12, 12)
    axes = {"x": {0: "b"}}
    data, _ = _export(ours, (x,), input_names=["x"], dynamic_axes=axes)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(theirs, (torch.from_numpy(x.numpy()),), f, dynamo=False, input_names=["x"],
                          dynamic_axes=axes)
    for xb in (x, tl.randn(5, 3, 12, 12)):
        (a,) = _run(data, {"x": xb})
        (b,) = _run(f.getvalue(), {"x": xb})
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_outputs_that_are_inputs_constants_or_repeated():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("k", tl.arange(3.0))

        def forward(self, x):
            y = x.relu()
            return y, x, self.k, y

    x = tl.randn(2, 3)
    data, mp = _export(M(), (x,), input_names=["x"], output_names=["a", "b", "c", "d"])
    got = _run(data, {"x": x})
    for g_, w in zip(got, (x.relu(), x, tl.arange(3.0), x.relu())):
        np.testing.assert_array_equal(g_, w.numpy())


def test_inplace_ops_on_graph_values():
    class M(nn.Module):
        def forward(self, x):
            y = x * 2
            y.masked_fill_(y > 1, 0.0)
            y.clamp_(-0.5, 0.5)
            return y

    x = tl.tensor([0.2, 0.7, -1.0, 3.0, -0.1])
    data, _ = _export(M(), (tl.randn(5),), input_names=["x"])
    (got,) = _run(data, {"x": x})
    np.testing.assert_array_equal(got, M()(x).numpy())

    class C(nn.Module):
        def forward(self, x):
            y = x * 2
            y.copy_(x)
            return y

    with pytest.raises(tl.onnx.errors.UnsupportedOperatorError, match="'copy_'"):
        tl.onnx.export(C(), (tl.randn(4),), io.BytesIO())


def test_tensors_nested_in_arguments_are_inputs():
    class M(nn.Module):
        def forward(self, pair, scale=1.0):
            a, b = pair
            return (a - b) * scale

    a, b = tl.randn(3, 2), tl.randn(3, 2)
    data, mp = _export(M(), ((a, b), 2.0), dynamic_axes={"pair_0": [0], "pair_1": [0]})
    assert [i.name for i in mp.graph.input] == ["pair_0", "pair_1"]
    a2, b2 = tl.randn(5, 2), tl.randn(5, 2)
    (got,) = _run(data, {"pair_0": a2, "pair_1": b2})
    np.testing.assert_allclose(got, ((a2 - b2) * 2.0).numpy(), rtol=1e-6)


class _RNNOut(nn.Module):
    """Every output of a recurrent layer as a flat tuple (output, h_n[, c_n])."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *state):
        out, st = self.rnn(x, tuple(state) if len(state) == 2 else (state[0] if state else None))
        return (out,) + (tuple(st) if isinstance(st, tuple) else (st,))


@pytest.mark.parametrize("kind", ["lstm", "gru_bidirectional", "rnn_relu"])
def test_recurrent_layers_dynamic_batch_and_sequence(kind):
    tl.manual_seed(16)
    rnn = {"lstm": lambda: nn.LSTM(5, 4, num_layers=2, batch_first=True),
           "gru_bidirectional": lambda: nn.GRU(5, 4, num_layers=2, bidirectional=True),
           "rnn_relu": lambda: nn.RNN(5, 4, nonlinearity="relu", bias=False)}[kind]()
    m = _RNNOut(rnn).eval()
    bf = rnn.batch_first
    x, alt = (tl.randn(3, 6, 5), tl.randn(2, 4, 5)) if bf else (tl.randn(6, 3, 5), tl.randn(4, 2, 5))
    axes = {0: "b", 1: "t"} if bf else {0: "t", 1: "b"}
    mp = _agree(m, (x,), ["x"], alt=[(alt,)], dynamic_axes={"x": axes})
    assert {"LSTM": "LSTM", "GRU": "GRU"}.get(rnn.mode, "RNN") in _ops(mp)


def test_lstm_language_model_with_initial_state():
    tl.manual_seed(17)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(12, 6)
            self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
            self.head = nn.Linear(8, 12)

        def forward(self, tokens, h, c):
            out, (h, c) = self.lstm(self.emb(tokens), (h, c))
            return self.head(out), h, c

    m = LM().eval()
    args = (tl.randint(0, 12, (2, 5)), tl.randn(2, 2, 8), tl.randn(2, 2, 8))
    _agree(m, args, ["tokens", "h", "c"])


def test_lstm_with_projection_is_unsupported():
    with pytest.raises(tl.onnx.errors.UnsupportedOperatorError, match="proj_size"):
        tl.onnx.export(_RNNOut(nn.LSTM(3, 4, proj_size=2)), (tl.randn(2, 1, 3),), io.BytesIO())


def test_factories_sized_by_a_dynamic_axis_follow_it():
    tl.manual_seed(18)

    class Pos(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(10, 6)
            self.pos = nn.Embedding(16, 6)
            self.fc = nn.Linear(6, 3)

        def forward(self, t):
            ids = tl.arange(t.shape[1])  # positions: as long as the sequence the model runs on
            scale = tl.zeros(t.shape[0], t.shape[1], 1) + tl.full((t.shape[0], 1, 1), 0.5)
            return self.fc(self.tok(t) + self.pos(ids)) * scale

    m = Pos().eval()
    mp = _agree(m, (tl.randint(0, 10, (3, 5)),), ["t"], alt=[(tl.randint(0, 10, (2, 9)),)],
                dynamic_axes={"t": {0: "b", 1: "s"}})
    assert "Range" in _ops(mp) and "ConstantOfShape" in _ops(mp)


def test_a_size_read_in_python_is_reported_when_it_stays_fixed():
    class M(nn.Module):
        def forward(self, x):
            return x * tl.tensor([float(x.shape[0])]).expand(x.shape[0]).unsqueeze(1)

    with pytest.warns(tl.onnx.errors.OnnxExporterWarning, match="keeps the example's size"):
        tl.onnx.export(M(), (tl.randn(3, 2),), io.BytesIO(), input_names=["x"], dynamic_axes={"x": [0]})


def test_full_transformer_encoder_decoder():
    tl.manual_seed(19)
    m = nn.Transformer(8, 2, 2, 2, 16, dropout=0.0, batch_first=True).eval()
    args = (tl.randn(3, 5, 8), tl.randn(3, 4, 8))
    axes = {"src": {0: "b", 1: "s"}, "tgt": {0: "b", 1: "t"}}
    _agree(m, args, ["src", "tgt"], alt=[(tl.randn(2, 7, 8), tl.randn(2, 6, 8))], dynamic_axes=axes, atol=1e-5)


def test_volumetric_and_1d_layers():
    tl.manual_seed(20)
    m3 = nn.Sequential(nn.Conv3d(2, 3, 3, padding=1), nn.MaxPool3d(2), nn.ConvTranspose3d(3, 2, 2, stride=2)).eval()
    _agree(m3, (tl.randn(2, 2, 4, 4, 4),), ["x"], alt=[(tl.randn(3, 2, 4, 4, 4),)], dynamic_axes={"x": [0]})
    m1 = nn.Sequential(nn.ConvTranspose1d(2, 3, 3, stride=2, padding=1, output_padding=1, dilation=2),
                       nn.AvgPool1d(2, count_include_pad=False, padding=1), nn.AdaptiveMaxPool1d(1)).eval()
    _agree(m1, (tl.randn(2, 2, 7),), ["x"])


def test_like_factories_of_graph_values():
    class M(nn.Module):
        def forward(self, x):
            return tl.zeros_like(x) + tl.ones_like(x) * 2 + tl.full_like(x, 0.25) + x

    x = tl.randn(3, 4)
    _agree(M(), (x,), ["x"], alt=[(tl.randn(6, 4),)], dynamic_axes={"x": [0]})


class _MoreOps(nn.Module):
    def forward(self, x, i):
        vals, idx = x.topk(2, dim=1)
        small, sidx = x.topk(2, dim=0, largest=False)
        s, sj = x.sort(1, descending=True)
        return (x.cumsum(1), x.argmax(1), x.argmin(), vals, idx, small, sidx, s, sj, x.topk(1, largest=False)[0],
                x.topk(1)[0], x.flip(0, 1), x.tril(),
                x.triu(1), x.gather(1, i), x.abs().log2(), x.abs().log10(), x.exp2(), x.square(), x.trunc(),
                x % 0.7, x // 0.3, x.norm(dim=1), x.norm(p=1, dim=0, keepdim=True), x.roll(1, 1), x.roll(2),
                tl.outer(x[0], x[1]), x.logsumexp(1), x.prod(0))


def test_more_tensor_ops():
    tl.manual_seed(21)
    x = tl.randn(3, 5)
    i = tl.tensor([[0, 4], [2, 0], [1, 1]])
    _agree(_MoreOps(), (x, i), ["x", "i"], alt=[(tl.randn(3, 5), tl.tensor([[1, 1], [3, 2], [4, 0]]))])


def test_an_op_from_a_later_opset_names_that_opset():
    class M(nn.Module):
        def forward(self, x):
            return F.pad(x, (1, 2), mode="circular")

    x = tl.randn(1, 2, 5)
    with pytest.raises(tl.onnx.errors.UnsupportedOperatorError, match="added in version 19") as e:
        tl.onnx.export(M(), (x,), io.BytesIO(), opset_version=18)
    assert e.value.supported_version == 19
    _agree(M(), (x,), ["x"], opset_version=19)


def test_keep_initializers_as_inputs():
    m = nn.Linear(3, 2)
    data, mp = _export(m, (tl.randn(1, 3),), input_names=["x"], keep_initializers_as_inputs=True)
    assert [i.name for i in mp.graph.input] == ["x", "weight", "bias"]
    assert [i.name for i in mp.graph.initializer] == ["weight", "bias"]
    x = tl.randn(1, 3)
    (got,) = _run(data, {"x": x})  # the initializers are the inputs' defaults
    np.testing.assert_allclose(got, _forward(m, x)[0], rtol=1e-5, atol=1e-6)


def test_initializers_are_the_state_dict_once_each():
    tl.manual_seed(22)
    m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    data, mp = _export(m, (tl.randn(2, 3, 8),), input_names=["x"])
    names = [i.name for i in mp.graph.initializer if not i.name.startswith("/")]
    assert sorted(names) == sorted(m.state_dict().keys())
    big = [i.name for i in mp.graph.initializer if i.name.startswith("/") and np.prod(i.dims) >= 8]
    assert not big, big  # no weight copied under another name


def test_verify_runs_the_file_in_onnxruntime(monkeypatch):
    m = nn.Sequential(nn.Linear(3, 4), nn.GELU()).eval()
    tl.onnx.export(m, (tl.randn(2, 3),), io.BytesIO(), verify=True)
    from tensorlab.onnx import _symbolic
    real = _symbolic.HOOK["relu"]

    def wrong(g, op, inputs, out, info):  # a mapping that computes something else: verify must catch it
        return g.node("Sigmoid", [g.val(inputs[0])])

    monkeypatch.setitem(_symbolic.HOOK, "relu", wrong)
    with pytest.raises(tl.onnx.OnnxExporterError, match="differ"):
        tl.onnx.export(nn.ReLU(), (tl.randn(2, 3),), io.BytesIO(), verify=True)
    monkeypatch.setitem(_symbolic.HOOK, "relu", real)
