"""The derivative table: one backward formula per differentiable op of
ember_core, written with ember ops (see _formula.py for the conventions).

In-place variants (``add_``) use their op's formula (``add``); ``input`` then
means the value before the write.  Gradients are summed to input shapes and
cast to input dtypes by the node, so formulas return them as computed.
"""

import math

import ember_core as ec
from ember_autograd._formula import derivative
from ember_autograd._grad_mode import state

# ------------------------------------------------------------------ helpers


def _zeros(shape, like):
    return ec.zeros(shape, dtype=like.dtype, device=like.device)


_ZEROS = {}


def _zero(like):
    """A shared 0-d zero of like's dtype and device (only ever read)."""
    key = (like.dtype, like.device)
    z = _ZEROS.get(key)
    if z is None:
        z = _ZEROS[key] = ec.zeros((), dtype=like.dtype, device=like.device)
    return z


def _cj(t):
    """The conjugate of a local derivative (Note [Complex gradients]): the chain
    rule of PyTorch's convention multiplies by conj(f'(z)); real tensors as they are."""
    return t.conj() if t._dtype.is_complex else t


def _cj_number(v):
    return v.conjugate() if isinstance(v, complex) else v


def _cj_any(v):
    """_cj of a tensor or a Python number."""
    return _cj(v) if isinstance(v, ec.Tensor) else _cj_number(v)


def _masked(mask, g):
    return ec.where(mask, g, _zero(g))


def _reduced_dims(shape, dim):
    nd = len(shape)
    if nd == 0:
        return ()  # a 0-d tensor reduced over "dim 0" is copied
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(nd))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted(d % nd for d in dim))


def _unsqueeze_to(g, shape, dims, keepdim):
    """Give a reduced gradient back the reduced dims (size 1) so it broadcasts."""
    if keepdim or not shape:
        return g
    kshape = tuple(1 if i in dims else s for i, s in enumerate(shape))
    return g.reshape(kshape)


def _count(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


# ------------------------------------------------------------ unary maths


@derivative("neg")
def _(grad):
    return -grad


@derivative("abs")
def _(grad, input):
    return grad * input.sgn()


@derivative("sign")
def _(grad):
    return ec.zeros_like(grad)


@derivative("square")
def _(grad, input):
    return grad * _cj(input * 2)


@derivative("reciprocal")
def _(grad, result):
    return -grad * _cj(result * result)


@derivative("sqrt")
def _(grad, result):
    return grad / _cj(result * 2)


@derivative("rsqrt")
def _(grad, result):
    return grad * _cj(result.pow(3) * -0.5)


@derivative("exp")
def _(grad, result):
    return grad * _cj(result)


@derivative("exp2")
def _(grad, result):
    return grad * _cj(result * math.log(2.0))


@derivative("expm1")
def _(grad, result):
    return grad * _cj(result + 1)


@derivative("log")
def _(grad, input):
    return grad / _cj(input)


@derivative("log2")
def _(grad, input):
    return grad / _cj(input * math.log(2.0))


@derivative("log10")
def _(grad, input):
    return grad / _cj(input * math.log(10.0))


@derivative("log1p")
def _(grad, input):
    return grad / _cj(input + 1)


@derivative("sin")
def _(grad, input):
    return grad * _cj(input.cos())


@derivative("cos")
def _(grad, input):
    return -grad * _cj(input.sin())


@derivative("tan")
def _(grad, result):
    return grad * _cj(result * result + 1)


@derivative("asin")
def _(grad, input):
    return grad / _cj((1 - input * input).sqrt())


@derivative("acos")
def _(grad, input):
    return -grad / _cj((1 - input * input).sqrt())


@derivative("atan")
def _(grad, input):
    return grad / _cj(input * input + 1)


@derivative("sinh")
def _(grad, input):
    return grad * _cj(input.cosh())


@derivative("cosh")
def _(grad, input):
    return grad * _cj(input.sinh())


@derivative("tanh")
def _(grad, result):
    return grad * _cj(1 - result * result)


@derivative("asinh")
def _(grad, input):
    return grad / _cj((input * input + 1).sqrt())


@derivative("acosh")
def _(grad, input):
    return grad / _cj((input * input - 1).sqrt())


@derivative("atanh")
def _(grad, input):
    return grad / _cj(1 - input * input)


@derivative("sigmoid")
def _(grad, result):
    return grad * _cj(result * (1 - result))


@derivative("relu")
def _(grad, result):
    # grad where result > 0: the fused threshold-backward kernel (one pass)
    # unless this backward must itself be differentiable
    if not (state.enabled and (grad.requires_grad or result.requires_grad)):
        return ec._activation_backward(grad, result, "threshold", 0.0, 0.0)
    return _masked(result > 0, grad)


@derivative("silu")
def _(grad, input):
    s = input.sigmoid()
    return grad * s * (1 + input * (1 - s))


@derivative("gelu")
def _(grad, input, approximate):
    x = input
    if approximate == "tanh":
        k, c = math.sqrt(2.0 / math.pi), 0.044715
        t = ((x + x * x * x * c) * k).tanh()
        return grad * ((t + 1) * 0.5 + x * (1 - t * t) * ((x * x * (3 * c) + 1) * (0.5 * k)))
    cdf = ((x * (1.0 / math.sqrt(2.0))).erf() + 1) * 0.5
    pdf = (x * x * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))
    return grad * (cdf + x * pdf)


