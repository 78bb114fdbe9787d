"""tensorlab.nn.utils.rnn: variable-length sequences for the recurrent layers, as torch.nn.utils.rnn.

A PackedSequence holds the time steps of a batch of sequences sorted by length (longest first):
`data` is [sum of lengths, *] with the rows of step 0 (one per sequence), then those of step 1 (one per
sequence still running), ...; `batch_sizes` (a CPU int64 tensor) counts the rows of each step.
`sorted_indices` maps the sorted order back to the caller's batch order and `unsorted_indices` is its
inverse (None when the caller's batch was already sorted). Packing and padding are one index_select each
over an index built on the host from the CPU lengths (differentiable; nothing waits for a device)."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

import tensorlab as _tl

from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]

_Packed = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None for None)."""
    if permutation is None:
        return None
    out = _tl.empty_like(permutation)
    out[permutation] = _tl.arange(permutation.numel(), dtype=permutation.dtype, device=permutation.device)
    return out


class PackedSequence(_Packed):
    """A packed batch of variable-length sequences (see the module docstring); a namedtuple of
    (data, batch_sizes, sorted_indices, unsorted_indices). Build one with pack_padded_sequence or
    pack_sequence; the recurrent layers take and return it."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if not isinstance(batch_sizes, Tensor):
                raise AttributeError(f"'{type(batch_sizes).__name__}' object has no attribute 'device'")
            if batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                                 "created manually. They should be instantiated by functions like pack_sequence and "
                                 "pack_padded_sequences in nn.utils.rnn. "
                                 "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        # the (data, batch_sizes) tuple form
        if not (isinstance(data, (list, tuple)) and len(data) == 2):
            raise TypeError("PackedSequence(data) without batch_sizes expects a (data, batch_sizes) pair")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def _replace_data(self, data):
        if data is self.data:
            return self
        device = data.device
        sorted_indices = self.sorted_indices.to(device) if self.sorted_indices is not None else None
        unsorted_indices = self.unsorted_indices.to(device) if self.unsorted_indices is not None else None
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """data.to(*args, **kwargs); the indices follow data's device, batch_sizes stays on the CPU."""
        return self._replace_data(self.data.to(*args, **kwargs))

    def cuda(self, *args, **kwargs):
        """The sequence with data (and the indices) on the current (or given) CUDA device."""
        return self._replace_data(self.data.cuda(*args, **kwargs))

    def cpu(self, *args, **kwargs):
        """The sequence with data (and the indices) on the CPU."""
        return self._replace_data(self.data.cpu(*args, **kwargs))

    def pin_memory(self):
        """The sequence with data and the indices in page-locked host memory."""
        pin = (lambda t: t.pin_memory() if t is not None else None)
        return type(self)(self.data.pin_memory(), self.batch_sizes, pin(self.sorted_indices),
                          pin(self.unsorted_indices))

    def is_pinned(self):
        """Whether data is in page-locked host memory."""
        return self.data.is_pinned()

    @property
    def is_cuda(self):
        """Whether data is on a CUDA device."""
        return self.data.is_cuda

    def double(self):
        """data as float64."""
        return self.to(dtype=_tl.float64)

    def float(self):
        """data as float32."""
        return self.to(dtype=_tl.float32)

    def half(self):
        """data as float16."""
        return self.to(dtype=_tl.float16)

    def long(self):
        """data as int64."""
        return self.to(dtype=_tl.int64)

    def int(self):
        """data as int32."""
        return self.to(dtype=_tl.int32)

    def short(self):
        """data as int16."""
        return self.to(dtype=_tl.int16)

    def char(self):
        """data as int8."""
        return self.to(dtype=_tl.int8)

    def byte(self):
        """data as uint8."""
        return self.to(dtype=_tl.uint8)


def _host_lengths(lengths):
    """The lengths as a host int64 array, refusing a device tensor as torch does."""
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1 or lengths.device.type != "cpu":
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                               f"{lengths.device} {lengths.dtype.torch_name} tensor (pass lengths.cpu(): the packing "
                               "is planned on the host)")
        return lengths.to(dtype=_tl.int64).numpy().copy()
    arr = np.asarray([int(v) for v in lengths], dtype=np.int64)
    return arr


