"""Reading checkpoints written by PyTorch's ``torch.save`` (its zip format).

A PyTorch checkpoint is a zip archive ``<name>/data.pkl`` + ``<name>/data/<key>``:
the pickle describes the object, and each tensor in it is
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)`` over a
storage that the pickle names by a persistent id ``('storage', torch.FloatStorage,
key, location, numel)`` whose bytes are the archive member ``data/<key>``.

ember rebuilds those tensors over its own memory (views of one storage stay views
of one ember tensor) and maps the handful of torch globals such a pickle needs
(rebuild functions, storage classes, dtypes, Size, device) to ember's own.  These
never run code from the file, so they are allowed with ``weights_only=True`` as in
PyTorch; any other global goes through ember's weights-only allowlist.  Objects
whose classes live in torch itself (a pickled ``nn.Module``, an optimizer) cannot
be rebuilt as ember objects: save their ``state_dict()`` instead.
"""

import io
import pickle
import zipfile

import ember_core as ec

from . import _unpickling

_STORAGE_DTYPES = {
    "FloatStorage": ec.float32,
    "DoubleStorage": ec.float64,
    "HalfStorage": ec.float16,
    "BFloat16Storage": ec.bfloat16,
    "LongStorage": ec.int64,
    "IntStorage": ec.int32,
    "ShortStorage": ec.int16,
    "CharStorage": ec.int8,
    "ByteStorage": ec.uint8,
    "BoolStorage": ec.bool,
    "UntypedStorage": ec.uint8,
}


class _StorageType:
    """What a pickled ``torch.FloatStorage`` (etc.) global resolves to."""

    def __init__(self, name):
        self.name = name
        self.dtype = _STORAGE_DTYPES[name]


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, *_unused):
    t = storage.as_strided(tuple(size), tuple(stride), storage_offset)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return storage.as_strided(tuple(size), tuple(stride), storage_offset)


def _rebuild_parameter(data, requires_grad, backward_hooks, *_state):
    from ember_nn import Parameter

    return Parameter(data, requires_grad=requires_grad)


def _torch_global(module, name):
    """ember's stand-in for a torch global that checkpoints of tensors use, or None."""
    if module == "torch._utils":
        return {
            "_rebuild_tensor_v2": _rebuild_tensor_v2,
            "_rebuild_tensor": _rebuild_tensor,
            "_rebuild_parameter": _rebuild_parameter,
            "_rebuild_parameter_with_state": _rebuild_parameter,
        }.get(name)
    if module in ("torch", "torch.storage") and name in _STORAGE_DTYPES:
        return _StorageType(name)
    if module == "torch":
        if name == "Size":
            return ec.Size
        if name == "device":
            return ec.device
        dtype = getattr(ec, name, None)
        if isinstance(dtype, ec.dtype):
            return dtype
    return None


class _TorchUnpickler(_unpickling.Unpickler):
    def find_class(self, module, name):
        found = _torch_global(module, name)
        if found is not None:
            return found
        if module == "torch" or module.startswith("torch."):
            raise pickle.UnpicklingError(
                f"ember.load: this PyTorch checkpoint pickles {module}.{name}, which ember "
                "cannot rebuild as an ember object; save tensors and state_dicts with torch "
                "(e.g. model.state_dict() rather than the model) to load them in ember"
            )
        return super().find_class(module, name)


def load(data, source, weights_only, fail):
    """The object in a PyTorch zip checkpoint (``data``: the file's bytes)."""
    from .serialization import _make_tensor  # (serialization imports this module)

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = archive.namelist()
    except (zipfile.BadZipFile, ValueError) as exc:
        fail(source, f"a damaged zip archive ({exc})")
    pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if not pickles:
        fail(source, "a zip archive without <name>/data.pkl: not a PyTorch checkpoint")
    prefix = pickles[0][: -len("data.pkl")]
    if prefix + "byteorder" in names:
        order = archive.read(prefix + "byteorder").strip()
        if order != b"little":
            fail(source, f"the tensors are stored {order.decode(errors='replace')}-endian")

    storages = {}

    def storage(pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            fail(source, f"unexpected persistent id {pid!r} in data.pkl")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, _StorageType):
            fail(source, f"unexpected storage type {kind!r} in data.pkl")
        if key not in storages:
            member = f"{prefix}data/{key}"
            if member not in names:
                fail(source, f"the storage {key!r} is missing from the archive")
            raw = archive.read(member)
            nbytes = numel * kind.dtype.itemsize
            if len(raw) != nbytes:
                fail(
                    source,
                    f"the storage {key!r} holds {len(raw)} bytes; {numel} {kind.name} elements "
                    f"need {nbytes}",
                )
            storages[key] = _make_tensor(kind.dtype, (numel,), raw)
        return storages[key]

    unpickler = _TorchUnpickler(io.BytesIO(archive.read(pickles[0])), storage, weights_only)
    return unpickler.load()
