"""Attention as compositions of matmul and softmax (on CUDA, scaled_dot_product_attention runs
ops/attention.py's fused kernels where they apply): scaled_dot_product_attention (torch's math
reference path: q and k each scaled by sqrt(scale), rows that mask out every key give zeros,
as torch's _safe_softmax) and multi_head_attention_forward (torch.nn.functional's, sequence-first)."""
from __future__ import annotations

import math

import tensorlab as _tl

from .. import dtypes
from ..ops import attention as _attn
from .functional import _check_tensor, dropout, linear, softmax


def _repeat_heads(t, n):
    """t [..., H, S, E] with each head repeated n times in place (repeat_interleave along dim -3)."""
    if n == 1:
        return t
    shape = list(t.shape)
    e = t.unsqueeze(-3).expand(shape[:-2] + [n] + shape[-2:])
    return e.reshape(shape[:-3] + [shape[-3] * n] + shape[-2:])


def _check_mask_dtype(mask, query):
    if mask.dtype is not dtypes.bool and mask.dtype != query.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_c_name(mask.dtype)} and  query.dtype: {_c_name(query.dtype)} instead.")


def _c_name(dt):
    return {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}.get(
                dt.name if hasattr(dt, "name") else str(dt), str(dt))


def _safe_softmax(scores):
    """softmax over the last dim; a row whose scores are all -inf gives zeros instead of NaN."""
    p = softmax(scores, -1)
    # a row of -inf scores is the only one whose softmax is NaN throughout; where no element is NaN
    # there is no such row and p is the answer (the test reads a flag: only on the CPU, no GPU sync)
    if p.device.type == "cpu" and not bool(p.detach().isnan().any()):
        return p
    dead = (scores == float("-inf")).all(-1, keepdim=True)
    return _tl.where(dead, 0.0, p)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v with q [..., L, E], k [..., S, E], v [..., S, Ev]. A bool
    attn_mask keeps the positions that are True; a float one is added to the scores. is_causal
    masks k positions after each q position (top-left aligned); enable_gqa lets q have a multiple
    of k's and v's heads (dim -3)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        _check_tensor(t, "scaled_dot_product_attention", name)
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"scaled_dot_product_attention: expected query, key and value to have at least 2 "
                           f"dimensions, got {query.dim()}, {key.dim()} and {value.dim()}")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_c_name(query.dtype)} key.dtype: {_c_name(key.dtype)} and value.dtype: "
                           f"{_c_name(value.dtype)} instead.")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query's last dim ({query.shape[-1]}) must equal key's "
                           f"({key.shape[-1]})")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key and value must have the same sequence length "
                           f"(dim -2), got {key.shape[-2]} and {value.shape[-2]}")
    L, S = query.shape[-2], key.shape[-2]
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if attn_mask is not None:
        _check_tensor(attn_mask, "scaled_dot_product_attention", "attn_mask")
        _check_mask_dtype(attn_mask, query)
    if L == 0 or value.shape[-1] == 0:
        # an empty result: torch shapes it query.shape[:-1] + (Ev,), without broadcasting the query's
        # batch dims against key's and value's
        return query.sum(-1, keepdim=True).expand(*query.shape[:-1], value.shape[-1]).clone()
    if _attn.fused_supported(query, key, value, attn_mask, dropout_p, enable_gqa):
        return _attn.attention(query, key, value, attn_mask, is_causal, scale, enable_gqa, dropout_p)
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError(f"scaled_dot_product_attention: with enable_gqa=True the number of query heads "
                               f"({hq}) must be a multiple of the key ({hk}) and value ({hv}) heads")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hv)
    # torch's default scale 1/sqrt(E) is inf for E == 0; the (empty) products are then all zero
    s = (1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else math.inf) if scale is None else scale
    f = math.sqrt(abs(s))
    q = query * (-f if s < 0 else f)
    scores = q.matmul(key.transpose(-2, -1) * f)
    if is_causal:
        keep = _tl.ones((L, S), dtype=dtypes.bool, device=query.device).tril()
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    elif attn_mask is not None:
        if attn_mask.dtype is dtypes.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    attn = _safe_softmax(scores)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return attn.matmul(value)


