"""The "zombie tensor" of pytorch/pytorch#170298, next to tensorlab.

PyTorch's resize_() writes the new shape before it tries to grow the storage. When the storage
cannot grow (here: memory borrowed from NumPy), resize_ raises - but the tensor keeps the new
shape over the old 0 bytes, and the next read of its values is undefined behaviour (often a
segmentation fault). tensorlab computes and validates everything first, acquires memory next,
and publishes the new layout last, so the failed call leaves the tensor exactly as it was.

Run:  python examples/zombie_tensor.py   (with tensorlab installed, e.g. pip install -e .; torch is
      optional: without it only the tensorlab half runs)
"""
import numpy as np

import tensorlab as tl


def state(t):
    return (f"shape={list(t.shape)} stride={list(t.stride())} storage nbytes={t.untyped_storage().nbytes()} "
            f"needs={t.numel() * t.element_size()} bytes")


def failed_resize_and_set(lib):
    """The bug's sequence, the same calls for torch and for tensorlab (`lib` is either module)."""
    name = "torch" if lib.__name__ == "torch" else "tl"
    print(f"== {'PyTorch' if name == 'torch' else 'tensorlab'}", lib.__version__)
    locked = lib.from_numpy(np.array([], dtype=np.int32)).untyped_storage()
    t = lib.tensor([], dtype=lib.int32)
    print(f"1. t = {name}.tensor([], dtype={name}.int32)".ljust(48), state(t))
    t.set_(locked)
    print("2. t.set_(<storage borrowed from NumPy>)        ", state(t))
    try:
        t.resize_((5, 5, 5))
        print("3. t.resize_((5, 5, 5)) succeeded")
    except RuntimeError as e:
        print(f"3. t.resize_((5, 5, 5)) raised RuntimeError: {e}")
    print("4. after the failed resize_                     ", state(t))
    zombie = t.numel() * t.element_size() > t.untyped_storage().nbytes()
    if zombie:
        print("   -> ZOMBIE: the shape claims more bytes than the storage holds; reading or printing t now "
              "reads memory that is not there (not done here: it can crash the interpreter).")
    else:
        print("5. print(t) is safe:", t)
    u = lib.zeros(3)
    try:
        u.set_(locked, 0, (4,))  # torch's set_ has the same ordering bug
    except RuntimeError as e:
        print(f"6. u = {name}.zeros(3); u.set_(<0 locked bytes>, 0, (4,)) raised RuntimeError: {e}")
    u_zombie = u.numel() * u.element_size() > u.untyped_storage().nbytes()
    print("7. after the failed set_                        ", state(u), "ZOMBIE" if u_zombie else u)


def tensorlab_out_of_memory():
    big = tl.arange(6, dtype=tl.float32)
    other = tl.empty(0).set_(big.untyped_storage(), 3, (2,))  # a second tensor on the same storage
    try:
        big.resize_(10 ** 15)  # out of memory: 4e15 bytes
    except RuntimeError as e:
        print(f"8. big.resize_(10**15) raised RuntimeError: {e}")
    print("9. big is untouched:", big, "| the other tensor on its storage:", other)


def main():
    try:
        import torch
    except ImportError:
        print("== PyTorch is not installed: showing tensorlab only.\n")
    else:
        failed_resize_and_set(torch)
        print()
    failed_resize_and_set(tl)
    tensorlab_out_of_memory()


if __name__ == "__main__":
    main()
