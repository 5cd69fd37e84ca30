"""Derivative formulas of the indexing, scatter/gather and sorting ops
(ember_core's _indexing, _index_ops and _sorting), registered into the same
table as _derivatives.py (see _formula.py for the conventions).

The backward of a gather-like op (an index, gather, index_select, take, sort,
topk, ...) is the matching scatter-add into zeros, and the backward of a
scatter-like op reads the gradient back with the matching gather, so every
formula is made of differentiable ember ops and double backward works.
"""

import ember_core as ec
from ember_autograd._formula import DERIVATIVES, OpNode, derivative
from ember_autograd._node import named_node_class

_getitem_backward = ec._dispatch.public_function("_getitem_backward")


def _zeros(shape, like):
    return ec.zeros(shape, dtype=like.dtype, device=like.device)


def _key(indices):
    """index_put's indices (tensors or None) as a getitem key."""
    if isinstance(indices, ec.Tensor):
        indices = (indices,)
    return tuple(slice(None) if i is None else i for i in indices)


# ------------------------------------------------------- getitem, setitem


@derivative("__getitem__")
def _(grad, input_shape, key):
    return _getitem_backward(grad, input_shape, key)


_INDEXING_NODES = {
    name: named_node_class(OpNode, name)
    for name in (
        "SelectBackward0",
        "SliceBackward0",
        "UnsqueezeBackward0",
        "IndexBackward0",
        "AliasBackward0",
    )
}


def _getitem_node_class(args):
    """The node class PyTorch names ``x[key]``'s grad_fn after: the last indexing step
    it applies (PyTorch records one node per step; ember records one for the whole key,
    named like PyTorch's last).  Tensor, list or bool indices make an IndexBackward0; in
    a tuple, full slices are skipped; a key that does nothing makes an AliasBackward0."""
    key = args[1]
    if isinstance(key, slice):
        return _INDEXING_NODES["SliceBackward0"]
    items = key if isinstance(key, tuple) else (key,)
    name = "AliasBackward0"
    for k in items:
        if isinstance(k, (ec.Tensor, list, bool)):
            return _INDEXING_NODES["IndexBackward0"]
        if k is None:
            name = "UnsqueezeBackward0"
        elif isinstance(k, slice):
            if not (k.start is None and k.stop is None and k.step is None):
                name = "SliceBackward0"
        elif k is not Ellipsis:
            name = "SelectBackward0"  # an integer (or an object with __index__)
    return _INDEXING_NODES[name]


DERIVATIVES["__getitem__"].node_cls_for = _getitem_node_class


@derivative("_getitem_backward", inputs=("gradient",))
def _(grad, key):
    return grad[key]


@derivative("__setitem__", inputs=("input", "value"))
def _(grad, key, value):
    g_in = grad.clone()
    g_in[key] = 0
    g_val = grad[key] if isinstance(value, ec.Tensor) else None
    return g_in, g_val


@derivative("index_put", inputs=("input", "values"))
def _(grad, indices, values, accumulate):
    key = _key(indices)
    g_in = grad if accumulate else grad.index_put(indices, ec.zeros((), dtype=grad.dtype))
    return g_in, grad[key]


# ----------------------------------------------- index_select, gather ...


@derivative("index_select")
def _(grad, input_shape, dim, index):
    if not input_shape:
        return grad.reshape(())  # a 0-d input indexed at 0
    return _zeros(input_shape, grad).index_add(dim, index, grad)


@derivative("gather")
def _(grad, input_shape, dim, index):
    return _zeros(input_shape, grad).scatter_add(dim, index, grad)


@derivative("take")
def _(grad, input_shape, index):
    return ec.put(_zeros(input_shape, grad), index, grad, accumulate=True)


@derivative("put", inputs=("input", "source"))
def _(grad, index, source_shape, accumulate, needs):
    g_in = None
    if needs[0]:
        g_in = grad if accumulate else ec.put(grad, index, _zeros(index.shape, grad))
    g_src = grad.take(index).reshape(source_shape) if needs[1] else None
    return g_in, g_src


# -------------------------------------------------------------- scatter


@derivative("scatter", inputs=("input", "src"))
def _(grad, dim, index, src, reduce, needs):
    if reduce == "multiply":
        raise RuntimeError(
            "scatter(): the derivative of reduce='multiply' is not implemented; use "
            "scatter_reduce(..., reduce='prod')"
        )
    g_in = None
    if needs[0]:
        g_in = grad if reduce == "add" else grad.scatter(dim, index, 0.0)
    g_src = grad.gather(dim, index) if needs[1] and isinstance(src, ec.Tensor) else None
    return g_in, g_src


@derivative("scatter_add", inputs=("input", "src"))
def _(grad, dim, index):
    return grad, grad.gather(dim, index)


