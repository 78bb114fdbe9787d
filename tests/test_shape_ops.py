"""cat/stack, flip, roll, gather, scatter/scatter_add, index_select, index_fill, masked_select,
nonzero, where(cond), sort/argsort, topk, median/nanmedian/kthvalue, tril/triu: against NumPy
across dtypes and layouts, and
against torch (values, dtypes, exception types) through a table; in-place forms bump the version
once and change nothing when they fail."""
import numpy as np
import pytest

import tensorlab as tl
from device_waits import settle
from tensorlab import layout as L
from tensorlab.ops import registry, shape as shape_ops
from tensorlab.testing import InjectedFault, assert_unchanged, fault_points, inject_fault, snapshot
from test_reduction import ALL_DTYPES, LAYOUTS, against_torch, check, make, sample

I64 = np.int64


def idx(values, dtype=I64):
    return np.asarray(values, dtype=dtype)


# -- torch table: (call, inputs) -----------------------------------------------------------------
def _tie_free(r, x, dim):
    """topk's (values, x at indices): torch orders equal values unspecifiedly, so its indices
    are compared through the values they select."""
    return r.values, x.gather(dim, r.indices)


def _selected(r, x, dim, keepdim=False):
    """median/kthvalue's (values, x at indices): which of several equal elements torch returns
    the index of is unspecified, so indices are compared through the values they select."""
    if keepdim or x.dim() == 0:
        return r.values, x.gather(dim, r.indices)
    return r.values, x.gather(dim, r.indices.unsqueeze(dim)).squeeze(dim)


_NAN = np.nan
_WITH_NAN = np.array([[3.0, 1.0, 2.0, 4.0], [_NAN, 1.0, _NAN, 0.0], [5.5, -1.0, 2.5, 1.5]], np.float32)
_ALL_NAN_ROW = np.array([[_NAN, _NAN, _NAN], [1.0, _NAN, 2.0], [_NAN, 4.0, _NAN]], np.float32)


def _x(dtype=tl.float32, shape=(3, 4), seed=0):
    return sample(shape, dtype, seed)


