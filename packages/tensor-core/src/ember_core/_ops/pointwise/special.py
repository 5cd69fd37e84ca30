"""The elementwise kernels behind torch.special (csrc/cpu/pointwise/special_fn.c): Bessel and
Airy functions, error-function relatives, incomplete gamma, Hurwitz zeta,
polygamma, entropy and the orthogonal polynomials; plus the top-level torch ops
among them (i0, polygamma, igamma, igammac, mvlgamma) with their in-place forms.

Note [Special kernels are contiguous]: these kernels take contiguous operands of
one float dtype (float32 or float64) and one length.  Python promotes (integers
compute in the default float dtype, as PyTorch), broadcasts and copies first;
float16/bfloat16 compute in float32 and are rounded back.  Tensors on another
device compute on the CPU and are moved back (no GPU kernels yet).

The op names follow ATen (special_i0e, special_zeta...); ember.special exposes
them under torch.special's names.
"""

import math

from ember_core._base.dispatch import defop
from ember_core._base.lib import check, lib
from ember_core._base.shape import broadcast_shapes
from ember_core._ops.pointwise.elementwise import _tname
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import Tensor, empty

_F32, _F64 = D.float32, D.float64


def _pub(name):
    import ember_core

    return getattr(ember_core, name)


def _result_dtype(op, *args):
    dt = D.result_type(*args)
    if dt.category != 2:
        dt = D.get_default_dtype()
    return dt


def _compute(t, cd):
    """t as a contiguous CPU tensor of dtype cd."""
    if t._dtype is not cd:
        t = t.to(cd)
    if t._storage._device.type != "cpu":
        t = t.cpu()
    return t.contiguous()


def _finish(op, r, dt, dev, out):
    if r._dtype is not dt:
        r = r.to(dt)
    if dev.type != "cpu":
        r = r.to(dev)
    if out is None:
        return r
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._dtype is not dt and not D.can_cast(dt, out._dtype):
        raise RuntimeError(
            f"{op}: result type {dt} can't be cast to the desired output type {out._dtype}"
        )
    if out._shape != r._shape:
        out.resize_(r._shape)
    return out.copy_(r)


