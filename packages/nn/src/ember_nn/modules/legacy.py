"""Legacy layers kept for old scripts: the deprecated `Container` and the
Lua-torch `CrossMapLRN2d` (with PyTorch's own forward and backward, window
quirks included)."""

import numpy as np

import ember_autograd as ag
import ember_core as ec
from ember_nn.modules.module import Module


class Container(Module):
    """Deprecated (subclass Module instead): a Module whose children are given as
    keyword arguments.  Like torch 2.13 it does not warn."""

    def __init__(self, **kwargs):
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


def _forward_window(channels, size):
    """(C, C) 0/1 matrix: row c sums the squares PyTorch's legacy forward adds for
    channel c.  Its running sum starts with channels [0, pre_pad) and drops
    channel c - pre_pad only when c > pre_pad, so channel 0 is never dropped."""
    pre_pad = int((size - 1) / 2 + 1)
    m = np.zeros((channels, channels))
    m[0, : min(pre_pad, channels)] = 1
    for c in range(1, channels):
        m[c] = m[c - 1]
        if c < channels - pre_pad + 1:
            m[c, c + pre_pad - 1] = 1
        if c > pre_pad:
            m[c, c - pre_pad] = 0
    return m


def _backward_window(channels, size):
    """(C, C) 0/1 matrix of the ratio terms PyTorch's legacy backward adds for
    channel c: channels c - inv .. c + size - 1 - inv, inv = size - (size - 1) / 2."""
    inv = int(size - (size - 1) / 2)
    m = np.zeros((channels, channels))
    for c in range(channels):
        lo, hi = max(c - inv, 0), min(c + size - 1 - inv, channels - 1)
        if lo <= hi:
            m[c, lo : hi + 1] = 1
    return m


def _channel_mix(matrix, x):
    """sum_j matrix[c, j] * x[:, j] for a (N, C, H, W) tensor."""
    n, c, h, w = x.shape
    m = ec.tensor(matrix, dtype=x.dtype, device=x.device)
    return ec.matmul(m, x.reshape(n, c, h * w)).reshape(n, c, h, w)


class _CrossMapLRN2dFunction(ag.Function):
    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        channels = input.size(1)
        scale = _channel_mix(_forward_window(channels, size), input * input) * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        ctx.save_for_backward(input, output, scale)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        size = ctx.size
        ratio = grad_output * output / scale
        accum = _channel_mix(_backward_window(input.size(1), size), ratio)
        cache_ratio_value = 2 * ctx.alpha * ctx.beta / size
        grad_input = scale.pow(-ctx.beta) * grad_output - cache_ratio_value * input * accum
        return grad_input, None, None, None, None


class CrossMapLRN2d(Module):
    """Local response normalization across channels of a 4D input (legacy Lua-torch
    layer; prefer LocalResponseNorm)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