SHAPE_CALLS = {
    "cat": (lambda m, a, b: m.cat([a, b]), [_x(), _x(seed=1)]),
    "cat_dim1": (lambda m, a, b: m.cat((a, b), 1), [_x(), _x(shape=(3, 2))]),
    "cat_neg_dim": (lambda m, a, b: m.cat([a, b], -1), [_x(), _x(shape=(3, 1))]),
    "concat": (lambda m, a, b: m.concat([a, b]), [_x(), _x(seed=2)]),
    "concatenate": (lambda m, a, b: m.concatenate([a, b], 1), [_x(), _x(seed=2)]),
    "cat_promotes": (lambda m, a, b, c: m.cat([a, b, c]),
                     [_x(tl.int32, (2,)), _x(tl.uint8, (3,)), _x(tl.bool, (1,))]),
    "cat_promotes_float": (lambda m, a, b: m.cat([a, b]), [_x(tl.float16, (2,)), _x(tl.bfloat16, (2,))]),
    "cat_legacy_empty": (lambda m, a, b: m.cat([a, b]), [_x(), np.zeros(0, np.float32)]),
    "cat_legacy_empty_first": (lambda m, a, b: m.cat([a, b], 1), [np.zeros(0, np.float64), _x(tl.int32)]),
    "cat_all_legacy_empty": (lambda m, a, b: m.cat([a, b]), [np.zeros(0, np.float32), np.zeros(0, np.float32)]),
    "cat_empty_2d": (lambda m, a, b: m.cat([a, b]), [np.zeros((0, 4), np.float32), _x()]),
    "cat_size_mismatch": (lambda m, a, b: m.cat([a, b]), [_x(), _x(shape=(3, 2))]),
    "cat_empty_2d_mismatch": (lambda m, a, b: m.cat([a, b]), [np.zeros((0, 3), np.float32), _x()]),
    "cat_ndim_mismatch": (lambda m, a, b: m.cat([a, b]), [_x(), _x(shape=(4,))]),
    "cat_zero_dim": (lambda m, a, b: m.cat([a, b]), [_x(shape=(2,)), _x(shape=())]),
    "cat_empty_list": (lambda m: m.cat([]), []),
    "cat_tensor_not_list": (lambda m, a: m.cat(a), [_x()]),
    "cat_non_tensor": (lambda m, a: m.cat([a, 3]), [_x()]),
    "cat_dim_range": (lambda m, a, b: m.cat([a, b], 2), [_x(), _x()]),
    "cat_out_cast": (lambda m, a: m.cat([a], out=m.empty(0, dtype=m.int64)), [_x()]),
    "cat_out_double": (lambda m, a: m.cat([a, a], out=m.empty(0, dtype=m.float64, device=a.device)), [_x()]),
    "stack": (lambda m, a, b: m.stack([a, b]), [_x(), _x(seed=3)]),
    "stack_last": (lambda m, a, b: m.stack([a, b], -1), [_x(), _x(seed=3)]),
    "stack_mid": (lambda m, a, b: m.stack((a, b), 1), [_x(tl.int64), _x(tl.float16)]),
    "stack_zero_dim": (lambda m, a, b: m.stack([a, b]), [_x(tl.int64, ()), _x(tl.float32, ())]),
    "stack_mismatch": (lambda m, a, b: m.stack([a, b]), [_x(), _x(shape=(3, 3))]),
    "stack_empty": (lambda m: m.stack([]), []),
    "stack_dim_range": (lambda m, a: m.stack([a, a], 3), [_x()]),
    "flip": (lambda m, a: m.flip(a, [0, 1]), [_x()]),
    "flip_method_varargs": (lambda m, a: a.flip(1), [_x()]),
    "flip_negative": (lambda m, a: m.flip(a, (-1,)), [_x(tl.int16)]),
    "flip_none": (lambda m, a: m.flip(a, ()), [_x()]),
    "flip_zero_dim": (lambda m, a: a.flip(0), [_x(shape=())]),
    "flip_dup": (lambda m, a: m.flip(a, (0, -2)), [_x()]),
    "roll": (lambda m, a: m.roll(a, 1, 0), [_x()]),
    "roll_flat": (lambda m, a: m.roll(a, 5), [_x()]),
    "roll_multi": (lambda m, a: a.roll((1, -2), (0, 1)), [_x(tl.bool)]),
    "roll_big_negative": (lambda m, a: m.roll(a, -7, 1), [_x()]),
    "roll_dup_dims": (lambda m, a: m.roll(a, (1, 1), (0, 0)), [_x()]),
    "roll_empty": (lambda m, a: m.roll(a, 1, 0), [np.zeros((0, 3), np.float32)]),
    "roll_mismatch": (lambda m, a: m.roll(a, (1, 2), 0), [_x()]),
    "roll_mismatch_flat": (lambda m, a: m.roll(a, (1, 2)), [_x()]),
    "roll_no_shifts": (lambda m, a: m.roll(a, (), ()), [_x()]),
    "roll_zero_dim": (lambda m, a: m.roll(a, 1, 0), [_x(shape=())]),
    "gather": (lambda m, a, i: m.gather(a, 1, i), [_x(), idx([[0, 3, 1], [2, 2, 0], [1, 1, 1]])]),
    "gather_dim0_small": (lambda m, a, i: a.gather(0, i), [_x(), idx([[2, 0]])]),
    "gather_int32": (lambda m, a, i: m.gather(a, -1, i), [_x(), idx([[0], [3], [1]], np.int32)]),
    "gather_longer_on_dim": (lambda m, a, i: m.gather(a, 1, i), [_x(), np.zeros((3, 6), I64)]),
    "gather_zero_dim": (lambda m, a, i: m.gather(a, 0, i), [_x(shape=()), idx([0, 0])]),
    "gather_zero_dim_index": (lambda m, a, i: m.gather(a, 0, i), [_x(shape=(4,)), idx(2)]),
    "gather_empty_index": (lambda m, a, i: m.gather(a, 1, i), [_x(), np.zeros((3, 0), I64)]),
    "gather_oob": (lambda m, a, i: m.gather(a, 1, i), [_x(), idx([[4]])]),
    "gather_negative": (lambda m, a, i: m.gather(a, 1, i), [_x(), idx([[-1]])]),
    "gather_index_dtype": (lambda m, a, i: m.gather(a, 1, i), [_x(), idx([[0]], np.int16)]),
    "gather_index_float": (lambda m, a, i: m.gather(a, 1, i), [_x(), np.zeros((1, 1), np.float32)]),
    "gather_ndim": (lambda m, a, i: m.gather(a, 1, i), [_x(), idx([0])]),
    "gather_too_big": (lambda m, a, i: m.gather(a, 1, i), [_x(), np.zeros((4, 1), I64)]),
    "gather_out_dtype": (lambda m, a, i: m.gather(a, 1, i, out=m.empty(0, dtype=m.float64)), [_x(), idx([[0]])]),
    "scatter": (lambda m, a, i, s: m.scatter(a, 1, i, s), [_x(), idx([[0, 3], [2, 1], [1, 0]]), _x(seed=4)]),
    "scatter_value": (lambda m, a, i: m.scatter(a, 0, i, 9.5), [_x(), idx([[2, 0, 1, 1]])]),
    "scatter_value_on_int": (lambda m, a, i: a.scatter(0, i, 2.7), [_x(tl.int64), idx([[2, 0]])]),
    "scatter_value_on_bool": (lambda m, a, i: a.scatter(0, i, 2.5), [_x(tl.bool, (3,)), idx([1])]),
    "scatter_int32_index": (lambda m, a, i, s: m.scatter(a, 1, i, s), [_x(), idx([[3], [0], [1]], np.int32),
                                                                        _x(seed=5)]),
    "scatter_zero_dim": (lambda m, a, i: m.scatter(a, 0, i, 5.0), [_x(shape=()), idx(0)]),
    "scatter_empty_index": (lambda m, a, i: m.scatter(a, 0, i, 5.0), [_x(), np.zeros((0,), I64)]),
    "scatter_multiply": (lambda m, a, i, s: a.clone().scatter_(0, i, s, reduce="multiply"),
                         [_x(shape=(3,)), idx([0, 0, 2]), _x(shape=(3,), seed=6)]),
    "scatter_add_reduce": (lambda m, a, i, s: a.clone().scatter_(1, i, s, reduce="add"),
                           [_x(), idx([[0, 0], [1, 1], [3, 3]]), _x(seed=6)]),
    "scatter_bad_reduce": (lambda m, a, i, s: a.clone().scatter_(0, i, s, reduce="max"),
                           [_x(shape=(3,)), idx([0]), _x(shape=(3,))]),
    "scatter_src_dtype": (lambda m, a, i, s: m.scatter(a, 0, i, s), [_x(), idx([[0]]), _x(tl.float64)]),
    "scatter_index_dtype": (lambda m, a, i: m.scatter(a, 0, i, 1.0), [_x(), idx([[0]], np.int16)]),
    "scatter_oob": (lambda m, a, i: m.scatter(a, 1, i, 1.0), [_x(), idx([[4]])]),
    "scatter_src_small": (lambda m, a, i, s: m.scatter(a, 1, i, s), [_x(), idx([[0, 1]]), _x(shape=(1, 1))]),
    "scatter_index_big": (lambda m, a, i: m.scatter(a, 1, i, 1.0), [_x(), np.zeros((4, 1), I64)]),
    "scatter_index_ndim": (lambda m, a, i: a.clone().scatter_(1, i, 1.0), [_x(), idx([0])]),
    "scatter_dim_range": (lambda m, a, i: m.scatter(a, 2, i, 1.0), [_x(), idx([[0]])]),
    "scatter_add": (lambda m, a, i, s: m.scatter_add(a, 1, i, s), [_x(), idx([[0, 0, 3], [1, 1, 1], [2, 0, 2]]),
                                                                     _x(seed=7)]),
    "scatter_add_dim0": (lambda m, a, i, s: a.scatter_add(0, i, s), [_x(tl.int32), idx([[0, 0, 0, 0], [0, 1, 2, 0]]),
                                                                       _x(tl.int32, seed=8)]),
    "scatter_add_half": (lambda m, a, i, s: m.scatter_add(a, 0, i, s), [_x(tl.float16, (3,)), idx([0, 0, 0]),
                                                                          _x(tl.float16, (3,), seed=9)]),
    "scatter_add_value": (lambda m, a, i: m.scatter_add(a, 0, i, 1.0), [_x(), idx([[0]])]),
    "index_select": (lambda m, a, i: m.index_select(a, 1, i), [_x(), idx([3, 0, 0])]),
    "index_select_int32": (lambda m, a, i: a.index_select(0, i), [_x(), idx([2, 1], np.int32)]),
    "index_select_zero_dim_index": (lambda m, a, i: m.index_select(a, 1, i), [_x(), idx(2)]),
    "index_select_zero_dim_self": (lambda m, a, i: m.index_select(a, 0, i), [_x(shape=()), idx([0])]),
    "index_select_scalar_many": (lambda m, a, i: m.index_select(a, 0, i), [_x(shape=()), idx([0, 0])]),
    "index_select_empty": (lambda m, a, i: m.index_select(a, 0, i), [_x(), np.zeros(0, I64)]),
    "index_select_2d_index": (lambda m, a, i: m.index_select(a, 0, i), [_x(), idx([[0]])]),
    "index_select_index_dtype": (lambda m, a, i: m.index_select(a, 0, i), [_x(), idx([0], np.int16)]),
    "index_select_out_dtype": (lambda m, a, i: m.index_select(a, 0, i, out=m.empty(0, dtype=m.float64)),
                               [_x(), idx([0])]),
    "index_fill": (lambda m, a, i: a.clone().index_fill_(1, i, -1.0), [_x(), idx([0, 3])]),
    "index_fill_negative": (lambda m, a, i: m.index_fill(a, 0, i, 7), [_x(tl.int64), idx([-1])]),
    "index_fill_tensor_value": (lambda m, a, i: a.index_fill(1, i, m.tensor(2.5)), [_x(), idx([1])]),
    "index_fill_int_truncates": (lambda m, a, i: a.clone().index_fill_(0, i, 2.5), [_x(tl.int64, (3,)), idx([0])]),
    "index_fill_index_dtype": (lambda m, a, i: a.clone().index_fill_(0, i, 1.0), [_x(), idx([0], np.int32)]),
    "index_fill_vector_value": (lambda m, a, i: a.clone().index_fill_(0, i, m.tensor([1.0])), [_x(), idx([0])]),
    "index_fill_2d_index": (lambda m, a, i: a.clone().index_fill_(0, i, 1.0), [_x(), idx([[0]])]),
    "masked_select": (lambda m, a, k: m.masked_select(a, k), [_x(), _x(tl.bool, seed=10)]),
    "masked_select_broadcast": (lambda m, a, k: a.masked_select(k), [_x(), idx([True, False, True, True], bool)]),
    "masked_select_broadcast_up": (lambda m, a, k: m.masked_select(a, k), [_x(shape=(4,)), _x(tl.bool, (2, 1))]),
    "masked_select_none": (lambda m, a, k: m.masked_select(a, k), [_x(), np.zeros((3, 4), bool)]),
    "masked_select_uint8_mask": (lambda m, a, k: m.masked_select(a, k), [_x(), np.ones((3, 4), np.uint8)]),
    "masked_select_shape": (lambda m, a, k: m.masked_select(a, k), [_x(), np.ones((2,), bool)]),
    "masked_select_out_dtype": (lambda m, a, k: m.masked_select(a, k, out=m.empty(0, dtype=m.float64)),
                                [_x(), np.ones((3, 4), bool)]),
    "nonzero": (lambda m, a: m.nonzero(a), [_x(tl.int64)]),
    "nonzero_method_bool": (lambda m, a: a.nonzero(), [_x(tl.bool, (2, 3, 2))]),
    "nonzero_as_tuple": (lambda m, a: m.nonzero(a, as_tuple=True), [_x(tl.float16)]),
    "nonzero_zero_dim": (lambda m, a: m.nonzero(a), [np.array(5.0, np.float32)]),
    "nonzero_zero_dim_false": (lambda m, a: m.nonzero(a), [np.array(0, np.int64)]),
    "nonzero_zero_dim_tuple": (lambda m, a: m.nonzero(a, as_tuple=True), [np.array(5, np.int64)]),
    "nonzero_empty": (lambda m, a: m.nonzero(a), [np.zeros((0, 3), np.float32)]),
    "nonzero_nan": (lambda m, a: m.nonzero(a), [np.array([0.0, np.nan, -0.0, 1.0], np.float32)]),
    "nonzero_out_dtype": (lambda m, a: m.nonzero(a, out=m.empty(0, dtype=m.int32)), [_x()]),
    "nonzero_tuple_out": (lambda m, a: m.nonzero(a, as_tuple=True, out=m.empty(0, dtype=m.int64)), [_x()]),
    "sort": (lambda m, a: m.sort(a), [_x()]),
    "sort_dim0_desc": (lambda m, a: a.sort(0, True), [_x()]),
    "sort_stable_kw": (lambda m, a: m.sort(a, stable=True, dim=1, descending=True), [_x(tl.int64)]),
    "sort_zero_dim": (lambda m, a: a.sort(), [_x(shape=())]),
    "sort_empty": (lambda m, a: m.sort(a), [np.zeros((2, 0), np.float32)]),
    "sort_nan": (lambda m, a: m.sort(a), [np.array([1.0, np.nan, 3.0, -np.inf, np.nan], np.float32)]),
    "sort_nan_desc": (lambda m, a: m.sort(a, descending=True),
                      [np.array([1.0, np.nan, 3.0, -np.inf, np.nan], np.float32)]),
    "sort_dim_range": (lambda m, a: a.sort(2), [_x()]),
    "sort_out_index_dtype": (lambda m, a: m.sort(a, out=(m.empty(0), m.empty(0, dtype=m.int32))), [_x()]),
    "argsort": (lambda m, a: m.argsort(a, 1, True), [_x()]),
    "argsort_stable": (lambda m, a: m.argsort(a, stable=True, descending=True),
                       [np.array([1, 2, 1, 2, 0, 2], np.int64)]),
    "topk": (lambda m, a: m.topk(a, 2), [_x()]),
    "topk_ties": (lambda m, a: _tie_free(m.topk(a, 3), a, -1), [_x(tl.int64)]),
    "topk_smallest_dim0": (lambda m, a: a.topk(2, 0, largest=False), [_x()]),
    "topk_k0": (lambda m, a: m.topk(a, 0), [_x()]),
    "topk_all": (lambda m, a: _tie_free(m.topk(a, 4), a, -1), [_x(tl.int32)]),
    "topk_zero_dim": (lambda m, a: a.topk(1), [_x(shape=())]),
    "topk_nan": (lambda m, a: m.topk(a, 2), [np.array([1.0, np.nan, 3.0], np.float32)]),
    "topk_nan_smallest": (lambda m, a: m.topk(a, 2, largest=False), [np.array([1.0, np.nan, 3.0], np.float32)]),
    "topk_k_too_big": (lambda m, a: m.topk(a, 5), [_x()]),
    "topk_k_negative": (lambda m, a: m.topk(a, -1), [_x()]),
    "topk_zero_dim_k2": (lambda m, a: a.topk(2), [_x(shape=())]),
    "topk_empty_dim": (lambda m, a: a.topk(0), [np.zeros((2, 0), np.float32)]),
    "median": (lambda m, a: m.median(a), [_x()]),
    "median_odd": (lambda m, a: m.median(a), [_x(shape=(5,))]),
    "median_dim": (lambda m, a: m.median(a, 1), [_x()]),
    "median_dim0_keepdim": (lambda m, a: a.median(0, keepdim=True), [_x()]),
    "median_dim_kw": (lambda m, a: a.median(dim=-1), [_x(shape=(2, 3, 5))]),
    "median_nan": (lambda m, a: m.median(a), [_WITH_NAN]),
    "median_nan_dim": (lambda m, a: m.median(a, 1), [_WITH_NAN]),
    "median_nan_dim0": (lambda m, a: m.median(a, 0, True), [_WITH_NAN]),
    "median_int": (lambda m, a: m.median(a), [_x(tl.int64)]),
    "median_int_ties": (lambda m, a: _selected(m.median(a, 1), a, 1), [_x(tl.int64)]),
    "median_uint8_dim0": (lambda m, a: _selected(m.median(a, 0, True), a, 0, True), [_x(tl.uint8)]),
    "median_half": (lambda m, a: _selected(m.median(a, 1), a, 1), [_x(tl.float16)]),
    "median_bfloat16": (lambda m, a: m.median(a), [_x(tl.bfloat16)]),
    "median_bool": (lambda m, a: m.median(a), [_x(tl.bool)]),
    "median_bool_dim": (lambda m, a: m.median(a, 0), [_x(tl.bool)]),
    "median_zero_dim": (lambda m, a: m.median(a, 0), [_x(shape=())]),
    "median_zero_dim_global": (lambda m, a: m.median(a), [_x(shape=())]),
    "median_zero_dim_keepdim": (lambda m, a: a.median(-1, True), [_x(shape=())]),
    "median_empty": (lambda m, a: m.median(a), [np.zeros(0, np.float32)]),
    "median_empty_dim": (lambda m, a: m.median(a, 1), [np.zeros((2, 0), np.float32)]),
    "median_empty_other_dim": (lambda m, a: m.median(a, 1, True), [np.zeros((0, 3), np.float32)]),
    "median_dim_range": (lambda m, a: a.median(2), [_x()]),
    "median_keepdim_without_dim": (lambda m, a: m.median(a, keepdim=True), [_x()]),
    "median_out": (lambda m, a: m.median(a, 1, out=(m.empty(0, device=a.device),
                                                    m.empty(0, dtype=m.int64, device=a.device))), [_x()]),
    "median_out_index_dtype": (lambda m, a: m.median(a, 1, out=(m.empty(0), m.empty(0, dtype=m.int32))), [_x()]),
    "median_out_values_dtype": (lambda m, a: m.median(a, 1, out=(m.empty(0, dtype=m.float64),
                                                                  m.empty(0, dtype=m.int64))), [_x()]),
    "nanmedian": (lambda m, a: m.nanmedian(a), [_WITH_NAN]),
    "nanmedian_dim": (lambda m, a: m.nanmedian(a, 1), [_WITH_NAN]),
    "nanmedian_all_nan_rows": (lambda m, a: a.nanmedian(1, True), [_ALL_NAN_ROW]),
    "nanmedian_all_nan": (lambda m, a: m.nanmedian(a), [np.full(3, _NAN, np.float32)]),
    "nanmedian_int": (lambda m, a: _selected(m.nanmedian(a, 0), a, 0), [_x(tl.int32)]),
    "nanmedian_zero_dim": (lambda m, a: m.nanmedian(a, 0), [np.array(_NAN, np.float32)]),
    "kthvalue": (lambda m, a: m.kthvalue(a, 2), [_x()]),
    "kthvalue_dim0_keepdim": (lambda m, a: a.kthvalue(3, 0, True), [_x()]),
    "kthvalue_last": (lambda m, a: m.kthvalue(a, 4, dim=1), [_x()]),
    "kthvalue_nan": (lambda m, a: m.kthvalue(a, 2, 1), [np.array([[_NAN, 1, 3, 0], [2, _NAN, -1, 5]], np.float32)]),
    "kthvalue_nan_last": (lambda m, a: m.kthvalue(a, 4), [np.array([[_NAN, 1, 3, 0], [2, _NAN, -1, 5]], np.float32)]),
    "kthvalue_int_ties": (lambda m, a: _selected(m.kthvalue(a, 2, 0), a, 0), [_x(tl.int64)]),
    "kthvalue_bool": (lambda m, a: m.kthvalue(a, 1), [_x(tl.bool)]),
    "kthvalue_zero_dim": (lambda m, a: a.kthvalue(1), [_x(shape=())]),
    "kthvalue_zero_dim_k2": (lambda m, a: a.kthvalue(2), [_x(shape=())]),
    "kthvalue_k0": (lambda m, a: m.kthvalue(a, 0), [_x()]),
    "kthvalue_k_too_big": (lambda m, a: m.kthvalue(a, 5), [_x()]),
    "kthvalue_k_float": (lambda m, a: m.kthvalue(a, 1.0), [_x()]),
    "kthvalue_empty_dim": (lambda m, a: m.kthvalue(a, 1, 1), [np.zeros((2, 0), np.float32)]),
    "kthvalue_empty_other_dim": (lambda m, a: m.kthvalue(a, 1, 1), [np.zeros((0, 3), np.float32)]),
    "kthvalue_dim_range": (lambda m, a: m.kthvalue(a, 1, -3), [_x()]),
    "kthvalue_out": (lambda m, a: m.kthvalue(a, 1, out=(m.empty(0, device=a.device),
                                                        m.empty(0, dtype=m.int64, device=a.device))), [_x()]),
    "tril": (lambda m, a: m.tril(a), [_x()]),
    "tril_diag": (lambda m, a: a.tril(-1), [_x(shape=(2, 3, 4))]),
    "tril_far": (lambda m, a: m.tril(a, -5), [_x()]),
    "triu": (lambda m, a: m.triu(a, 1), [_x(tl.bool)]),
    "triu_inplace": (lambda m, a: a.clone().triu_(-1), [_x(tl.int32)]),
    "tril_inplace": (lambda m, a: a.clone().tril_(2), [_x()]),
    "tril_empty": (lambda m, a: m.tril(a), [np.zeros((0, 3), np.float32)]),
    "tril_1d": (lambda m, a: m.tril(a), [_x(shape=(3,))]),
    "tril_out_dtype": (lambda m, a: m.tril(a, out=m.empty(0, dtype=m.float64)), [_x()]),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CALLS))
