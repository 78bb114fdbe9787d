"""Interop with other array libraries and with PyTorch's files: DLPack (dlpack.py), NumPy's and
CUDA's array interfaces (arrays.py), PyTorch's zip checkpoint format (serialization.py). Tensor's
protocol methods delegate here in one line each."""
