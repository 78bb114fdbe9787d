"""stft / istft (torch's signatures and checks) as composites over tensorlab.fft, unfold (framing),
nn.functional.pad (centering) and nn.functional.fold (overlap-add): they run on every device the
pieces run on, with gradients through the pieces."""
from __future__ import annotations

from .. import _warn, dtypes
from ._composite import tensor_arg, tl


def _window(window, win_length, n_fft, like, op):
    t = tl()
    if window is None:
        w = t.ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    else:
        tensor_arg(window, op, "window")
        if window.dim() != 1 or window.shape[0] != win_length:
            raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                               f"window with size {list(window.shape)}")
        w = window
    if win_length < n_fft:  # centred in n_fft, zero padded on both sides
        left = (n_fft - win_length) // 2
        w = t.constant_pad_nd(w, [left, n_fft - win_length - left])
    return w


def _lengths(n_fft, hop_length, win_length, op):
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if n_fft <= 0:
        raise RuntimeError(f"{op}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """torch.stft: frames of n_fft samples every hop_length, windowed and transformed; the result is
    (batch?, n_fft//2+1 or n_fft, n_frames), complex (return_complex=True; False: its real view,
    deprecated as in torch)."""
    t = tl()
    tensor_arg(input, "stft")
    if return_complex is None and not (input.is_complex() or (window is not None and window.is_complex())):
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if not return_complex and return_complex is not None:
        _warn.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                   "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                   "still call torch.view_as_real on the complex output to recover the old return format.",
                   UserWarning)
    if window is None:
        _warn.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                   "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                   "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                   "explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning)
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D tensor of shape "
                           f"{list(input.shape)}")
    x = input if input.dtype.is_floating_point or input.is_complex() else input.to(dtypes.get_default_dtype())
    hop, win = _lengths(n_fft, hop_length, win_length, "stft")
    batched = x.dim() == 2
    if not batched:
        x = x.unsqueeze(0)
    if center:
        pad = n_fft // 2
        xp = x.unsqueeze(1)
        if x.is_complex():
            xr = t.view_as_real(x).permute(0, 2, 1)
            xr = t.nn.functional.pad(xr, (pad, pad), mode=pad_mode)
            x = t.view_as_complex(xr.permute(0, 2, 1).contiguous())
        else:
            x = t.nn.functional.pad(xp, (pad, pad), mode=pad_mode).squeeze(1)
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    w = _window(window, win, n_fft, x, "stft")
    frames = x.unfold(-1, n_fft, hop) * w  # (batch, n_frames, n_fft)
    complex_in = x.is_complex() or w.is_complex()
    one = (not complex_in) if onesided is None else onesided
    if one and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = t.fft.rfft(frames, dim=-1, norm=norm) if one else t.fft.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)
    if not batched:
        spec = spec.squeeze(0)
    return spec if return_complex or return_complex is None else t.view_as_real(spec.contiguous())


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """torch.istft: the inverse of stft by overlap-add, divided by the window's squared envelope
    (which must not vanish: torch's NOLA check, a host read as in torch)."""
    t = tl()
    tensor_arg(input, "istft")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got {input.dim()}D "
                           f"tensor of shape {list(input.shape)}")
    hop, win = _lengths(n_fft, hop_length, win_length, "istft")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    fft_size, n_frames = x.shape[-2], x.shape[-1]
    one = (fft_size != n_fft) if onesided is None else onesided
    if one and fft_size != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not one and fft_size != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {fft_size}")
    w = _window(window, win, n_fft, x, "istft")
    if one and return_complex:
        raise RuntimeError("cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    frames = x.transpose(-1, -2)  # (batch, n_frames, fft_size)
    if return_complex:
        y = t.fft.ifft(frames, n=n_fft, dim=-1, norm=norm)
    else:  # torch: a real signal from the onesided half (a two-sided input is narrowed to it), by irfft
        if w.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one:
            frames = frames.narrow(-1, 0, n_fft // 2 + 1)
        y = t.fft.irfft(frames, n=n_fft, dim=-1, norm=norm)
    y = y * w
    out_len = n_fft + hop * (n_frames - 1)

    def overlap_add(f):  # (batch, n_frames, n_fft) real -> (batch, out_len)
        return t.nn.functional.fold(f.transpose(1, 2), output_size=(1, out_len), kernel_size=(1, n_fft),
                                    stride=(1, hop)).reshape(f.shape[0], out_len)

    def ola(f):  # complex frames: the real and imaginary parts separately
        if not f.is_complex():
            return overlap_add(f)
        fr = t.view_as_real(f.contiguous())
        return t.complex(overlap_add(fr[..., 0]), overlap_add(fr[..., 1]))

    y = ola(y)
    wsq = (w * w).reshape(1, 1, n_fft).expand(1, n_frames, n_fft)  # torch's window.pow(2), complex too
    env = ola(wsq.contiguous())
    start = n_fft // 2 if center else 0
    end = (start + length) if length is not None else (out_len - n_fft // 2 if center else out_len)
    end_c = min(end, out_len)
    y = y[:, start:end_c]
    env = env[:, start:end_c]
    if bool((env.abs() < 1e-11).any()):
        raise RuntimeError("istft(...) window overlap add min: 0 (the window's squared overlap-add vanishes: the "
                           "nonzero overlap-add (NOLA) condition fails; pick a window/hop_length pair that overlaps)")
    y = y / env
    if end > out_len:
        y = t.constant_pad_nd(y, [0, end - out_len])
    return y if batched else y.squeeze(0)


METHODS = {"stft": stft, "istft": istft}
FUNCTIONS = ("stft", "istft")