def test_shape_ops_match_torch(device, torch, name):
    fn, inputs = SHAPE_CALLS[name]
    against_torch(torch, device, fn, *inputs)


@pytest.mark.parametrize("name", ["cat", "cat_dim1", "stack_mid", "flip", "roll_flat", "roll_multi", "gather",
                                  "scatter", "scatter_add", "index_select", "masked_select", "nonzero", "sort",
                                  "sort_dim0_desc", "topk", "tril_diag", "index_fill", "median", "median_dim",
                                  "median_nan_dim0", "nanmedian_dim", "kthvalue_dim0_keepdim"])
def test_shape_ops_match_torch_on_views(device, torch, name):
    fn, inputs = SHAPE_CALLS[name]
    for layout in ("transposed", "strided"):
        against_torch(torch, device, fn, *inputs, layout=layout)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_dtypes_match_torch(device, torch, dtype):
    a, b = sample((3, 4), dtype, seed=11), sample((3, 4), dtype, seed=12)
    i = idx([[0, 3, 1, 2], [2, 2, 0, 1], [1, 1, 1, 1]])
    for fn in (lambda m, x, y, k: m.cat([x, y], 1), lambda m, x, y, k: m.stack([x, y]),
               lambda m, x, y, k: x.flip(0), lambda m, x, y, k: x.roll(1, 1), lambda m, x, y, k: x.gather(1, k),
               # scatter with unique indices: duplicates leave which write wins unspecified on CUDA (torch's
               # docs; an H200 kept another than the CPU's last)
               lambda m, x, y, k: x.scatter(1, m.tensor([[0, 3, 1, 2], [2, 3, 0, 1], [1, 0, 3, 2]], device=k.device), y),
               lambda m, x, y, k: x.index_select(1, k.flatten()),
               lambda m, x, y, k: m.nonzero(x), lambda m, x, y, k: x.sort(1), lambda m, x, y, k: x.argsort(0, True),
               lambda m, x, y, k: x.tril(), lambda m, x, y, k: x.triu(1)):
        against_torch(torch, device, fn, a, b, i)
    mask = (sample((3, 4), tl.float32, seed=13) > 0)
    against_torch(torch, device, lambda m, x, k: x.masked_select(k), a, mask)
    if dtype is not tl.bool:  # torch's CPU topk refuses bool; tensorlab sorts it like any dtype
        against_torch(torch, device, lambda m, x: _tie_free(x.topk(2, 1), x, 1), a)
        against_torch(torch, device, lambda m, x: _selected(x.median(1), x, 1), a)
        against_torch(torch, device, lambda m, x: _selected(x.nanmedian(0, True), x, 0, True), a)
        against_torch(torch, device, lambda m, x: _selected(m.kthvalue(x, 3, 1), x, 1), a)
        against_torch(torch, device, lambda m, x: m.median(x), a)
        against_torch(torch, device, lambda m, x, y, k: x.scatter_add(1, k, y), a, b, i)