def special_unary(op, code, input, out=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    dt = _result_dtype(op, input)
    cd = _F64 if dt is _F64 else _F32
    x = _compute(input, cd)
    r = empty(x._shape, cd)
    check(r._storage._device._k.ec_special_unary(code, cd.code, x._numel, r._ptr, x._ptr), op)
    return _finish(op, r, dt, input._storage._device, out)


def special_binary(op, code, a, b, out=None, dtype=None):
    """f(a, b) with broadcasting; a and b are tensors or Python numbers."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}(): expected at least one Tensor argument")
    dt = dtype or _result_dtype(op, a, b)
    cd = _F64 if dt is _F64 else _F32
    ref = a if isinstance(a, Tensor) else b
    dev = ref._storage._device
    if not isinstance(a, Tensor):
        a = _pub("full")((), a, dtype=cd)
    if not isinstance(b, Tensor):
        b = _pub("full")((), b, dtype=cd)
    if a._storage._device != b._storage._device and a._shape and b._shape:
        raise RuntimeError(
            f"{op}: Expected all tensors to be on the same device, but found at least two "
            f"devices, {a._storage._device} and {b._storage._device}!"
        )
    shape = broadcast_shapes(a._shape, b._shape, op=op)
    a = _compute(a, cd).expand(shape).contiguous()
    b = _compute(b, cd).expand(shape).contiguous()
    r = empty(a._shape, cd)
    check(
        r._storage._device._k.ec_special_binary(code, cd.code, a._numel, r._ptr, a._ptr, b._ptr), op
    )
    return _finish(op, r, dt, dev, out)


def _inplace(op, self, result):
    if not D.can_cast(result._dtype, self._dtype):
        raise RuntimeError(
            f"{op}: result type {result._dtype} can't be cast to the desired output type "
            f"{self._dtype}"
        )
    return self.copy_(result)


S = lib

# name, kernel, differentiable (PyTorch has a formula), is a Tensor method
_UNARY = [
    ("special_i0e", S.EC_SP_I0E, True),
    ("special_i1", S.EC_SP_I1, True),
    ("special_i1e", S.EC_SP_I1E, True),
    ("special_ndtri", S.EC_SP_NDTRI, True),
    ("special_log_ndtr", S.EC_SP_LOG_NDTR, True),
    ("special_erfcx", S.EC_SP_ERFCX, True),
    ("special_entr", S.EC_SP_ENTR, True),
    ("_special_trigamma", S.EC_SP_TRIGAMMA, True),
    ("special_airy_ai", S.EC_SP_AIRY_AI, False),
    ("special_bessel_j0", S.EC_SP_BESSEL_J0, False),
    ("special_bessel_j1", S.EC_SP_BESSEL_J1, False),
    ("special_bessel_y0", S.EC_SP_BESSEL_Y0, False),
    ("special_bessel_y1", S.EC_SP_BESSEL_Y1, False),
    ("special_modified_bessel_i0", S.EC_SP_MODIFIED_BESSEL_I0, False),
    ("special_modified_bessel_i1", S.EC_SP_MODIFIED_BESSEL_I1, False),
    ("special_modified_bessel_k0", S.EC_SP_MODIFIED_BESSEL_K0, False),
    ("special_modified_bessel_k1", S.EC_SP_MODIFIED_BESSEL_K1, False),
    ("special_scaled_modified_bessel_k0", S.EC_SP_SCALED_MODIFIED_BESSEL_K0, False),
    ("special_scaled_modified_bessel_k1", S.EC_SP_SCALED_MODIFIED_BESSEL_K1, False),
    ("special_spherical_bessel_j0", S.EC_SP_SPHERICAL_BESSEL_J0, False),
]

_POLYNOMIALS = [
    ("special_chebyshev_polynomial_t", S.EC_SP_CHEBYSHEV_T),
    ("special_chebyshev_polynomial_u", S.EC_SP_CHEBYSHEV_U),
    ("special_chebyshev_polynomial_v", S.EC_SP_CHEBYSHEV_V),
    ("special_chebyshev_polynomial_w", S.EC_SP_CHEBYSHEV_W),
    ("special_shifted_chebyshev_polynomial_t", S.EC_SP_SHIFTED_CHEBYSHEV_T),
    ("special_shifted_chebyshev_polynomial_u", S.EC_SP_SHIFTED_CHEBYSHEV_U),
    ("special_shifted_chebyshev_polynomial_v", S.EC_SP_SHIFTED_CHEBYSHEV_V),
    ("special_shifted_chebyshev_polynomial_w", S.EC_SP_SHIFTED_CHEBYSHEV_W),
    ("special_hermite_polynomial_h", S.EC_SP_HERMITE_H),
    ("special_hermite_polynomial_he", S.EC_SP_HERMITE_HE),
    ("special_laguerre_polynomial_l", S.EC_SP_LAGUERRE_L),
    ("special_legendre_polynomial_p", S.EC_SP_LEGENDRE_P),
]


def _make_unary(name, code):
    def impl(input, out=None):
        return special_unary(name, code, input, out)

    impl.__name__ = name
    return impl


# Legendre's and Laguerre's recurrences run n steps over values that stay finite
# (the others overflow to NaN, or have closed forms, csrc/cpu/pointwise/special_fn.c): a degree
# past this would take minutes per element (PyTorch's loop runs on), so it raises.
MAX_RECURRENCE_DEGREE = 1 << 24
_LONG_RECURRENCES = (S.EC_SP_LEGENDRE_P, S.EC_SP_LAGUERRE_L)


def _make_poly(name, code):
    def impl(input, n, out=None):
        if code in _LONG_RECURRENCES:
            top = n.max().item() if isinstance(n, Tensor) and n._numel else n
            if isinstance(top, (int, float)) and top > MAX_RECURRENCE_DEGREE:
                raise ValueError(
                    f"{name}(): degree n={top} is too large: the polynomial is evaluated by "
                    f"its recurrence, in n steps, for n up to {MAX_RECURRENCE_DEGREE}"
                )
        return special_binary(name, code, input, n, out)

    impl.__name__ = name
    return impl


for _name, _code, _diff in _UNARY:
    globals()[_name] = defop(
        f"{_name}(input, *, out=None)",
        method=False,
        public=False,
        differentiable=_diff,
        doc=f"torch.special.{_name[8:]} (elementwise).",
    )(_make_unary(_name, _code))

for _name, _code in _POLYNOMIALS:
    globals()[_name] = defop(
        f"{_name}(input, n, *, out=None)",
        method=False,
        public=False,
        differentiable=False,
        doc=f"torch.special.{_name[8:]}: the polynomial of degree n (truncated to an "
        "integer; 0 for n < 0) at input.",
    )(_make_poly(_name, _code))


@defop(method=False, public=False)
def special_zeta(input, other, *, out=None):
    """Hurwitz zeta: sum over k >= 0 of (k + other)^-input."""
    return special_binary("special_zeta", lib.EC_SP_ZETA, input, other, out)


@defop(method=False, public=False)
def special_xlog1py(input, other, *, out=None):
    """input * log1p(other), and 0 where input == 0 (unless other is NaN)."""
    return special_binary("special_xlog1py", lib.EC_SP_XLOG1PY, input, other, out)


# ------------------------------------------------- top-level torch ops


@defop
def i0(input, *, out=None):
    """Modified Bessel function of the first kind, order 0."""
    return special_unary("i0", lib.EC_SP_I0, input, out)


@defop(inplace_of="i0")
def i0_(input):
    return _inplace("i0_", input, special_unary("i0", lib.EC_SP_I0, input))


def _check_n(op, n):
    if isinstance(n, (Tensor, float, bool)):
        raise TypeError(f"{op}(): argument 'n' must be int, not {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"{op}(n, x) does not support negative n.")
    return n


def _polygamma_method(self, n):
    """Tensor.polygamma(n): the order after self."""
    return polygamma(n, self)


@defop(method=_polygamma_method)
def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma: psi^(n)(input)."""
    n = _check_n("polygamma", n)
    if not isinstance(input, Tensor):
        raise TypeError(f"polygamma(): argument 'input' must be Tensor, not {type(input).__name__}")
    if n == 0:
        return _pub("digamma")(input, out=out)
    dt = _result_dtype("polygamma", input)
    return special_binary("polygamma", lib.EC_SP_POLYGAMMA, float(n), input, out, dtype=dt)


@defop(inplace_of="polygamma")
def polygamma_(input, n):
    return _inplace("polygamma_", input, polygamma(n, input))


def _igamma_args(op, input, other):
    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(v).__name__}")
    dt = D.result_type(input, other)
    if dt.category != 2:  # PyTorch has no integer kernel here
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{_tname(dt)}'")


