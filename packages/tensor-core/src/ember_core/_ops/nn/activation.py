"""Activations beyond the elementwise table: leaky_relu, elu, celu, hardtanh,
threshold, hardshrink, softshrink (with in-place forms where PyTorch has them),
glu, prelu and rrelu, plus one fused backward op for the family
(_activation_backward, csrc/cpu/nn/activation.c).

relu, sigmoid, tanh, silu, selu, mish, hardsigmoid, hardswish, softsign and
logsigmoid are elementwise ops (_ops/pointwise/elementwise.py); gelu and softplus come with
them too.
"""

from ember_core._base.dispatch import defop
from ember_core._base.lib import check, lib
from ember_core._base.shape import normalize_dim
from ember_core._ops.nn import nnutil as U
from ember_core._ops.pointwise import elementwise as E
from ember_core._ops.pointwise.elementwise import layout
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import empty_like, full
from ember_core._tensor.tensor import Tensor, empty

# The kernels of csrc/cpu/nn/activation.c, by the name _activation_backward takes.
KINDS = {
    "hardshrink": lib.EC_ACT_HARDSHRINK,
    "softshrink": lib.EC_ACT_SOFTSHRINK,
    "leaky_relu": lib.EC_ACT_LEAKY_RELU,
    "elu": lib.EC_ACT_ELU,
    "celu": lib.EC_ACT_CELU,
    "hardtanh": lib.EC_ACT_HARDTANH,
    "threshold": lib.EC_ACT_THRESHOLD,
}


