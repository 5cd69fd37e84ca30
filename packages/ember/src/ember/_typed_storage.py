"""Tensor.storage(): PyTorch's (deprecated) TypedStorage, a typed 1-D view of a
tensor's whole storage.  It is a thin wrapper over a flat tensor that shares
the memory, so reads and writes go through ordinary ember ops."""

import warnings

import ember_core as ec

_warned = [False]


def _warn_once():
    if not _warned[0]:
        _warned[0] = True
        warnings.warn(
            "TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
            "will be the only storage class. This should only matter to you if you are using "
            "storages directly.  To access UntypedStorage directly, use "
            "tensor.untyped_storage() instead of tensor.storage()",
            UserWarning,
            stacklevel=3,
        )


class TypedStorage:
    """A typed view of a storage: ``len`` elements of ``dtype`` on ``device``."""

    is_sparse = False

    def __init__(self, tensor):
        untyped = tensor.untyped_storage()
        n = untyped.nbytes() // tensor.element_size()
        with _no_grad():
            self._flat = tensor.detach().as_strided((n,), (1,), 0)
        self._untyped = untyped

    @property
    def dtype(self):
        return self._flat.dtype

    @property
    def device(self):
        return self._flat.device

    def size(self):
        return self._flat.numel()

    def __len__(self):
        return self._flat.numel()

    def nbytes(self):
        return self._flat.numel() * self._flat.element_size()

    def element_size(self):
        return self._flat.element_size()

    def data_ptr(self):
        return self._flat.data_ptr()

    def untyped(self):
        return self._untyped

    def _untyped_storage(self):
        return self._untyped

    def tolist(self):
        return self._flat.tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self._flat[idx].clone().storage()
        return self._flat[idx].item()

    def __setitem__(self, idx, value):
        self._flat[idx] = value

    def fill_(self, value):
        self._flat.fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        src = source._flat if isinstance(source, TypedStorage) else source
        self._flat.copy_(src)
        return self

    def clone(self):
        return TypedStorage(self._flat.clone())

    def cpu(self):
        return self if self.device.type == "cpu" else TypedStorage(self._flat.cpu())

    def is_shared(self):
        return self._untyped.is_shared() if hasattr(self._untyped, "is_shared") else False

    def type(self):
        return "torch." + ec.Tensor.type(self._flat).rsplit(".", 1)[-1].replace("Tensor", "Storage")

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        kind = f"torch.storage.TypedStorage(dtype={self.dtype}, device={self.device})"
        return f"{body}\n[{kind} of size {len(self)}]"


def _no_grad():
    import ember_autograd

    return ember_autograd.no_grad()


def storage(self):
    """This tensor's storage as a TypedStorage (deprecated in PyTorch)."""
    _warn_once()
    return TypedStorage(self)