@derivative("softplus")
def _(grad, input, beta, threshold):
    z = input * beta
    return ec.where(z > threshold, grad, grad * z.sigmoid())


@derivative("erf")
def _(grad, input):
    return grad * (input * input).neg().exp() * (2.0 / math.sqrt(math.pi))


@derivative("erfc")
def _(grad, input):
    return grad * (input * input).neg().exp() * (-2.0 / math.sqrt(math.pi))


@derivative("erfinv")
def _(grad, result):
    return grad * (result * result).exp() * (math.sqrt(math.pi) / 2.0)


def _zero_grad(grad):
    return ec.zeros_like(grad)


for _name in ("floor", "ceil", "trunc", "round"):
    derivative(_name)(_zero_grad)


@derivative("frac")
def _(grad):
    return grad


@derivative("lgamma")
def _(grad, input):
    return grad * input.digamma()


@derivative("digamma")
def _(grad, input):
    # trigamma(x) = sum_k 1/(x+k)^2: recurrence to x >= 6, then the asymptotic series
    x = input
    acc = ec.zeros_like(x)
    for _ in range(6):
        small = x < 6
        acc = acc + ec.where(small, 1.0 / (x * x), _zero(x))
        x = ec.where(small, x + 1, x)
    xi = 1.0 / x
    xi2 = xi * xi
    series = xi + xi2 / 2 + xi * xi2 * (1.0 / 6 - xi2 * (1.0 / 30 - xi2 / 42))
    return grad * (acc + series)


@derivative("deg2rad")
def _(grad):
    return grad * (math.pi / 180.0)


@derivative("rad2deg")
def _(grad):
    return grad * (180.0 / math.pi)


@derivative("sinc")
def _(grad, input):
    px = input * math.pi
    d = (px.cos() * px - px.sin()) / (px * input)
    return grad * _cj(ec.where(input == 0, _zero(input), d))


@derivative("mish")
def _(grad, input):
    sp = (input.exp() + 1).log()
    t = sp.tanh()
    return grad * (t + input * (1 - t * t) * input.sigmoid())


_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


@derivative("selu")
def _(grad, input):
    neg = input.exp() * (_SELU_SCALE * _SELU_ALPHA)
    return grad * ec.where(input > 0, ec.full((), _SELU_SCALE, dtype=input.dtype), neg)


@derivative("hardsigmoid")
def _(grad, input):
    inside = (input > -3) & (input < 3)
    return _masked(inside, grad / 6)


@derivative("hardswish")
def _(grad, input):
    mid = grad * (input / 3 + 0.5)
    g = ec.where(input < -3, _zero(grad), ec.where(input <= 3, mid, grad))
    return g


@derivative("softsign")
def _(grad, input):
    d = 1 + input.abs()
    return grad / (d * d)


@derivative("logsigmoid")
def _(grad, input):
    return grad * (-input).sigmoid()


@derivative("clamp", inputs=("input", "min", "max"))
def _(grad, input, min, max):
    # As PyTorch (clamp_backward_min_max): input's gradient flows where
    # min <= input <= max, so not at a NaN input nor through a NaN bound; a tensor
    # bound gets it where it is the result (min also needs min < max; max wins
    # wherever max < min).
    lo_t, hi_t = isinstance(min, ec.Tensor), isinstance(max, ec.Tensor)
    keep = ec.ones(input.shape, dtype=ec.bool, device=input.device)
    if min is not None:
        keep = keep & (input >= min)
    if max is not None:
        keep = keep & (input <= max)
    g_min = g_max = None
    if lo_t:
        below = input < min
        g_min = _masked(below & (min < max) if max is not None else below, grad)
    if hi_t:
        above = input > max
        g_max = _masked(above | (max < min) if min is not None else above, grad)
    return _masked(keep, grad), g_min, g_max