# -- NumPy references ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", (tl.int64, tl.float32, tl.float16, tl.bfloat16, tl.bool), ids=lambda d: d.name)
def test_gather_scatter_match_numpy(device, dtype):
    rng = np.random.default_rng(13)
    arr = sample((4, 5, 3), dtype, seed=14)
    for dim in (0, 1, 2, -1):
        d = dim % 3
        ishape = [3, 4, 2]
        ishape[d] = 6
        index = rng.integers(0, arr.shape[d], ishape)
        src = sample(tuple(ishape), dtype, seed=15)
        for layout in LAYOUTS:
            g = tl.gather(make(arr, device, layout), dim, make(index, device, layout))
            sub = arr[tuple(slice(0, n) if j != d else slice(None) for j, n in enumerate(ishape))]
            check(g, np.take_along_axis(sub, index, d), dtype)
            s = make(arr, device, layout).scatter(dim, make(index, device), make(src, device, layout))
            want = arr.copy()
            pos = tuple(index if j == d else np.arange(n).reshape((-1,) + (1,) * (2 - j)) for j, n in enumerate(ishape))
            if not (index[..., None] == index[..., None, :]).any():  # no duplicates: order-independent
                want[pos] = src
                check(s, want, dtype)


def test_scatter_add_accumulates_duplicates(device):
    x = tl.zeros((2, 3), device=device)
    index = make(idx([[0, 0, 0, 2], [1, 1, 1, 1]]), device)
    src = make(np.arange(8, dtype=np.float32).reshape(2, 4), device)
    r = x.scatter_add(1, index, src)
    check(r, [[0 + 1 + 2, 0, 3], [0, 4 + 5 + 6 + 7, 0]], tl.float32)


