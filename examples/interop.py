"""Interop: a PyTorch state_dict into a tensorlab model, and a tensor from CuPy into tensorlab and back.

    python examples/interop.py

The first part needs torch only to *write* the checkpoint (tensorlab reads PyTorch's file format
itself); the second needs CuPy and a GPU and is skipped without them. Both show zero-copy sharing:
a write through one library is seen by the other."""
import io
import sys

import numpy as np

import tensorlab as tl


class Net(tl.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = tl.nn.Linear(4, 8)
        self.fc2 = tl.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(tl.nn.functional.relu(self.fc1(x)))


def torch_state_dict_into_tensorlab():
    try:
        import torch
    except ImportError:
        print("torch is not installed: skipping the state_dict part (tl.load needs no torch, but this "
              "example uses torch to write the checkpoint)")
        return
    torch.manual_seed(0)
    ref = torch.nn.Sequential()
    ref.fc1, ref.fc2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 2)
    f = io.BytesIO()
    torch.save(ref.state_dict(), f)          # PyTorch's zip checkpoint
    f.seek(0)
    net = Net()
    net.load_state_dict(tl.load(f))          # weights_only=True by default: nothing in the file runs
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    ours = net(tl.tensor(x)).detach().numpy()
    theirs = ref.fc2(torch.relu(ref.fc1(torch.from_numpy(x)))).detach().numpy()
    print("max |tensorlab - torch| =", float(np.abs(ours - theirs).max()))

    back = io.BytesIO()
    tl.save(net.state_dict(), back)          # and the other way: torch.load reads tensorlab's file
    back.seek(0)
    print("torch reads our checkpoint:", sorted(torch.load(back, weights_only=True)))

    src = torch.arange(4.)
    shared = tl.from_dlpack(src)             # DLPack: the same memory, not a copy
    shared[0] = 100
    print("torch sees tensorlab's write through DLPack:", src.tolist())


def cupy_round_trip():
    try:
        import cupy
    except ImportError:
        print("CuPy is not installed: skipping the CuPy part")
        return
    if not tl.cuda.is_available():
        print("no GPU: skipping the CuPy part")
        return
    x = cupy.arange(6, dtype=cupy.float32)
    t = tl.as_tensor(x)                      # __cuda_array_interface__ (or tl.from_dlpack(x)): zero-copy
    t.mul_(2)                                # queued on tensorlab's current stream
    y = cupy.asarray(t)                      # back through the CUDA array interface, stream-ordered
    print("CuPy sees tensorlab's write:", cupy.asnumpy(x), "same memory:", y.data.ptr == x.data.ptr)


if __name__ == "__main__":
    torch_state_dict_into_tensorlab()
    cupy_round_trip()
    sys.exit(0)