@derivative("scatter_reduce", inputs=("input", "src"))
def _(grad, input, dim, index, src, reduce, include_self, result):
    # PyTorch's scatter_reduce_backward, written with ember ops.
    if reduce == "sum":
        g_in, g_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        ones = ec.ones_like(src)
        n = (ec.ones_like(grad) if include_self else ec.zeros_like(grad)).scatter_add(
            dim, index, ones
        )
        n = n.masked_fill(n == 0, 1)
        g_in = grad / n
        g_src = (grad / n).gather(dim, index)
    elif reduce == "prod":
        masked_self = input.masked_fill(input == 0, 1)
        masked_result = masked_self.scatter_reduce(
            dim, index, src, "prod", include_self=include_self
        )
        g_in = grad * masked_result / masked_self
        src_zero = src == 0
        zeros_per_target = _zeros(input.shape, grad).scatter_add(
            dim, index, src_zero.to(grad.dtype)
        )
        single_zero = src_zero & (zeros_per_target.gather(dim, index) == 1)
        masked_src = src.masked_fill(single_zero, 1)
        masked_src_result = input.scatter_reduce(
            dim, index, masked_src, "prod", include_self=include_self
        )
        g_src = ec.where(
            single_zero,
            (grad * masked_src_result).gather(dim, index),
            (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1),
        )
    else:  # amax, amin: the gradient is shared evenly between the elements that attain it
        value = result.gather(dim, index)
        self_is = (input == result).to(grad.dtype)
        src_is = (src == value).to(grad.dtype)
        count = self_is.scatter_add(dim, index, src_is)
        share = grad / count
        g_in = self_is * share
        g_src = src_is * share.gather(dim, index)
    if not include_self:
        g_in = g_in.scatter(dim, index, 0.0)
    return g_in, g_src


# ---------------------------------------------------- index_add/copy/fill


@derivative("index_add", inputs=("input", "source"))
def _(grad, dim, index, source_shape, alpha):
    g_src = grad.index_select(dim, index) if grad.dim() else grad.reshape(1)
    if alpha != 1:
        g_src = g_src * alpha
    return grad, g_src.reshape(source_shape)


@derivative("index_copy", inputs=("input", "source"))
def _(grad, dim, index, source_shape):
    g_src = grad.index_select(dim, index) if grad.dim() else grad.reshape(1)
    return grad.index_fill(dim, index, 0), g_src.reshape(source_shape)


@derivative("index_fill", inputs=("input", "value"))
def _(grad, dim, index, value):
    g_val = None
    if isinstance(value, ec.Tensor):
        g_val = (grad.index_select(dim, index) if grad.dim() else grad).sum()
    return grad.index_fill(dim, index, 0), g_val


# ------------------------------------------------------------------ masks


@derivative("masked_fill", inputs=("input", "value"))
def _(grad, mask, value):
    g_val = (
        ec.where(mask, grad, ec.zeros((), dtype=grad.dtype)).sum()
        if isinstance(value, ec.Tensor)
        else None
    )
    return grad.masked_fill(mask, 0), g_val


@derivative("masked_select")
def _(grad, input_shape, mask):
    # masked_scatter broadcasts the zeros with the mask, as masked_select did
    return _zeros(input_shape, grad).masked_scatter(mask, grad)


@derivative("masked_scatter", inputs=("input", "source"))
def _(grad, mask, source_shape, needs):
    g_in = grad.masked_fill(mask, 0) if needs[0] else None
    g_src = None
    if needs[1]:
        picked = grad.masked_select(mask)
        n = 1
        for s in source_shape:
            n *= s
        pad = n - picked.numel()
        if pad:
            picked = ec.cat([picked, ec.zeros(pad, dtype=grad.dtype, device=grad.device)])
        g_src = picked.reshape(source_shape)
    return g_in, g_src


# ------------------------------------------------- sorting and selection


def _scatter_back(grad, input_shape, dim, indices, keepdim=True):
    """zeros of input's shape with grad put at ``indices`` along dim."""
    if not input_shape:
        return grad.reshape(())
    d = dim % len(input_shape)
    if not keepdim:
        grad = grad.unsqueeze(d)
        indices = indices.unsqueeze(d)
    return ec.zeros(input_shape, dtype=grad.dtype, device=grad.device).scatter(d, indices, grad)


@derivative("sort", outputs=(0,))
def _(grad, input_shape, dim, result):
    return _scatter_back(grad, input_shape, dim, result[1])


@derivative("topk", outputs=(0,))
def _(grad, input_shape, dim, result):
    return _scatter_back(grad, input_shape, dim, result[1])


@derivative("kthvalue", outputs=(0,))
def _(grad, input_shape, dim, keepdim, result):
    return _scatter_back(grad, input_shape, dim, result[1], keepdim)


@derivative("mode", outputs=(0,))
def _(grad, input_shape, dim, keepdim, result):
    return _scatter_back(grad, input_shape, dim, result[1], keepdim)


def _median_backward(grad, input, input_shape, dim, keepdim, result):
    if dim is None:
        # the gradient is shared evenly by the elements equal to the median
        value = result
        mask = (input == value) | (input.isnan() & value.isnan())
        return ec.where(mask, grad / mask.sum(), ec.zeros((), dtype=grad.dtype))
    return _scatter_back(grad, input_shape, dim, result[1], keepdim)


@derivative("median", outputs=(0,))
def _(grad, input, input_shape, dim, keepdim, result):
    return _median_backward(grad, input, input_shape, dim, keepdim, result)


@derivative("nanmedian", outputs=(0,))
def _(grad, input, input_shape, dim, keepdim, result):
    return _median_backward(grad, input, input_shape, dim, keepdim, result)
