"""Dropout (torch.dropout, torch.native_dropout and their feature / alpha
variants).  The keep-mask comes from the default generator's Philox stream,
so results are reproducible under manual_seed and independent of the thread
count (csrc/cpu/nn/dropout.c)."""

import math

from ember_core._base.dispatch import defop
from ember_core._base.lib import check, lib
from ember_core._ops.nn import nnutil as U
from ember_core._ops.pointwise.elementwise import layout
from ember_core._ops.random.random import default_generator_for
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import ones
from ember_core._tensor.tensor import Tensor, empty

_ALPHA = 1.7580993408473766  # SELU's -scale * alpha: where alpha dropout sends dropped units


def _check_p(op, p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")


@defop(method=False)
def native_dropout(input, p, train):
    """(output, mask): each element kept with probability 1 - p and scaled by
    1 / (1 - p); mask (bool) says which were kept.  Without train: a copy and
    an all-true mask."""
    U.require_float("native_dropout", input)
    _check_p("native_dropout", p)
    if train is False or p == 0:
        return input.clone(), ones(input._shape, dtype=D.bool_, device=input._storage._device)
    x = U.compute(input)
    dev = x._storage._device
    out = empty(x._shape, x._dtype, dev)
    keep = empty(x._shape, D.bool_, dev)
    n = x._numel
    seed, offset = default_generator_for(dev).take(
        lib.ec_random_counters(lib.EC_RNG_BERNOULLI, lib.EC_BOOL, n)
    )
    kernel = U.fn("ec_dropout", n * x._dtype.itemsize, out._storage._device)
    check(kernel(x._dtype.code, n, float(p), out._ptr, keep._ptr, x._ptr, seed, offset), "dropout")
    return U.restore(out, input._dtype), keep


@defop(method=False)
def _native_dropout_backward(grad_output, mask, scale):
    """grad_output * scale where mask is true, else 0 (one fused pass)."""
    shape = mask._shape
    kd = U.kernel_dtype(grad_output._dtype)
    g = grad_output if grad_output._dtype is kd else U.compute(grad_output, kd)
    if g._shape != shape:
        g = g.expand(shape)
    out = empty(shape, kd, g._storage._device)
    lay = layout(shape, out._stride, g._stride, mask._stride)
    check(
        U.fn("ec_masked_scale", out._numel * kd.itemsize, out._storage._device)(
            kd.code, len(shape), lay, out._ptr, g._ptr, mask._ptr, float(scale)
        ),
        "dropout_backward",
    )
    return U.restore(out, grad_output._dtype)


@defop(method=False, composite=True)
def dropout(input, p, train):
    """Zero each element with probability p and scale the rest by 1 / (1 - p)
    while training; the input itself otherwise."""
    if not isinstance(input, Tensor):
        raise TypeError(f"dropout(): argument 'input' must be Tensor, not {type(input).__name__}")
    _check_p("dropout", p)
    if p == 0 or not train or input._numel == 0:
        return input
    if p == 1:
        return input * 0.0
    return native_dropout(input, p, True)[0]


@defop(method=False, composite=True)
def dropout_(input, p, train):
    _check_p("dropout_", p)
    if p == 0 or not train or input._numel == 0:
        return input
    return input.copy_(dropout(input, p, train))


def _feature_noise(op, input, p):
    # one Bernoulli draw per (sample, channel), broadcast over the rest
    if len(input._shape) < 2:
        raise RuntimeError(f"{op}: Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input._shape[:2]) + (1,) * (len(input._shape) - 2)
    return empty(shape, input._dtype, input._storage._device).bernoulli_(1 - p)


def _noise_dropout(op, input, p, train, feature, alpha):
    U.require_float(op, input)
    _check_p(op, p)
    if p == 0 or not train or input._numel == 0:
        return input
    if p == 1:
        return input * 0.0
    if feature:
        noise = _feature_noise(op, input, p)
    else:
        noise = empty(input._shape, input._dtype, input._storage._device).bernoulli_(1 - p)
    if not alpha:
        return input * noise.div_(1 - p)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = noise.add(-1).mul_(_ALPHA * a).add_(_ALPHA * a * p)
    return input * noise.mul_(a) + b


@defop(method=False, composite=True)
def feature_dropout(input, p, train):
    """Dropout of whole channels (dim 1) of (N, C, *)."""
    return _noise_dropout("feature_dropout", input, p, train, True, False)


@defop(method=False, composite=True)
def feature_dropout_(input, p, train):
    r = feature_dropout(input, p, train)
    return input if r is input else input.copy_(r)


@defop(method=False, composite=True)
def alpha_dropout(input, p, train):
    """Dropout that keeps SELU activations' mean and variance: dropped units
    take SELU's negative saturation value, then an affine map restores the
    statistics."""
    return _noise_dropout("alpha_dropout", input, p, train, False, True)


@defop(method=False, composite=True)
def alpha_dropout_(input, p, train):
    r = alpha_dropout(input, p, train)
    return input if r is input else input.copy_(r)


@defop(method=False, composite=True)
def feature_alpha_dropout(input, p, train):
    """alpha_dropout of whole channels."""
    return _noise_dropout("feature_alpha_dropout", input, p, train, True, True)


@defop(method=False, composite=True)
def feature_alpha_dropout_(input, p, train):
    r = feature_alpha_dropout(input, p, train)
    return input if r is input else input.copy_(r)
