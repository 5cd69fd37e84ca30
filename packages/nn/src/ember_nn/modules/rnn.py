"""Recurrent layers: RNN, LSTM, GRU and their cells.

Each step of an LSTM or GRU is one fused ember_core cell op (both GEMMs and the
gate arithmetic in C), so a sequence is a few ops per step, not dozens."""

import math

import ember_core as ec

from ember_nn import functional as F
from ember_nn import init
from ember_nn.modules.module import Module
from ember_nn.parameter import Parameter


def _rnn_tanh_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return F.linear(x, w_ih, b_ih).add(F.linear(h, w_hh, b_hh)).tanh()


def _rnn_relu_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return F.linear(x, w_ih, b_ih).add(F.linear(h, w_hh, b_hh)).relu()


def _lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    return ec.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)


def _gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return ec.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)


_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element being zeroed")
        if proj_size:
            raise NotImplementedError("LSTM(proj_size>0) is not supported by ember yet")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gates = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                layer_in = input_size if layer == 0 else hidden_size * dirs
                names = [("weight_ih" + suffix, (gates, layer_in)), ("weight_hh" + suffix, (gates, hidden_size))]
                if bias:
                    names += [("bias_ih" + suffix, (gates,)), ("bias_hh" + suffix, (gates,))]
                for name, shape in names:
                    setattr(self, name, Parameter(ec.empty(shape, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in self._flat_weights_names if n.endswith(s)] for s in self._suffixes()]

    def _suffixes(self):
        return [f"_l{k}" + ("_reverse" if d else "") for k in range(self.num_layers) for d in range(2 if self.bidirectional else 1)]

    def flatten_parameters(self):
        pass

    def _weights(self, suffix):
        w_ih = getattr(self, "weight_ih" + suffix)
        w_hh = getattr(self, "weight_hh" + suffix)
        b_ih = getattr(self, "bias_ih" + suffix) if self.bias else None
        b_hh = getattr(self, "bias_hh" + suffix) if self.bias else None
        return w_ih, w_hh, b_ih, b_hh

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        if not batched:
            input = input.unsqueeze(1)
            if hx is not None:
                hx = tuple(h.unsqueeze(1) for h in hx) if is_lstm else hx.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}")
        seq_len, batch = input.shape[0], input.shape[1]
        dirs = 2 if self.bidirectional else 1
        if hx is None:
            zeros = ec.zeros((self.num_layers * dirs, batch, self.hidden_size), dtype=input.dtype)
            hx = (zeros, zeros) if is_lstm else zeros
        h0, c0 = (hx if is_lstm else (hx, None))
        h_n, c_n = [], []
        layer_input = input
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                idx = layer * dirs + d
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                w = self._weights(suffix)
                h = h0[idx]
                c = c0[idx] if is_lstm else None
                steps = range(seq_len - 1, -1, -1) if d else range(seq_len)
                ys = [None] * seq_len
                for t in steps:
                    x = layer_input[t]
                    if is_lstm:
                        h, c = _lstm_cell(x, h, c, *w)
                    elif self.mode == "GRU":
                        h = _gru_cell(x, h, *w)
                    elif self.mode == "RNN_TANH":
                        h = _rnn_tanh_cell(x, h, *w)
                    else:
                        h = _rnn_relu_cell(x, h, *w)
                    ys[t] = h
                outs.append(ec.stack(ys, 0) if seq_len else ec.zeros((0, batch, self.hidden_size), dtype=input.dtype))
                h_n.append(h)
                if is_lstm:
                    c_n.append(c)
            layer_input = outs[0] if dirs == 1 else ec.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        output = layer_input
        h_n = ec.stack(h_n, 0)
        c_n = ec.stack(c_n, 0) if is_lstm else None
        if not batched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if is_lstm else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return (output, (h_n, c_n)) if is_lstm else (output, h_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(ec.empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(ec.empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ec.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(ec.empty(num_chunks * hidden_size, dtype=dtype))
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
        if not self.bias:
            s += ", bias=False"
        return s

    def _prep(self, input, hx):
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = ec.zeros((input.shape[0], self.hidden_size), dtype=input.dtype)
        elif not batched:
            hx = tuple(h.unsqueeze(0) for h in hx) if isinstance(hx, tuple) else hx.unsqueeze(0)
        return input, hx, batched


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, h, batched = self._prep(input, hx)
        cell = _rnn_tanh_cell if self.nonlinearity == "tanh" else _rnn_relu_cell
        out = cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            z = ec.zeros((x.shape[0], self.hidden_size), dtype=x.dtype)
            hx = (z, z)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _lstm_cell(x, hx[0], hx[1], self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, h, batched = self._prep(input, hx)
        out = _gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)