@derivative("nan_to_num")
def _(grad, input):
    return _masked(input.isfinite(), grad)


# ----------------------------------------------------------------- binary


@derivative("add", inputs=("input", "other"))
def _(grad, alpha):
    return grad, (grad if alpha == 1 else grad * _cj_number(alpha))


@derivative("sub", inputs=("input", "other"))
def _(grad, alpha):
    return grad, (-grad if alpha == 1 else grad * -_cj_number(alpha))


@derivative("rsub", inputs=("input", "other"))
def _(grad, alpha):
    return (-grad if alpha == 1 else grad * -_cj_number(alpha)), grad


@derivative(
    "mul", inputs=("input", "other"), save_only_for={"input": ("other",), "other": ("input",)}
)
def _(grad, input, other, needs):
    ga = grad * _cj_any(other) if needs[0] else None
    gb = grad * _cj_any(input) if len(needs) > 1 and needs[1] else None
    return ga, gb


@derivative("div", inputs=("input", "other"), save_only_for={"input": ("other",)})
def _(grad, input, other, rounding_mode, needs):
    if rounding_mode is not None:
        return ec.zeros_like(grad), (ec.zeros_like(grad) if isinstance(other, ec.Tensor) else None)
    ga = grad / _cj_any(other) if needs[0] else None
    gb = None
    if isinstance(other, ec.Tensor) and needs[-1]:
        gb = -grad * _cj(input / (other * other))
    return ga, gb


@derivative("floor_divide", inputs=("input", "other"))
def _(grad, other):
    return ec.zeros_like(grad), (ec.zeros_like(grad) if isinstance(other, ec.Tensor) else None)


@derivative("remainder", inputs=("input", "other"))
def _(grad, input, other):
    gb = -grad * input.div(other, rounding_mode="floor") if isinstance(other, ec.Tensor) else None
    return grad, gb


@derivative("fmod", inputs=("input", "other"))
def _(grad, input, other):
    gb = -grad * input.div(other, rounding_mode="trunc") if isinstance(other, ec.Tensor) else None
    return grad, gb


@derivative("pow", inputs=("input", "exponent"))
def _(grad, input, exponent, needs):
    # no `result`: saving it would make pow_ with a scalar exponent (the common
    # case) keep its output, which later in-place ops could not then modify
    ga = gb = None
    if isinstance(input, ec.Tensor) and needs[0]:
        if isinstance(exponent, ec.Tensor):
            ga = grad * _cj(exponent * input.pow(exponent - 1))
            ga = ec.where(exponent == 0, _zero(ga), ga)
        elif exponent == 0:
            ga = ec.zeros_like(grad)
        else:
            ga = grad * _cj(input.pow(exponent - 1) * exponent)
    if isinstance(exponent, ec.Tensor) and needs[-1]:
        base = (
            input if isinstance(input, ec.Tensor) else ec.full((), float(input), dtype=grad.dtype)
        )
        zero = _zero(grad)
        if base._dtype.is_complex or exponent._dtype.is_complex:
            gb = grad * _cj(base.pow(exponent) * base.log())
        else:
            gb = (
                grad
                * base.pow(exponent)
                * ec.where((base == 0) & (exponent >= 0), zero, base.log())
            )
    return ga, gb


def _minmax_split(grad, input, other, pick_input):
    # ties share the gradient equally, as in PyTorch
    tie = input == other
    half = grad * 0.5
    ga = ec.where(tie, half, _masked(pick_input, grad))
    gb = ec.where(tie, half, _masked(~pick_input & ~tie, grad))
    return ga, gb


@derivative("maximum", inputs=("input", "other"))
def _(grad, input, other):
    return _minmax_split(grad, input, other, (input > other) | input.isnan())


@derivative("minimum", inputs=("input", "other"))
def _(grad, input, other):
    return _minmax_split(grad, input, other, (input < other) | input.isnan())


@derivative("fmax", inputs=("input", "other"))
def _(grad, input, other):
    return _minmax_split(grad, input, other, (input > other) | other.isnan())


@derivative("fmin", inputs=("input", "other"))
def _(grad, input, other):
    return _minmax_split(grad, input, other, (input < other) | other.isnan())