def _index(values, device):
    return _tl.tensor(np.ascontiguousarray(values, dtype=np.int64), device=device)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch ([T, B, *], or [B, T, *] with batch_first) of sequences with the given
    lengths (a list or a CPU int64 tensor). With enforce_sorted=True the lengths must be decreasing;
    otherwise the batch is sorted here and the permutation kept in the result."""
    lengths = _host_lengths(lengths)
    batch_dim = 0 if batch_first else 1
    if input.dim() < 2:
        raise RuntimeError(f"pack_padded_sequence: expected an input of at least 2 dimensions ([T, B, *]), got "
                           f"{input.dim()}-D input of shape {list(input.shape)}")
    sorted_indices = None
    if not enforce_sorted:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        sorted_indices = _index(order, input.device)
        input = input.index_select(batch_dim, sorted_indices)
    batch = input.shape[batch_dim]
    steps = input.shape[1 - batch_dim]
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    if input.numel() == 0 and batch == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if (lengths <= 0).any():
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if (np.diff(lengths) > 0).any():
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can "
                           "pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lengths[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: the longest length is {int(lengths[0])} but the input has only "
                           f"{steps} time steps (shape {list(input.shape)}, batch_first={batch_first})")
    max_len = int(lengths[0])
    valid = lengths[None, :] > np.arange(max_len)[:, None]  # [T, B]: step t of sequence b exists
    batch_sizes = valid.sum(1)
    # row t * B + b of the [T, B, *] input for every valid (t, b), step by step (row-major order)
    x = input.transpose(0, 1) if batch_first else input
    flat = x.reshape((steps * batch,) + tuple(x.shape[2:]))
    data = flat.index_select(0, _index(np.flatnonzero(valid), input.device))
    return PackedSequence(data, _tl.tensor(batch_sizes.astype(np.int64)), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo pack_padded_sequence: (padded [T, B, *] (or [B, T, *]), lengths as a CPU int64 tensor), in the
    batch order the sequences had before packing; T is total_length when given."""
    batch_sizes = sequence.batch_sizes.numpy().astype(np.int64)
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    data = sequence.data
    batch = int(batch_sizes[0]) if len(batch_sizes) else 0
    lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1)  # sorted order
    # every (t, b) of the output reads row `src` of data (the valid ones in row-major order), or
    # the padding row appended after it
    valid = np.zeros((max_len, batch), dtype=bool)
    valid[:len(batch_sizes)] = np.arange(batch)[None, :] < batch_sizes[:, None]
    src = np.full((max_len, batch), data.shape[0], dtype=np.int64)
    src[valid] = np.arange(int(batch_sizes.sum()))
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        perm = unsorted.cpu().numpy()
        src = src[:, perm]
        lengths = lengths[perm]
    if batch_first:
        src = src.T
    pad = _tl.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    out = _tl.cat([data, pad]).index_select(0, _index(src.reshape(-1), data.device))
    out = out.reshape(src.shape + tuple(data.shape[1:]))
    return out, _tl.tensor(lengths.astype(np.int64))


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of different lengths ([L_i, *] each) into [T, B, *] (or [B, T, *]), T the longest,
    filling with padding_value after (padding_side='right') or before ('left') each sequence."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    seqs = list(sequences.unbind(0) if isinstance(sequences, Tensor) else sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    first = seqs[0]
    if first.dim() == 0:
        raise RuntimeError("pad_sequence: each sequence must have at least one dimension (its length); got a 0-D "
                           "tensor")
    trailing = tuple(first.shape[1:])
    for k, s in enumerate(seqs):
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: sequence {k} has shape {list(s.shape)}, but every sequence must be "
                               f"[L, {', '.join(map(str, trailing))}] like the first ({list(first.shape)})")
        if s.device != first.device:
            raise RuntimeError(f"pad_sequence: sequence {k} is on {s.device} but the first is on {first.device}; "
                               "move them to one device")
    lens = np.array([s.shape[0] for s in seqs], dtype=np.int64)
    max_len = int(lens.max())
    total = int(lens.sum())
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    src = np.full((max_len, len(seqs)), total, dtype=np.int64)  # `total` = the padding row
    for b, (n, s0) in enumerate(zip(lens, starts)):
        if padding_side == "right":
            src[:n, b] = s0 + np.arange(n)
        else:
            src[max_len - n:, b] = s0 + np.arange(n)
    if batch_first:
        src = src.T
    dtype = first.dtype
    parts = [s if s.dtype == dtype else s.to(dtype) for s in seqs]
    parts.append(_tl.full((1,) + trailing, padding_value, dtype=dtype, device=first.device))
    out = _tl.cat(parts).index_select(0, _index(src.reshape(-1), first.device))
    return out.reshape(src.shape + trailing)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into its sequences (a list of [L_i, *] views)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lens = [int(n) for n in (lengths.tolist() if isinstance(lengths, Tensor) else lengths)]
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), lens)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences ([L_i, *] each; decreasing lengths unless enforce_sorted=False)."""
    lengths = _tl.tensor([s.shape[0] for s in sequences], dtype=_tl.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Undo pack_sequence: the list of sequences, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
