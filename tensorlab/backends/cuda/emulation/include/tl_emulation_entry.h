// Included after a kernel source by the emulation driver's generated translation unit: turns each
// name expression into two extern "C" functions the driver calls through ctypes,
//   tl_entry_<i>(grid, block, shared, args, err, cap)  runs the grid, unpacking args[k] (a pointer
//                                                     to the k-th argument's bytes) as parameter k;
//   tl_sig_<i>(kinds, sizes, cap)                     describes the parameters, so the driver can
//                                                     refuse an argument of the wrong C type.
#pragma once
#include <type_traits>
#include <utility>

extern "C" int tl_emu_run_grid(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                               size_t shared, void (*body)(void*), void* ctx, char* err, size_t cap);

namespace tl_emu {

enum ParamKind { kPointer = 0, kSigned = 1, kUnsigned = 2, kFloat = 3, kBool = 4, kHalf = 5, kBFloat16 = 6, kStruct = 7 };

template <typename T>
constexpr int param_kind() {
  if constexpr (std::is_pointer_v<T>) return kPointer;
  else if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_same_v<T, __half>) return kHalf;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return kBFloat16;
  else if constexpr (std::is_floating_point_v<T>) return kFloat;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return kSigned;
  else if constexpr (std::is_integral_v<T>) return kUnsigned;
  else return kStruct;
}

template <typename... P>
struct Call {
  void (*kernel)(P...);
  void** args;

  template <size_t... I>
  void invoke(std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
  }
  static void run(void* self) { static_cast<Call*>(self)->invoke(std::index_sequence_for<P...>{}); }
};

template <typename... P>
int launch(void (*kernel)(P...), const unsigned* dims, size_t shared, void** args, char* err, size_t cap) {
  Call<P...> call{kernel, args};
  return tl_emu_run_grid(dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], shared, &Call<P...>::run, &call, err,
                         cap);
}

template <typename... P>
int signature(void (*)(P...), int* kinds, int* sizes, int cap) {
  int k[] = {0, param_kind<std::remove_cv_t<std::remove_reference_t<P>>>()...};
  int s[] = {0, int(sizeof(std::remove_reference_t<P>))...};
  int n = int(sizeof...(P));
  for (int i = 0; i < n && i < cap; ++i) {
    kinds[i] = k[i + 1];
    sizes[i] = s[i + 1];
  }
  return n;
}

}  // namespace tl_emu
