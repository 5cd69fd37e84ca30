"""More math with PyTorch's semantics: logit, heaviside, gcd/lcm, ldexp, frexp,
sgn, isin, trapezoid/cumulative_trapezoid, cov/corrcoef, cross, cdist,
addbmm, index_reduce, histogram, and the predicates is_same_size/is_nonzero/is_signed.

Differentiable ones are composites of public ops (their gradients come from the
ops they call); integer and set ops (gcd, lcm, isin, histogram) run in NumPy on
the tensor's memory and are not differentiable, as in PyTorch.
"""

import builtins

import numpy as np

from ember_core import _dtype as D
from ember_core._dispatch import defop
from ember_core._interop import numpy as _as_numpy
from ember_core._return_types import return_type
from ember_core._shape import normalize_dim
from ember_core._tensor import Tensor


def _pub(name):
    import ember_core

    return getattr(ember_core, name)


def _values(t):
    """A NumPy view of t's values, whatever its autograd state (for non-differentiable ops)."""
    if t._dtype is D.bfloat16:
        t = t.to(D.float32)
    return _as_numpy(t, force=True)


def _float_of(t):
    return t if t.dtype.is_floating_point else t.to(D.get_default_dtype())


# ------------------------------------------------------------------ elementwise


@defop(composite=True)
def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    x = _float_of(input)
    if eps is not None:
        x = x.clamp(eps, 1.0 - eps)
    r = (x / (1 - x)).log()
    if out is not None:
        return out.copy_(r)
    return r


@defop(composite=True)
def logit_(input, eps=None):
    return input.copy_(logit(input, eps))


@defop(composite=True)
def heaviside(input, values, *, out=None):
    """0 where input < 0, values where input == 0, 1 where input > 0."""
    if input.dtype is not values.dtype:
        raise RuntimeError(
            "heaviside is not yet implemented for tensors with different dtypes "
            f"({input.dtype} and {values.dtype})"
        )
    r = _pub("where")(input == 0, values, (input > 0).to(input.dtype))
    if out is not None:
        return out.copy_(r)
    return r


def _integer_binary(op, fn, input, other):
    if not isinstance(other, Tensor):
        other = _pub("tensor")(other)
    for t in (input, other):
        if t.dtype.is_floating_point or t.dtype is D.bool_:
            raise RuntimeError(f"\"{op}_cpu\" not implemented for '{t.dtype.name.capitalize()}'")
    dt = D.result_type(input, other)
    r = fn(_values(input), _values(other)).astype(dt.numpy, copy=False)
    return _pub("from_numpy")(np.ascontiguousarray(r))


@defop(composite=True)
def gcd(input, other, *, out=None):
    """Greatest common divisor of integers (non-negative; gcd(0, 0) = 0)."""
    r = _integer_binary("gcd", np.gcd, input, other)
    return out.copy_(r) if out is not None else r


@defop(composite=True)
def gcd_(input, other):
    return input.copy_(gcd(input, other))


@defop(composite=True)
def lcm(input, other, *, out=None):
    """Least common multiple of integers (non-negative; 0 when either is 0)."""
    r = _integer_binary("lcm", np.lcm, input, other)
    return out.copy_(r) if out is not None else r


@defop(composite=True)
def lcm_(input, other):
    return input.copy_(lcm(input, other))


@defop(composite=True)
def ldexp(input, other, *, out=None):
    """input * 2**other (a floating result)."""
    r = _float_of(input) * _pub("exp2")(other)
    return out.copy_(r) if out is not None else r


@defop(composite=True)
def ldexp_(input, other):
    return input.mul_(_pub("exp2")(other))


_frexp = return_type("frexp", ["mantissa", "exponent"])