@derivative("atan2", inputs=("input", "other"))
def _(grad, input, other):
    d = input * input + other * other
    return grad * other / d, -grad * input / d


@derivative("hypot", inputs=("input", "other"))
def _(grad, input, other, result):
    return grad * input / result, grad * other / result


@derivative("copysign", inputs=("input", "other"))
def _(grad, input, result):
    s = ec.where(input == 0, _zero(grad), result / input)
    return grad * s, ec.zeros_like(grad)


@derivative("xlogy", inputs=("input", "other"))
def _(grad, input, other):
    ga = (
        # as PyTorch: xlogy(grad, other), zeroed only where input == 0 and other <= 0
        ec.where((input == 0) & (other <= 0), _zero(grad), ec.xlogy(grad, other))
        if isinstance(other, ec.Tensor)
        else grad * math.log(other)
    )
    gb = grad * input / other if isinstance(other, ec.Tensor) else None
    return ga, gb


@derivative("logaddexp", inputs=("input", "other"))
def _(grad, input, other, result):
    return grad * _cj((input - result).exp()), grad * _cj((other - result).exp())


@derivative("logaddexp2", inputs=("input", "other"))
def _(grad, input, other, result):
    return grad * (input - result).exp2(), grad * (other - result).exp2()


# ---------------------------------------------------------------- ternary


@derivative("where", inputs=("input", "other"))
def _(grad, condition):
    zero = _zero(grad)
    return ec.where(condition, grad, zero), ec.where(condition, zero, grad)


@derivative("lerp", inputs=("input", "end", "weight"))
def _(grad, input, end, weight):
    if isinstance(weight, ec.Tensor):
        return grad * _cj(1 - weight), grad * _cj(weight), grad * _cj(end - input)
    return grad * _cj_any(1 - weight), grad * _cj_any(weight), None


@derivative("addcmul", inputs=("input", "tensor1", "tensor2"))
def _(grad, tensor1, tensor2, value):
    return grad, grad * _cj(tensor2 * value), grad * _cj(tensor1 * value)


@derivative("addcdiv", inputs=("input", "tensor1", "tensor2"))
def _(grad, tensor1, tensor2, value):
    return grad, grad * _cj(value / tensor2), -grad * _cj(value * tensor1 / (tensor2 * tensor2))


# ------------------------------------------------------------ copies/fills


@derivative("copy_", inputs=("input", "src"))
def _(grad, src):
    return ec.zeros_like(grad), (grad if isinstance(src, ec.Tensor) else None)


@derivative("clone")
def _(grad):
    return grad


@derivative("contiguous")
def _(grad):
    return grad


@derivative("alias")
def _(grad):
    return grad


@derivative("_to_copy")
def _(grad, input_device):
    # the node casts to the input's dtype; a copy between devices sends it back
    return grad if grad.device == input_device else grad.to(input_device)


@derivative("fill_", inputs=("input", "value"))
def _(grad, value):
    return ec.zeros_like(grad), (grad.sum() if isinstance(value, ec.Tensor) else None)


@derivative("zero_")
def _(grad):
    return ec.zeros_like(grad)


# ------------------------------------------------------------------ views


@derivative("view")
def _(grad, input_shape):
    return grad.reshape(input_shape)


@derivative("transpose")
def _(grad, dim0, dim1):
    return grad.transpose(dim0, dim1)


@derivative("permute")
def _(grad, dims):
    if len(dims) == 1 and not isinstance(dims[0], int):
        dims = tuple(dims[0])
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[d % n] = i
    return grad.permute(*inverse)


@derivative("expand")
def _(grad):
    return grad  # the node sums it back to the input's shape


@derivative("squeeze")
def _(grad, input_shape):
    return grad.reshape(input_shape)


@derivative("unsqueeze")
def _(grad, input_shape):
    return grad.reshape(input_shape)


def _scatter_into_zeros(grad, input_shape, view_fn):
    z = ec.zeros(input_shape, dtype=grad.dtype, device=grad.device)
    view_fn(z).copy_(grad)
    return z


@derivative("narrow")
def _(grad, input_shape, dim, start, length):
    return _scatter_into_zeros(grad, input_shape, lambda z: z.narrow(dim, start, length))


@derivative("select")
def _(grad, input_shape, dim, index):
    return _scatter_into_zeros(grad, input_shape, lambda z: z.select(dim, index))


@derivative("diagonal")
def _(grad, input_shape, offset, dim1, dim2):
    return _scatter_into_zeros(grad, input_shape, lambda z: z.diagonal(offset, dim1, dim2))