def _float_only(op, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{E._tname(input._dtype)}'")


def _unary(op, code, input, p0, p1=0.0):
    _float_only(op, input)
    return E.unary(op, code, E.SAME, input, None, p0, p1)


def _unary_(op, code, input, p0, p1=0.0):
    _float_only(op, input)
    return E.unary_(op, code, E.SAME, input, p0, p1)


@defop(method=False)
def leaky_relu(input, negative_slope=0.01):
    """x where x > 0, else negative_slope * x."""
    return _unary("leaky_relu", lib.EC_U_LEAKY_RELU, input, float(negative_slope))


@defop(method=False, inplace_of="leaky_relu")
def leaky_relu_(input, negative_slope=0.01):
    return _unary_("leaky_relu_", lib.EC_U_LEAKY_RELU, input, float(negative_slope))


@defop(method=False)
def elu(input, alpha=1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _unary("elu", lib.EC_U_ELU, input, float(alpha), 1.0)


@defop(method=False, inplace_of="elu")
def elu_(input, alpha=1.0):
    return _unary_("elu_", lib.EC_U_ELU, input, float(alpha), 1.0)


def _celu_alpha(alpha):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return float(alpha)


@defop(method=False)
def celu(input, alpha=1.0):
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""
    return _unary("celu", lib.EC_U_CELU, input, _celu_alpha(alpha))


@defop(method=False, inplace_of="celu")
def celu_(input, alpha=1.0):
    return _unary_("celu_", lib.EC_U_CELU, input, _celu_alpha(alpha))


def _hardtanh_bounds(min_val, max_val):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return min_val, max_val


@defop(method=False)
def hardtanh(input, min_val=-1.0, max_val=1.0):
    """input clamped to [min_val, max_val] (integers too, as PyTorch allows)."""
    lo, hi = _hardtanh_bounds(min_val, max_val)
    if isinstance(input, Tensor) and not input._dtype.is_floating_point:
        return E.clamp(input, lo, hi)
    return _unary("hardtanh", lib.EC_U_HARDTANH, input, float(lo), float(hi))


@defop(method=False, inplace_of="hardtanh")
def hardtanh_(input, min_val=-1.0, max_val=1.0):
    lo, hi = _hardtanh_bounds(min_val, max_val)
    if isinstance(input, Tensor) and not input._dtype.is_floating_point:
        return E.clamp_(input, lo, hi)
    return _unary_("hardtanh_", lib.EC_U_HARDTANH, input, float(lo), float(hi))


def _threshold_args(input, threshold, value):
    if input._dtype.is_floating_point:
        return float(threshold), float(value)
    return 0.0, 0.0


@defop(method=False)
def threshold(input, threshold, value):
    """x where x > threshold, else value."""
    if not isinstance(input, Tensor):
        raise TypeError(f"threshold(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._dtype.is_floating_point:
        return E.unary(
            "threshold", lib.EC_U_THRESHOLD, E.SAME, input, None, float(threshold), float(value)
        )
    return E.where(E.gt(input, threshold), input, E.cast(_scalar_like(value, input), input._dtype))


@defop(method=False, inplace_of="threshold", tags=("unchecked-overlap",))
def threshold_(input, threshold, value):
    if input._dtype.is_floating_point:
        return E.unary_(
            "threshold_", lib.EC_U_THRESHOLD, E.SAME, input, float(threshold), float(value)
        )
    return input.copy_(globals()["threshold"](input, threshold, value))


def _scalar_like(value, like):
    return full((), value, dtype=like._dtype, device=like._storage._device)


def _lambda(op, input, lambd):
    if lambd < 0:
        raise RuntimeError(
            f"lambda must be in range [0, {input._dtype.max:.6g}] for input dtype "
            f"{E._tname(input._dtype)}, but found {lambd}"
        )
    return float(lambd)


def _act(op, kind, input, p0=0.0, p1=0.0):
    _float_only(op, input)
    x = input if input._dtype in (D.float32, D.float64) else U.compute(input)
    y = empty(x._shape, x._dtype, x._storage._device)
    lay = layout(x._shape, y._stride, x._stride)
    check(
        y._storage._device._k.ec_activation(
            kind, x._dtype.code, len(x._shape), lay, y._ptr, x._ptr, p0, p1
        ),
        op,
    )
    return U.restore(y, input._dtype)


@defop
def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return _act("hardshrink", lib.EC_ACT_HARDSHRINK, input, float(lambd))


@defop(method=False)
def softshrink(input, lambd=0.5):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""
    _float_only("softshrink", input)
    return _act("softshrink", lib.EC_ACT_SOFTSHRINK, input, _lambda("softshrink", input, lambd))


@defop(
    method=False,
    differentiable=False,
)
def _activation_backward(grad_output, input, kind, p0=0.0, p1=0.0):
    """grad_output * f'(input) for the activation named ``kind`` (a key of KINDS)
    with its parameters p0, p1, in one fused pass."""
    code = KINDS[kind]
    shape = input._shape
    kd = U.kernel_dtype(input._dtype)
    x = input if input._dtype is kd else U.compute(input, kd)
    g = grad_output if grad_output._dtype is kd else U.compute(grad_output, kd)
    if g._shape != shape:
        g = g.expand(shape)
    gi = empty(shape, kd, x._storage._device)
    lay = layout(shape, gi._stride, g._stride, x._stride)
    kernel = U.fn("ec_activation_backward", gi._numel * kd.itemsize, gi._storage._device)
    check(
        kernel(code, kd.code, len(shape), lay, gi._ptr, g._ptr, x._ptr, float(p0), float(p1)),
        f"{kind}_backward",
    )
    return U.restore(gi, input._dtype)


# ------------------------------------------------------------ composites


@defop(method=False, composite=True)
def glu(input, dim=-1):
    """a * sigmoid(b) where a and b are the halves of input along dim."""
    if not input._shape:
        raise RuntimeError("glu does not support scalars because halving size must be even")

    d = normalize_dim(dim, len(input._shape), "glu")
    size = input._shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    a = input.narrow(d, 0, size // 2)
    b = input.narrow(d, size // 2, size // 2)
    return a * b.sigmoid()


@defop(composite=True, autocast="lower_precision_fp")
def prelu(input, weight):
    """x where x > 0, else weight * x, weight per channel (dim 1) or shared."""
    channels = input._shape[1] if len(input._shape) >= 2 else 1
    if weight._numel != 1 and weight._numel != channels:
        raise RuntimeError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{weight._numel} and channel size = {channels}."
        )
    if weight._numel == 1 or len(input._shape) < 2:
        w = weight.reshape(())
    else:
        w = weight.reshape((1, channels) + (1,) * (len(input._shape) - 2))
    return E.where(E.gt(input, 0), input, w * input)


@defop(
    method=False,
    composite=True,
)
def rrelu(input, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """Leaky ReLU with a random slope drawn from U(lower, upper) per negative
    element in training, the mean slope otherwise."""
    _float_only("rrelu", input)
    if not training:
        return leaky_relu(input, (lower + upper) / 2)

    noise = empty_like(input).uniform_(lower, upper, generator=generator)
    one = _scalar_like(1, noise)
    return input * E.where(E.gt(input, 0), one, noise)


@defop(
    method=False,
    composite=True,
)
def rrelu_(input, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    return input.copy_(rrelu(input, lower, upper, training, generator))
