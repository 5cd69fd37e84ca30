"""Tensor methods PyTorch has and ember_core lacks, attached to ember_core.Tensor
when ember is imported: sum_to_size, the legacy new(), apply_/map_/map2_ (CPU),
quantiles, distances, renorm_, the *_scatter and *_copy methods, the complex
API on real tensors, __deepcopy__ (views of one storage stay views of one
copied storage), storage(), pin_memory (CPU only, as PyTorch without an
accelerator) and small introspection (dim_order, is_set_to...)."""

import builtins
import copy

import ember_autograd as _ag
import ember_core as ec
from ember._math_extra import dist, lu, lu_solve, nanquantile, quantile, renorm
from ember._views_extra import (
    adjoint,
    angle,
    as_strided_scatter,
    conj,
    conj_physical,
    diagonal_scatter,
    is_conj,
    is_neg,
    narrow_copy,
    nonzero_static,
    resolve_conj,
    resolve_neg,
    select_scatter,
    slice_scatter,
    unsafe_chunk,
    unsafe_split,
    unsafe_split_with_sizes,
)

_int, _bool, _range = builtins.int, builtins.bool, builtins.range

T = ec.Tensor


def _sum_to_size(self, *size):
    """The sum of self over the dimensions that broadcasting ``size`` to self expands."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, ec.Size)):
        size = tuple(size[0])
    size = tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == 1 or s == shape[lead + i] for i, s in enumerate(size))
    if not ok:
        raise RuntimeError(
            f"size {{{', '.join(map(str, size))}}} is not expandable to size "
            f"{{{', '.join(map(str, shape))}}}."
        )
    r = self
    if lead:
        r = r.sum(dim=tuple(_range(lead)))
    dims = tuple(i for i, s in enumerate(size) if s == 1 and r.shape[i] != 1)
    if dims:
        r = r.sum(dim=dims, keepdim=True)
    return r


def _new(self, *args, **kwargs):
    """Legacy constructor: an empty/uninitialized tensor of self's dtype and device,
    of the given size, or with the given data."""
    device = kwargs.pop("device", None) or self.device
    if not args:
        return ec.empty(0, dtype=self.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], ec.Size):
        return ec.empty(tuple(args[0]), dtype=self.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], ec.Tensor):
        return args[0].view(args[0].shape)
    if all(isinstance(a, _int) and not isinstance(a, _bool) for a in args):
        return ec.empty(args, dtype=self.dtype, device=device)
    if len(args) == 1:
        return ec.tensor(args[0], dtype=self.dtype, device=device)
    raise TypeError("new(): invalid arguments")


def _apply_(self, callable):
    """Apply a Python function to every element, in place (CPU tensors only)."""
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    vals = [callable(v) for v in self.reshape(-1).tolist()]
    with _ag.no_grad():
        self.copy_(ec.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def _map_(self, tensor, callable):
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    other = tensor.expand(self.shape).reshape(-1).tolist()
    vals = [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other, strict=True)]
    with _ag.no_grad():
        self.copy_(ec.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def _map2_(self, x, y, callable):
    if self.device.type != "cpu":
        raise TypeError("map2_ is only implemented on CPU tensors")
    xs = x.expand(self.shape).reshape(-1).tolist()
    ys = y.expand(self.shape).reshape(-1).tolist()
    vals = [callable(a, b, c) for a, b, c in zip(self.reshape(-1).tolist(), xs, ys, strict=True)]
    with _ag.no_grad():
        self.copy_(ec.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def _deepcopy(self, memo):
    """Deep copy keeping views of one storage views of one copied storage (as
    PyTorch), with requires_grad and .grad; only graph leaves can be copied."""
    if not self.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
            "because of a torch.nn.utils.weight_norm usage, see "
            "https://github.com/pytorch/pytorch/pull/103001"
        )
    if id(self) in memo:
        return memo[id(self)]
    if type(self) is not T:  # subclasses (Parameter...) keep their own protocol
        rv = self.__reduce_ex__(4)
        return copy._reconstruct(self, memo, *rv)
    storage = self.untyped_storage()
    key = ("ember.storage", id(storage))
    flat = memo.get(key)
    with _ag.no_grad():
        if flat is None:
            n = storage.nbytes() // self.element_size()
            flat = self.detach().as_strided((n,), (1,), 0).clone()
            memo[key] = flat
            memo.setdefault(id(memo), []).append(storage)  # keep the id valid
        r = flat.as_strided(tuple(self.shape), tuple(self.stride()), self.storage_offset())
    r.requires_grad_(self.requires_grad)
    if self.grad is not None:
        r.grad = copy.deepcopy(self.grad, memo)
    memo[id(self)] = r
    return r


def _renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))


def _reversed(self):
    return self if self.dim() == 0 else self.flip(0)


def _quantile_m(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    return quantile(self, q, dim, keepdim, interpolation=interpolation)


def _nanquantile_m(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    return nanquantile(self, q, dim, keepdim, interpolation=interpolation)


def _heaviside_(self, values):
    return self.copy_(ec.heaviside(self, values))


def _allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    import ember

    return ember.allclose(self, other, rtol, atol, equal_nan)


def _isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    import ember

    return ember.isclose(self, other, rtol, atol, equal_nan)


def _equal(self, other):
    import ember

    return ember.equal(self, other)


_METHODS = {
    "sum_to_size": _sum_to_size,
    "new": _new,
    "apply_": _apply_,
    "map_": _map_,
    "map2_": _map2_,
    "dist": dist,
    "renorm": renorm,
    "renorm_": _renorm_,
    "quantile": _quantile_m,
    "nanquantile": _nanquantile_m,
    "heaviside_": _heaviside_,
    "allclose": _allclose,
    "isclose": _isclose,
    "equal": _equal,
    "narrow_copy": narrow_copy,
    "nonzero_static": nonzero_static,
    "unsafe_chunk": unsafe_chunk,
    "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": unsafe_split_with_sizes,
    "adjoint": adjoint,
    "conj": conj,
    "conj_physical": conj_physical,
    "is_conj": is_conj,
    "is_neg": is_neg,
    "resolve_conj": resolve_conj,
    "resolve_neg": resolve_neg,
    "angle": angle,
    "slice_scatter": slice_scatter,
    "select_scatter": select_scatter,
    "diagonal_scatter": diagonal_scatter,
    "as_strided_scatter": as_strided_scatter,
    "__reversed__": _reversed,
    "__deepcopy__": _deepcopy,
    "__long__": lambda self: _int(self),
    "__nonzero__": lambda self: _bool(self),
}
for _name, _fn in _METHODS.items():
    if not hasattr(T, _name):
        setattr(T, _name, _fn)


for _name, _fn in {"lu": lu, "lu_solve": lu_solve}.items():
    if not hasattr(T, _name):
        setattr(T, _name, _fn)


def _imag(self):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def _dim_order(self, *, ambiguity_check=False):
    """Dimensions from outermost to innermost in memory (stride order)."""
    strides = self.stride()
    return tuple(sorted(_range(self.dim()), key=lambda d: (-strides[d], d)))


def _is_set_to(self, tensor):
    return (
        self.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
        and self.storage_offset() == tensor.storage_offset()
        and tuple(self.shape) == tuple(tensor.shape)
        and tuple(self.stride()) == tuple(tensor.stride())
    )


def _new_empty_strided(
    self,
    size,
    stride,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
    layout=None,
    pin_memory=False,
):
    return ec.empty_strided(
        size,
        stride,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def _storage_method(self):
    from ember._typed_storage import storage

    return storage(self)


for _name, _fn in {
    "real": property(lambda self: self),
    "imag": property(_imag),
    "dim_order": _dim_order,
    "is_set_to": _is_set_to,
    "is_nested": property(lambda self: False),
    "is_sparse_csr": property(lambda self: False),
    "const_data_ptr": lambda self: self.data_ptr(),
    "new_empty_strided": _new_empty_strided,
    "conj_physical_": lambda self: self,
    "storage": _storage_method,
    "__div__": T.__truediv__,
    "__rdiv__": T.__rtruediv__,
    "__idiv__": T.__itruediv__,
}.items():
    if not hasattr(T, _name):
        setattr(T, _name, _fn)