@derivative("as_strided")
def _(grad, input_geometry, size, stride, storage_offset):
    # Scatter grad back through the same geometry into a zero buffer laid out like
    # the input; overlapping geometries would need accumulation.
    shape, in_stride, in_offset = input_geometry
    offset = in_offset if storage_offset is None else storage_offset
    distinct = total = 1
    for s, st in zip(size, stride):
        total *= s
        if st != 0:
            distinct *= s
    if distinct != total and total:
        raise RuntimeError(
            "as_strided backward: the view has overlapping elements (a zero or repeating "
            "stride); its gradient would need accumulation, which ember does not support yet"
        )
    base = ec.empty_strided(shape, in_stride, dtype=grad.dtype)
    base.zero_()
    rel = offset - in_offset
    if rel < 0:
        raise RuntimeError("as_strided backward: view starts before its input's first element")
    base.as_strided(size, stride, rel).copy_(grad)
    return base


@derivative("unfold")
def _(grad, input_shape, dimension, size, step):
    z = ec.zeros(input_shape, dtype=grad.dtype, device=grad.device)
    nd = len(input_shape)
    d = dimension % nd if nd else 0
    if nd == 0:
        return grad.sum().reshape(())
    count = grad.shape[d]
    for i in range(count):
        window = grad.select(d, i).movedim(-1, d)
        z.narrow(d, i * step, size).add_(window)
    return z


# ------------------------------------------------------------ joining etc.


@derivative("cat", inputs=("tensors",))
def _(grad, tensors_shapes, dim):
    ref = next((s for s in tensors_shapes if not (len(s) == 1 and s[0] == 0)), None)
    if ref is None:
        return tuple(None for _ in tensors_shapes)
    d = dim % len(ref)
    out, pos = [], 0
    for s in tensors_shapes:
        if len(s) == 1 and s[0] == 0:
            out.append(ec.zeros(s, dtype=grad.dtype, device=grad.device))
            continue
        out.append(grad.narrow(d, pos, s[d]))
        pos += s[d]
    return tuple(out)


@derivative("stack", inputs=("tensors",))
def _(grad, tensors_shapes, dim):
    d = dim % (len(tensors_shapes[0]) + 1)
    return tuple(grad.select(d, i) for i in range(len(tensors_shapes)))


@derivative("flip")
def _(grad, dims):
    return grad.flip(*dims)  # dims as the op received them: (0, 1) or ((0, 1),)


@derivative("roll")
def _(grad, input_shape, shifts, dims):
    if dims is None:
        return (
            grad.reshape(-1)
            .roll(-shifts if isinstance(shifts, int) else -shifts[0], 0)
            .reshape(input_shape)
        )
    neg = -shifts if isinstance(shifts, int) else tuple(-s for s in shifts)
    return grad.roll(neg, dims)


@derivative("repeat")
def _(grad, input_shape, sizes):
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    lead = len(sizes) - len(input_shape)
    src = (1,) * lead + tuple(input_shape)
    pairs = []
    for r, s in zip(sizes, src):
        pairs += [r, s]
    g = grad.reshape(pairs)
    g = g.sum(tuple(range(0, 2 * len(sizes), 2)))
    return g.reshape(input_shape)


@derivative("tril")
def _(grad, diagonal):
    return grad.tril(diagonal)


@derivative("triu")
def _(grad, diagonal):
    return grad.triu(diagonal)


# -------------------------------------------------------------- products


def _mat_grads(grad, a, b, needs):
    """Gradients of matmul(a, b) for 1-D or N-D operands (batch dims broadcast;
    the node sums broadcast batch dims away)."""
    da, db = a.dim(), b.dim()
    if da == 1 and db == 1:  # dot product: grad is 0-d
        return (grad * b if needs[0] else None, grad * a if needs[1] else None)
    g = grad
    a2 = a.unsqueeze(0) if da == 1 else a
    b2 = b.unsqueeze(-1) if db == 1 else b
    if da == 1:
        g = g.unsqueeze(-2)
    if db == 1:
        g = g.unsqueeze(-1)
    ga = g.matmul(b2.transpose(-1, -2)) if needs[0] else None
    gb = a2.transpose(-1, -2).matmul(g) if needs[1] else None
    if ga is not None and da == 1:
        ga = ga.squeeze(-2)
        if ga.dim() > 1:
            ga = ga.reshape(-1, a.shape[0]).sum(0)
    if gb is not None and db == 1:
        gb = gb.squeeze(-1)
        if gb.dim() > 1:
            gb = gb.reshape(-1, b.shape[0]).sum(0)
    return ga, gb


