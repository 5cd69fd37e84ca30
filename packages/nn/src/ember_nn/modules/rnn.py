"""Recurrent layers: RNN, LSTM, GRU (stacked, bidirectional, batch_first, packed
sequences, LSTM projections) and their cells.

Each step of an LSTM or GRU is one fused ember_core cell op (both GEMMs and the
gate arithmetic in C; its backward likewise), so a sequence costs one op per
step and direction, not dozens."""

import math
import numbers
import warnings

import ember_core as ec
from ember_nn import functional as F
from ember_nn import init
from ember_nn.modules import _rnn_layers
from ember_nn.modules.module import Module
from ember_nn.parameter import Parameter


def _rnn_tanh_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return F.linear(x, w_ih, b_ih).add_(F.linear(h, w_hh, b_hh)).tanh()


def _rnn_relu_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return F.linear(x, w_ih, b_ih).add_(F.linear(h, w_hh, b_hh)).relu()


def _lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return ec.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)


def _lstm_proj_cell(x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr):
    """An LSTM step whose hidden state is projected by w_hr (proj_size > 0)."""
    gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = F.linear(o.sigmoid() * c.tanh(), w_hr)
    return h, c


def _gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return ec.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)


_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    """Stacked (bidirectional) recurrent layers; parameters weight_ih_l{k}[_reverse],
    weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (and weight_hr_l{k} with projections)."""

    def __init__(
        self,
        mode,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
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
        dirs = 2 if bidirectional else 1
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                "dropout expects "
                f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(
                f"batch_first should be of type bool, got: {type(batch_first).__name__}"
            )
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
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gates = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        kw = {"dtype": dtype, "device": device}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for d in range(dirs):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                layer_in = input_size if layer == 0 else real_hidden * dirs
                shapes = [("weight_ih", (gates, layer_in)), ("weight_hh", (gates, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for base, shape in shapes:
                    setattr(self, base + suffix, Parameter(ec.empty(shape, **kw)))
                    names.append(base + suffix)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """No-op: ember keeps each weight as its own tensor (PyTorch packs them for cuDNN)."""

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

    # ----------------------------------------------------------------- checks

    def _check_input(self, input, packed):
        w = getattr(self, self._flat_weights_names[0])
        if input.dtype is not w.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                "Convert input: "
                f"input.to({w.dtype}), or convert model: model.to({input.dtype})"
            )
        expected = 2 if packed else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                f"{input.shape[-1]}"
            )

    def _expected_state(self, batch, size):
        return (self.num_layers * (2 if self.bidirectional else 1), batch, size)

    @staticmethod
    def _check_state(hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.shape)))

    # ---------------------------------------------------------------- forward

    def forward(self, input, hx=None):
        from ember_nn.utils.rnn import PackedSequence

        is_lstm = self.mode == "LSTM"
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        packed = isinstance(input, PackedSequence)
        if packed:
            seq, batch_sizes, sorted_indices, unsorted_indices = input
            batch = batch_sizes[0]
            if hx is not None and sorted_indices is not None:
                hx = self._permute_hidden(hx, sorted_indices)
        else:
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead"
                )
            batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    states = hx if is_lstm else (hx,)
                    if any(h.dim() != 2 for h in states):
                        dims = ", ".join(f"{h.dim()}-D" for h in states)
                        raise RuntimeError(
                            f"For unbatched 2-D input, hx{' and cx' if is_lstm else ''} should "
                            "also be 2-D but "
                            f"got ({dims}) tensor{'s' if is_lstm else ''}"
                        )
                    hx = tuple(h.unsqueeze(1) for h in hx) if is_lstm else hx.unsqueeze(1)
            elif hx is not None:
                states = hx if is_lstm else (hx,)
                if any(h.dim() != 3 for h in states):
                    dims = ", ".join(f"{h.dim()}-D" for h in states)
                    raise RuntimeError(
                        f"For batched 3-D input, hx{' and cx' if is_lstm else ''} should also be "
                        "3-D but got "
                        f"({dims}) tensor{'s' if is_lstm else ''}"
                    )
            seq = input.transpose(0, 1) if self.batch_first else input
            batch_sizes = None
            batch = seq.shape[1]
        self._check_input(seq, packed)
        if hx is None:
            h0 = ec.zeros(
                self._expected_state(batch, real_hidden), dtype=seq.dtype, device=seq.device
            )
            c0 = ec.zeros(
                self._expected_state(batch, self.hidden_size), dtype=seq.dtype, device=seq.device
            )
        elif is_lstm:
            h0, c0 = hx
            self._check_state(
                h0, self._expected_state(batch, real_hidden), "Expected hidden[0] size {}, got {}"
            )
            self._check_state(
                c0,
                self._expected_state(batch, self.hidden_size),
                "Expected hidden[1] size {}, got {}",
            )
        else:
            h0, c0 = hx, None
            self._check_state(h0, self._expected_state(batch, real_hidden))

        output, h_n, c_n = self._run(seq, batch_sizes, h0, c0 if is_lstm else None)
        if packed:
            out = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
            hidden = (h_n, c_n) if is_lstm else h_n
            if unsorted_indices is not None:
                hidden = self._permute_hidden(hidden, unsorted_indices)
            return out, hidden
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(batch_dim)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if is_lstm else None
        return (output, (h_n, c_n)) if is_lstm else (output, h_n)

    @staticmethod
    def _permute_hidden(hx, permutation):
        if isinstance(hx, tuple):
            return tuple(h.index_select(1, permutation) for h in hx)
        return hx.index_select(1, permutation)

    def _run(self, seq, batch_sizes, h0, c0):
        """All layers and directions over seq ((T, B, I), or packed data (sum(batch_sizes), I))."""
        is_lstm = self.mode == "LSTM"
        dirs = 2 if self.bidirectional else 1
        step = self._step_fn()
        if batch_sizes is not None:
            sizes = (
                [int(b) for b in batch_sizes.tolist()]
                if isinstance(batch_sizes, ec.Tensor)
                else list(batch_sizes)
            )
            offsets = [0]
            for b in sizes:
                offsets.append(offsets[-1] + b)
        h_n, c_n = [], []
        layer_input = seq
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                idx = layer * dirs + d
                weights = [getattr(self, n) for n in self._all_weights[idx]]
                if not self.bias:
                    weights = weights[:2] + [None, None] + weights[2:]
                h = h0[idx]
                c = c0[idx] if is_lstm else None
                if batch_sizes is None and self.mode in ("LSTM", "GRU") and not self.proj_size:
                    # one autograd node per layer and direction (Note [Fused recurrent layers])
                    if is_lstm:
                        out, h, c = _rnn_layers.LSTMLayer.apply(
                            layer_input, h, c, *weights, bool(d)
                        )
                    else:
                        out, h = _rnn_layers.GRULayer.apply(layer_input, h, *weights, bool(d))
                elif batch_sizes is None:
                    out, h, c = self._run_dense(layer_input, h, c, weights, step, reverse=bool(d))
                else:
                    out, h, c = self._run_packed(
                        layer_input, sizes, offsets, h, c, weights, step, reverse=bool(d)
                    )
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            layer_input = outs[0] if dirs == 1 else ec.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, ec.stack(h_n, 0), (ec.stack(c_n, 0) if is_lstm else None)

    def _step_fn(self):
        if self.mode == "LSTM":
            return _lstm_proj_cell if self.proj_size > 0 else _lstm_cell
        return {"GRU": _gru_cell, "RNN_TANH": _rnn_tanh_cell, "RNN_RELU": _rnn_relu_cell}[self.mode]

    @staticmethod
    def _run_dense(x, h, c, weights, step, reverse):
        n = x.shape[0]
        ys = [None] * n
        lstm = c is not None
        for t in range(n - 1, -1, -1) if reverse else range(n):
            if lstm:
                h, c = step(x[t], h, c, *weights)
            else:
                h = step(x[t], h, *weights)
            ys[t] = h
        if n == 0:
            return ec.zeros((0,) + tuple(h.shape), dtype=h.dtype), h, c
        return ec.stack(ys, 0), h, c

    @staticmethod
    def _run_packed(x, sizes, offsets, h, c, weights, step, reverse):
        """Sequences sorted by decreasing length: at step t only the first sizes[t]
        are active; the others keep their state (their final one, or h0 until the
        reverse pass reaches them)."""
        lstm = c is not None
        ys = [None] * len(sizes)
        for t in range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes)):
            b = sizes[t]
            xt = x[offsets[t] : offsets[t + 1]]
            full = b == h.shape[0]
            h_act = h if full else h[:b]
            if lstm:
                c_act = c if full else c[:b]
                new_h, new_c = step(xt, h_act, c_act, *weights)
                c = new_c if full else ec.cat([new_c, c[b:]], 0)
            else:
                new_h = step(xt, h_act, *weights)
            h = new_h if full else ec.cat([new_h, h[b:]], 0)
            ys[t] = new_h
        return ec.cat(ys, 0), h, c


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        nonlinearity="tanh",
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        device=None,
        dtype=None,
    ):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        super().__init__(
            mode,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            0,
            device,
            dtype,
        )


