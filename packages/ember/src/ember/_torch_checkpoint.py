"""PyTorch's zip checkpoint format (what ``torch.save`` writes since 1.6), both ways:
ember.save writes it and ember.load reads it.

Note [Torch zip checkpoints]
A checkpoint is a zip archive of uncompressed records under one folder,
``<archive>/``: ``data.pkl`` (the object, pickled), ``data/<key>`` (the raw bytes of
each storage), ``byteorder`` ("little"), ``version`` ("3"), ``.format_version``,
``.storage_alignment`` ("64": every storage's bytes start at a multiple of 64 in the
file) and ``.data/serialization_id``.  In the pickle a tensor is
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
OrderedDict())`` over a storage named by the persistent id ``('storage',
torch.FloatStorage, key, location, numel)``; a Parameter is
``torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict())``; dtypes,
``torch.Size`` and ``torch.device`` are torch globals.  Tensors that share a storage
(views) name one storage, so they load as views of one storage again.

ember has no torch objects to pickle, so its pickler (the standard library's
pure-Python one) writes those globals by name; ember's unpickler maps the same
names back to ember's own (rebuild functions, storage dtypes, Size, device).  These
never run code from the file, so they are allowed with ``weights_only=True``, as in
PyTorch; any other global goes through the weights-only allowlist (_unpickling.py).
Objects whose classes live in torch itself (a pickled torch ``nn.Module``) cannot be
rebuilt as ember objects: save their ``state_dict()`` instead.
"""

import collections
import hashlib
import io
import pickle
import struct
import zipfile
import zlib

import ember_core as ec
from ember_core._interop import numpy as _interop

from . import _unpickling
from ._checkpoint_errors import fail
from ._safetensors import make_tensor

# torch's storage class of each dtype (torch.FloatStorage, ...).
_STORAGE_NAMES = [
    ("FloatStorage", ec.float32),
    ("DoubleStorage", ec.float64),
    ("HalfStorage", ec.float16),
    ("BFloat16Storage", ec.bfloat16),
    ("LongStorage", ec.int64),
    ("IntStorage", ec.int32),
    ("ShortStorage", ec.int16),
    ("CharStorage", ec.int8),
    ("ByteStorage", ec.uint8),
    ("BoolStorage", ec.bool),
]
_COMPLEX = [("ComplexFloatStorage", "complex64"), ("ComplexDoubleStorage", "complex128")]
for _name, _dtype_name in _COMPLEX:
    if isinstance(getattr(ec, _dtype_name, None), ec.dtype):  # where ember_core has them
        _STORAGE_NAMES.append((_name, getattr(ec, _dtype_name)))
_STORAGE_DTYPES = dict(_STORAGE_NAMES)
_STORAGE_DTYPES["UntypedStorage"] = ec.uint8
_STORAGE_OF_DTYPE = {dtype: name for name, dtype in _STORAGE_NAMES}

# Note [Untyped storages]
# Dtypes newer than torch's typed storage classes (uint16/32/64, PyTorch 2.3+) are
# saved by torch.save as an UntypedStorage (persistent id numel: its size in
# bytes) rebuilt by ``_rebuild_tensor_v3(storage, offset, size, stride,
# requires_grad, hooks, dtype)``, the dtype last; offset, size and stride count
# elements of that dtype.  ember writes and reads them the same way.
_UNTYPED_DTYPES = {ec.uint16, ec.uint32, ec.uint64}

ALIGNMENT = 64
_RECORD_DATE = (1980, 1, 1, 0, 0, 0)  # fixed, so one object always gives the same bytes


# ------------------------------------------------------------------ writing


