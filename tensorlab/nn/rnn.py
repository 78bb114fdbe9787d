"""Recurrent layers RNN (tanh/relu), LSTM (with proj_size) and GRU, and their cells, with torch's
parameter names (weight_ih_l0, weight_hh_l0_reverse, ...), init U(-1/sqrt(H), 1/sqrt(H)), gate
order (LSTM i, f, g, o; GRU r, z, n) and shapes. Each layer/direction projects the inputs of all time steps
with one matmul, then runs the recurrence: as one fused op for the whole sequence (ops/rnn_fused.sequence),
or, where that does not apply (proj_size, very wide hidden states), one matmul and one fused cell op per step
(ops/rnn_fused.cell); the composite steps below stay the reference (rnn_fused.ENABLED = False)."""
from __future__ import annotations

import math
import numbers

import tensorlab as _tl

from .. import _warn
from ..ops import rnn_fused as _cells
from . import functional as F, init
from .module import Module
from .parameter import Parameter

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# -- one time step per mode: (input projection of the step, hidden state(s)) -> new state(s) ---------
def _rnn_step(act):
    def step(gi, state, w_hh, b_hh, w_hr):
        gh = state.matmul(w_hh.t())
        if b_hh is not None:
            gh = gh + b_hh
        return act(gi + gh)
    return step


def _lstm_step(gi, state, w_hh, b_hh, w_hr):
    h, c = state
    gates = gi + h.matmul(w_hh.t())
    if b_hh is not None:
        gates = gates + b_hh
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = h.matmul(w_hr.t())
    return h, c


def _gru_step(gi, h, w_hh, b_hh, w_hr):
    gh = h.matmul(w_hh.t())
    if b_hh is not None:
        gh = gh + b_hh
    hidden = h.shape[-1]
    i_rz, i_n = gi.split([2 * hidden, hidden], -1)
    h_rz, h_n = gh.split([2 * hidden, hidden], -1)
    r, z = (i_rz + h_rz).sigmoid().chunk(2, -1)  # both gates in one op
    n = (i_n + r * h_n).tanh()
    return n + z * (h - n)


_STEPS = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN_TANH": _rnn_step(_tl.tanh), "RNN_RELU": _rnn_step(_tl.relu)}


# -- the same steps as one fused cell op each (ops/rnn_fused.py): a matmul and one op per time step --------
def _fused_step(mode):
    def step(gi, state, w_hh, b_hh, w_hr):
        if mode == "LSTM":
            h, c = state
            return _cells.cell(mode, gi, h.matmul(w_hh.t()), c, b_hh)
        return _cells.cell(mode, gi, state.matmul(w_hh.t()), state if mode == "GRU" else None, b_hh)
    return step


_FUSED_STEPS = {mode: _fused_step(mode) for mode in _STEPS}


def _step_for(mode, x, *tensors, w_hr=None):
    """The fused step where ops/rnn_fused.py takes these operands (proj_size stays on the composite)."""
    if w_hr is None and _cells.supported(x, *tensors):
        return _FUSED_STEPS[mode]
    return _STEPS[mode]


def _input_projection(x, w_ih, b_ih, b_hh):
    """x [T, B, I] -> x W_ih^T + b_ih + b_hh [T, B, G*H] for every time step at once: one GEMM over
    the T*B rows, and one add of the two biases summed first. LSTM and RNN add b_hh to the sum of
    both projections, so it is added here once, not at every step; GRU passes b_hh None (its b_hn
    sits inside r * (h W_hn + b_hn))."""
    steps, batch = x.shape[0], x.shape[1]
    gi = x.reshape(steps * batch, x.shape[2]).matmul(w_ih.t())
    bias = b_ih if b_hh is None else (b_hh if b_ih is None else b_ih + b_hh)
    if bias is not None:
        gi = gi.add_(bias)  # the product's own buffer (matmul's gradient does not read its result)
    return gi.reshape(steps, batch, gi.shape[1])


