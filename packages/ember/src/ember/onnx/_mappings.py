"""Each op of ember_core's op table that ember.onnx.export can record, as ONNX nodes:
one entry per op, keyed by the op itself (``ember_core.OPS[name]``).

A mapping is ``fn(g, result, *args)``: ``g`` the graph being built (_tracer.Graph),
``result`` what the op returned (its dtype and shape are known), ``args`` the op's
canonical arguments in declaration order.  It adds nodes and binds the result's
tensor(s) to their output names.  An op a model uses that has no entry here makes
export raise UnsupportedOperatorError naming it.
"""

import math

import numpy as np

import ember_core as ec

from ._tracer import UnsupportedOperatorError, element_type, to_numpy

MAPPINGS = {}


def maps(*names):
    def register(fn):
        for name in names:
            op = ec.OPS[name]
            if op in MAPPINGS:
                raise RuntimeError(f"ember.onnx: two mappings for op '{name}'")
            MAPPINGS[op] = fn
        return fn

    return register


def _unsupported(op, why):
    raise UnsupportedOperatorError(f"ember.onnx.export: op '{op}' {why}")


def _operand(g, value, dtype):
    """The ONNX name of a tensor or Python number operand, as ``dtype``."""
    if isinstance(value, ec.Tensor):
        name = g.name(value)
        if value.dtype is not dtype:
            name = g.node("Cast", [name], to=element_type(g.onnx, dtype))
        return name
    return g.const(np.asarray(value, dtype=dtype.numpy))


def _axis(dim, ndim):
    return dim + ndim if dim < 0 else dim


# ------------------------------------------------------------ elementwise


def _unary(onnx_op):
    def fn(g, result, input, *rest):
        g.bind(result, g.node(onnx_op, [g.name(input)]))

    return fn


for _name, _onnx_op in [
    ("relu", "Relu"),
    ("sigmoid", "Sigmoid"),
    ("tanh", "Tanh"),
    ("exp", "Exp"),
    ("neg", "Neg"),
    ("sqrt", "Sqrt"),
    ("erf", "Erf"),
    ("contiguous", "Identity"),
    ("clone", "Identity"),
]:
    maps(_name)(_unary(_onnx_op))


@maps("gelu")
def _gelu(g, result, input, approximate="none", out=None):
    if g.opset >= 20:
        g.bind(result, g.node("Gelu", [g.name(input)], approximate=approximate))
        return
    if approximate != "none":
        _unsupported("gelu", f"with approximate={approximate!r} needs opset 20 or later")
    x = g.name(input)  # x * 0.5 * (1 + erf(x / sqrt(2)))
    dt = input.dtype.numpy
    erf = g.node("Erf", [g.node("Div", [x, g.const(np.asarray(math.sqrt(2.0), dt))])])
    half = g.node("Mul", [x, g.const(np.asarray(0.5, dt))])
    g.bind(result, g.node("Mul", [half, g.node("Add", [erf, g.const(np.asarray(1.0, dt))])]))


@maps("silu")
def _silu(g, result, input, out=None):
    x = g.name(input)
    g.bind(result, g.node("Mul", [x, g.node("Sigmoid", [x])]))


@maps("leaky_relu")
def _leaky_relu(g, result, input, negative_slope=0.01):
    g.bind(result, g.node("LeakyRelu", [g.name(input)], alpha=float(negative_slope)))


def _binary(onnx_op, scaled=False):
    def fn(g, result, input, other, *rest):
        dtype = result.dtype
        a, b = _operand(g, input, dtype), _operand(g, other, dtype)
        alpha = rest[0] if scaled and rest else 1
        if alpha != 1:
            b = g.node("Mul", [b, _operand(g, alpha, dtype)])
        g.bind(result, g.node(onnx_op, [a, b]))

    return fn


maps("add")(_binary("Add", scaled=True))
maps("sub")(_binary("Sub", scaled=True))
maps("mul")(_binary("Mul"))


@maps("div")
def _div(g, result, input, other, rounding_mode=None, out=None):
    if rounding_mode is not None:
        _unsupported("div", f"with rounding_mode={rounding_mode!r} has no mapping yet")
    dtype = result.dtype
    g.bind(result, g.node("Div", [_operand(g, input, dtype), _operand(g, other, dtype)]))


@maps("pow")
def _pow(g, result, input, exponent, out=None):
    dtype = result.dtype
    g.bind(result, g.node("Pow", [_operand(g, input, dtype), _operand(g, exponent, dtype)]))


# ------------------------------------------------------------ linear algebra


@maps("addmm")
def _addmm(g, result, input, mat1, mat2, beta=1, alpha=1, out=None):
    g.bind(
        result,
        g.node(
            "Gemm",
            [g.name(mat1), g.name(mat2), g.name(input)],
            alpha=float(alpha),
            beta=float(beta),
        ),
    )


@maps("matmul", "mm", "bmm")
def _matmul(g, result, input, other, out=None):
    g.bind(result, g.node("MatMul", [g.name(input), g.name(other)]))


# ------------------------------------------------------------ shapes and views


@maps("view")
def _view(g, result, input, shape):
    # A dim the input has at the same place is copied from it (0): a batch dim
    # declared dynamic stays dynamic through flatten-like reshapes.
    target = [
        0 if i < input.dim() and s == input.shape[i] and s != 0 else s
        for i, s in enumerate(result.shape)
    ]
    g.bind(result, g.node("Reshape", [g.name(input), g.ints(target)]))


@maps("transpose")
def _transpose(g, result, input, dim0, dim1):
    perm = list(range(input.dim()))
    a, b = _axis(dim0, input.dim()), _axis(dim1, input.dim())
    perm[a], perm[b] = perm[b], perm[a]
    g.bind(result, g.node("Transpose", [g.name(input)], perm=perm))


@maps("permute")
def _permute(g, result, input, dims):
    perm = [_axis(d, input.dim()) for d in dims]
    g.bind(result, g.node("Transpose", [g.name(input)], perm=perm))


@maps("expand")
def _expand(g, result, input, sizes):
    g.bind(result, g.node("Expand", [g.name(input), g.ints(result.shape)]))


@maps("unsqueeze")
def _unsqueeze(g, result, input, dim):
    g.bind(result, g.node("Unsqueeze", [g.name(input), g.ints([_axis(dim, result.dim())])]))


@maps("squeeze")
def _squeeze(g, result, input, dim=None):
    if dim is None:
        dims = [i for i, s in enumerate(input.shape) if s == 1]
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_axis(d, input.dim()) for d in dims if input.shape[d] == 1]
    if not dims:
        g.bind(result, g.node("Identity", [g.name(input)]))
        return
    g.bind(result, g.node("Squeeze", [g.name(input), g.ints(dims)]))


@maps("cat")
def _cat(g, result, tensors, dim=0, out=None):
    names = [_operand(g, t, result.dtype) for t in tensors]
    g.bind(result, g.node("Concat", names, axis=_axis(dim, result.dim())))


@maps("stack")
def _stack(g, result, tensors, dim=0, out=None):
    axis = _axis(dim, result.dim())
    names = [g.node("Unsqueeze", [_operand(g, t, result.dtype), g.ints([axis])]) for t in tensors]
    g.bind(result, g.node("Concat", names, axis=axis))


@maps("select")
def _select(g, result, input, dim, index):
    axis = _axis(dim, input.dim())
    index = index + input.shape[axis] if index < 0 else index
    scalar = g.const(np.asarray(index, dtype=np.int64), "index")  # 0-d: the axis goes
    g.bind(result, g.node("Gather", [g.name(input), scalar], axis=axis))