class LSTM(RNNBase):
    """Long short-term memory; forward(input, (h0, c0)) -> output, (h_n, c_n)."""

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        super().__init__(
            "LSTM",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            proj_size,
            device,
            dtype,
        )


class GRU(RNNBase):
    """Gated recurrent unit; forward(input, h0) -> output, h_n."""

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        device=None,
        dtype=None,
    ):
        super().__init__(
            "GRU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            0,
            device,
            dtype,
        )


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = {"dtype": dtype, "device": device}
        self.weight_ih = Parameter(ec.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(ec.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(ec.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(ec.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _batched(self, input, name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        return input.dim() == 2

    def _zeros(self, input):
        return ec.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)


class RNNCell(RNNCellBase):
    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        batched = self._batched(input, "RNNCell")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        if not batched:
            input = input.unsqueeze(0)
        hx = self._zeros(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        if self.nonlinearity == "tanh":
            out = _rnn_tanh_cell(
                input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh
            )
        elif self.nonlinearity == "relu":
            out = _rnn_relu_cell(
                input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh
            )
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        batched = self._batched(input, "LSTMCell")
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = self._zeros(input)
            hx = (z, z)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _lstm_cell(
            input, hx[0], hx[1], self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh
        )
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        batched = self._batched(input, "GRUCell")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        if not batched:
            input = input.unsqueeze(0)
        hx = self._zeros(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        out = _gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)
