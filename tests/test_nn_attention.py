"""F.scaled_dot_product_attention, MultiheadAttention, TransformerEncoder/DecoderLayer, the stacks
and nn.Transformer against torch: outputs, attention weights, input and parameter gradients,
masks (bool/float, key padding, causal), batch_first, norm_first, kdim/vdim, errors, gradcheck."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.nn.functional as F
from layers_oracle import close, close_grads, copy_weights, np_of, pair, randn

TOL = dict(rtol=1e-4, atol=1e-5)


def _sdpa_case(torch, device, qs, ks, vs, mask=None, **kw):
    q, tq = pair(torch, device, randn(*qs, seed=0), True)
    k, tk = pair(torch, device, randn(*ks, seed=1), True)
    v, tv = pair(torch, device, randn(*vs, seed=2), True)
    m = tm = None
    if mask is not None:
        m, tm = pair(torch, device, mask)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    ty = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, **kw)
    close(y, ty, **TOL)
    g = randn(*ty.shape, seed=5)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    for a, b in ((q, tq), (k, tk), (v, tv)):
        close(a.grad, b.grad, **TOL)


BOOL = np.random.default_rng(4).random((5, 7)) > 0.3
BOOL[:, 0] = True  # every query keeps a key


@pytest.mark.parametrize("case", [
    dict(qs=(2, 3, 5, 4), ks=(2, 3, 7, 4), vs=(2, 3, 7, 6)),
    dict(qs=(2, 5, 4), ks=(2, 7, 4), vs=(2, 7, 4), scale=0.3),
    dict(qs=(2, 3, 5, 4), ks=(2, 3, 7, 4), vs=(2, 3, 7, 4), mask=BOOL),
    dict(qs=(2, 3, 5, 4), ks=(2, 3, 7, 4), vs=(2, 3, 7, 4), mask=randn(2, 1, 5, 7)),
    dict(qs=(1, 2, 6, 4), ks=(1, 2, 6, 4), vs=(1, 2, 6, 4), is_causal=True),
    dict(qs=(1, 2, 4, 4), ks=(1, 2, 6, 4), vs=(1, 2, 6, 4), is_causal=True),
    dict(qs=(2, 4, 5, 4), ks=(2, 2, 7, 4), vs=(2, 2, 7, 4), enable_gqa=True),
    dict(qs=(5, 4), ks=(7, 4), vs=(7, 3)),
], ids=lambda c: ",".join(f"{k}" for k in c if k not in ("qs", "ks", "vs")) or "plain")
def test_sdpa_matches_torch(device, torch, case):
    _sdpa_case(torch, device, **case)


def test_sdpa_fully_masked_row_gives_zeros(device, torch):
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False  # query 1 may see no key: torch's _safe_softmax gives zeros, not NaN
    (q, tq), (k, tk), (v, tv) = (pair(torch, device, randn(n, 2, seed=s)) for s, n in enumerate((3, 4, 4)))
    m, tmask = pair(torch, device, mask)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    close(y, torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask), **TOL)
    assert not np_of(y)[1].any()


def test_sdpa_dropout_and_errors(device):
    tl.manual_seed(0)
    q = tl.tensor(randn(2, 8, 4), device=device)
    a = F.scaled_dot_product_attention(q, q, q)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert not np.allclose(np_of(a), np_of(b))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=tl.ones(8, 8, dtype=tl.bool, device=device), is_causal=True)
    with pytest.raises(RuntimeError, match=re.escape("Expected attn_mask dtype to be bool or float or to match query "
                                                     "dtype, but got attn_mask.dtype: long int and  query.dtype: "
                                                     "float instead.")):
        F.scaled_dot_product_attention(q, q, q, attn_mask=tl.zeros(8, 8, dtype=tl.int64, device=device))


def _mha_pair(torch, device, *args, **kw):
    tm = torch.nn.MultiheadAttention(*args, **kw)
    with torch.no_grad():
        for p in tm.parameters():
            if p.dim() == 1:
                p.copy_(torch.randn(p.shape) * 0.1)
    return tm, copy_weights(tm, nn.MultiheadAttention(*args, **kw), device)


MHA_CASES = [
    ({}, {}),
    ({"batch_first": True}, {}),
    ({}, {"need_weights": False}),
    ({}, {"average_attn_weights": False}),
    ({"kdim": 3, "vdim": 5}, {}),
    ({"bias": False, "add_bias_kv": True, "add_zero_attn": True}, {}),
    ({}, {"key_padding_mask": True}),
    ({}, {"attn_mask": "bool"}),
    ({}, {"attn_mask": "float", "key_padding_mask": True, "need_weights": False}),
    ({}, {"attn_mask": "causal", "is_causal": True, "need_weights": False}),
]


@pytest.mark.parametrize("ctor,call", MHA_CASES, ids=str)
def test_multihead_attention_matches_torch(device, torch, ctor, call):
    E, H, L, S, N = 8, 2, 4, 6 if "kdim" in ctor else 4, 3
    tm, m = _mha_pair(torch, device, E, H, **ctor)
    assert repr(m) == repr(tm)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    bf = ctor.get("batch_first", False)
    shp = (lambda n_, l_, e_: (n_, l_, e_) if bf else (l_, n_, e_))
    q, tq = pair(torch, device, randn(*shp(N, L, E)), True)
    if "kdim" in ctor:
        k, tk = pair(torch, device, randn(*shp(N, S, ctor["kdim"]), seed=1), True)
        v, tv = pair(torch, device, randn(*shp(N, S, ctor["vdim"]), seed=2), True)
    else:
        k, tk, v, tv = q, tq, q, tq
    kw, tkw = {}, {}
    for key, val in call.items():
        if key == "key_padding_mask":
            kpm = np.zeros((N, S), dtype=bool)
            kpm[0, -1] = kpm[2, 1] = True
            kw[key], tkw[key] = pair(torch, device, kpm)
        elif key == "attn_mask":
            if val == "bool":
                am = np.random.default_rng(1).random((L, S)) > 0.7
                am[:, 0] = False
            elif val == "causal":
                am = np.triu(np.full((L, S), -np.inf, dtype=np.float32), 1)
            else:
                am = randn(N * H, L, S, seed=3)
            kw[key], tkw[key] = pair(torch, device, am)
        else:
            kw[key] = tkw[key] = val
    out, w = m(q, k, v, **kw)
    tout, tw = tm(tq, tk, tv, **tkw)
    close(out, tout, **TOL)
    if tw is None:
        assert w is None
    else:
        close(w, tw, **TOL)
    g = randn(*tout.shape, seed=8)
    out.backward(tl.tensor(g, device=device))
    tout.backward(torch.tensor(g))
    close(q.grad, tq.grad, **TOL)
    close_grads(tm, m, **TOL)


def test_multihead_attention_unbatched_and_errors(device, torch):
    tm, m = _mha_pair(torch, device, 6, 3)
    x, tx = pair(torch, device, randn(5, 6))
    out, w = m(x, x, x)
    tout, tw = tm(tx, tx, tx)
    close(out, tout, **TOL)
    close(w, tw, **TOL)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match=re.escape("The shape of the 2D attn_mask is torch.Size([2, 2]), but should "
                                                     "be (5, 5).")):
        m(x, x, x, attn_mask=tl.zeros(2, 2, device=device))


LAYER_CASES = [
    {}, {"norm_first": True}, {"activation": "gelu", "batch_first": True}, {"bias": False},
    {"activation": "callable"},
]


def _act(kw, lib):
    if kw.get("activation") == "callable":
        return dict(kw, activation=lib.nn.functional.silu)
    return kw


@pytest.mark.parametrize("kw", LAYER_CASES, ids=str)
@pytest.mark.parametrize("masks", [False, True])
def test_encoder_layer_and_stack(device, torch, kw, masks):
    tlayer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **_act(kw, torch))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.TransformerEncoder(tlayer, 2, norm=torch.nn.LayerNorm(8))
    m = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **_act(kw, tl)), 2,
                              norm=nn.LayerNorm(8))
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    copy_weights(tm, m, device)
    if kw.get("activation") != "callable":
        assert repr(m) == repr(tm)
    bf = kw.get("batch_first", False)
    shape = (2, 5, 8) if bf else (5, 2, 8)
    x, tx = pair(torch, device, randn(*shape), True)
    call, tcall = {}, {}
    if masks:
        causal = np.triu(np.full((5, 5), -np.inf, dtype=np.float32), 1)
        call["mask"], tcall["mask"] = pair(torch, device, causal)
        kpm = np.zeros((2, 5), dtype=bool)
        kpm[1, 3:] = True
        call["src_key_padding_mask"], tcall["src_key_padding_mask"] = pair(torch, device, kpm)
    y, ty = m(x, **call), tm(tx, **tcall)
    close(y, ty, **TOL)
    g = randn(*shape, seed=2)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    close(x.grad, tx.grad, **TOL)
    close_grads(tm, m, **TOL)


@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "batch_first": True}], ids=str)
def test_decoder_and_transformer(device, torch, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.Transformer(8, 2, 1, 2, 12, dropout=0.0, **kw)
    m = nn.Transformer(8, 2, 1, 2, 12, dropout=0.0, **kw)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert repr(m) == repr(tm)
    copy_weights(tm, m, device)
    bf = kw.get("batch_first", False)
    src_shape, tgt_shape = ((2, 5, 8), (2, 4, 8)) if bf else ((5, 2, 8), (4, 2, 8))
    src, tsrc = pair(torch, device, randn(*src_shape), True)
    tgt, ttgt = pair(torch, device, randn(*tgt_shape, seed=1), True)
    mask = nn.Transformer.generate_square_subsequent_mask(4, device=device)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    close(mask, tmask)
    y = m(src, tgt, tgt_mask=mask)
    ty = tm(tsrc, ttgt, tgt_mask=tmask)
    close(y, ty, **TOL)
    g = randn(*tgt_shape, seed=3)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    close(src.grad, tsrc.grad, **TOL)
    close(tgt.grad, ttgt.grad, **TOL)
    close_grads(tm, m, **TOL)
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        m(src[..., :4], tgt)


def test_transformer_subclass_and_init(device):
    class Model(nn.Transformer):  # programs subclass it at import time
        def __init__(self):
            super().__init__(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)

    m = Model().to(device)
    w = np_of(m.encoder.layers[0].linear1.weight)
    bound = np.sqrt(6 / (8 + 16))  # xavier_uniform_ over every matrix
    assert np.abs(w).max() <= bound and w.std() > bound / 3
    mha = nn.MultiheadAttention(8, 2)
    assert not np_of(mha.in_proj_bias).any() and not np_of(mha.out_proj.bias).any()
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_gradcheck_float64(device):
    rng = np.random.default_rng(0)
    q = tl.tensor(rng.standard_normal((1, 2, 3, 2)), device=device, requires_grad=True)
    k = tl.tensor(rng.standard_normal((1, 2, 4, 2)), device=device, requires_grad=True)
    v = tl.tensor(rng.standard_normal((1, 2, 4, 2)), device=device, requires_grad=True)
    mask = tl.tensor(rng.standard_normal((3, 4)), device=device, dtype=tl.float64)
    assert tl.autograd.gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask), (q, k, v))
    assert tl.autograd.gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True, scale=0.7),
                                 (q, k[:, :, :3], v[:, :, :3]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_precision(device, torch, dtype):
    q, k, v = (randn(2, 2, 5, 4, seed=s) for s in range(3))
    ours = F.scaled_dot_product_attention(*(tl.tensor(a, device=device).to(getattr(tl, dtype)) for a in (q, k, v)),
                                          is_causal=True)
    theirs = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a).to(getattr(torch, dtype))
                                                                for a in (q, k, v)), is_causal=True)
    assert ours.dtype is getattr(tl, dtype)
    close(ours, theirs, rtol=2e-2, atol=2e-2)
    tm, m = _mha_pair(torch, device, 8, 2, batch_first=True)
    tm, m = tm.to(getattr(torch, dtype)), m.to(dtype=getattr(tl, dtype))
    x = randn(2, 3, 8)
    out, w = m(*(tl.tensor(x, device=device).to(getattr(tl, dtype)),) * 3)
    tout, tw = tm(*(torch.tensor(x).to(getattr(torch, dtype)),) * 3)
    assert out.dtype is getattr(tl, dtype)
    close(out, tout, rtol=5e-2, atol=5e-2)
    close(w, tw, rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_masks(device, torch, norm_first):
    tm = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first, activation="gelu")
    m = copy_weights(tm, nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first, activation="gelu"),
                     device)
    assert repr(m) == repr(tm)
    tgt, ttgt = pair(torch, device, randn(4, 2, 8), True)
    mem, tmem = pair(torch, device, randn(6, 2, 8, seed=1), True)
    causal = np.triu(np.full((4, 4), -np.inf, dtype=np.float32), 1)
    mm = np.random.default_rng(2).random((4, 6)) > 0.8  # bool memory mask: True = not allowed
    mm[:, 0] = False
    kpm = np.zeros((2, 6), dtype=bool)
    kpm[0, 5] = True
    args = [pair(torch, device, a) for a in (causal, mm, kpm)]
    y = m(tgt, mem, tgt_mask=args[0][0], memory_mask=args[1][0], memory_key_padding_mask=args[2][0],
          tgt_is_causal=True)
    ty = tm(ttgt, tmem, tgt_mask=args[0][1], memory_mask=args[1][1], memory_key_padding_mask=args[2][1],
            tgt_is_causal=True)
    close(y, ty, **TOL)
    y.sum().backward()
    ty.sum().backward()
    close(mem.grad, tmem.grad, **TOL)
    close_grads(tm, m, **TOL)


def test_multi_head_attention_forward_functional(device, torch):
    E, H = 6, 3
    w, b = randn(3 * E, E), randn(3 * E, seed=1) * 0.1
    ow, ob = randn(E, E, seed=2), randn(E, seed=3) * 0.1
    q, k = randn(4, 2, E, seed=4), randn(5, 2, E, seed=5)
    ours = F.multi_head_attention_forward(*(tl.tensor(a, device=device) for a in (q, k, k)), E, H,
                                          tl.tensor(w, device=device), tl.tensor(b, device=device), None, None, False,
                                          0.0, tl.tensor(ow, device=device), tl.tensor(ob, device=device),
                                          average_attn_weights=False)
    theirs = torch.nn.functional.multi_head_attention_forward(*(torch.tensor(a) for a in (q, k, k)), E, H,
                                                              torch.tensor(w), torch.tensor(b), None, None, False, 0.0,
                                                              torch.tensor(ow), torch.tensor(ob),
                                                              average_attn_weights=False)
    close(ours[0], theirs[0], **TOL)
    close(ours[1], theirs[1], **TOL)
    assert tuple(ours[1].shape) == (2, H, 4, 5)


def test_gradcheck_multihead_attention_float64(device):
    m = nn.MultiheadAttention(4, 2, kdim=3, vdim=2).to(device).double()
    rng = np.random.default_rng(1)
    q = tl.tensor(rng.standard_normal((2, 1, 4)), device=device, requires_grad=True)
    k = tl.tensor(rng.standard_normal((3, 1, 3)), device=device, requires_grad=True)
    v = tl.tensor(rng.standard_normal((3, 1, 2)), device=device, requires_grad=True)
    kpm = tl.tensor([[False, True, False]], device=device)
    assert tl.autograd.gradcheck(lambda a, b, c: m(a, b, c, key_padding_mask=kpm)[0], (q, k, v))


def test_zero_size_batch(device, torch):
    tm, m = _mha_pair(torch, device, 4, 2)
    out, w = m(*(tl.zeros(3, 0, 4, device=device),) * 3)
    tout, tw = tm(*(torch.zeros(3, 0, 4),) * 3)
    assert tuple(out.shape) == tuple(tout.shape) and tuple(w.shape) == tuple(tw.shape)
    q = tl.zeros(0, 2, 5, 4, device=device)
    y = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert tuple(y.shape) == tuple(torch.nn.functional.scaled_dot_product_attention(
        *(torch.zeros(0, 2, 5, 4),) * 3, is_causal=True).shape)