# -- multi-head attention -----------------------------------------------------------------------------
def _canonical_mask(mask, name, target_dtype):
    """A bool mask (True = masked out) as a float mask with -inf there; a float mask unchanged."""
    if mask is None:
        return None
    if mask.dtype is dtypes.bool:
        return _tl.zeros(mask.shape, dtype=target_dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _in_projection_packed(q, k, v, w, b):
    e = q.shape[-1]
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            proj = proj.unflatten(-1, (3, e)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([e, 2 * e])
        b_q, b_kv = (None, None) if b is None else b.split([e, 2 * e])
        q_proj = linear(q, w_q, b_q)
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, e)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return q_proj, kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch.nn.functional.multi_head_attention_forward: query [L, N, E] (or [L, E] unbatched),
    key/value [S, N, E_k/E_v]; returns (output [L, N, E], weights [N, L, S] averaged over heads, or
    [N, H, L, S], or None without need_weights)."""
    is_batched = query.dim() == 3
    if not is_batched:
        if query.dim() != 2 or key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    elif key.dim() != 3 or value.dim() != 3:
        raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        if key_padding_mask is not None:
            is_causal = False

    if not use_separate_proj_weight:
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k), linear(value, v_proj_weight, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is torch.Size({list(attn_mask.shape)}), but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is torch.Size({list(attn_mask.shape)}), but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        k = _tl.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = _tl.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)

    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        v = static_v

    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = _tl.cat([k, _tl.zeros(zshape, dtype=k.dtype, device=k.device)], dim=1)
        v = _tl.cat([v, _tl.zeros(zshape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)

    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{key_padding_mask.shape}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm

    if not training:
        dropout_p = 0.0

    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        scores = q_scaled.bmm(k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = weights.bmm(v)
        out = out.transpose(0, 1).contiguous().reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, out.shape[1])
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).contiguous().reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, out.shape[1])
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _self_attention_batch_first(x, num_heads, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias,
                                attn_mask, dropout_p, is_causal):
    """MultiheadAttention's common case, batch-first self-attention (query is key is value, [N, L, E])
    with no bias_k/bias_v, zero attention, key padding mask or weights: the same math as
    multi_head_attention_forward without leaving the batch-first layout. The packed projection's
    q, k and v are strided views [N, H, L, hd] of it (no copies) and the heads' output is
    gathered back by one copy. Returns the output [N, L, E], or None where the general path must
    run (it raises what torch raises for bad arguments)."""
    if x.dim() != 3 or in_proj_weight is None or tuple(in_proj_weight.shape) != (3 * x.shape[-1], x.shape[-1]):
        return None
    n, length, e = x.shape
    if e % num_heads:
        return None
    if attn_mask is not None:
        if attn_mask.dim() != 2 or tuple(attn_mask.shape) != (length, length):
            return None
        if attn_mask.dtype is not dtypes.bool and not attn_mask.dtype.is_floating_point:
            return None
    if is_causal and attn_mask is None:
        return None
    if is_causal:  # the hint with a mask, no weights: torch drops the mask and masks causally
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", x.dtype)
    proj = linear(x, in_proj_weight, in_proj_bias)                                   # [N, L, 3E]
    q, k, v = proj.unflatten(-1, (3, num_heads, e // num_heads)).permute(2, 0, 3, 1, 4).unbind(0)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)   # [N, H, L, hd]
    out = out.transpose(1, 2).reshape(n, length, e)
    return linear(out, out_proj_weight, out_proj_bias)


def _pad_last(mask):
    """mask with one zero column appended on its last dim (F.pad(mask, (0, 1)))."""
    z = _tl.zeros(list(mask.shape[:-1]) + [1], dtype=mask.dtype, device=mask.device)
    return _tl.cat([mask, z], dim=-1)


__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]
