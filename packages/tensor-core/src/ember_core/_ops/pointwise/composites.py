"""Pointwise ops written with other ops: logit, heaviside, gcd/lcm, ldexp, frexp,
sgn, angle, and the closeness tests isclose/allclose/equal; and the
Tensor methods that apply a Python function to every element (apply_, map_,
map2_; CPU only, as in PyTorch).

The differentiable ones are composites of public ops (their gradients come from
the ops they call); the integer ones (gcd, lcm) and frexp's exponent run in
NumPy on the tensor's memory and are not differentiable, as in PyTorch.
"""

import numpy as np

from ember_core._base.dispatch import defop
from ember_core._base.return_types import return_type
from ember_core._interop.numpy import from_numpy
from ember_core._interop.numpy import numpy as _as_numpy
from ember_core._ops.pointwise.elementwise import _tname, exp2, where
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import tensor
from ember_core._tensor.tensor import Tensor


def _values(t):
    """A NumPy array of t's values, whatever its autograd state and device (for the
    non-differentiable ops computed in NumPy: their results go back to t's device)."""
    if t._storage._device.type != "cpu":
        t = t.cpu()
    if t._dtype is D.bfloat16:
        t = t.to(D.float32)
    return _as_numpy(t, force=True)


def _float_of(t):
    return t if t.dtype.category >= 2 else t.to(D.get_default_dtype())


# ------------------------------------------------------------------ elementwise


@defop(composite=True, tags=("pointwise", "float-result"))
def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    x = _float_of(input)
    if eps is not None:
        x = x.clamp(eps, 1.0 - eps)
    r = (x / (1 - x)).log()
    if out is not None:
        return out.copy_(r)
    return r


@defop(composite=True, inplace_of="logit", tags=("pointwise",))
def logit_(input, eps=None):
    r = logit(input, eps)
    if not D.can_cast(r.dtype, input.dtype):
        raise RuntimeError(
            f"result type {_tname(r.dtype)} can't be cast to the desired output type "
            f"{_tname(input.dtype)}"
        )
    return input.copy_(r)


@defop(composite=True, tags=("pointwise",))
def heaviside(input, values, *, out=None):
    """0 where input < 0, values where input == 0, 1 where input > 0."""
    if input.dtype is not values.dtype:
        raise RuntimeError(
            "heaviside is not yet implemented for tensors with different dtypes "
            f"({input.dtype} and {values.dtype})"
        )
    r = where(input == 0, values, (input > 0).to(input.dtype))
    if out is not None:
        return out.copy_(r)
    return r


@defop(composite=True, inplace_of="heaviside", function=False, tags=("pointwise",))
def heaviside_(input, values):
    return input.copy_(heaviside(input, values))


def _integer_binary(op, fn, input, other):
    if not isinstance(other, Tensor):
        other = tensor(other)
    for t in (input, other):
        if t.dtype.is_floating_point or t.dtype is D.bool_:
            raise RuntimeError(f"\"{op}_cpu\" not implemented for '{t.dtype.name.capitalize()}'")
    dt = D.result_type(input, other)
    r = fn(_values(input), _values(other)).astype(dt.numpy, copy=False)
    return from_numpy(np.ascontiguousarray(r)).to(input.device)


@defop(composite=True, differentiable=False, tags=("pointwise",))
def gcd(input, other, *, out=None):
    """Greatest common divisor of integers (non-negative; gcd(0, 0) = 0)."""
    r = _integer_binary("gcd", np.gcd, input, other)
    return out.copy_(r) if out is not None else r


@defop(composite=True, inplace_of="gcd", differentiable=False, tags=("pointwise",))
def gcd_(input, other):
    return input.copy_(gcd(input, other))


@defop(composite=True, differentiable=False, tags=("pointwise",))
def lcm(input, other, *, out=None):
    """Least common multiple of integers (non-negative; 0 when either is 0)."""
    r = _integer_binary("lcm", np.lcm, input, other)
    return out.copy_(r) if out is not None else r


