"""Indexing: tensor[key] and tensor[key] = value.

Basic keys (ints, slices, None, Ellipsis, Python bools) give views.  Advanced
keys (integer/bool tensors and sequences) are handled by _advanced_index.
"""

import numbers
import operator

from ember_core._dispatch import defop
from ember_core._tensor import Tensor, view_of


def _is_advanced(k):
    if isinstance(k, Tensor):
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
        elif k is None or isinstance(k, bool):
            continue
        elif isinstance(k, Tensor) and k._dtype.name in ("bool", "uint8"):
            consumed += max(len(k._shape), 1) if k._shape else 0
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
    """A view for a key of ints, slices, None, Ellipsis and bools."""
    shape, stride = [], []
    offset = t._offset
    d = 0
    for k in key:
        if k is None:
            shape.append(1)
            stride.append(0)
        elif isinstance(k, bool):
            # x[True] adds a dim of size 1, x[False] one of size 0
            shape.append(1 if k else 0)
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
                raise TypeError(
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


_BASIC = frozenset({int, slice, type(None), type(Ellipsis), bool})


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
def getitem(input, key):
    """input[key]: a view for basic keys, a copy for advanced ones."""
    kc = key.__class__
    if kc is int:
        return _select0(input, key)
    if kc is slice:
        key = (key,)
    elif kc is tuple and all(k.__class__ in _BASIC for k in key):
        if all(k.__class__ is int or k.__class__ is slice for k in key) and len(key) <= len(input._shape):
            return _int_slice_index(input, key)
        return basic_index(input, _expand_key(key, len(input._shape)))
    if isinstance(key, tuple) and not any(_is_advanced(k) for k in key):
        return basic_index(input, _expand_key(key, len(input._shape)))
    if not isinstance(key, tuple) and not _is_advanced(key):
        return basic_index(input, _expand_key(key, len(input._shape)))
    from ember_core import _advanced_index

    return _advanced_index.index(input, key)


@defop("__setitem__(input, key, value)", method=False, public=False, inplace_of="__getitem__")
def setitem(input, key, value):
    """input[key] = value (value broadcast and converted)."""
    from ember_core._copy import copy_into
    from ember_core._creation import fill_values
    from ember_core._tensor import written

    keyt = key if isinstance(key, tuple) else (key,)
    if any(_is_advanced(k) for k in keyt):
        from ember_core import _advanced_index

        _advanced_index.index_put(input, key, value)
        return None
    target = basic_index(input, _expand_key(keyt, len(input._shape)))
    written(input, "__setitem__")
    if isinstance(value, Tensor):
        copy_into(target, value)
    else:
        fill_values(target, value)
    return None