@derivative("matmul", inputs=("input", "other"))
def _(grad, input, other, needs):
    return _mat_grads(grad, _cj(input), _cj(other), needs)


def _transposed(t):
    """Whether a 2-D tensor is the transpose of a contiguous one (a weight.t())."""
    st = t.stride()
    return st[0] == 1 and st[1] == t.shape[0] and t.shape[0] > 1 and t.shape[1] > 1


def _mm_mat1_grad(grad, mat2, mat1):
    # laid out like mat1: a transposed mat1 gets (mat2 @ grad.T).T, so the
    # gradient reaching the contiguous tensor behind it is contiguous too
    if _transposed(mat1):
        return mat2.mm(grad.t()).t()
    return grad.mm(mat2.t())


def _mm_mat2_grad(grad, mat1, mat2):
    # likewise for mat2: F.linear multiplies by weight.t(), and PyTorch's
    # mm_mat2_backward gives the weight a contiguous gradient the same way
    if _transposed(mat2):
        return grad.t().mm(mat1).t()
    return mat1.t().mm(grad)


@derivative("mm", inputs=("input", "mat2"))
def _(grad, input, mat2, needs):
    return (
        _mm_mat1_grad(grad, _cj(mat2), input) if needs[0] else None,
        _mm_mat2_grad(grad, _cj(input), mat2) if needs[1] else None,
    )


@derivative("bmm", inputs=("input", "mat2"))
def _(grad, input, mat2, needs):
    return (
        grad.bmm(_cj(mat2).transpose(1, 2)) if needs[0] else None,
        _cj(input).transpose(1, 2).bmm(grad) if needs[1] else None,
    )


@derivative("mv", inputs=("input", "vec"))
def _(grad, input, vec, needs):
    return (
        grad.outer(_cj(vec)) if needs[0] else None,
        _cj(input).t().mv(grad) if needs[1] else None,
    )


@derivative("dot", inputs=("input", "other"))
def _(grad, input, other):
    return grad * _cj(other), grad * _cj(input)


@derivative("outer", inputs=("input", "vec2"))
def _(grad, input, vec2):
    return grad.mv(_cj(vec2)), grad.t().mv(_cj(input))


@derivative("addmm", inputs=("input", "mat1", "mat2"))
def _(grad, mat1, mat2, beta, alpha, needs):
    gi = (grad if beta == 1 else grad * beta) if needs[0] else None
    g1 = _mm_mat1_grad(grad, mat2, mat1) if needs[1] else None
    g2 = _mm_mat2_grad(grad, mat1, mat2) if needs[2] else None
    if alpha != 1:
        g1 = g1 * alpha if g1 is not None else None
        g2 = g2 * alpha if g2 is not None else None
    return gi, g1, g2


@derivative("baddbmm", inputs=("input", "batch1", "batch2"))
def _(grad, batch1, batch2, beta, alpha, needs):
    gi = (grad if beta == 1 else grad * beta) if needs[0] else None
    g1 = grad.bmm(batch2.transpose(1, 2)) * alpha if needs[1] else None
    g2 = batch1.transpose(1, 2).bmm(grad) * alpha if needs[2] else None
    return gi, g1, g2


# ------------------------------------------------------------ reductions


@derivative("sum")
def _(grad, input_shape, dim, keepdim):
    if dim is None:  # a 0-d grad expands as it is
        return grad.expand(input_shape)
    dims = _reduced_dims(input_shape, dim)
    return _unsqueeze_to(grad, input_shape, dims, keepdim).expand(input_shape)


@derivative("nansum")
def _(grad, input, dim, keepdim):
    dims = _reduced_dims(input.shape, dim)
    g = _unsqueeze_to(grad, input.shape, dims, keepdim).expand(input.shape)
    return _masked(~input.isnan(), g)


@derivative("mean")
def _(grad, input_shape, dim, keepdim):
    dims = _reduced_dims(input_shape, dim)
    g = _unsqueeze_to(grad, input_shape, dims, keepdim) / max(_count(input_shape, dims), 1)
    return g.expand(input_shape)  # divided before expanding: one value per output