def test_sort_is_stable_like_numpy(device):
    rng = np.random.default_rng(16)
    for dtype in (tl.int64, tl.int8, tl.uint8, tl.float32, tl.float16, tl.bfloat16, tl.bool):
        arr = rng.integers(0, 4, (5, 40)).astype(dtype.np)
        for layout in LAYOUTS:
            x = make(arr, device, layout)
            for dim in (0, 1, -1):
                values, indices = tl.sort(x, dim, stable=True)
                order = np.argsort(arr.astype(np.float64), axis=dim, kind="stable")
                check(indices, order, tl.int64)
                check(values, np.take_along_axis(arr, order, dim), dtype)
                desc = np.argsort(-arr.astype(np.float64), axis=dim, kind="stable")
                check(tl.argsort(x, dim, descending=True, stable=True), desc, tl.int64)


def test_topk_matches_sorted_prefix(device):
    arr = sample((4, 30), tl.float32, seed=17)
    x = make(arr, device, "transposed")
    for k in (0, 1, 7, 30):
        v, i = x.topk(k, 1)
        order = np.argsort(-arr, axis=1, kind="stable")[:, :k]
        check(i, order, tl.int64)
        check(v, np.take_along_axis(arr, order, 1), tl.float32)
        v, i = tl.topk(x, k, 1, largest=False)
        check(v, np.sort(arr, 1)[:, :k])
    r = x.topk(2)
    assert type(r).__name__ == "topk" and r.values is r[0]