def _run_direction(step, x, state, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, is_lstm):
    """x [T, B, I]; returns (outputs [T, B, H_out], final state)."""
    gru = step is _gru_step or step is _FUSED_STEPS["GRU"]
    gi = _input_projection(x, w_ih, b_ih, None if gru else b_hh)
    if not gru:
        b_hh = None
    steps = gi.unbind(0)
    outs = [None] * len(steps)
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    for t in order:
        state = step(steps[t], state, w_hh, b_hh, w_hr)
        outs[t] = state[0] if is_lstm else state
    return _tl.stack(outs, 0), state


def _run_packed_direction(step, data, batch_sizes, state, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, is_lstm):
    """One layer/direction over a packed sequence: data [N, I] holds the rows of step 0, then step 1, ...
    (batch_sizes[t] rows each, the sequences sorted longest first). Step t runs only the first
    batch_sizes[t] rows of the state; the others keep theirs (finished sequences forward, sequences
    not yet started in reverse). Returns (outputs [N, H_out] in data's row order, final state)."""
    gru = step is _gru_step or step is _FUSED_STEPS["GRU"]
    gi_all = _input_projection(data.unsqueeze(0), w_ih, b_ih, None if gru else b_hh)[0]
    if not gru:
        b_hh = None
    offsets = [0]
    for n in batch_sizes:
        offsets.append(offsets[-1] + n)
    full = batch_sizes[0]
    outs = [None] * len(batch_sizes)
    order = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
    for t in order:
        n = batch_sizes[t]
        gi = gi_all[offsets[t]:offsets[t + 1]]
        if is_lstm:
            h, c = state
            new = step(gi, (h[:n], c[:n]) if n < full else (h, c), w_hh, b_hh, w_hr)
            outs[t] = new[0]
            state = new if n == full else (_tl.cat([new[0], h[n:]]), _tl.cat([new[1], c[n:]]))
        else:
            new = step(gi, state[:n] if n < full else state, w_hh, b_hh, w_hr)
            outs[t] = new
            state = new if n == full else _tl.cat([new, state[n:]])
    return _tl.cat(outs, 0), state


def _run_sequence(mode, x, state, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, is_lstm):
    """_run_direction as one fused op for every time step (ops/rnn_fused.sequence)."""
    gi = _input_projection(x, w_ih, b_ih, None if mode == "GRU" else b_hh)
    if mode != "GRU":
        b_hh = None
    h0, c0 = state if is_lstm else (state, None)
    out, h_n, c_n = _cells.sequence(mode, gi, w_hh, b_hh, h0, c0, reverse)
    return out, ((h_n, c_n) if is_lstm else h_n)