@derivative("prod")
def _(grad, input, dim, keepdim, result):
    dims = _reduced_dims(input.shape, dim)
    g = _unsqueeze_to(grad, input.shape, dims, keepdim)
    r = _unsqueeze_to(result, input.shape, dims, keepdim)
    zeros = input == 0
    if not bool(zeros.any()):
        return g * _cj(r / input)
    # with zeros: the product of the other elements, computed directly
    if len(dims) == input.dim() and input.dim() > 1:
        flat = input.reshape(-1)
        return _cj(_prod_others(flat, 0).reshape(input.shape)) * g
    if len(dims) == 0:
        return g
    return _cj(_prod_others(input, dims[0])) * g


def _prod_others(x, d):
    """For each element, the product of the others along dim d (zero-safe):
    exclusive cumulative products from both ends."""
    n = x.shape[d]
    ones_shape = list(x.shape)
    ones_shape[d] = 1
    one = ec.ones(ones_shape, dtype=x.dtype, device=x.device)
    left = ec.cat([one, x.narrow(d, 0, n - 1).cumprod(d)], d) if n > 1 else one
    rx = x.flip((d,))
    right = ec.cat([one, rx.narrow(d, 0, n - 1).cumprod(d)], d).flip((d,)) if n > 1 else one
    return left * right


def _minmax_all(grad, input, result):
    mask = input == result
    return _masked(mask, grad.expand(input.shape)) / mask.sum()


def _minmax_dim(grads, input, dim, keepdim, result):
    grad = grads[0]
    if input.dim() == 0:
        return grad
    values, indices = result
    d = dim % input.dim()
    if not keepdim and input.dim():
        grad = grad.unsqueeze(d)
        indices = indices.unsqueeze(d)
    shape = [1] * input.dim()
    shape[d] = input.shape[d]
    positions = ec.arange(input.shape[d], device=input.device).reshape(shape)
    return _masked(positions == indices, grad.expand(input.shape))


def _minmax_formula(name, pick):
    @derivative(name, inputs=("input", "dim"), outputs=(0,))
    def _(grad, input, dim, keepdim, result):
        if isinstance(dim, ec.Tensor):  # max(input, other): the elementwise form
            return _minmax_split(grad, input, dim, pick(input, dim))
        if dim is None:
            return _minmax_all(grad, input, result), None
        return _minmax_dim((grad,), input, dim, keepdim, result), None


_minmax_formula("max", lambda a, b: (a > b) | a.isnan())
_minmax_formula("min", lambda a, b: (a < b) | a.isnan())


def _amaxmin(grad, input, dim, keepdim, result):
    dims = _reduced_dims(input.shape, dim)
    r = _unsqueeze_to(result, input.shape, dims, keepdim)
    g = _unsqueeze_to(grad, input.shape, dims, keepdim)
    mask = input == r
    count = mask.sum(dims, keepdim=True)
    return _masked(mask, g.expand(input.shape)) / count


@derivative("amax")
def _(grad, input, dim, keepdim, result):
    return _amaxmin(grad, input, dim, keepdim, result)


@derivative("amin")
def _(grad, input, dim, keepdim, result):
    return _amaxmin(grad, input, dim, keepdim, result)


def _correction_of(unbiased, correction, dim):
    if isinstance(dim, bool):
        unbiased = dim
    if correction is not None:
        return float(correction)
    return 0.0 if unbiased is False else 1.0


def _dim_of(dim):
    return None if isinstance(dim, bool) else dim


@derivative("var")
def _(grad, input, dim, unbiased, keepdim, correction):
    d = _dim_of(dim)
    dims = _reduced_dims(input.shape, d)
    c = _correction_of(unbiased, correction, dim)
    n = _count(input.shape, dims)
    g = _unsqueeze_to(grad, input.shape, dims, keepdim)
    centered = input - input.mean(dims, keepdim=True)
    return g * centered * (2.0 / max(n - c, 0) if n - c > 0 else math.inf)


@derivative("std")
def _(grad, input, dim, unbiased, keepdim, correction, result):
    d = _dim_of(dim)
    dims = _reduced_dims(input.shape, d)
    c = _correction_of(unbiased, correction, dim)
    n = _count(input.shape, dims)
    g = _unsqueeze_to(grad, input.shape, dims, keepdim)
    r = _unsqueeze_to(result, input.shape, dims, keepdim)
    centered = input - input.mean(dims, keepdim=True)
    # a zero std has a zero gradient (as in PyTorch), not 0/0
    scale = ec.where(r == 0, _zero(r), (r * (n - c)).reciprocal())
    return g * centered * scale