@pytest.mark.parametrize("dtype", (tl.int64, tl.int8, tl.uint8, tl.float32, tl.float64, tl.float16, tl.bfloat16),
                         ids=lambda d: d.name)
def test_median_kthvalue_match_numpy(device, dtype):
    """Values against np.sort (torch's median is the lower middle value, NaN sorting last) and
    indices through the values they select."""
    arr = sample((5, 6), dtype, seed=30)
    if dtype.is_floating_point:
        arr[1, [0, 3]] = np.nan
        arr[3, :] = np.nan
    exact = arr.astype(np.float64)
    for layout in LAYOUTS:
        x = make(arr, device, layout)
        for dim in (0, 1, -1):
            srt = np.sort(exact, axis=dim)  # NaN last, as in torch's sort
            n = arr.shape[dim]
            nans = np.isnan(exact).sum(axis=dim, keepdims=True)
            for keepdim in (False, True):
                r = tl.median(x, dim, keepdim)
                pos = np.where(nans > 0, n - nans, (n - 1) // 2)
                want = np.take_along_axis(srt, pos, dim)
                for got in (r.values, _selected(r, x, dim, keepdim)[1]):
                    check(got, want if keepdim else want.squeeze(dim), dtype)
                r = tl.nanmedian(x, dim, keepdim)
                pos = np.where(n - nans > 0, (n - nans - 1) // 2, 0)
                want = np.take_along_axis(srt, pos, dim)
                for got in (r.values, _selected(r, x, dim, keepdim)[1]):
                    check(got, want if keepdim else want.squeeze(dim), dtype)
                for k in (1, 3, n):
                    r = tl.kthvalue(x, k, dim, keepdim)
                    want = np.take(srt, [k - 1], dim)
                    for got in (r.values, _selected(r, x, dim, keepdim)[1]):
                        check(got, want if keepdim else want.squeeze(dim), dtype)
        flat = np.sort(exact.ravel())
        check(tl.median(x), flat[-1] if np.isnan(flat[-1]) else flat[(flat.size - 1) // 2], dtype)
        finite = flat[~np.isnan(flat)]
        check(tl.nanmedian(x), finite[(finite.size - 1) // 2], dtype)


def test_median_result_types_out_and_version(device):
    x = make(sample((3, 5), tl.float32, seed=31), device)
    for fn, name in ((tl.median, "median"), (tl.nanmedian, "nanmedian"), (lambda t, d: tl.kthvalue(t, 2, d),
                                                                           "kthvalue")):
        r = fn(x, 1)
        assert type(r).__name__ == name and r.values is r[0] and r.indices is r[1]
        assert r.indices.dtype is tl.int64
    vals, inds = tl.empty(3, device=device), tl.empty(3, dtype=tl.int64, device=device)
    r = tl.median(x, 1, out=(vals, inds))
    assert r.values is vals and r.indices is inds and vals._version == 1 and inds._version == 1
    check(vals, np.sort(sample((3, 5), tl.float32, seed=31), 1)[:, 2])
    assert tl.median(x).shape == () and x.median(0).values.shape == (5,)
    with pytest.raises(RuntimeError, match="empty Long tensor"):  # torch returns an unspecified number
        tl.median(tl.empty(0, dtype=tl.int64, device=device))


def test_failed_median_out_changes_nothing(device):
    x = make(sample((3, 4), tl.float32, seed=32), device)
    vals, inds = tl.zeros(3, device=device), tl.zeros(3, dtype=tl.int64, device=device)
    snap = snapshot(vals, inds)
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        tl.kthvalue(x, 9, 1, out=(vals, inds))
    overlapping = inds._view_of(L.make((3,), (0,), 0))  # the second target is refused, after the first passed
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        tl.median(x, 1, out=(vals, overlapping))
    assert_unchanged(snap)


def test_nonzero_masked_select_where_match_numpy(device):
    arr = sample((3, 4, 2), tl.int64, seed=18) * (sample((3, 4, 2), tl.bool, seed=19))
    for layout in LAYOUTS:
        x = make(arr, device, layout)
        check(tl.nonzero(x), np.argwhere(arr), tl.int64)
        cols = shape_ops._where_cond(x)
        assert isinstance(cols, tuple) and len(cols) == 3
        for c, want in zip(cols, np.nonzero(arr)):
            check(c, want, tl.int64)
        mask = make(arr > 0, device, layout)
        check(x.masked_select(mask), arr[arr > 0], tl.int64)
    out = tl.empty(0, dtype=tl.int64, device=device)
    assert tl.nonzero(make(arr, device), out=out) is out
    check(out, np.argwhere(arr))


def test_where_cond_is_not_a_public_where():
    assert "where" not in shape_ops.FUNCTIONS and "where" not in shape_ops.METHODS


def test_flip_roll_tril_match_numpy(device):
    arr = sample((3, 4, 5), tl.float64, seed=20)
    for layout in LAYOUTS:
        x = make(arr, device, layout)
        check(x.flip(0, 2), np.flip(arr, (0, 2)))
        check(tl.flip(x, [-1]), np.flip(arr, -1))
        check(tl.roll(x, (2, -1), (1, 2)), np.roll(arr, (2, -1), (1, 2)))
        check(x.roll(7), np.roll(arr, 7))
        for k in (-2, 0, 1, 9):
            check(x.tril(k), np.tril(arr, k))
            check(tl.triu(x, k), np.triu(arr, k))


def test_cat_stack_match_numpy(device):
    a, b = sample((2, 3, 4), tl.float32, seed=21), sample((2, 5, 4), tl.float32, seed=22)
    for la in LAYOUTS:
        for lb in LAYOUTS:
            check(tl.cat([make(a, device, la), make(b, device, lb)], 1), np.concatenate([a, b], 1), tl.float32)
            check(tl.stack([make(a, device, la), make(a, device, lb)], 2), np.stack([a, a], 2), tl.float32)
    out = tl.empty(0, device=device)
    assert tl.cat([make(a, device), make(a, device)], out=out) is out
    check(out, np.concatenate([a, a]))


def test_nonzero_syncs_the_host_once(device, monkeypatch):
    from tensorlab import sync
    reasons = []
    real = sync.host_wait
    monkeypatch.setattr(sync, "host_wait", lambda reason, dev: (reasons.append(reason), real(reason, dev)))
    x = make(idx([[0, 1], [2, 0]]), device)
    tl.nonzero(x)
    x.masked_select(make(np.array([True, False]), device))
    assert reasons == ["nonzero", "masked_select"]


# -- in-place forms: one version bump, nothing changed on failure ------------------------------------
def test_inplace_forms_bump_version_once(device):
    x = make(sample((3, 4), tl.float32, seed=23), device)
    i = make(idx([[0, 1, 2, 3]]), device)
    for call in (lambda: x.scatter_(1, i, 1.0),
                 lambda: x.scatter_add_(0, make(idx([[0, 1, 2]]), device), tl.ones((1, 3), device=device)),
                 lambda: x.index_fill_(1, make(idx([0, 2]), device), 5.0),
                 lambda: x.tril_(), lambda: x.triu_(1)):
        v = x._version
        assert call() is x
        assert x._version == v + 1


@pytest.mark.parametrize("call", [
    lambda x, i, s: x.scatter_(1, i, s),
    lambda x, i, s: x.scatter_add_(1, i, s),
    lambda x, i, s: x.scatter_(1, i, 2.0),
    lambda x, i, s: x.index_fill_(1, i[0], -1.0),
    lambda x, i, s: x.tril_(),
    lambda x, i, s: tl.cat([s, s], out=x),
    lambda x, i, s: tl.sort(s, out=(x, i)),
    lambda x, i, s: tl.gather(s, 1, i, out=x),
], ids=["scatter_", "scatter_add_", "scatter_value", "index_fill_", "tril_", "cat_out", "sort_out", "gather_out"])
@pytest.mark.filterwarnings("ignore:.*was resized")  # out= targets of another shape are resized (atomically)
def test_failed_calls_change_nothing(device, call):
    def setup():
        x = make(sample((3, 4), tl.float32, seed=24), device)
        i = make(idx([[0, 1], [1, 1], [1, 0]]), device)
        s = make(sample((3, 2), tl.float32, seed=25), device)
        return x, i, s

    x, i, s = setup()
    points = fault_points(lambda: call(x, i, s))
    assert points
    for kind, n in points:
        x, i, s = setup()
        snap = snapshot(x, i, s)
        with inject_fault(kind, n), pytest.raises(InjectedFault):
            call(x, i, s)
        assert_unchanged(snap)


def test_bad_index_values_change_nothing(device):
    x = make(sample((3, 4), tl.float32, seed=26), device)
    snap, before = snapshot(x), x.cpu().numpy().copy()
    i7, i5 = make(idx([[0, 7]]), device), make(idx([0, -5]), device)
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 4"):
        x.scatter_(1, i7, 1.0)
        settle(device)  # on CUDA the index is checked on the device: raised at the next wait
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 1 with size 4"):
        x.index_fill_(1, i5, 1.0)
        settle(device)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x.scatter_add_(1, make(idx([[0]]), device), x._view_of(L.make((1, 1), (4, 1), 1)))
    if device == "cpu":
        assert_unchanged(snap)
    else:  # the launches counted their writes in the version counter; the data is what they left alone
        np.testing.assert_array_equal(x.cpu().numpy(), before)
    expanded = make(np.ones(1, np.float32), device)._view_of(L.make((3,), (0,), 0))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        expanded.scatter_(0, make(idx([0]), device), 2.0)


def test_out_of_range_index_is_index_and_runtime_error(device):
    x = make(sample((3,), tl.float32), device)
    i3 = make(idx([3]), device)
    with pytest.raises(IndexError):
        x.index_select(0, i3)
        settle(device)
    with pytest.raises(RuntimeError, match=r"index_select\(\): index 3 is out of bounds for dimension 0 with size 3"):
        x.index_select(0, i3)
        settle(device)


def test_registry_rows():
    from tensorlab.backends import cpu
    for name in ("cat", "stack", "flip", "roll", "gather", "scatter", "scatter_add", "index_select", "index_fill",
                 "masked_select", "nonzero", "sort", "argsort", "topk", "tril", "triu"):
        row = registry.REGISTRY[name]
        assert row.family == "shape" and row.primitive in cpu.shape.__all__
        assert hasattr(tl, name), name
    for name in ("scatter_", "scatter_add_", "index_fill_", "tril_", "triu_", "sort", "topk", "gather", "flip",
                 "median", "nanmedian", "kthvalue"):
        assert hasattr(tl.Tensor, name), name
