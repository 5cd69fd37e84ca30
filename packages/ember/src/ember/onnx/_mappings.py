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


@maps("__getitem__")
def _getitem(g, result, input, key):
    """Basic indexing: ints, slices, Ellipsis and None."""
    keys = list(key) if isinstance(key, tuple) else [key]
    if any(isinstance(k, (ec.Tensor, list, bool)) for k in keys):
        _unsupported("__getitem__", "with tensor, list or bool indices has no mapping yet")
    used = sum(1 for k in keys if k is not None and k is not Ellipsis)
    if Ellipsis in keys:
        at = keys.index(Ellipsis)
        keys[at : at + 1] = [slice(None)] * (input.dim() - used)
    name = g.name(input)
    axis, squeeze, unsqueeze = 0, [], []
    out_axis = 0
    for k in keys:
        if k is None:
            unsqueeze.append(out_axis)
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
    if squeeze:
        name = g.node("Squeeze", [name, g.ints(squeeze)])
    if unsqueeze:
        name = g.node("Unsqueeze", [name, g.ints(unsqueeze)])
    if name == g.name(input):
        name = g.node("Identity", [name])
    g.bind(result, name)


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


@maps("_max_pool")
def _max_pool(g, result, input, kernel_size, stride, padding, dilation, ceil_mode):
    g.bind(  # result: (values, indices); the indices have no mapping yet
        result[0],
        g.node(
            "MaxPool",
            [g.name(input)],
            kernel_shape=list(kernel_size),
            strides=list(stride),
            pads=list(padding) * 2,
            dilations=list(dilation),
            ceil_mode=int(ceil_mode),
        ),
    )


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


@maps("native_batch_norm")
def _batch_norm(g, result, input, weight, bias, running_mean, running_var, training, momentum, eps):
    if training or running_mean is None:
        _unsupported("native_batch_norm", "in training mode: export the model in eval() mode")
    channels = input.shape[1]
    w = weight if weight is not None else ec.ones(channels, dtype=input.dtype)
    b = bias if bias is not None else ec.zeros(channels, dtype=input.dtype)
    out = g.node(
        "BatchNormalization",
        [g.name(input), g.name(w), g.name(b), g.name(running_mean), g.name(running_var)],
        epsilon=float(eps),
    )
    g.bind(result[0], out)


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


@maps("where")
def _where(g, result, condition, input=None, other=None, out=None):
    if input is None or other is None:
        _unsupported("where", "with one argument (nonzero) has no mapping yet")
    dtype = result.dtype
    inputs = [g.name(condition), _operand(g, input, dtype), _operand(g, other, dtype)]
    g.bind(result, g.node("Where", inputs))


@maps("masked_fill")
def _masked_fill(g, result, input, mask, value):
    inputs = [g.name(mask), _operand(g, value, result.dtype), g.name(input)]
    g.bind(result, g.node("Where", inputs))


@maps("clamp")
def _clamp(g, result, input, min=None, max=None, out=None):
    if isinstance(min, ec.Tensor) or isinstance(max, ec.Tensor):
        _unsupported("clamp", "with tensor bounds has no mapping yet")
    bounds = ["" if b is None else _operand(g, b, result.dtype) for b in (min, max)]
    g.bind(result, g.node("Clip", [_operand(g, input, result.dtype), *bounds]))


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


def _reduction(onnx_op, axes_input_from):
    """Reduce over ``dim`` (None: all); the axes are an input from opset
    ``axes_input_from`` on, an attribute before."""

    def fn(g, result, input, dim=None, keepdim=False, *rest):
        if dim is None or dim == ():
            axes = list(range(input.dim()))
        else:
            axes = [_axis(d, input.dim()) for d in ([dim] if isinstance(dim, int) else dim)]
        dtype = result.dtype if isinstance(result, ec.Tensor) else input.dtype
        x = _operand(g, input, dtype)
        if g.opset >= axes_input_from:
            out = g.node(onnx_op, [x, g.ints(axes)], keepdims=int(keepdim))
        else:
            out = g.node(onnx_op, [x], axes=axes, keepdims=int(keepdim))
        if isinstance(result, ec.Tensor):
            g.bind(result, out)
        else:  # max(input, dim) returns (values, indices): the indices have no mapping
            g.bind(result[0], out)

    return fn


maps("sum")(_reduction("ReduceSum", 13))
maps("mean")(_reduction("ReduceMean", 18))
maps("amax")(_reduction("ReduceMax", 18))
maps("amin")(_reduction("ReduceMin", 18))


def _max_or_min(reduce_op, binary_op):
    """max(input), max(input, dim, keepdim) -> (values, indices), max(input, other)."""
    reduce, binary = _reduction(reduce_op, 18), _binary(binary_op)

    def fn(g, result, input, dim=None, keepdim=False, out=None):
        if isinstance(dim, ec.Tensor):
            binary(g, result, input, dim)
        else:
            reduce(g, result, input, dim, keepdim)

    return fn


maps("max")(_max_or_min("ReduceMax", "Max"))
maps("min")(_max_or_min("ReduceMin", "Min"))


@maps("repeat")
def _repeat(g, result, input, sizes):
    name = g.name(input)
    extra = len(sizes) - input.dim()
    if extra:
        name = g.node("Reshape", [name, g.ints([1] * extra + list(input.shape))])
    g.bind(result, g.node("Tile", [name, g.ints(sizes)]))