@defop(composite=True, inplace_of="lcm", differentiable=False, tags=("pointwise",))
def lcm_(input, other):
    return input.copy_(lcm(input, other))


@defop(composite=True, tags=("pointwise", "float-result"))
def ldexp(input, other, *, out=None):
    """input * 2**other (a floating result)."""
    r = _float_of(input) * exp2(other)
    return out.copy_(r) if out is not None else r


@defop(composite=True, inplace_of="ldexp", tags=("pointwise",))
def ldexp_(input, other):
    return input.mul_(exp2(other))


_frexp = return_type("frexp", ["mantissa", "exponent"])


def _pair_out(op, out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{op}(): argument 'out' must be a tuple of 2 Tensors, not {out!r}")
    for o in out:
        if not isinstance(o, Tensor):
            raise TypeError(
                f"{op}(): argument 'out' must be a tuple of 2 Tensors, not {type(o).__name__}"
            )


@defop(composite=True, differentiable=False, tags=("pointwise",))
def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2**exponent, 0.5 <= |mantissa| < 1
    (mantissa 0 and exponent 0 for 0; inf and nan keep their value)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"torch.frexp() only supports floating-point dtypes, but got {input.dtype}"
        )
    _, e = np.frexp(_values(input))
    exponent = from_numpy(np.array(e, dtype=np.int32).reshape(tuple(input.shape)))
    exponent = exponent.to(input.device)
    # scale in two halves: 2**-exponent alone overflows for subnormal inputs
    half = exponent.div(2, rounding_mode="floor")
    scale_a = exp2((-half).to(input.dtype))
    scale_b = exp2((half - exponent).to(input.dtype))
    mantissa = input * scale_a * scale_b
    if out is not None:
        _pair_out("frexp", out)
        out[0].copy_(mantissa)
        out[1].copy_(exponent)
        return _frexp(out[0], out[1])
    return _frexp(mantissa, exponent)


# ------------------------------------------------------------------ closeness


@defop(composite=True, differentiable=False, tags=("pointwise",))
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (exact for integers)."""
    if not isinstance(other, Tensor):
        other = tensor(other, dtype=input.dtype)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    if input.dtype.category < 2:  # integers and bools: exact
        return input == other
    close = (input - other).abs() <= atol + rtol * other.abs()
    close = close | (input == other)  # equal infinities
    if equal_nan:
        close = close | (input.isnan() & other.isnan())
    return close


@defop(composite=True, differentiable=False)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether isclose holds everywhere (after broadcasting)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@defop(composite=True, differentiable=False)
def equal(input, other):
    """True when both tensors have the same shape and elements."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input == other).all())


# --------------------------------------------------- Python functions per element
# PyTorch refuses these on tensors that require grad (they bypass autograd).


def _python_elementwise(op, self, others, fn):
    if self.device.type != "cpu":
        raise TypeError(f"{op} is only implemented on CPU tensors")
    if self.requires_grad or any(t.requires_grad for t in others):
        raise RuntimeError(
            f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead."
        )
    columns = [t.expand(self.shape).reshape(-1).tolist() for t in others]
    vals = [fn(*row) for row in zip(self.reshape(-1).tolist(), *columns, strict=True)]
    return self.copy_(tensor(vals, dtype=self.dtype).reshape(self.shape))


@defop(composite=True, function=False, differentiable=False)
def apply_(input, callable):
    """Apply a Python function to every element, in place (CPU tensors only)."""
    return _python_elementwise("apply_", input, (), callable)


@defop(composite=True, function=False, differentiable=False)
def map_(input, tensor, callable):
    """input[i] = callable(input[i], tensor[i]) with tensor broadcast, in place."""
    return _python_elementwise("map_", input, (tensor,), callable)


@defop(composite=True, function=False, differentiable=False)
def map2_(input, x, y, callable):
    """input[i] = callable(input[i], x[i], y[i]) with x, y broadcast, in place."""
    return _python_elementwise("map2_", input, (x, y), callable)