def _norm_grad(grad, input, p, dims, keepdim, result):
    g = _unsqueeze_to(grad, input.shape, dims, keepdim)
    r = _unsqueeze_to(result, input.shape, dims, keepdim)
    zero = _zero(input)
    if p == 2:
        return g * ec.where(r == 0, zero, input / r)
    if p == 1:
        return g * input.sign()
    if p == 0:
        return ec.zeros_like(input)
    if math.isinf(p):
        mask = input.abs() == r
        count = mask.sum(dims, keepdim=True)
        return _masked(mask, g * input.sign()) / count
    scale = ec.where(r == 0, zero, input * input.abs().pow(p - 2) / r.pow(p - 1))
    return g * scale


@derivative("norm")
def _(grad, input, p, dim, keepdim, result):
    dims = _reduced_dims(input.shape, dim)
    order = 2.0 if p in (None, "fro") else float(p)
    return _norm_grad(grad, input, order, dims, keepdim, result)


@derivative("vector_norm", inputs=("x",))
def _(grad, x, ord, dim, keepdim, result):
    dims = _reduced_dims(x.shape, dim)
    return _norm_grad(grad, x, float(ord), dims, keepdim, result)


@derivative("logsumexp")
def _(grad, input, dim, keepdim, result):
    dims = _reduced_dims(input.shape, dim)
    g = _unsqueeze_to(grad, input.shape, dims, keepdim)
    r = _unsqueeze_to(result, input.shape, dims, keepdim)
    return g * (input - r).exp()


def _rev_cumsum(g, d):
    return g.flip((d,)).cumsum(d).flip((d,))


@derivative("cumsum")
def _(grad, input_shape, dim):
    if not input_shape:
        return grad
    return _rev_cumsum(grad, dim % len(input_shape))


@derivative("cumprod")
def _(grad, input, dim, result):
    if input.dim() == 0:
        return grad
    d = dim % input.dim()
    if not bool((input == 0).any()):
        return _rev_cumsum(grad * _cj(result), d) / _cj(input)
    # zero-safe: d out_j / d x_i = prod_{k<=j, k!=i} x_k, summed with g_j over j >= i
    n = input.shape[d]
    pieces = []
    for i in range(n):
        others = input.clone()
        others.select(d, i).fill_(1)
        cp = others.cumprod(d)
        contrib = (grad * _cj(cp)).narrow(d, i, n - i).sum(d)
        pieces.append(contrib)
    return ec.stack(pieces, d)


@derivative("cummax", outputs=(0,))
def _(grad, input, dim, result):
    return _cum_extreme_grad(grad, input, dim, result[1])


@derivative("cummin", outputs=(0,))
def _(grad, input, dim, result):
    return _cum_extreme_grad(grad, input, dim, result[1])


def _cum_extreme_grad(grad, input, dim, indices):
    if input.dim() == 0:
        return grad
    d = dim % input.dim()
    n = input.shape[d]
    # out[j] = x[indices[j]]: grad_x[i] = sum_j grad[j] * (indices[j] == i)
    idx = indices.unsqueeze(-1)  # (..., n_j, ..., 1)
    shape = [1] * (input.dim() + 1)
    shape[-1] = n
    positions = ec.arange(n, device=input.device).reshape(shape)  # (..., 1, ..., n_i)
    mask = idx == positions  # j along d, i along the last dim
    g = _masked(mask, grad.unsqueeze(-1).expand(mask.shape)).sum(d)  # (..., n_i) in the last dim
    return g.movedim(-1, d)


_LOWEST = {
    "float64": -1.7976931348623157e308,
    "float32": -3.4028234663852886e38,
    "float16": -65504.0,
    "bfloat16": -3.3895313892515355e38,
}


@derivative("logcumsumexp")
def _(grad, input, dim, result):
    # log-space reverse cumulative sums of the positive and negative parts of
    # grad (the lowest finite value, not -inf, stands for log 0: no NaN)
    if input.dim() == 0:
        return grad
    d = dim % input.dim()
    lowest = ec.full((), _LOWEST[grad.dtype.name.split(".")[-1]], dtype=grad.dtype)
    log_abs = grad.abs().log()
    pos = ec.where(grad > 0, log_abs, lowest)
    neg = ec.where(grad < 0, log_abs, lowest)

    def rev_lcse(t):
        return t.flip((d,)).logcumsumexp(d).flip((d,))

    return (rev_lcse(pos - result) + input).exp() - (rev_lcse(neg - result) + input).exp()