class _Global:
    """A torch global, written into the pickle by its name."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle wants a reduce function to be callable
        raise TypeError(f"{self.module}.{self.name} is written into checkpoints, not called")


_globals = {}


def _torch(module, name):
    key = (module, name)
    if key not in _globals:
        _globals[key] = _Global(module, name)
    return _globals[key]


class _StorageRef:
    """A storage as the pickle refers to it: its persistent id."""

    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid


class _Storages:
    """The storages an object's tensors live in, each once, keyed "0", "1", ..."""

    def __init__(self):
        self.by_storage = {}  # id(storage) -> (key, dtype, numel, tensor keeping it alive, ref)

    def ref(self, t):
        storage = t._storage
        entry = self.by_storage.get(id(storage))
        if entry is not None:
            if entry[1] is not t.dtype:
                raise RuntimeError(
                    "ember.save: cannot save tensors that view the same storage as different "
                    f"dtypes ({entry[1]} and {t.dtype}), as in PyTorch; save a .clone() of one"
                )
            return entry[4]
        key = str(len(self.by_storage))
        numel = storage.nbytes() // t.dtype.itemsize
        if t.dtype in _UNTYPED_DTYPES:  # Note [Untyped storages]
            kind, count = _torch("torch.storage", "UntypedStorage"), numel * t.dtype.itemsize
        elif t.dtype in _STORAGE_OF_DTYPE:
            kind, count = _torch("torch", _STORAGE_OF_DTYPE[t.dtype]), numel
        else:
            raise TypeError(f"ember.save: tensors of dtype {t.dtype} cannot be saved yet")
        ref = _StorageRef(("storage", kind, key, str(t.device), count))
        self.by_storage[id(storage)] = (key, t.dtype, numel, t, ref)
        return ref

    def records(self):
        """(key, bytes-like) of each storage's whole memory, in key order."""
        for key, dtype, numel, t, _ in self.by_storage.values():
            nbytes = numel * dtype.itemsize
            if nbytes == 0:
                yield key, b""
            elif t.device.type == "cpu":
                ptr = _interop.ffi.cast("char*", t._storage.data_ptr())
                yield key, _interop.ffi.buffer(ptr, nbytes)
            else:  # copied to the host, the whole storage as in PyTorch
                whole = t.detach().as_strided((numel,), (1,), 0).cpu()
                ptr = _interop.ffi.cast("char*", whole.data_ptr())
                yield key, bytes(_interop.ffi.buffer(ptr, nbytes))


class _Pickler(pickle._Pickler):
    """The standard pickler, with ember's tensors, dtypes, Size and device written as
    PyTorch's (Note [Torch zip checkpoints]).  The pure-Python pickler is used for
    its save_global, which lets torch's globals be written by name; the pickle holds
    no tensor data, so it stays small."""

    def __init__(self, file, protocol, storages):
        super().__init__(file, protocol)
        self.storages = storages

    def persistent_id(self, obj):
        return obj.pid if type(obj) is _StorageRef else None

    def reducer_override(self, obj):
        kind = type(obj)
        if kind is _Global:
            return obj.name  # a global: save_global below writes it
        if isinstance(obj, ec.Tensor):
            return self._reduce_tensor(obj)
        if kind is ec.dtype:
            return obj.name
        if kind is ec.Size:
            return (_torch("torch", "Size"), (tuple(obj),))
        if kind is ec.device:
            return (_torch("torch", "device"), (str(obj),))
        return NotImplemented

    def _reduce_tensor(self, t):
        hooks = collections.OrderedDict()
        if type(t).__name__ == "Parameter":
            data = t.detach()
            if type(data) is not ec.Tensor:
                data = data.as_subclass(ec.Tensor)
            return (_torch("torch._utils", "_rebuild_parameter"), (data, t.requires_grad, hooks))
        args = (
            self.storages.ref(t),
            t.storage_offset(),
            tuple(t.shape),
            tuple(t.stride()),
            bool(t.requires_grad),
            hooks,
        )
        if t.dtype in _UNTYPED_DTYPES:  # Note [Untyped storages]
            return (_torch("torch._utils", "_rebuild_tensor_v3"), (*args, t.dtype))
        return (_torch("torch._utils", "_rebuild_tensor_v2"), args)

    def save_global(self, obj, name=None):
        if type(obj) is _Global:
            module, name = obj.module, obj.name
        elif type(obj) is ec.dtype:
            module, name = "torch", obj.name
        else:
            return super().save_global(obj, name)
        self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())
        self.memoize(obj)


def write(obj, out, archive_name="archive", protocol=2, comment=b"", extra_records=None):
    """Write obj as a PyTorch zip checkpoint to ``out`` (a seekable binary file at
    position 0); ``comment`` becomes the zip archive's comment, ``extra_records``
    ({name: bytes}) more records in the archive's folder, which torch.load ignores."""
    storages = _Storages()
    buf = io.BytesIO()
    try:
        _Pickler(buf, protocol, storages).dump(obj)
    except Exception as exc:
        kind, where = _first_unpicklable(obj, "obj", protocol)
        exc.add_note(f"ember.save: while pickling {kind} at {where}")
        raise
    pickled = buf.getvalue()
    digest = hashlib.sha256(pickled)
    prefix = f"{archive_name}/"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.comment = comment
        _record(archive, prefix + "data.pkl", pickled)
        _record(archive, prefix + ".format_version", b"1")
        _record(archive, prefix + ".storage_alignment", str(ALIGNMENT).encode())
        _record(archive, prefix + "byteorder", b"little")
        for key, data in storages.records():
            digest.update(data)
            _record(archive, f"{prefix}data/{key}", data, aligned=True)
        _record(archive, prefix + "version", b"3\n")
        for name, data in (extra_records or {}).items():
            _record(archive, prefix + name, data)
        serialization_id = int(digest.hexdigest(), 16) % 10**40
        _record(archive, prefix + ".data/serialization_id", f"{serialization_id:040d}".encode())