def _pair_out(op, out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{op}(): argument 'out' must be a tuple of 2 Tensors, not {out!r}")
    for o in out:
        if not isinstance(o, Tensor):
            raise TypeError(
                f"{op}(): argument 'out' must be a tuple of 2 Tensors, not {type(o).__name__}"
            )


@defop(composite=True)
def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2**exponent, 0.5 <= |mantissa| < 1
    (mantissa 0 and exponent 0 for 0; inf and nan keep their value)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"torch.frexp() only supports floating-point dtypes, but got {input.dtype}"
        )
    _, e = np.frexp(_values(input))
    exponent = _pub("from_numpy")(np.array(e, dtype=np.int32).reshape(tuple(input.shape)))
    # scale in two halves: 2**-exponent alone overflows for subnormal inputs
    half = exponent.div(2, rounding_mode="floor")
    scale_a = _pub("exp2")((-half).to(input.dtype))
    scale_b = _pub("exp2")((half - exponent).to(input.dtype))
    mantissa = input * scale_a * scale_b
    if out is not None:
        _pair_out("frexp", out)
        out[0].copy_(mantissa)
        out[1].copy_(exponent)
        return _frexp(out[0], out[1])
    return _frexp(mantissa, exponent)


@defop(composite=True)
def sgn(input, *, out=None):
    """sign for real tensors (x / |x| for complex ones, which ember does not have)."""
    return input.sign() if out is None else out.copy_(input.sign())


@defop(composite=True)
def sgn_(input):
    return input.sign_()