@maps("narrow")
def _narrow(g, result, input, dim, start, length):
    axis = _axis(dim, input.dim())
    start = start + input.shape[axis] if start < 0 else start
    g.bind(result, _slice(g, g.name(input), axis, start, start + length, 1))


def _slice(g, name, axis, start, stop, step):
    return g.node("Slice", [name, g.ints([start]), g.ints([stop]), g.ints([axis]), g.ints([step])])


@maps("embedding")
def _embedding(g, result, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    g.bind(result, g.node("Gather", [g.name(weight), g.name(indices)], axis=0))


@maps("index_select")
def _index_select(g, result, input, dim, index, out=None):
    axis = _axis(dim, input.dim())
    g.bind(result, g.node("Gather", [g.name(input), g.name(index)], axis=axis))


# ------------------------------------------------------------ nn


@maps("softmax")
def _softmax(g, result, input, dim, dtype=None):
    g.bind(result, g.node("Softmax", [_operand(g, input, result.dtype)], axis=dim))


@maps("log_softmax")
def _log_softmax(g, result, input, dim, dtype=None):
    g.bind(result, g.node("LogSoftmax", [_operand(g, input, result.dtype)], axis=dim))


@maps("convolution")
def _convolution(
    g, result, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
):
    if isinstance(padding, str):
        _unsupported("convolution", f"with padding={padding!r} has no mapping yet")
    inputs = [g.name(input), g.name(weight)] + ([g.name(bias)] if bias is not None else [])
    attrs = dict(
        strides=list(stride),
        pads=list(padding) * 2,
        dilations=list(dilation),
        group=int(groups),
        kernel_shape=list(weight.shape[2:]),
    )
    if transposed:
        g.bind(
            result, g.node("ConvTranspose", inputs, output_padding=list(output_padding), **attrs)
        )
    else:
        g.bind(result, g.node("Conv", inputs, **attrs))


@maps("_avg_pool")
def _avg_pool(g, result, input, kernel_size, stride, padding, ceil_mode, count_include_pad, *rest):
    if rest and rest[0] is not None:
        _unsupported("_avg_pool", "with divisor_override has no mapping yet")
    g.bind(
        result,
        g.node(
            "AveragePool",
            [g.name(input)],
            kernel_shape=list(kernel_size),
            strides=list(stride),
            pads=list(padding) * 2,
            ceil_mode=int(ceil_mode),
            count_include_pad=int(count_include_pad),
        ),
    )


@maps("_adaptive_avg_pool")
def _adaptive_avg_pool(g, result, input, output_size):
    spatial = list(input.shape[2:])
    if all(s == 1 for s in result.shape[2:]):
        g.bind(result, g.node("GlobalAveragePool", [g.name(input)]))
        return
    if any(n % m for n, m in zip(spatial, result.shape[2:])):
        _unsupported("_adaptive_avg_pool", f"from {spatial} to {output_size} (not a divisor)")
    kernel = [n // m for n, m in zip(spatial, result.shape[2:])]
    g.bind(result, g.node("AveragePool", [g.name(input)], kernel_shape=kernel, strides=kernel))


@maps("native_layer_norm")
def _layer_norm(g, result, input, normalized_shape, weight, bias, eps):
    if g.opset < 17:
        _unsupported("native_layer_norm", "needs opset 17 or later (LayerNormalization)")
    shape = list(normalized_shape)
    w = weight if weight is not None else ec.ones(shape, dtype=input.dtype)
    inputs = [g.name(input), g.name(w)] + ([g.name(bias)] if bias is not None else [])
    out = g.node("LayerNormalization", inputs, axis=-len(shape), epsilon=float(eps))
    g.bind(result[0], out)


@maps("_lstm_cell")
def _lstm_cell(g, result, input, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None):
    """gates = x W_ih^T + b_ih + h W_hh^T + b_hh; i, f, g, o = chunks; c' = f c + i g;
    h' = o tanh(c')."""
    gates = g.node(
        "Add",
        [
            g.node("MatMul", [g.name(input), g.const(to_numpy(w_ih).T.copy())]),
            g.node("MatMul", [g.name(hx), g.const(to_numpy(w_hh).T.copy())]),
        ],
    )
    for b in (b_ih, b_hh):
        if b is not None:
            gates = g.node("Add", [gates, g.name(b)])
    hidden = w_hh.shape[1]
    i, f, cell, o = g.node("Split", [gates, g.ints([hidden] * 4)], outputs=4, axis=-1)
    c_new = g.node(
        "Add",
        [
            g.node("Mul", [g.node("Sigmoid", [f]), g.name(cx)]),
            g.node("Mul", [g.node("Sigmoid", [i]), g.node("Tanh", [cell])]),
        ],
    )
    h_new = g.node("Mul", [g.node("Sigmoid", [o]), g.node("Tanh", [c_new])])
    g.bind(result[0], h_new)
    g.bind(result[1], c_new)


# ------------------------------------------------------------ more elementwise


for _name, _onnx_op in [
    ("abs", "Abs"),
    ("log", "Log"),
    ("reciprocal", "Reciprocal"),
    ("logical_not", "Not"),
]:
    maps(_name)(_unary(_onnx_op))


@maps("rsqrt")
def _rsqrt(g, result, input, out=None):
    g.bind(result, g.node("Reciprocal", [g.node("Sqrt", [g.name(input)])]))


@maps("_to_copy")
def _to_copy(g, result, input, dtype, device, non_blocking=False):
    g.bind(result, g.node("Cast", [g.name(input)], to=element_type(g.onnx, result.dtype)))


def _compare(onnx_op, negate=False):
    def fn(g, result, input, other, out=None):
        if isinstance(other, ec.Tensor):
            dtype = ec.promote_types(input.dtype, other.dtype)
        else:
            dtype = input.dtype
        out = g.node(onnx_op, [_operand(g, input, dtype), _operand(g, other, dtype)])
        g.bind(result, g.node("Not", [out]) if negate else out)

    return fn


maps("gt")(_compare("Greater"))
maps("lt")(_compare("Less"))
maps("ge")(_compare("GreaterOrEqual"))
maps("le")(_compare("LessOrEqual"))
maps("eq")(_compare("Equal"))
maps("ne")(_compare("Equal", negate=True))


maps("maximum")(_binary("Max"))
maps("minimum")(_binary("Min"))


@maps("masked_fill")
def _masked_fill(g, result, input, mask, value):
    inputs = [g.name(mask), _operand(g, value, result.dtype), g.name(input)]
    g.bind(result, g.node("Where", inputs))


@maps("clamp")
def _clamp(g, result, input, min=None, max=None, out=None):
    x = _operand(g, input, result.dtype)
    if isinstance(min, ec.Tensor) or isinstance(max, ec.Tensor):  # elementwise bounds
        if min is not None:
            x = g.node("Max", [x, _operand(g, min, result.dtype)])
        if max is not None:
            x = g.node("Min", [x, _operand(g, max, result.dtype)])
        g.bind(result, x)
        return
    bounds = ["" if b is None else _operand(g, b, result.dtype) for b in (min, max)]
    g.bind(result, g.node("Clip", [x, *bounds]))


@maps("hardtanh")
def _hardtanh(g, result, input, min_val=-1.0, max_val=1.0):
    bounds = [_operand(g, b, result.dtype) for b in (min_val, max_val)]
    g.bind(result, g.node("Clip", [g.name(input), *bounds]))


def _trilu(upper):
    def fn(g, result, input, diagonal=0, out=None):
        k = g.const(np.asarray(diagonal, dtype=np.int64), "k")  # a 0-d input
        g.bind(result, g.node("Trilu", [g.name(input), k], upper=upper))

    return fn


maps("tril")(_trilu(0))
maps("triu")(_trilu(1))


# ------------------------------------------------------------ reductions


def _reduce_axes(input, dim):
    if dim is None or dim == ():
        return list(range(input.dim()))
    return [_axis(d, input.dim()) for d in ([dim] if isinstance(dim, int) else dim)]


def _reduce(g, onnx_op, x, axes, keepdim):
    """onnx_op over ``axes``; the axes are an input from opset 18 on (13 for ReduceSum)."""
    if g.opset >= (13 if onnx_op == "ReduceSum" else 18):
        return g.node(onnx_op, [x, g.ints(axes)], keepdims=int(keepdim))
    return g.node(onnx_op, [x], axes=axes, keepdims=int(keepdim))


def _reduction(onnx_op):
    """Reduce over ``dim`` (None: all)."""

    def fn(g, result, input, dim=None, keepdim=False, *rest):
        dtype = result.dtype if isinstance(result, ec.Tensor) else input.dtype
        out = _reduce(g, onnx_op, _operand(g, input, dtype), _reduce_axes(input, dim), keepdim)
        if isinstance(result, ec.Tensor):
            g.bind(result, out)
        else:  # max(input, dim) returns (values, indices): the indices are mapped apart
            g.bind(result[0], out)

    return fn


maps("sum")(_reduction("ReduceSum"))
maps("mean")(_reduction("ReduceMean"))
maps("amax")(_reduction("ReduceMax"))
maps("amin")(_reduction("ReduceMin"))


@maps("repeat")
def _repeat(g, result, input, sizes):
    name = g.name(input)
    extra = len(sizes) - input.dim()
    if extra:
        name = g.node("Reshape", [name, g.ints([1] * extra + list(input.shape))])
    g.bind(result, g.node("Tile", [name, g.ints(sizes)]))


# ------------------------------------------------------------ unary math and activations


for _name, _onnx_op in [
    ("sin", "Sin"),
    ("cos", "Cos"),
    ("tan", "Tan"),
    ("asin", "Asin"),
    ("acos", "Acos"),
    ("atan", "Atan"),
    ("sinh", "Sinh"),
    ("cosh", "Cosh"),
    ("asinh", "Asinh"),
    ("acosh", "Acosh"),
    ("atanh", "Atanh"),
    ("floor", "Floor"),
    ("ceil", "Ceil"),
    ("sign", "Sign"),
    ("isnan", "IsNaN"),
    ("softsign", "Softsign"),
    ("positive", "Identity"),
    ("detach", "Identity"),
]:
    maps(_name)(_unary(_onnx_op))


@maps("isinf")
def _isinf(g, result, input, out=None):
    if not input.dtype.is_floating_point:  # IsInf takes floats only; ints are never inf
        g.bind(result, g.node("Not", [g.node("Equal", [g.name(input), g.name(input)])]))
        return
    g.bind(result, g.node("IsInf", [g.name(input)]))


@maps("round")
def _round(g, result, input, decimals=0, out=None):
    x = g.name(input)
    if decimals == 0:  # ONNX Round rounds half to even, as PyTorch does
        g.bind(result, g.node("Round", [x]))
        return
    scale = _operand(g, 10.0**decimals, input.dtype)
    g.bind(result, g.node("Div", [g.node("Round", [g.node("Mul", [x, scale])]), scale]))


@maps("trunc")
def _trunc(g, result, input, out=None):
    x = g.name(input)
    negative = g.node("Less", [x, _operand(g, 0, input.dtype)])
    g.bind(result, g.node("Where", [negative, g.node("Ceil", [x]), g.node("Floor", [x])]))


@maps("square")
def _square(g, result, input, out=None):
    x = g.name(input)
    g.bind(result, g.node("Mul", [x, x]))


@maps("log1p")
def _log1p(g, result, input, out=None):
    one = _operand(g, 1, result.dtype)
    g.bind(result, g.node("Log", [g.node("Add", [_operand(g, input, result.dtype), one])]))


@maps("expm1")
def _expm1(g, result, input, out=None):
    one = _operand(g, 1, result.dtype)
    g.bind(result, g.node("Sub", [g.node("Exp", [_operand(g, input, result.dtype)]), one]))


def _log_base(base):
    def fn(g, result, input, out=None):
        x = g.node("Log", [_operand(g, input, result.dtype)])
        g.bind(result, g.node("Div", [x, _operand(g, math.log(base), result.dtype)]))

    return fn


maps("log2")(_log_base(2.0))
maps("log10")(_log_base(10.0))


@maps("exp2")
def _exp2(g, result, input, out=None):
    two = _operand(g, 2, result.dtype)
    g.bind(result, g.node("Pow", [two, _operand(g, input, result.dtype)]))


@maps("bitwise_not")
def _bitwise_not(g, result, input, out=None):
    if input.dtype is ec.bool:
        g.bind(result, g.node("Not", [g.name(input)]))
    elif g.opset >= 18:
        g.bind(result, g.node("BitwiseNot", [g.name(input)]))
    else:
        _unsupported("bitwise_not", "on integers needs opset 18 or later (BitwiseNot)")


@maps("softplus")
def _softplus(g, result, input, beta=1.0, threshold=20.0, out=None):
    """x where beta*x > threshold (PyTorch's linear region), else log(1+exp(beta*x))/beta."""
    x = g.name(input)
    bx = g.node("Mul", [x, _operand(g, beta, input.dtype)])
    soft = g.node("Div", [g.node("Softplus", [bx]), _operand(g, beta, input.dtype)])
    linear = g.node("Greater", [bx, _operand(g, threshold, input.dtype)])
    g.bind(result, g.node("Where", [linear, x, soft]))


@maps("elu")
def _elu(g, result, input, alpha=1.0):
    g.bind(result, g.node("Elu", [g.name(input)], alpha=float(alpha)))


@maps("celu")
def _celu(g, result, input, alpha=1.0):
    if input.dtype is not ec.float32:  # Celu is defined for float only
        _unsupported("celu", f"on {input.dtype} has no mapping (ONNX Celu takes float32)")
    g.bind(result, g.node("Celu", [g.name(input)], alpha=float(alpha)))


@maps("selu")
def _selu(g, result, input, out=None):
    # PyTorch's constants, to all the digits it uses (ONNX's defaults are rounded)
    g.bind(
        result,
        g.node(
            "Selu",
            [g.name(input)],
            alpha=1.6732632423543772848170429916717,
            gamma=1.0507009873554804934193349852946,
        ),
    )


@maps("hardsigmoid")
def _hardsigmoid(g, result, input, out=None):
    g.bind(result, g.node("HardSigmoid", [g.name(input)], alpha=1.0 / 6.0, beta=0.5))


@maps("hardswish")
def _hardswish(g, result, input, out=None):
    g.bind(result, g.node("HardSwish", [g.name(input)]))


@maps("mish")
def _mish(g, result, input, out=None):
    x = g.name(input)  # x * tanh(softplus(x)): Mish itself needs opset 18
    if g.opset >= 18:
        g.bind(result, g.node("Mish", [x]))
    else:
        g.bind(result, g.node("Mul", [x, g.node("Tanh", [g.node("Softplus", [x])])]))


@maps("logsigmoid")
def _logsigmoid(g, result, input, out=None):
    x = g.name(input)  # -softplus(-x), stable for large |x|
    g.bind(result, g.node("Neg", [g.node("Softplus", [g.node("Neg", [x])])]))


@maps("hardshrink")
def _hardshrink(g, result, input, lambd=0.5):
    g.bind(result, g.node("Shrink", [g.name(input)], lambd=float(lambd), bias=0.0))


@maps("softshrink")
def _softshrink(g, result, input, lambd=0.5):
    g.bind(result, g.node("Shrink", [g.name(input)], lambd=float(lambd), bias=float(lambd)))


@maps("threshold")
def _threshold(g, result, input, threshold, value):
    x = g.name(input)
    keep = g.node("Greater", [x, _operand(g, threshold, input.dtype)])
    g.bind(result, g.node("Where", [keep, x, _operand(g, value, input.dtype)]))


# ------------------------------------------------------------ more binary and ternary


@maps("fmod")
def _fmod(g, result, input, other, out=None):
    dtype = result.dtype
    a, b = _operand(g, input, dtype), _operand(g, other, dtype)
    g.bind(result, g.node("Mod", [a, b], fmod=1))


@maps("remainder")
def _remainder(g, result, input, other, out=None):
    """Python's modulo (the sign of the divisor): Mod(fmod=0) for integers,
    a - floor(a / b) * b for floats (ONNX Mod takes fmod=1 for floats)."""
    dtype = result.dtype
    a, b = _operand(g, input, dtype), _operand(g, other, dtype)
    if not dtype.is_floating_point:
        g.bind(result, g.node("Mod", [a, b], fmod=0))
        return
    floor = g.node("Floor", [g.node("Div", [a, b])])
    g.bind(result, g.node("Sub", [a, g.node("Mul", [floor, b])]))


def _logical(onnx_op):
    def fn(g, result, input, other, out=None):
        a, b = _operand(g, input, ec.bool), _operand(g, other, ec.bool)
        g.bind(result, g.node(onnx_op, [a, b]))

    return fn


maps("logical_and")(_logical("And"))
maps("logical_or")(_logical("Or"))
maps("logical_xor")(_logical("Xor"))


def _bitwise(logical_op, bitwise_op):
    """On bools the logical op; on integers the Bitwise* ops of opset 18."""

    def fn(g, result, input, other, out=None):
        if result.dtype is ec.bool:
            _logical(logical_op)(g, result, input, other)
            return
        if g.opset < 18:
            _unsupported(bitwise_op, "on integers needs opset 18 or later")
        dtype = result.dtype
        a, b = _operand(g, input, dtype), _operand(g, other, dtype)
        g.bind(result, g.node(bitwise_op, [a, b]))

    return fn


maps("bitwise_and")(_bitwise("And", "BitwiseAnd"))
maps("bitwise_or")(_bitwise("Or", "BitwiseOr"))
maps("bitwise_xor")(_bitwise("Xor", "BitwiseXor"))


@maps("lerp")
def _lerp(g, result, input, end, weight, out=None):
    dtype = result.dtype
    a, b, w = (_operand(g, v, dtype) for v in (input, end, weight))
    g.bind(result, g.node("Add", [a, g.node("Mul", [w, g.node("Sub", [b, a])])]))


def _addc(onnx_op):
    """addcmul/addcdiv: input + value * (tensor1 op tensor2)."""

    def fn(g, result, input, tensor1, tensor2, value=1, out=None):
        dtype = result.dtype
        t = g.node(onnx_op, [_operand(g, tensor1, dtype), _operand(g, tensor2, dtype)])
        if value != 1:
            t = g.node("Mul", [t, _operand(g, value, dtype)])
        g.bind(result, g.node("Add", [_operand(g, input, dtype), t]))

    return fn


maps("addcmul")(_addc("Mul"))
maps("addcdiv")(_addc("Div"))


@maps("baddbmm")
def _baddbmm(g, result, input, batch1, batch2, beta=1, alpha=1, out=None):
    dtype = result.dtype
    prod = g.node("MatMul", [g.name(batch1), g.name(batch2)])
    if alpha != 1:
        prod = g.node("Mul", [prod, _operand(g, alpha, dtype)])
    if beta == 0:  # PyTorch ignores input (even its NaNs) when beta is 0
        g.bind(result, g.node("Identity", [prod]))
        return
    base = _operand(g, input, dtype)
    if beta != 1:
        base = g.node("Mul", [base, _operand(g, beta, dtype)])
    g.bind(result, g.node("Add", [base, prod]))


@maps("outer")
def _outer(g, result, input, vec2, out=None):
    dtype = result.dtype
    a = g.node("Unsqueeze", [_operand(g, input, dtype), g.ints([1])])
    b = g.node("Unsqueeze", [_operand(g, vec2, dtype), g.ints([0])])
    g.bind(result, g.node("Mul", [a, b]))


# ------------------------------------------------------------ more reductions, sorting


maps("prod")(_reduction("ReduceProd"))
maps("logsumexp")(_reduction("ReduceLogSumExp"))


def _all_or_any(onnx_op):
    def fn(g, result, input, dim=None, keepdim=False, out=None):
        x = g.node(
            "Cast",
            [g.node("Cast", [g.name(input)], to=element_type(g.onnx, ec.bool))],
            to=element_type(g.onnx, ec.int32),
        )
        out = _reduce(g, onnx_op, x, _reduce_axes(input, dim), keepdim)
        g.bind(result, g.node("Cast", [out], to=element_type(g.onnx, ec.bool)))

    return fn


maps("all")(_all_or_any("ReduceMin"))
maps("any")(_all_or_any("ReduceMax"))


def _moments(g, result, input, dim, unbiased, keepdim, correction):
    """(x - mean)^2 summed over dim, divided by N - correction."""
    if correction is None:
        correction = 0 if unbiased is False else 1
    axes = _reduce_axes(input, dim)
    n = 1
    for a in axes:
        n *= input.shape[a]
    x = _operand(g, input, result.dtype)
    centred = g.node("Sub", [x, _reduce(g, "ReduceMean", x, axes, True)])
    total = _reduce(g, "ReduceSum", g.node("Mul", [centred, centred]), axes, keepdim)
    return g.node("Div", [total, _operand(g, max(n - correction, 0), result.dtype)])


@maps("var")
def _var(g, result, input, dim=None, unbiased=None, keepdim=False, correction=None, out=None):
    g.bind(result, _moments(g, result, input, dim, unbiased, keepdim, correction))


@maps("std")
def _std(g, result, input, dim=None, unbiased=None, keepdim=False, correction=None, out=None):
    var = _moments(g, result, input, dim, unbiased, keepdim, correction)
    g.bind(result, g.node("Sqrt", [var]))


@maps("vector_norm")
def _vector_norm(g, result, x, ord=2, dim=None, keepdim=False, dtype=None):
    axes = _reduce_axes(x, dim)
    v = _operand(g, x, result.dtype)
    if ord == 2:
        out = _reduce(g, "ReduceL2", v, axes, keepdim)
    elif ord == 1:
        out = _reduce(g, "ReduceL1", v, axes, keepdim)
    elif ord == math.inf:
        out = _reduce(g, "ReduceMax", g.node("Abs", [v]), axes, keepdim)
    elif ord == -math.inf:
        out = _reduce(g, "ReduceMin", g.node("Abs", [v]), axes, keepdim)
    elif ord == 0:
        nonzero = g.node(
            "Cast",
            [g.node("Not", [g.node("Equal", [v, _operand(g, 0, result.dtype)])])],
            to=element_type(g.onnx, result.dtype),
        )
        out = _reduce(g, "ReduceSum", nonzero, axes, keepdim)
    else:
        p = _operand(g, ord, result.dtype)
        powered = g.node("Pow", [g.node("Abs", [v]), p])
        out = g.node(
            "Pow",
            [
                _reduce(g, "ReduceSum", powered, axes, keepdim),
                _operand(g, 1.0 / ord, result.dtype),
            ],
        )
    g.bind(result, out)


@maps("cumsum")
def _cumsum(g, result, input, dim, dtype=None, out=None):
    axis = g.const(np.asarray(_axis(dim, input.dim()), dtype=np.int64), "axis")
    g.bind(result, g.node("CumSum", [_operand(g, input, result.dtype), axis]))


def _arg_reduce(onnx_op):
    def fn(g, result, input, dim=None, keepdim=False, out=None):
        x = g.name(input)
        if input.dtype is ec.bool:  # ArgMax/ArgMin take numbers
            x = g.node("Cast", [x], to=element_type(g.onnx, ec.int32))
        if dim is None:  # over the flattened input; keepdim keeps every dim as 1
            flat = g.node(onnx_op, [g.node("Reshape", [x, g.ints([-1])])], axis=0, keepdims=0)
            shape = [1] * input.dim() if keepdim else []
            g.bind(result, g.node("Reshape", [flat, g.ints(shape)]))
            return
        axis = _axis(dim, input.dim()) if input.dim() else 0
        g.bind(result, g.node(onnx_op, [x], axis=axis, keepdims=int(keepdim)))

    return fn


maps("argmax")(_arg_reduce("ArgMax"))
maps("argmin")(_arg_reduce("ArgMin"))


def _max_or_min_with_indices(reduce_op, arg_op, binary_op):
    """max(input), max(input, other), max(input, dim, keepdim) -> (values, indices)."""
    reduce, binary, arg = _reduction(reduce_op), _binary(binary_op), _arg_reduce(arg_op)

    def fn(g, result, input, dim=None, keepdim=False, out=None):
        if isinstance(dim, ec.Tensor):
            binary(g, result, input, dim)
            return
        reduce(g, result, input, dim, keepdim)
        if isinstance(result, (tuple, list)):
            arg(g, result[1], input, dim, keepdim)

    return fn


maps("max")(_max_or_min_with_indices("ReduceMax", "ArgMax", "Max"))
maps("min")(_max_or_min_with_indices("ReduceMin", "ArgMin", "Min"))


def _top_k(g, input, k, dim, largest):
    """TopK's (values, indices); ties keep the lower index first (ONNX's rule)."""
    axis = _axis(dim, input.dim()) if input.dim() else 0
    x = g.name(input)
    if input.dim() == 0:
        x = g.node("Reshape", [x, g.ints([1])])
    return g.node("TopK", [x, g.ints([k])], outputs=2, axis=axis, largest=int(largest), sorted=1)


@maps("topk")
def _topk(g, result, input, k, dim=-1, largest=True, sorted=True, out=None):
    values, indices = _top_k(g, input, k, dim, largest)
    g.bind(result[0], values)
    g.bind(result[1], indices)


@maps("sort")
def _sort(g, result, input, dim=-1, descending=False, stable=False, out=None):
    n = input.shape[_axis(dim, input.dim())] if input.dim() else 1
    values, indices = _top_k(g, input, n, dim, descending)
    if input.dim() == 0:
        values = g.node("Reshape", [values, g.ints([])])
        indices = g.node("Reshape", [indices, g.ints([])])
    g.bind(result[0], values)
    g.bind(result[1], indices)


@maps("argsort")
def _argsort(g, result, input, dim=-1, descending=False, stable=False):
    n = input.shape[_axis(dim, input.dim())] if input.dim() else 1
    indices = _top_k(g, input, n, dim, descending)[1]
    if input.dim() == 0:
        indices = g.node("Reshape", [indices, g.ints([])])
    g.bind(result, indices)


# ------------------------------------------------------------ indexing, gathering


@maps("gather")
def _gather(g, result, input, dim, index, sparse_grad=False, out=None):
    axis = _axis(dim, input.dim())
    g.bind(result, g.node("GatherElements", [g.name(input), g.name(index)], axis=axis))


def _scatter_elements(g, result, input, dim, index, src, reduction):
    axis = _axis(dim, input.dim())
    if not isinstance(src, ec.Tensor):  # a scalar value: one per index
        src = ec.full(tuple(index.shape), src, dtype=input.dtype)
    attrs = {"axis": axis}
    if reduction != "none":
        if g.opset < 16:
            _unsupported("scatter", f"with reduce={reduction!r} needs opset 16 or later")
        attrs["reduction"] = reduction
    inputs = [g.name(input), g.name(index), _operand(g, src, result.dtype)]
    g.bind(result, g.node("ScatterElements", inputs, **attrs))


@maps("scatter")
def _scatter(g, result, input, dim, index, src=None, value=None, reduce=None, out=None):
    reduction = {None: "none", "add": "add", "multiply": "mul"}.get(reduce)
    if reduction is None:
        _unsupported("scatter", f"with reduce={reduce!r} has no mapping")
    _scatter_elements(g, result, input, dim, index, value if src is None else src, reduction)


@maps("scatter_add")
def _scatter_add(g, result, input, dim, index, src):
    _scatter_elements(g, result, input, dim, index, src, "add")


def _index_tensor(g, key, size):
    """An int64 index for Gather from a tensor or list index on an axis of ``size``
    (negative indices count from the end, as Gather allows)."""
    if isinstance(key, list):
        key = ec.tensor(key, dtype=ec.int64)
    if key.dtype is ec.bool:
        return None
    name = g.name(key)
    if key.dtype is not ec.int64:
        name = g.node("Cast", [name], to=element_type(g.onnx, ec.int64))
    return name


@maps("__getitem__")
def _getitem(g, result, input, key):
    """Basic indexing (ints, slices, Ellipsis, None), plus one tensor or list index
    (Gather on its axis) or one boolean mask covering the leading dims (Compress)."""
    keys = list(key) if isinstance(key, tuple) else [key]
    advanced = [
        i
        for i, k in enumerate(keys)
        if isinstance(k, (ec.Tensor, list)) and not isinstance(k, bool)
    ]
    if any(isinstance(k, bool) for k in keys) or len(advanced) > 1:
        _unsupported(
            "__getitem__", "with several tensor indices or bool scalars has no mapping yet"
        )
    used = sum(
        k.dim() if isinstance(k, ec.Tensor) and k.dtype is ec.bool else 1
        for k in keys
        if k is not None and k is not Ellipsis
    )
    if Ellipsis in keys:
        at = keys.index(Ellipsis)
        keys[at : at + 1] = [slice(None)] * (input.dim() - used)
        advanced = [i for i, k in enumerate(keys) if isinstance(k, (ec.Tensor, list))]
    name = g.name(input)
    axis, squeeze, unsqueeze, out_axis = 0, [], [], 0
    gather = None  # (input axis, output axis, the index) of the advanced index
    for k in keys:
        if k is None:
            unsqueeze.append(out_axis)
            out_axis += 1
            continue
        if isinstance(k, (ec.Tensor, list)):
            if isinstance(k, ec.Tensor) and k.dtype is ec.bool:
                if axis != 0 or (squeeze or unsqueeze):
                    _unsupported(
                        "__getitem__", "with a boolean mask after other indices has no mapping yet"
                    )
                gather = ("mask", k)
                axis += k.dim()
                out_axis += 1
                continue
            gather = (axis, out_axis, k)
            axis += 1
            out_axis += 1
            continue
        size = input.shape[axis]
        if isinstance(k, int):
            i = k + size if k < 0 else k
            name = _slice(g, name, axis, i, i + 1, 1)
            squeeze.append(axis)
        else:
            start, stop, step = k.indices(size)
            if (start, stop, step) != (0, size, 1):
                name = _slice(g, name, axis, start, stop, step)
            out_axis += 1
        axis += 1
    if gather is not None and gather[0] == "mask":
        mask = gather[1]  # the masked leading dims flatten into one: Compress on axis 0
        rest = list(input.shape[mask.dim() :])
        flat = g.node("Reshape", [name, g.ints([-1] + rest)])
        flat_mask = g.node("Reshape", [g.name(mask), g.ints([-1])])
        name = g.node("Compress", [flat, flat_mask], axis=0)
        squeeze = [a - mask.dim() + 1 for a in squeeze]
    elif gather is not None:
        in_axis, _, index = gather
        index_name = _index_tensor(g, index, input.shape[in_axis])
        # Gather puts the index's dims where the axis was; squeezes after it move
        index_dims = index.dim() if isinstance(index, ec.Tensor) else np.ndim(index)
        name = g.node("Gather", [name, index_name], axis=in_axis)
        squeeze = [a if a < in_axis else a + index_dims - 1 for a in squeeze]
    if squeeze:
        name = g.node("Squeeze", [name, g.ints(squeeze)])
    if unsqueeze:
        name = g.node("Unsqueeze", [name, g.ints(unsqueeze)])
    if name == g.name(input):
        name = g.node("Identity", [name])
    g.bind(result, name)


@maps("nonzero")
def _nonzero(g, result, input, out=None, as_tuple=False):
    where = g.node("NonZero", [g.name(input)])  # (ndim, count)
    if as_tuple:
        rows = [where]
        if input.dim() > 1:
            rows = g.node("Split", [where, g.ints([1] * input.dim())], outputs=input.dim(), axis=0)
        for r, row in zip(result, rows):
            g.bind(r, g.node("Squeeze", [row, g.ints([0])]))
        return
    g.bind(result, g.node("Transpose", [where], perm=[1, 0]))


@maps("where")
def _where(g, result, condition, input=None, other=None, out=None):
    if input is None and other is None:  # where(condition) is nonzero(as_tuple=True)
        _nonzero(g, result, condition, None, True)
        return
    dtype = result.dtype
    inputs = [g.name(condition), _operand(g, input, dtype), _operand(g, other, dtype)]
    g.bind(result, g.node("Where", inputs))


@maps("one_hot")
def _one_hot(g, result, tensor, num_classes=-1):
    depth = g.const(np.asarray(result.shape[-1], dtype=np.int64), "depth")
    values = g.const(np.asarray([0, 1], dtype=np.int64), "values")
    g.bind(result, g.node("OneHot", [g.name(tensor), depth, values], axis=-1))


# ------------------------------------------------------------ creation from a tensor's shape


def _filled_like(g, result, input, value):
    shape = g.node("Shape", [g.name(input)])
    fill = np.asarray([value], dtype=result.dtype.numpy)  # a one-element tensor attribute
    tensor = g.onnx.numpy_helper.from_array(fill, g.fresh("fill"))
    g.bind(result, g.node("ConstantOfShape", [shape], value=tensor))


@maps("zeros_like")
def _zeros_like(g, result, input, dtype=None, device=None, requires_grad=False, memory_format=None):
    _filled_like(g, result, input, 0)


@maps("ones_like")
def _ones_like(g, result, input, dtype=None, device=None, requires_grad=False, memory_format=None):
    _filled_like(g, result, input, 1)


@maps("full_like")
def _full_like(
    g, result, input, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None
):
    if isinstance(fill_value, ec.Tensor):
        _unsupported("full_like", "with a tensor fill value has no mapping yet")
    _filled_like(g, result, input, fill_value)


# ------------------------------------------------------------ reordering, padding, resampling


@maps("flip")
def _flip(g, result, input, dims, out=None):
    dims = [dims] if isinstance(dims, int) else list(dims)
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = list(dims[0])
    axes = [_axis(d, input.dim()) for d in dims]
    if not axes:
        g.bind(result, g.node("Identity", [g.name(input)]))
        return
    big = np.iinfo(np.int64)
    g.bind(
        result,
        g.node(
            "Slice",
            [
                g.name(input),
                g.ints([-1] * len(axes)),
                g.ints([big.min] * len(axes)),
                g.ints(axes),
                g.ints([-1] * len(axes)),
            ],
        ),
    )


@maps("roll")
def _roll(g, result, input, shifts, dims=None, out=None):
    name = g.name(input)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    if dims is None:  # roll the flattened tensor, then restore the shape
        n = input.numel()
        flat = g.node("Reshape", [name, g.ints([-1])])
        s = shifts[0] % n if n else 0
        if s:
            flat = g.node(
                "Concat", [_slice(g, flat, 0, n - s, n, 1), _slice(g, flat, 0, 0, n - s, 1)], axis=0
            )
        g.bind(result, g.node("Reshape", [flat, g.ints(input.shape)]))
        return
    dims = [dims] if isinstance(dims, int) else list(dims)
    for shift, dim in zip(shifts, dims):
        axis = _axis(dim, input.dim())
        n = input.shape[axis]
        s = shift % n if n else 0
        if s:
            name = g.node(
                "Concat",
                [_slice(g, name, axis, n - s, n, 1), _slice(g, name, axis, 0, n - s, 1)],
                axis=axis,
            )
    if name == g.name(input):
        name = g.node("Identity", [name])
    g.bind(result, name)


def _onnx_pads(ndim, pad):
    """PyTorch's pad (last dim first, (begin, end) pairs) as ONNX's (all begins, then all ends)."""
    begins, ends = [0] * ndim, [0] * ndim
    for i in range(len(pad) // 2):
        begins[ndim - 1 - i] = pad[2 * i]
        ends[ndim - 1 - i] = pad[2 * i + 1]
    return begins + ends


@maps("constant_pad_nd")
def _constant_pad(g, result, input, pad, value=0):
    pads = g.ints(_onnx_pads(input.dim(), list(pad)))
    g.bind(result, g.node("Pad", [g.name(input), pads, _operand(g, value, input.dtype)]))


@maps("_pad_mode")
def _pad_mode(g, result, input, pad, mode):
    onnx_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    if onnx_mode == "wrap" and g.opset < 19:
        _unsupported("_pad_mode", "with mode='circular' needs opset 19 or later (Pad wrap)")
    if any(p < 0 for p in pad):
        _unsupported("_pad_mode", f"with negative padding {tuple(pad)} has no mapping yet")
    pads = g.ints(_onnx_pads(input.dim(), list(pad)))
    g.bind(result, g.node("Pad", [g.name(input), pads], mode=onnx_mode))


def _resize(g, result, input, output_size, scales, **attrs):
    """Resize to output_size; with PyTorch's scales given, those scales map the
    coordinates (as PyTorch does when scale_factor is passed)."""
    empty = ""
    if scales is not None and all(s is not None for s in scales):
        sc = np.asarray([1.0, 1.0] + [float(s) for s in scales], dtype=np.float32)
        expected = [int(math.floor(n * s)) for n, s in zip(input.shape[2:], scales)]
        if expected == list(output_size):
            out = g.node("Resize", [g.name(input), empty, g.const(sc, "scales")], **attrs)
            g.bind(result, out)
            return
    sizes = g.ints(list(input.shape[:2]) + list(output_size))
    g.bind(result, g.node("Resize", [g.name(input), empty, empty, sizes], **attrs))


@maps("_upsample_nearest")
def _upsample_nearest(g, result, input, output_size, scales, exact):
    if exact:  # nearest-exact: round((dst + 0.5) * in/out - 0.5) with halves up
        attrs = dict(coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil")
    else:  # nearest: floor(dst * in/out)
        attrs = dict(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    _resize(g, result, input, output_size, scales, mode="nearest", **attrs)


def _upsample_interpolating(onnx_mode, extra):
    def fn(g, result, input, output_size, align_corners, scales):
        transform = "align_corners" if align_corners else "pytorch_half_pixel"
        _resize(
            g,
            result,
            input,
            output_size,
            scales,
            mode=onnx_mode,
            coordinate_transformation_mode=transform,
            **extra,
        )

    return fn


maps("_upsample_linear")(_upsample_interpolating("linear", {}))
# PyTorch's bicubic uses a = -0.75 and does not exclude outside pixels
maps("_upsample_bicubic")(_upsample_interpolating("cubic", {"cubic_coeff_a": -0.75}))


# ------------------------------------------------------------ pooling and normalization


@maps("_max_pool")
def _max_pool(g, result, input, kernel_size, stride, padding, dilation, ceil_mode):
    """(values, indices): ONNX counts an index over the whole tensor (row-major), PyTorch
    within each (batch, channel) plane, so the indices are taken modulo the plane size."""
    values, indices = g.node(
        "MaxPool",
        [g.name(input)],
        outputs=2,
        kernel_shape=list(kernel_size),
        strides=list(stride),
        pads=list(padding) * 2,
        dilations=list(dilation),
        ceil_mode=int(ceil_mode),
    )
    g.bind(result[0], values)
    plane = int(np.prod(input.shape[2:])) if input.dim() > 2 else 1
    g.bind(result[1], g.node("Mod", [indices, g.const(np.asarray(plane, dtype=np.int64))]))


@maps("_adaptive_max_pool")
def _adaptive_max_pool(g, result, input, output_size):
    spatial = list(input.shape[2:])
    out = list(result[0].shape[2:])
    if all(s == 1 for s in out):
        g.bind(result[0], g.node("GlobalMaxPool", [g.name(input)]))
        return
    if any(n % m for n, m in zip(spatial, out)):
        _unsupported("_adaptive_max_pool", f"from {spatial} to {out} (not a divisor)")
    kernel = [n // m for n, m in zip(spatial, out)]
    g.bind(result[0], g.node("MaxPool", [g.name(input)], kernel_shape=kernel, strides=kernel))


def _normalize(g, x, axes, eps, dtype):
    """(x - mean) / sqrt(var + eps) over axes, the biased variance (as the norms use)."""
    centred = g.node("Sub", [x, _reduce(g, "ReduceMean", x, axes, True)])
    var = _reduce(g, "ReduceMean", g.node("Mul", [centred, centred]), axes, True)
    std = g.node("Sqrt", [g.node("Add", [var, _operand(g, eps, dtype)])])
    return g.node("Div", [centred, std])


def _per_channel(g, name, t, ndim):
    """A (C,) weight or bias broadcast over (N, C, *spatial)."""
    return g.node("Reshape", [g.name(t), g.ints([-1] + [1] * (ndim - 2))])


@maps("native_batch_norm")
def _batch_norm(g, result, input, weight, bias, running_mean, running_var, training, momentum, eps):
    if training and running_mean is not None:
        _unsupported("native_batch_norm", "in training mode: export the model in eval() mode")
    channels = input.shape[1]
    if training:  # no running stats (InstanceNorm, BatchNorm without tracking): batch stats
        axes = [0] + list(range(2, input.dim()))
        out = _normalize(g, g.name(input), axes, eps, input.dtype)
        if weight is not None:
            out = g.node("Mul", [out, _per_channel(g, out, weight, input.dim())])
        if bias is not None:
            out = g.node("Add", [out, _per_channel(g, out, bias, input.dim())])
        g.bind(result[0], out)
        return
    w = weight if weight is not None else ec.ones(channels, dtype=input.dtype)
    b = bias if bias is not None else ec.zeros(channels, dtype=input.dtype)
    out = g.node(
        "BatchNormalization",
        [g.name(input), g.name(w), g.name(b), g.name(running_mean), g.name(running_var)],
        epsilon=float(eps),
    )
    g.bind(result[0], out)


@maps("native_group_norm")
def _group_norm(g, result, input, weight, bias, N, C, HxW, group, eps):
    grouped = g.node("Reshape", [g.name(input), g.ints([0, group, -1])])
    out = _normalize(g, grouped, [2], eps, input.dtype)
    out = g.node("Reshape", [out, g.node("Shape", [g.name(input)])])
    if weight is not None:
        out = g.node("Mul", [out, _per_channel(g, out, weight, input.dim())])
    if bias is not None:
        out = g.node("Add", [out, _per_channel(g, out, bias, input.dim())])
    g.bind(result[0], out)


# ------------------------------------------------------------ recurrent cells


def _linear_gates(g, x, w, b):
    out = g.node("MatMul", [g.name(x), g.const(to_numpy(w).T.copy())])
    return g.node("Add", [out, g.name(b)]) if b is not None else out


@maps("_gru_cell")
def _gru_cell(g, result, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """r, z = sigmoid(x W_i{r,z} + h W_h{r,z} + b); n = tanh(x W_in + b_in + r (h W_hn + b_hn));
    h' = (1 - z) n + z h."""
    hidden = w_hh.shape[1]
    split = g.ints([hidden] * 3)
    xr, xz, xn = g.node("Split", [_linear_gates(g, input, w_ih, b_ih), split], outputs=3, axis=-1)
    hr, hz, hn = g.node("Split", [_linear_gates(g, hx, w_hh, b_hh), split], outputs=3, axis=-1)
    r = g.node("Sigmoid", [g.node("Add", [xr, hr])])
    z = g.node("Sigmoid", [g.node("Add", [xz, hz])])
    n = g.node("Tanh", [g.node("Add", [xn, g.node("Mul", [r, hn])])])
    h = g.name(hx)  # h' = n + z (h - n)
    g.bind(result[0], g.node("Add", [n, g.node("Mul", [z, g.node("Sub", [h, n])])]))


def _rnn_cell(nonlinearity):
    def fn(g, result, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        gates = g.node(
            "Add", [_linear_gates(g, input, w_ih, b_ih), _linear_gates(g, hx, w_hh, b_hh)]
        )
        g.bind(result, g.node(nonlinearity, [gates]))

    return fn


maps("rnn_tanh_cell")(_rnn_cell("Tanh"))
maps("rnn_relu_cell")(_rnn_cell("Relu"))


# ------------------------------------------------------------ embedding bags and losses


@maps("embedding_bag")
def _embedding_bag(
    g,
    result,
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """Bags as a (bags, n) membership matrix M built from the offsets: sum = M @ rows,
    mean = sum / count, max = the max over members (an empty bag gives zeros)."""
    dt = weight.dtype
    rows = g.node("Gather", [g.name(weight), g.name(indices)], axis=0)  # (n, D)
    if per_sample_weights is not None:
        rows = g.node("Mul", [rows, g.node("Unsqueeze", [g.name(per_sample_weights), g.ints([1])])])
    offs = g.name(offsets)
    if include_last_offset:
        offs = g.node("Slice", [offs, g.ints([0]), g.ints([-1]), g.ints([0])])
    zero, one = (g.const(np.asarray(v, dtype=np.int64)) for v in (0, 1))
    n = g.node("Squeeze", [g.node("Shape", [g.name(indices)]), g.ints([0])])
    bags = g.node("Squeeze", [g.node("Shape", [offs]), g.ints([0])])
    positions = g.node("Range", [zero, n, one])  # (n,)
    # the bag of each position: how many offsets are <= it, minus one
    starts = g.node(
        "LessOrEqual",
        [g.node("Unsqueeze", [offs, g.ints([1])]), g.node("Unsqueeze", [positions, g.ints([0])])],
    )  # (bags, n)
    bag_of = g.node(
        "Sub",
        [
            _reduce(
                g,
                "ReduceSum",
                g.node("Cast", [starts], to=element_type(g.onnx, ec.int64)),
                [0],
                False,
            ),
            one,
        ],
    )
    member = g.node(
        "Equal",
        [
            g.node("Unsqueeze", [g.node("Range", [zero, bags, one]), g.ints([1])]),
            g.node("Unsqueeze", [bag_of, g.ints([0])]),
        ],
    )  # (bags, n)
    if padding_idx is not None and padding_idx >= 0:
        keep = g.node(
            "Not",
            [g.node("Equal", [g.name(indices), g.const(np.asarray(padding_idx, dtype=np.int64))])],
        )
        member = g.node("And", [member, g.node("Unsqueeze", [keep, g.ints([0])])])
    m = g.node("Cast", [member], to=element_type(g.onnx, dt))
    if mode == 2:  # max
        lowest = _operand(g, -np.inf, dt)
        spread = g.node(
            "Where",
            [
                g.node("Unsqueeze", [member, g.ints([2])]),
                g.node("Unsqueeze", [rows, g.ints([0])]),
                lowest,
            ],
        )
        best = _reduce(g, "ReduceMax", spread, [1], False)
        nonempty = g.node(
            "Unsqueeze",
            [
                g.node("Greater", [_reduce(g, "ReduceSum", m, [1], False), _operand(g, 0, dt)]),
                g.ints([1]),
            ],
        )
        out = g.node("Where", [nonempty, best, _operand(g, 0, dt)])
    else:
        out = g.node("MatMul", [m, rows])
        if mode == 1:  # mean
            count = g.node("Max", [_reduce(g, "ReduceSum", m, [1], True), _operand(g, 1, dt)])
            out = g.node("Div", [out, count])
    g.bind(result[0], out)


def _nll(g, x, ndim, target, weight, ignore_index, reduction):
    """NegativeLogLikelihoodLoss of the log-probabilities named ``x`` (rank ``ndim``)."""
    reduction = {0: "none", 1: "mean", 2: "sum"}.get(reduction, reduction)
    t = g.name(target)
    if ndim == 1:  # one sample: ONNX wants a batch
        x = g.node("Unsqueeze", [x, g.ints([0])])
        t = g.node("Unsqueeze", [t, g.ints([0])])
    inputs = [x, t] + ([g.name(weight)] if weight is not None else [])
    out = g.node(
        "NegativeLogLikelihoodLoss", inputs, reduction=reduction, ignore_index=int(ignore_index)
    )
    if reduction == "none" and ndim == 1:
        out = g.node("Squeeze", [out, g.ints([0])])
    return out


@maps("nll_loss")
def _nll_loss(g, result, input, target, weight=None, ignore_index=-100, reduction="mean"):
    g.bind(result, _nll(g, g.name(input), input.dim(), target, weight, ignore_index, reduction))


@maps("_fused_cross_entropy")
def _fused_cross_entropy(g, result, input, target, weight, ignore_index, reduction):
    if target.dtype.is_floating_point:
        _unsupported(
            "_fused_cross_entropy", "with class probabilities as target has no mapping yet"
        )
    log_probs = g.node("LogSoftmax", [g.name(input)], axis=0 if input.dim() == 1 else 1)
    out = _nll(g, log_probs, input.dim(), target, weight, ignore_index, reduction)
    g.bind(result if isinstance(result, ec.Tensor) else result[0], out)


def _reduce_loss(g, loss, reduction, ndim):
    reduction = {0: "none", 1: "mean", 2: "sum"}.get(reduction, reduction)
    if reduction == "none":
        return loss
    op = "ReduceMean" if reduction == "mean" else "ReduceSum"
    return _reduce(g, op, loss, list(range(ndim)), False)


@maps("binary_cross_entropy_with_logits")
def _bce_with_logits(g, result, input, target, weight=None, pos_weight=None, reduction="mean"):
    """(1 - y) x + (1 + (pw - 1) y) (log1p(exp(-|x|)) + max(-x, 0)), stable for large |x|."""
    dt = result.dtype
    x, y = g.name(input), _operand(g, target, input.dtype)
    one = _operand(g, 1, input.dtype)
    zero = _operand(g, 0, input.dtype)
    soft = g.node(
        "Add",
        [
            g.node(
                "Log", [g.node("Add", [one, g.node("Exp", [g.node("Neg", [g.node("Abs", [x])])])])]
            ),
            g.node("Max", [g.node("Neg", [x]), zero]),
        ],
    )
    if pos_weight is not None:
        lw = g.node("Add", [one, g.node("Mul", [g.node("Sub", [g.name(pos_weight), one]), y])])
        soft = g.node("Mul", [lw, soft])
    loss = g.node("Add", [g.node("Mul", [g.node("Sub", [one, y]), x]), soft])
    if weight is not None:
        loss = g.node("Mul", [loss, _operand(g, weight, dt)])
    g.bind(result, _reduce_loss(g, loss, reduction, input.dim()))


@maps("binary_cross_entropy")
def _bce(g, result, input, target, weight=None, reduction="mean"):
    """-(y log x + (1 - y) log(1 - x)), each log clamped at -100 as PyTorch does."""
    x, y = g.name(input), _operand(g, target, input.dtype)
    one = _operand(g, 1, input.dtype)
    floor = _operand(g, -100, input.dtype)
    log_x = g.node("Max", [g.node("Log", [x]), floor])
    log_1mx = g.node("Max", [g.node("Log", [g.node("Sub", [one, x])]), floor])
    loss = g.node(
        "Neg",
        [
            g.node(
                "Add",
                [g.node("Mul", [y, log_x]), g.node("Mul", [g.node("Sub", [one, y]), log_1mx])],
            )
        ],
    )
    if weight is not None:
        loss = g.node("Mul", [loss, _operand(g, weight, input.dtype)])
    g.bind(result, _reduce_loss(g, loss, reduction, input.dim()))


# ------------------------------------------------------------ in-place ops


@maps("copy_")
def _copy_(g, result, input, src, non_blocking=False):
    g.mutate(input)
    value = g.node("Expand", [_operand(g, src, input.dtype), g.ints(input.shape)])
    g.bind(result, value)


@maps("fill_")
def _fill_(g, result, input, value):
    g.mutate(input)
    fill = _operand(g, value, input.dtype)  # a number or a 0-d tensor
    g.bind(result, g.node("Expand", [fill, g.ints(input.shape)]))


@maps("zero_")
def _zero_(g, result, input):
    _fill_(g, result, input, 0)


def _in_place(out_of_place):
    """``op_`` as its out-of-place mapping: ONNX values are immutable, so the input's
    name is rebound to the new value; other tensors sharing its memory go stale
    (Graph.mutate)."""

    def fn(g, result, input, *args):
        g.mutate(input)
        out_of_place(g, result, input, *args)

    return fn


# Every in-place op whose out-of-place twin has a mapping ("add_" -> "add").  The
# in-place op's arguments are the out-of-place op's without ``out``.
for _op in list(ec.OPS.values()):
    _twin = ec.OPS.get(_op.name[:-1]) if _op.name.endswith("_") else None
    if _twin is not None and _twin in MAPPINGS and _op not in MAPPINGS:
        MAPPINGS[_op] = _in_place(MAPPINGS[_twin])