def _first_unpicklable(obj, path, protocol):
    """(type name, path) of the innermost value in obj's containers that fails to
    pickle, for the error message."""
    if isinstance(obj, dict):
        items = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple)):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
    else:
        items = []
    for where, value in items:
        try:
            _Pickler(io.BytesIO(), protocol, _Storages()).dump(value)
        except Exception:
            return _first_unpicklable(value, where, protocol)
    return type(obj).__name__, path


def _record(archive, name, data, aligned=False):
    info = zipfile.ZipInfo(name, date_time=_RECORD_DATE)
    info.compress_type = zipfile.ZIP_STORED
    if aligned:  # pad the local header's extra field so the data starts aligned
        size = len(data)
        start = archive.fp.tell() + 30 + len(name.encode("utf-8")) + 4
        if size * 1.05 > zipfile.ZIP64_LIMIT:
            start += 20  # the zip64 extra field zipfile then adds
        pad = -start % ALIGNMENT
        info.extra = struct.pack("<HH", 0x4246, pad) + b"\0" * pad
    archive.writestr(info, data)


# ------------------------------------------------------------------ reading


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


def _rebuild_tensor_v3(
    storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, *_metadata
):
    """A tensor of ``dtype`` over an UntypedStorage's bytes (Note [Untyped storages])."""
    if not isinstance(dtype, ec.dtype):
        raise pickle.UnpicklingError(f"ember.load: _rebuild_tensor_v3 got a dtype {dtype!r}")
    if storage.dtype is not dtype:
        nbytes = storage.numel() * storage.dtype.itemsize
        if nbytes % dtype.itemsize:
            raise pickle.UnpicklingError(
                f"ember.load: a storage of {nbytes} bytes cannot hold {dtype} elements "
                f"({dtype.itemsize} bytes each)"
            )
        storage = storage.view(dtype)
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad)


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
            "_rebuild_tensor_v3": _rebuild_tensor_v3,
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


# What zipfile raises for a damaged archive (a flipped compression method is a
# NotImplementedError, a flipped encryption flag a RuntimeError, a bad offset an
# EOFError or struct.error, ...).
_ZIP_ERRORS = (
    RuntimeError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    EOFError,
    struct.error,
    ValueError,
    KeyError,
    OSError,
    zlib.error,
)


def _read(archive, name, source):
    try:
        return archive.read(name)
    except _ZIP_ERRORS as exc:
        fail(source, f"a damaged zip archive ({type(exc).__name__}: {exc})")


def load(data, source, place, weights_only):
    """The object in a PyTorch zip checkpoint (``data``: the file's bytes); each
    storage goes where ``place(storage, saved_location)`` puts it (_map_location)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = archive.namelist()
    except _ZIP_ERRORS as exc:
        fail(source, f"a damaged zip archive ({type(exc).__name__}: {exc})")
    pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if not pickles:
        fail(source, "a zip archive without <name>/data.pkl: not a PyTorch checkpoint")
    prefix = pickles[0][: -len("data.pkl")]
    if prefix + "byteorder" in names:
        order = _read(archive, prefix + "byteorder", source).strip()
        if order != b"little":
            fail(source, f"the tensors are stored {order.decode(errors='replace')}-endian")

    storages = {}

    def storage(pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            fail(source, f"unexpected persistent id {pid!r} in data.pkl")
        _, kind, key, location, numel = pid
        if not isinstance(kind, _StorageType):
            fail(source, f"unexpected storage type {kind!r} in data.pkl")
        if not isinstance(numel, int) or numel < 0:
            fail(source, f"the storage {key!r} has an invalid size {numel!r}")
        if key not in storages:
            member = f"{prefix}data/{key}"
            if member not in names:
                fail(source, f"the storage {key!r} is missing from the archive")
            raw = _read(archive, member, source)
            nbytes = numel * kind.dtype.itemsize
            if len(raw) != nbytes:
                fail(
                    source,
                    f"the storage {key!r} holds {len(raw)} bytes; {numel} {kind.name} elements "
                    f"need {nbytes}",
                )
            storages[key] = place(make_tensor(kind.dtype, (numel,), raw), str(location))
        return storages[key]

    pickled = _read(archive, pickles[0], source)
    unpickler = _TorchUnpickler(io.BytesIO(pickled), storage, weights_only)
    return unpickler.load()