@defop
def igamma(input, other, *, out=None):
    """Regularized lower incomplete gamma P(input, other)."""
    _igamma_args("igamma", input, other)
    return special_binary("igamma", lib.EC_SP_GAMMAINC, input, other, out)


@defop(inplace_of="igamma")
def igamma_(input, other):
    return _inplace("igamma_", input, igamma(input, other))


@defop
def igammac(input, other, *, out=None):
    """Regularized upper incomplete gamma Q(input, other)."""
    _igamma_args("igammac", input, other)
    return special_binary("igammac", lib.EC_SP_GAMMAINCC, input, other, out)


@defop(inplace_of="igammac")
def igammac_(input, other):
    return _inplace("igammac_", input, igammac(input, other))


@defop(composite=True)
def mvlgamma(input, p, *, out=None):
    """Multivariate log-gamma of dimension p, elementwise:
    p(p-1)/4 log(pi) + sum_{j<p} lgamma(input - j/2)."""
    if not isinstance(p, int) or isinstance(p, bool):
        raise TypeError(f"mvlgamma(): argument 'p' must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not input.dtype.is_floating_point:
        input = input.to(D.get_default_dtype())
    # no domain check: PyTorch 2.13 computes outside (p-1)/2 too (lgamma of
    # negative arguments), and a check would cost a device sync.  One broadcast
    # over j (as PyTorch: a huge p fails to allocate rather than loop for ever)
    j = _pub("arange")(-(p - 1) / 2.0, 0.5, 0.5, dtype=input.dtype, device=input.device)
    r = (input.unsqueeze(-1) + j).lgamma().sum(-1)
    r = r + p * (p - 1) / 4.0 * math.log(math.pi)
    if out is not None:
        return out.copy_(r)
    return r


@defop(composite=True)
def mvlgamma_(input, p):
    return _inplace("mvlgamma_", input, mvlgamma(input, p))
