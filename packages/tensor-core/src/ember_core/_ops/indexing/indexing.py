"""Indexing: tensor[key] and tensor[key] = value.

Basic keys (ints, slices, None, Ellipsis) give views.  Advanced keys (integer
and bool tensors, sequences, arrays, and Python bools, which PyTorch indexes
with a tensor too) are handled by _advanced_index (Note [Advanced index
placement]).
"""

import numbers
import operator

from ember_core._base.dispatch import defop
from ember_core._ops.indexing import advanced_index as _advanced_index
from ember_core._ops.indexing.advanced_index import IndexKey
from ember_core._ops.indexing.index_ops import nonzero as nz
from ember_core._tensor.copy import copy_into
from ember_core._tensor.creation import fill_values, zeros
from ember_core._tensor.tensor import Tensor, view_of, written


def _is_advanced(k):
    # Python bools index their new dim with [0] or [] (an index tensor), as in PyTorch
    if isinstance(k, (Tensor, bool)):
        return True
    if isinstance(k, (list, tuple)):
        return True
    # NumPy integer scalars index like ints (they also have __array__)
    return hasattr(k, "__array__") and not isinstance(k, (numbers.Integral, slice))


def _expand_key(key, ndim):
    if not isinstance(key, tuple):
        key = (key,)
    consumed = 0
    ellipsis = 0
    for k in key:
        if k is Ellipsis:
            ellipsis += 1
        elif k is None:
            continue
        else:
            consumed += 1
    if ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(k)
    if not ellipsis:
        out.extend([slice(None)] * (ndim - consumed))
    return out


def basic_index(t, key):
    """A view for an expanded key of ints, slices and None."""
    shape, stride = [], []
    offset = t._offset
    d = 0
    for k in key:
        if k is None:
            shape.append(1)
            stride.append(0)
        elif isinstance(k, slice):
            size = t._shape[d]
            start, stop, step = k.start, k.stop, k.step
            step = 1 if step is None else operator.index(step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, _ = slice(start, stop, step).indices(size)
            length = max(0, (stop - start + step - 1) // step)
            if length:
                offset += start * t._stride[d]
            shape.append(length)
            stride.append(t._stride[d] * step)
            d += 1
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                    f"Variables are valid indices (got {type(k).__name__})"
                ) from None
            size = t._shape[d]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
            if i < 0:
                i += size
            offset += i * t._stride[d]
            d += 1
    return view_of(t, tuple(shape), tuple(stride), offset)


def _select0(t, i):
    """t[i] for a Python int: the slice at i of dim 0 (a view)."""
    shape = t._shape
    if not shape:
        raise IndexError(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
            "in C++ to convert a 0-dim tensor to a number"
        )
    size = shape[0]
    if not -size <= i < size:
        raise IndexError(f"index {i} is out of bounds for dimension 0 with size {size}")
    if i < 0:
        i += size
    return view_of(t, shape[1:], t._stride[1:], t._offset + i * t._stride[0])


_INT_SLICE = (int, slice)


def _int_slice_index(t, key):
    """t[key] for a tuple of ints and slices (the common case, without the
    general key expansion); dims past the key are kept whole."""
    shape, stride = t._shape, t._stride
    offset = t._offset
    new_shape, new_stride = [], []
    for d, k in enumerate(key):
        size = shape[d]
        if k.__class__ is int:
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            offset += (k + size if k < 0 else k) * stride[d]
            continue
        step = k.step
        if step is None:
            step = 1
        elif step.__class__ is not int:
            step = operator.index(step)
        if step <= 0:
            raise ValueError("step must be greater than zero")
        start, stop, _ = k.indices(size)
        length = (stop - start + step - 1) // step if stop > start else 0
        if length:
            offset += start * stride[d]
        new_shape.append(length)
        new_stride.append(stride[d] * step)
    n = len(key)
    return view_of(t, tuple(new_shape) + shape[n:], tuple(new_stride) + stride[n:], offset)


@defop("__getitem__(input, key)", view=True, method=False, public=False)
def _getitem(input, key):
    """input[key]: a view for basic keys, a copy for advanced ones."""
    kc = key.__class__
    if kc is int:
        return _select0(input, key)
    if kc is slice:
        key = (key,)
    elif (
        kc is tuple
        and len(key) <= len(input._shape)
        and all(k.__class__ in _INT_SLICE for k in key)
    ):
        return _int_slice_index(input, key)
    if type(key) is tuple and not any(_is_advanced(k) for k in key):
        return basic_index(input, _expand_key(key, len(input._shape)))
    if key is None or key is Ellipsis:
        return basic_index(input, _expand_key(key, len(input._shape)))
    return _advanced_index.index(input, key)


@defop("__setitem__(input, key, value)", method=False, public=False, inplace_of="__getitem__")
def _setitem(input, key, value):
    """input[key] = value (value broadcast and converted)."""
    keyt = key if type(key) is tuple else (key,)
    if type(key) is IndexKey or any(_is_advanced(k) for k in keyt):
        _advanced_index.index_put(input, key, value)
        return None
    target = basic_index(input, _expand_key(keyt, len(input._shape)))
    written(target, "__setitem__")
    if isinstance(value, Tensor):
        copy_into(target, value)
    else:
        fill_values(target, value)
    return None


@defop(method=False, public=False)
def _getitem_backward(gradient, input_shape, key):
    """The gradient of input[key]: zeros of input's shape with ``gradient`` added at
    key (repeated indices accumulate)."""

    z = zeros(input_shape, dtype=gradient._dtype, device=gradient._storage._device)
    _advanced_index.accumulate_key(z, key, gradient)
    return z


# Tensor.__getitem__/__setitem__: a tuple key led by a tensor travels through the
# op table wrapped (Note [Index keys and dispatch] in _advanced_index).


def getitem(self, key):
    if type(key) is tuple and key and isinstance(key[0], Tensor):
        key = IndexKey(key)
    return _getitem(self, key)


def setitem(self, key, value):
    if type(key) is tuple and key and isinstance(key[0], Tensor):
        key = IndexKey(key)
    return _setitem(self, key, value)


def nonzero(input, *, out=None, as_tuple=False):
    """See ember_core.nonzero (kept here for where(cond), which looks it up here)."""

    return nz(input, out=out, as_tuple=as_tuple)