@defop(
    method=False,
    composite=True,
)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of elements is in test_elements (a bool tensor of elements' shape)."""
    tensor = _pub("tensor")
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    e = elements if isinstance(elements, Tensor) else tensor(elements)
    t = test_elements if isinstance(test_elements, Tensor) else tensor(test_elements)
    r = np.isin(_values(e), _values(t).reshape(-1), assume_unique=assume_unique, invert=invert)
    return _pub("from_numpy")(np.ascontiguousarray(r)).reshape(tuple(e.shape))


# ------------------------------------------------------------------ integration


def _dx_along(op, y, x, dx, dim):
    d = normalize_dim(dim, y.dim(), op)
    if x is not None:
        if x.dim() == 1:
            if x.shape[0] != y.shape[d]:
                raise RuntimeError(
                    f"{op}: There must be one `x` value for each sample point; got {x.shape[0]} "
                    f"values for {y.shape[d]} samples"
                )
            spacing = x.diff().reshape([-1 if i == d else 1 for i in range(y.dim())])
        else:
            spacing = x.diff(dim=dim)
        return d, spacing
    return d, 1.0 if dx is None else dx


@defop(method=False, composite=True)
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim, with sample points x or a constant spacing dx."""
    if x is not None and not isinstance(x, Tensor):  # trapezoid(y, dx) positionally
        x, dx = None, x
    d, spacing = _dx_along("trapezoid", y, x, dx, dim)
    n = y.shape[d]
    if n == 0:
        return _float_of(y).sum(d) * 0
    mid = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) * spacing
    return mid.sum(d) / 2


@defop(method=False, composite=True)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    if x is not None and not isinstance(x, Tensor):
        x, dx = None, x
    d, spacing = _dx_along("cumulative_trapezoid", y, x, dx, dim)
    n = y.shape[d]
    mid = y.narrow(d, 1, builtins.max(n - 1, 0)) + y.narrow(d, 0, builtins.max(n - 1, 0))
    return (mid * spacing / 2).cumsum(d)


# ------------------------------------------------------------------ statistics


@defop(composite=True)
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the variables in rows (observations in columns), as numpy.cov."""
    if input.dim() > 2:
        raise RuntimeError(
            f"cov(): expected input to have two or fewer dimensions but "
            f"got an input with {input.dim()} dimensions"
        )
    x = input.reshape(1, -1) if input.dim() < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.dim() > 1 or fweights.numel() != n:
            raise RuntimeError(f"cov(): expected fweights to have one dimension and {n} elements")
        if fweights.dtype.is_floating_point:
            raise RuntimeError(
                f"cov(): expected fweights to have integral dtype but got "
                f"fweights with {fweights.dtype} dtype"
            )
        if bool((fweights < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        if aweights.dim() > 1 or aweights.numel() != n:
            raise RuntimeError(f"cov(): expected aweights to have one dimension and {n} elements")
        if not aweights.dtype.is_floating_point:
            raise RuntimeError(
                f"cov(): expected aweights to have floating point dtype but "
                f"got aweights with {aweights.dtype} dtype"
            )
        if bool((aweights < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    x = _float_of(x)
    if w is None:
        w_sum = float(n)
        avg = x.mean(1)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None:
        norm = w_sum - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if isinstance(norm, Tensor):
        norm = norm.clamp_min(0)
    else:
        norm = builtins.max(norm, 0)
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xw.matmul(xm.transpose(0, 1)) / norm
    return c.squeeze() if input.dim() < 2 else c


@defop(composite=True)
def corrcoef(input):
    """Pearson correlation coefficients of the rows (clipped to [-1, 1])."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    std = d.sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    return c.clamp(-1, 1)


# ------------------------------------------------------------------ products and distances


@defop(composite=True)
def cross(input, other, dim=None, *, out=None):
    """Cross product of 3-vectors along dim (default: the first dim of size 3)."""
    if input.dim() != other.dim():
        raise RuntimeError(
            f"linalg.cross: inputs must have the same number of dimensions, got {input.dim()} "
            f"and {other.dim()}"
        )
    shape = _broadcast_shape(input, other)
    a, b = _pub("broadcast_to")(input, shape), _pub("broadcast_to")(other, shape)
    if dim is None:
        sizes = list(a.shape)
        if 3 not in sizes:
            raise RuntimeError(
                f"no dimension of size 3 in input (shapes {list(input.shape)} "
                f"and {list(other.shape)})"
            )
        d = sizes.index(3)
    else:
        d = normalize_dim(dim, a.dim(), "cross")
        if a.shape[d] != 3:
            raise RuntimeError(
                f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} "
                f"and {other.shape[d]}"
            )
    a0, a1, a2 = (a.select(d, i) for i in range(3))
    b0, b1, b2 = (b.select(d, i) for i in range(3))
    r = _pub("stack")([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)
    return out.copy_(r) if out is not None else r


def _broadcast_shape(a, b):
    return tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))


@defop(method=False, composite=True, autocast="fp32")
def cdist(x1, x2, p=2.0, compute_mode=None):
    """p-norm distances between the rows of x1 (.., P, M) and of x2 (.., R, M): (.., P, R).
    p=2 goes through a matrix product when compute_mode allows (as PyTorch: by default
    when P or R exceeds 25), else the differences are formed directly."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(
            f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, X2 got: {x2.dim()}D"
        )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if not (x1.dtype.is_floating_point and x2.dtype.is_floating_point):
        raise RuntimeError(
            f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}, X2 got: {x2.dtype}"
        )
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    modes = (
        None,
        "use_mm_for_euclid_dist_if_necessary",
        "use_mm_for_euclid_dist",
        "donot_use_mm_for_euclid_dist",
    )
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    batch = np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    a = _pub("broadcast_to")(x1, tuple(batch) + tuple(x1.shape[-2:]))
    b = _pub("broadcast_to")(x2, tuple(batch) + tuple(x2.shape[-2:]))
    P, R = a.shape[-2], b.shape[-2]
    use_mm = p == 2 and (
        compute_mode == "use_mm_for_euclid_dist"
        or (compute_mode in (None, "use_mm_for_euclid_dist_if_necessary") and (P > 25 or R > 25))
    )
    if use_mm:
        # |a - b|^2 = |a|^2 - 2 a.b + |b|^2, one matrix product
        a2 = (a * a).sum(-1, keepdim=True)
        b2 = (b * b).sum(-1, keepdim=True)
        sq = a2 - 2 * a.matmul(b.transpose(-2, -1)) + b2.transpose(-2, -1)
        return sq.clamp_min(1e-30).sqrt()
    diff = a.unsqueeze(-2) - b.unsqueeze(-3)
    if P == 0 or R == 0 or a.shape[-1] == 0:
        return diff.abs().sum(-1)
    return _pub("vector_norm")(diff, p, dim=-1)


@defop(composite=True, autocast="lower_precision_fp")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * sum_i batch1[i] @ batch2[i] (one matrix product)."""
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(
            f"batch1 and batch2 must be 3D tensors, got {batch1.dim()}D and {batch2.dim()}D"
        )
    b, n, m = batch1.shape
    if batch2.shape[0] != b or batch2.shape[1] != m:
        raise RuntimeError(
            f"addbmm: batch1 {list(batch1.shape)} and batch2 {list(batch2.shape)} do not "
            "multiply (expected equal batch sizes and batch1.size(2) == batch2.size(1))"
        )
    p = batch2.shape[2]
    # the sum over the batch of products is one (n, b*m) x (b*m, p) product
    left = batch1.permute(1, 0, 2).reshape(n, b * m)
    right = batch2.reshape(b * m, p)
    r = _pub("addmm")(input, left, right, beta=beta, alpha=alpha)
    return out.copy_(r) if out is not None else r


@defop(composite=True)
def addbmm_(input, batch1, batch2, *, beta=1, alpha=1):
    return input.copy_(addbmm(input, batch1, batch2, beta=beta, alpha=alpha))


# ------------------------------------------------------------------ reductions by index


_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


@defop(composite=True)
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """Reduce source's slices into input's slices index[i] along dim (prod, mean, amax, amin)."""
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(
            f"index_reduce(): Expected reduce to be one of prod, mean, "
            f"amax or amin but got {reduce}."
        )
    d = normalize_dim(dim, builtins.max(input.dim(), 1), "index_reduce")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if source.dim() and index.numel() != source.shape[d]:
        raise IndexError(
            f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim) ({source.shape[d]})"
        )
    size = input.shape[d] if input.dim() else 1
    lo, hi = (int(index.min()), int(index.max())) if index.numel() else (0, 0)
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise IndexError(
            f"index_reduce(): index out of range in self (index {bad} is out of bounds for "
            f"dimension {d} with size {size})"
        )
    shape = [-1 if i == d else 1 for i in range(source.dim())]
    idx = index.reshape(shape).expand(tuple(source.shape))
    return input.scatter_reduce(d, idx, source, reduce, include_self=include_self)


@defop(composite=True)
def index_reduce_(input, dim, index, source, reduce, *, include_self=True):
    return input.copy_(index_reduce(input, dim, index, source, reduce, include_self=include_self))


_histogram = return_type("histogram", ["hist", "bin_edges"])


@defop(
    composite=True,
)
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """(hist, bin_edges): counts (or weights, or a density) per bin, as numpy.histogram."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"torch.histogram: input tensor and bins tensors should have the same dtype, but got "
            f"input {input.dtype}"
        )
    x = _values(input).reshape(-1)
    w = None if weight is None else _values(weight).reshape(-1)
    b = _values(bins) if isinstance(bins, Tensor) else bins
    if isinstance(b, int) and b <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for dimension 0")
    rng = None if range is None else (float(range[0]), float(range[1]))
    if rng is None and not isinstance(b, np.ndarray) and x.size == 0:
        rng = (0.0, 0.0)
    hist, edges = np.histogram(x, bins=b, range=rng, weights=w, density=density)
    from_numpy = _pub("from_numpy")
    dt = input.dtype
    r = _histogram(
        from_numpy(np.ascontiguousarray(hist)).to(dt),
        from_numpy(np.ascontiguousarray(edges)).to(dt),
    )
    if out is not None:
        _pair_out("histogram", out)
        out[0].resize_(tuple(r.hist.shape)).copy_(r.hist)
        out[1].resize_(tuple(r.bin_edges.shape)).copy_(r.bin_edges)
        return _histogram(out[0], out[1])
    return r


# ------------------------------------------------------------------ predicates


@defop(composite=True)
def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


@defop(composite=True)
def is_nonzero(input):
    """The truth of a one-element tensor."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())  # nan is nonzero


def is_signed(input):
    """Whether input's dtype is signed (every dtype but uint8 and bool)."""
    return input.is_signed()