def _check_hx_dims(hx, is_lstm, n, kind):
    """torch's check that the initial state has the input's rank (n = 2 unbatched, 3 batched)."""
    hs = hx if is_lstm else (hx,)
    if any(h.dim() != n for h in hs):
        if is_lstm:
            raise RuntimeError(f"For {kind} {n}-D input, hx and cx should also be {n}-D but got "
                               f"({hs[0].dim()}-D, {hs[1].dim()}-D) tensors")
        raise RuntimeError(f"For {kind} {n}-D input, hx should also be {n}-D but got {hx.dim()}-D tensor")


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            _warn.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                       f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}")
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input)), ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(_tl.empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """cuDNN packs the weights into one buffer here; tensorlab's layers read them where they are,
        so there is nothing to do (kept so programs that call it run unchanged)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward -----------------------------------------------------------------------------------
    def _name(self):
        return "LSTM" if self.mode == "LSTM" else ("GRU" if self.mode == "GRU" else "RNN")

    def _check_input(self, input, batch_sizes=None):
        if input.dim() not in (2, 3):
            word = "tensor" if self._name() == "RNN" else "input"
            raise ValueError(f"{self._name()}: Expected input to be 2D or 3D, got {input.dim()}D {word} instead")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")

    def _hidden_shape(self, batch, hidden):
        d = 2 if self.bidirectional else 1
        return (self.num_layers * d, batch, hidden)

    @staticmethod
    def _check_hidden(hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def _layer_weights(self, layer, direction):
        names = self._all_weights[layer * (2 if self.bidirectional else 1) + direction]
        ws = {n.split("_l")[0]: getattr(self, n) for n in names}
        return ws["weight_ih"], ws["weight_hh"], ws.get("bias_ih"), ws.get("bias_hh"), ws.get("weight_hr")

    def _stack_layers(self, x, h0, c0):
        """x [T, B, I] (sequence first); h0 [L*D, B, H_out], c0 [L*D, B, H] or None."""
        is_lstm = self.mode == "LSTM"
        step = _step_for(self.mode, x, h0, c0, *self._flat_weights, w_hr=self.proj_size or None)
        whole = not self.proj_size and _cells.sequence_supported(x, self.hidden_size, self.mode, h0, c0,
                                                                 *self._flat_weights)

        def run(x, state, weights, reverse):
            if whole:
                return _run_sequence(self.mode, x, state, *weights, reverse=reverse, is_lstm=is_lstm)
            return _run_direction(step, x, state, *weights, reverse=reverse, is_lstm=is_lstm)
        return self._layer_loop(x, h0, c0, run)

    def _layer_loop(self, x, h0, c0, run):
        """Every layer and direction over x: run(x, state, weights, reverse) -> (output, final state);
        returns (the last layer's output, h_n [L*D, ...], c_n or None), dropout between layers."""
        is_lstm = self.mode == "LSTM"
        num_directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                state = (h0[k], c0[k]) if is_lstm else h0[k]
                out, state = run(x, state, self._layer_weights(layer, direction), direction == 1)
                outs.append(out)
                if is_lstm:
                    h_n.append(state[0])
                    c_n.append(state[1])
                else:
                    h_n.append(state)
            x = outs[0] if num_directions == 1 else _tl.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, _tl.stack(h_n, 0), (_tl.stack(c_n, 0) if is_lstm else None)

    def _forward_packed(self, packed, hx):
        """The layer over a PackedSequence: returns (PackedSequence of the outputs, h_n / (h_n, c_n)) with
        the final states taken at each sequence's last valid step, in the caller's batch order."""
        from .utils.rnn import PackedSequence
        data, batch_sizes_t, sorted_indices, unsorted_indices = packed
        if data.dim() != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {data.dim()}")
        if self.input_size != data.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{data.shape[-1]}")
        w = self._flat_weights[0]
        if data.dtype != w.dtype:
            raise ValueError(f"RNN input dtype (torch.{data.dtype.name}) does not match weight dtype "
                             f"(torch.{w.dtype.name}). Convert input: input.to(torch.{w.dtype.name}), or convert "
                             f"model: model.to(torch.{data.dtype.name})")
        batch_sizes = [int(n) for n in batch_sizes_t.tolist()]  # a CPU tensor: no device wait
        is_lstm = self.mode == "LSTM"
        batch = batch_sizes[0]
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        h_shape = self._hidden_shape(batch, real_hidden)
        c_shape = self._hidden_shape(batch, self.hidden_size)
        if hx is None:
            h0 = _tl.zeros(h_shape, dtype=data.dtype, device=data.device)
            c0 = _tl.zeros(c_shape, dtype=data.dtype, device=data.device) if is_lstm else None
        else:
            if is_lstm:
                h0, c0 = hx
            else:
                h0, c0 = hx, None
            if sorted_indices is not None:  # the caller's order -> the packed (sorted) order
                h0 = h0.index_select(1, sorted_indices)
                c0 = c0.index_select(1, sorted_indices) if c0 is not None else None
            if is_lstm:
                self._check_hidden(h0, h_shape, "Expected hidden[0] size {}, got {}")
                self._check_hidden(c0, c_shape, "Expected hidden[1] size {}, got {}")
            else:
                self._check_hidden(h0, h_shape)
            for h in (h0,) if c0 is None else (h0, c0):
                if h.dtype != data.dtype:
                    raise RuntimeError(f"{self._name()}: input and hidden tensors must have the same dtype, got "
                                       f"input {data.dtype.torch_name} and hidden {h.dtype.torch_name}")
                if h.device != data.device:
                    raise RuntimeError(f"Input and hidden tensors are not at the same device, found input tensor at "
                                       f"{data.device} and hidden tensor at {h.device}")
        step = _step_for(self.mode, data, h0, c0, *self._flat_weights, w_hr=self.proj_size or None)
        x, h_n, c_n = self._layer_loop(data, h0, c0, lambda x, state, weights, reverse: _run_packed_direction(
            step, x, batch_sizes, state, *weights, reverse=reverse, is_lstm=is_lstm))
        if unsorted_indices is not None:  # back to the caller's order
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = c_n.index_select(1, unsorted_indices) if c_n is not None else None
        out = PackedSequence(x, batch_sizes_t, sorted_indices, unsorted_indices)
        return out, ((h_n, c_n) if is_lstm else h_n)

    def _forward(self, input, hx):
        from .utils.rnn import PackedSequence
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        self._check_input(input)
        is_lstm = self.mode == "LSTM"
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not batched:
            input = input.unsqueeze(batch_dim)
            if hx is not None:
                _check_hx_dims(hx, is_lstm, 2, "unbatched")
                hx = tuple(h.unsqueeze(1) for h in hx) if is_lstm else hx.unsqueeze(1)
        elif hx is not None:
            _check_hx_dims(hx, is_lstm, 3, "batched")
        x = input.transpose(0, 1) if self.batch_first else input
        if x.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype (torch.{input.dtype.name}) does not match weight dtype "
                             f"(torch.{w.dtype.name}). Convert input: input.to(torch.{w.dtype.name}), or convert "
                             f"model: model.to(torch.{input.dtype.name})")
        batch = x.shape[1]
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        h_shape = self._hidden_shape(batch, real_hidden)
        if hx is None:
            h0 = _tl.zeros(h_shape, dtype=input.dtype, device=input.device)
            c0 = _tl.zeros(self._hidden_shape(batch, self.hidden_size), dtype=input.dtype,
                           device=input.device) if is_lstm else None
        elif is_lstm:
            h0, c0 = hx
            self._check_hidden(h0, h_shape, "Expected hidden[0] size {}, got {}")
            self._check_hidden(c0, self._hidden_shape(batch, self.hidden_size), "Expected hidden[1] size {}, got {}")
        else:
            h0, c0 = hx, None
            self._check_hidden(h0, h_shape)
        for h in (h0,) if c0 is None else (h0, c0):
            if h.dtype != input.dtype:
                raise RuntimeError(f"{self._name()}: input and hidden tensors must have the same dtype, got "
                                   f"input {input.dtype.torch_name} and hidden {h.dtype.torch_name}")
            if h.device != input.device:
                raise RuntimeError(f"Input and hidden tensors are not at the same device, found input tensor at "
                                   f"{input.device} and hidden tensor at {h.device}")
        out, h_n, c_n = self._stack_layers(x, h0, c0)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(batch_dim)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        return out, ((h_n, c_n) if is_lstm else h_n)


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self_nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self_nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self_nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self_nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self_nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = self_nonlinearity

    def forward(self, input, hx=None):
        return self._forward(input, hx)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward(input, hx)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward(input, hx)


# -- cells ------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_tl.empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(_tl.empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_tl.empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(_tl.empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input, hx, n_states):
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        hs = [] if hx is None else (list(hx) if n_states == 2 else [hx])
        for h in hs:
            if h.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        if hx is None:
            hs = [_tl.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
                  for _ in range(n_states)]
        elif not batched:
            hs = [h.unsqueeze(0) for h in hs]
        for k, h in enumerate(hs):
            if h.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} batch size "
                                   f"{h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, expected "
                                   f"{self.hidden_size}")
        gi = input.matmul(self.weight_ih.t())
        if self.bias_ih is not None:
            gi = gi + self.bias_ih
        return gi, hs, batched


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        gi, (h,), batched = self._prepare(input, hx, 1)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        step = _step_for(mode, gi, h, self.weight_hh, self.bias_hh)
        h = step(gi, h, self.weight_hh, self.bias_hh, None)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        gi, (h, c), batched = self._prepare(input, hx, 2)
        step = _step_for("LSTM", gi, h, c, self.weight_hh, self.bias_hh)
        h, c = step(gi, (h, c), self.weight_hh, self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        gi, (h,), batched = self._prepare(input, hx, 1)
        step = _step_for("GRU", gi, h, self.weight_hh, self.bias_hh)
        h = step(gi, h, self.weight_hh, self.bias_hh, None)
        return h if batched else h.squeeze(0)
