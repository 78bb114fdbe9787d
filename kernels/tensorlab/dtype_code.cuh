// Operands whose element type is a runtime code: the elementwise kernels are templated on the op
// and the compute type only, and read/write each operand through a switch on its dtype code (a
// uniform branch), so mixed-dtype calls need no instantiation per dtype combination.
// The codes are the positions in tensorlab.dtypes.ALL (backends/cuda/elementwise.py: _CODE).
#pragma once
#include "cast.cuh"

namespace tl {

enum DtypeCode { kBool = 0, kUInt8, kInt8, kInt16, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble };

// Integer ops compute in long long: a value converted to the compute dtype (code c) and widened.
// Add/sub/mul/neg/pow/bitwise results are the same modulo 2**bits, division and comparisons of
// in-range values are exact, so narrowing once more before the store gives the narrow dtype's result.
__device__ __forceinline__ long long narrow(long long v, int c) {
  switch (c) {
    case kBool: return v != 0;
    case kUInt8: return static_cast<unsigned char>(v);
    case kInt8: return static_cast<signed char>(v);
    case kInt16: return static_cast<short>(v);
    case kInt32: return static_cast<int>(v);
    default: return v;
  }
}
// float/double/bool compute types are the compute dtype itself (float16/bfloat16 compute in float).
template <typename V>
__device__ __forceinline__ V narrow(V v, int) { return v; }

// Element `off` of the operand at p (dtype code `code`) converted to the compute dtype.
template <typename C, typename Index>
__device__ __forceinline__ C load(const void* p, int code, Index off, int c) {
  C v;
  switch (code) {
    case kBool: v = cast<C>(static_cast<const bool*>(p)[off]); break;
    case kUInt8: v = cast<C>(static_cast<const unsigned char*>(p)[off]); break;
    case kInt8: v = cast<C>(static_cast<const signed char*>(p)[off]); break;
    case kInt16: v = cast<C>(static_cast<const short*>(p)[off]); break;
    case kInt32: v = cast<C>(static_cast<const int*>(p)[off]); break;
    case kInt64: v = cast<C>(static_cast<const long long*>(p)[off]); break;
    case kHalf: v = cast<C>(static_cast<const __half*>(p)[off]); break;
    case kBFloat16: v = cast<C>(static_cast<const __nv_bfloat16*>(p)[off]); break;
    case kFloat: v = cast<C>(static_cast<const float*>(p)[off]); break;
    default: v = from_f64_bits(static_cast<const unsigned long long*>(p)[off], C()); break;  // cast.cuh
  }
  return narrow(v, c);
}

// A tensor operand (code >= 0) or a scalar passed by value (code < 0).
template <typename C, typename Index>
__device__ __forceinline__ C load_or(const void* p, int code, Index off, int c, C scalar) {
  return code < 0 ? scalar : load<C>(p, code, off, c);
}

// Store a result (compute type, or bool for predicates) into the output's dtype, rounded once.
template <typename V, typename Index>
__device__ __forceinline__ void store(void* p, int code, Index off, V v) {
  switch (code) {
    case kBool: static_cast<bool*>(p)[off] = cast<bool>(v); break;
    case kUInt8: static_cast<unsigned char*>(p)[off] = cast<unsigned char>(v); break;
    case kInt8: static_cast<signed char*>(p)[off] = cast<signed char>(v); break;
    case kInt16: static_cast<short*>(p)[off] = cast<short>(v); break;
    case kInt32: static_cast<int*>(p)[off] = cast<int>(v); break;
    case kInt64: static_cast<long long*>(p)[off] = cast<long long>(v); break;
    case kHalf: static_cast<__half*>(p)[off] = cast<__half>(v); break;
    case kBFloat16: static_cast<__nv_bfloat16*>(p)[off] = cast<__nv_bfloat16>(v); break;
    case kFloat: static_cast<float*>(p)[off] = cast<float>(v); break;
    default: static_cast<unsigned long long*>(p)[off] = to_f64_bits(v); break;
  }
}

// Offset of linear index i: a layout with ndim 0 marks a dense operand (element i at p + i).
template <typename Index>
__device__ __forceinline__ Index at(Index i, const StridedLayout<Index>& l) {
  return l.ndim ? offset_of(i, l) : i;
}

// The compute type of a storage type (the *_vec kernels, whose compute dtype is a storage type T):
// what the runtime codes above give, so both paths compute alike. Integers compute in long long
// and their results are narrowed by the store's cast (a static_cast: narrow()'s wrap).
template <typename T> struct Compute { using type = T; };
template <> struct Compute<__half> { using type = float; };
template <> struct Compute<__nv_bfloat16> { using type = float; };
template <> struct Compute<unsigned char> { using type = long long; };
template <> struct Compute<signed char> { using type = long long; };
template <> struct Compute<short> { using type = long long; };
template <> struct Compute<int> { using type = long long; };

}  // namespace tl
