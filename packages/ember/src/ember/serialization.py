"""ember.save / ember.load: checkpoints in the safetensors layout.

File format (readable by any safetensors reader):

    8 bytes   little-endian u64: N, the length of the JSON header
    N bytes   JSON header: {"<name>": {"dtype": "F32", "shape": [...],
              "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
    the rest  the tensors' bytes, back to back, in header order

``__metadata__`` (strings only, as the layout requires) holds:

    "format": "ember"               what wrote the file
    "ember.structure": JSON         the saved object, with tensors replaced by
                                    {"$tensor": name} and other values tagged
                                    (tuples, int-keyed dicts, dtypes, devices...)
    "ember.file_sha256": hex digest of the whole file (length, header and data)
                                    with these 64 digits read as "0"s, so that any
                                    altered byte is detected (Note [Checkpoint
                                    integrity]; format 1 files carried
                                    "ember.sha256", of the data region only)

Loading parses JSON and copies bytes: it never executes code from the file.
Saving to a path writes a temporary file in the same directory and renames it
over the target, so a crash never leaves a half-written checkpoint behind
(Note [Save temporaries]: a save killed before the rename leaves
``.<target name>.ember-save-<random>.tmp``, which the next save to that target
removes).

Values the layout cannot hold (an argparse.Namespace, a whole model) are pickled
into the structure as {"$pickle": base64, "type": "module.qualname"}, with their
tensors still stored in the tensor table (persistent ids).  As in PyTorch, such a
value loads only with ``weights_only=False`` or when its classes are allowlisted
(``add_safe_globals``/``safe_globals``, see _unpickling.py).

``load`` also reads checkpoints written by PyTorch's ``torch.save`` (zip format)
of tensors, state_dicts and plain values (see _torch_checkpoint.py).
"""

import base64
import collections
import glob
import hashlib
import io
import json
import math
import os
import pickle
import struct
import tempfile

try:
    import fcntl
except ImportError:  # not POSIX: stale temporaries are not recognised (Note [Save temporaries])
    fcntl = None

import numpy as np

import ember_core as ec
from ember_core import _interop

from . import _torch_checkpoint, _unpickling
from ._unpickling import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = [
    "CheckpointError",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "load",
    "safe_globals",
    "save",
]

FORMAT_VERSION = 2
_DTYPE_CODES = {
    ec.bool: "BOOL",
    ec.uint8: "U8",
    ec.int8: "I8",
    ec.int16: "I16",
    ec.int32: "I32",
    ec.int64: "I64",
    ec.float16: "F16",
    ec.bfloat16: "BF16",
    ec.float32: "F32",
    ec.float64: "F64",
}
_CODE_DTYPES = {v: k for k, v in _DTYPE_CODES.items()}
_MAX_HEADER = 100 * 1024 * 1024


class CheckpointError(RuntimeError):
    """The file is not a valid ember checkpoint (truncated, tampered, or foreign)."""


# ------------------------------------------------------------------ encoding


class _Writer:
    def __init__(self, pickle_module=None, pickle_protocol=None):
        self.tensors = {}  # name -> tensor
        self.by_id = {}
        self.pickle_module = pickle_module or pickle
        self.pickle_protocol = 2 if pickle_protocol is None else pickle_protocol

    def tensor(self, t):
        key = id(t)
        name = self.by_id.get(key)
        if name is None:
            name = f"t{len(self.tensors)}"
            self.by_id[key] = name
            self.tensors[name] = t
        node = {"$tensor": name}
        if type(t).__name__ == "Parameter":
            node["parameter"] = True
            node["requires_grad"] = bool(t.requires_grad)
        elif t.requires_grad:
            node["requires_grad"] = True
        return node

    def encode(self, obj, path="obj"):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj if abs(obj) < 2**53 else {"$int": str(obj)}
        if isinstance(obj, float):
            if math.isfinite(obj):
                return obj
            return {"$float": repr(obj)}
        if isinstance(obj, ec.Tensor):
            return self.tensor(obj)
        if isinstance(obj, ec.dtype):
            return {"$dtype": obj.name}
        if isinstance(obj, ec.device):
            return {"$device": str(obj)}
        if isinstance(obj, ec.Size):
            return {"$size": list(obj)}
        if isinstance(obj, (list, tuple)):
            items = [self.encode(x, f"{path}[{i}]") for i, x in enumerate(obj)]
            if isinstance(obj, list):
                return items
            if hasattr(obj, "_fields"):
                return {
                    "$namedtuple": type(obj).__name__,
                    "fields": list(obj._fields),
                    "items": items,
                }
            return {"$tuple": items}
        if isinstance(obj, dict):
            kind = "ordered" if isinstance(obj, collections.OrderedDict) else "dict"
            items = [
                [self.encode(k, f"{path} key"), self.encode(v, f"{path}[{k!r}]")]
                for k, v in obj.items()
            ]
            return {"$" + kind: items}
        if isinstance(obj, (set, frozenset)):
            return {"$set": [self.encode(x, path) for x in obj]}
        if isinstance(obj, (bytes, bytearray)):
            return {"$bytes": base64.b64encode(bytes(obj)).decode("ascii")}
        if isinstance(obj, np.ndarray):
            return self.tensor(ec.tensor(obj))
        if isinstance(obj, (np.integer, np.floating, np.bool_)):
            return self.encode(obj.item(), path)
        return self.pickled(obj, path)

    def pickled(self, obj, path):
        """obj pickled, its tensors replaced by persistent ids into the tensor table."""
        writer = self

        class Pickler(self.pickle_module.Pickler):
            def persistent_id(self, value):
                return writer.tensor(value) if isinstance(value, ec.Tensor) else None

        buf = io.BytesIO()
        try:
            Pickler(buf, protocol=self.pickle_protocol).dump(obj)
        except Exception as exc:
            exc.add_note(f"ember.save: while pickling {type(obj).__name__} at {path}")
            raise
        kind = type(obj)
        return {
            "$pickle": base64.b64encode(buf.getvalue()).decode("ascii"),
            "type": f"{kind.__module__}.{kind.__qualname__}",
        }


def _contiguous_bytes(t):
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.detach().contiguous()
    n = t.numel() * t.element_size()
    if n == 0:
        return b""
    return bytes(_interop.ffi.buffer(_interop.ffi.cast("char*", t.data_ptr()), n))


def _serialize(obj, pickle_module=None, pickle_protocol=None):
    writer = _Writer(pickle_module, pickle_protocol)
    structure = writer.encode(obj)
    header = {}
    chunks = []
    offset = 0
    for name, t in writer.tensors.items():
        data = _contiguous_bytes(t)
        header[name] = {
            "dtype": _DTYPE_CODES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    header["__metadata__"] = {
        "format": "ember",
        "ember.version": str(FORMAT_VERSION),
        "ember.structure": json.dumps(structure, separators=(",", ":")),
        _DIGEST_KEY: _DIGEST_BLANK,
    }
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # align the data region to 8 bytes
    head = bytearray(struct.pack("<Q", len(text)) + text)
    h = hashlib.sha256(head)
    for chunk in chunks:
        h.update(chunk)
    at = head.index(_DIGEST_FIELD) + len(_DIGEST_FIELD)
    head[at : at + 64] = h.hexdigest().encode()
    return b"".join([head, *chunks])


# Note [Checkpoint integrity]
# The digest covers every byte of the file: the 8-byte length, the JSON header
# (names, dtypes, shapes, offsets, the structure with its hyperparameters) and
# the data.  It lives in the header it covers, so it is computed with its own 64
# hex digits written as "0"s; the loader finds the field in the raw header bytes,
# blanks it the same way and compares.  A file whose metadata is ember's must
# carry the digest; one flipped byte in the digest's key, the length, the
# padding or anywhere else fails the check (tests/test_fuzz_checkpoint.py flips
# every byte of a checkpoint).  Plain safetensors files from other writers carry
# no digest and load as a dict of tensors, checked for consistency only.
_DIGEST_KEY = "ember.file_sha256"
_DIGEST_BLANK = "0" * 64
_DIGEST_FIELD = b'"ember.file_sha256":"'
_LEGACY_DIGEST_KEY = "ember.sha256"  # format 1: of the data region only


def _check_digest(data, n, meta, source):
    """Verify an ember file's digest (Note [Checkpoint integrity])."""
    digest = meta.get(_DIGEST_KEY)
    if digest is None:
        legacy = meta.get(_LEGACY_DIGEST_KEY)
        if legacy is not None and meta.get("ember.version", "1") == "1":
            if hashlib.sha256(data[8 + n :]).hexdigest() != legacy:
                _fail(
                    source,
                    "the tensor data does not match its checksum: the file was modified or damaged",
                )
            return
        if meta.get("format") == "ember" or any(str(k).startswith("ember.") for k in meta):
            _fail(source, "the checkpoint's checksum is missing: the file was modified or damaged")
        return
    at = data.find(_DIGEST_FIELD + str(digest).encode("utf-8", "replace") + b'"', 8, 8 + n)
    ok = (
        isinstance(digest, str)
        and len(digest) == 64
        and at >= 0
        and data.find(_DIGEST_FIELD, at + 1, 8 + n) < 0
    )
    if ok:
        start = at + len(_DIGEST_FIELD)
        view = memoryview(data)
        h = hashlib.sha256(view[:start])
        h.update(_DIGEST_BLANK.encode())
        h.update(view[start + 64 :])
        ok = h.hexdigest() == digest
    if not ok:
        _fail(source, "the file does not match its checksum: it was modified or damaged")


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Write obj to f, a path or a writable binary file.  Tensors, state_dicts and
    nested containers of plain values are stored safely; other objects are pickled
    (their tensors still stored apart).  Writing a path is atomic."""
    data = _serialize(obj, pickle_module, pickle_protocol)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        _remove_stale_temporaries(path)
        fd, tmp = _temporary_for(path)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
                os.replace(tmp, path)  # before closing, which releases the lock
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    else:
        f.write(data)


# Note [Save temporaries]
# save(obj, "dir/ckpt.pt") writes "dir/.ckpt.pt.ember-save-<random>.tmp" and
# renames it over the target.  A process killed before the rename leaves that file
# (as large as the checkpoint); the next save to the same target removes every
# such file that no live save is writing.  A writer holds an exclusive flock on
# its temporary until the rename, and the kernel drops the lock when the process
# dies, so "lockable" means "abandoned".  A writer checks that its fresh file
# was not removed between its creation and its lock (by a cleaner that locked it
# first), and starts again if it was.  Without fcntl (not POSIX) nothing is removed.


def _temporary_prefix(path):
    base = os.path.basename(path)
    if len(base.encode()) > 200:  # keep the temporary's name within NAME_MAX
        base = base.encode()[:200].decode(errors="ignore")
    return os.path.join(os.path.dirname(os.path.abspath(path)), f".{base}.ember-save-")


def _temporary_for(path):
    """(fd, name) of a new locked temporary next to path."""
    prefix = _temporary_prefix(path)
    while True:
        fd, tmp = tempfile.mkstemp(
            prefix=os.path.basename(prefix), suffix=".tmp", dir=os.path.dirname(prefix)
        )
        if fcntl is None:
            return fd, tmp
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink:
            return fd, tmp
        os.close(fd)  # a cleaner took it for abandoned before we locked it


def _remove_stale_temporaries(path):
    """Remove the temporaries of earlier saves to path that were killed before their
    rename (Note [Save temporaries])."""
    if fcntl is None:
        return
    for name in glob.glob(glob.escape(_temporary_prefix(path)) + "*.tmp"):
        try:
            fd = os.open(name, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # a live save is writing it
            continue
        try:
            os.unlink(name)
        except OSError:
            pass
        finally:
            os.close(fd)


# ------------------------------------------------------------------ decoding


def _fail(source, why):
    raise CheckpointError(f"ember.load({source}): {why}")


def _parse(data, source):
    if len(data) < 8:
        _fail(
            source,
            f"the file is {len(data)} bytes long, too short for a checkpoint header (truncated?)",
        )
    (n,) = struct.unpack("<Q", data[:8])
    if n > _MAX_HEADER or 8 + n > len(data):
        _fail(
            source,
            f"the header claims {n} bytes but the file has {len(data) - 8} after the length "
            "(truncated or not a checkpoint)",
        )
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        _fail(
            source, f"the header is not valid JSON ({exc}); the file is corrupt or not a checkpoint"
        )
    if not isinstance(header, dict):
        _fail(source, "the header is not a JSON object")
    meta = header.pop("__metadata__", {}) or {}
    if not isinstance(meta, dict):
        _fail(source, "the header's __metadata__ is not a JSON object")
    _check_digest(data, n, meta, source)
    body = data[8 + n :]
    expected_end = 0
    entries = []
    for name, info in header.items():
        try:
            dtype = _CODE_DTYPES[info["dtype"]]
            shape = [int(s) for s in info["shape"]]
            begin, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            _fail(source, f"tensor {name!r} has a malformed entry {info!r}")
        if any(s < 0 for s in shape):
            _fail(source, f"tensor {name!r} has a negative dimension in {shape}")
        entries.append((begin, end, name, dtype, shape))
    entries.sort()
    for begin, end, name, dtype, shape in entries:
        size = math.prod(shape) * dtype.itemsize
        if begin != expected_end or end - begin != size:
            _fail(
                source,
                f"tensor {name!r} occupies bytes [{begin}, {end}) but should be {size} bytes "
                f"starting at {expected_end} (the file was altered)",
            )
        expected_end = end
    if expected_end != len(body):
        _fail(
            source,
            f"the data region is {len(body)} bytes but the tensors describe {expected_end} "
            "(truncated or padded file)",
        )
    return meta, {
        name: (dtype, shape, body[begin:end]) for begin, end, name, dtype, shape in entries
    }


def _make_tensor(dtype, shape, raw):
    t = ec.empty(tuple(shape), dtype=dtype)
    if raw:
        _interop.ffi.memmove(_interop.ffi.cast("char*", t.data_ptr()), raw, len(raw))
    return t


class _PickleFailure(Exception):
    """Carries an exception raised while unpickling a value out of decode(), so that
    load re-raises it as it is (not as a malformed-structure CheckpointError)."""

    def __init__(self, error):
        self.error = error


class _Reader:
    def __init__(self, tensors, source, map_location, weights_only=True):
        self.raw = tensors
        self.made = {}
        self.source = source
        self.map_location = map_location
        self.weights_only = weights_only

    def tensor(self, node):
        name = node["$tensor"]
        if name not in self.raw:
            _fail(self.source, f"the structure refers to a missing tensor {name!r}")
        t = self.made.get(name)
        if t is None:
            dtype, shape, raw = self.raw[name]
            t = _make_tensor(dtype, shape, raw)
            if node.get("parameter"):
                try:
                    from ember_nn import Parameter

                    t = Parameter(t, requires_grad=bool(node.get("requires_grad", True)))
                except ImportError:
                    pass
            elif node.get("requires_grad"):
                t.requires_grad_(True)
            self.made[name] = t
        return t

    def decode(self, obj):
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, list):
            return [self.decode(x) for x in obj]
        if not isinstance(obj, dict) or len(obj) == 0:
            _fail(self.source, f"unexpected value in the structure: {obj!r}")
        if "$tensor" in obj:
            return self.tensor(obj)
        tags = [k for k in obj if k.startswith("$")]
        if not tags:
            _fail(self.source, f"unexpected object in the structure: {obj!r}")
        tag = tags[0]
        value = obj[tag]
        if tag == "$int":
            return int(value)
        if tag == "$float":
            return float(value)
        if tag == "$dtype":
            return ec._dtype.DTYPES_BY_NAME[value]
        if tag == "$device":
            return ec.device(value)
        if tag == "$size":
            return ec.Size(value)
        if tag == "$tuple":
            return tuple(self.decode(x) for x in value)
        if tag == "$namedtuple":
            cls = collections.namedtuple(value, obj["fields"])
            return cls(*(self.decode(x) for x in obj["items"]))
        if tag == "$set":
            return {self.decode(x) for x in value}
        if tag == "$bytes":
            try:
                return base64.b64decode(value, validate=True)
            except (ValueError, TypeError):
                _fail(self.source, "a bytes value in the structure is not valid base64")
        if tag in ("$dict", "$ordered"):
            pairs = [(self._key(self.decode(k)), self.decode(v)) for k, v in value]
            return collections.OrderedDict(pairs) if tag == "$ordered" else dict(pairs)
        if tag == "$pickle":
            try:
                blob = base64.b64decode(value, validate=True)
            except (ValueError, TypeError):
                _fail(self.source, "a pickled value in the structure is not valid base64")
            unpickler = _unpickling.Unpickler(io.BytesIO(blob), self._persistent, self.weights_only)
            try:
                return unpickler.load()
            except CheckpointError:
                raise
            except Exception as exc:
                raise _PickleFailure(exc) from None
        _fail(self.source, f"unknown tag {tag!r} in the structure (written by a newer ember?)")

    def _persistent(self, pid):
        if not (isinstance(pid, dict) and "$tensor" in pid):
            _fail(self.source, f"a pickled value refers to an unknown persistent id {pid!r}")
        return self.tensor(pid)

    @staticmethod
    def _key(k):
        return tuple(k) if isinstance(k, list) else k


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kwargs):
    """Read a checkpoint written by ember.save, by PyTorch's torch.save (zip format,
    tensors/state_dicts/plain values), or any safetensors file (as a dict of tensors).
    With weights_only=True (the default) no code from the file runs: pickled values
    may only use allowlisted globals."""
    if isinstance(f, (str, os.PathLike)):
        source = repr(os.fspath(f))
        with open(f, "rb") as fh:
            data = fh.read()
    elif isinstance(f, (bytes, bytearray)):
        source, data = "<bytes>", bytes(f)
    else:
        source = "<file>"
        data = f.read()
    _check_map_location(map_location)
    if not _is_safetensors(data) and data[:2] == b"PK":
        return _torch_checkpoint.load(data, source, weights_only, _fail)
    if not _is_safetensors(data) and data[:1] == b"\x80":
        _fail(
            source,
            "this looks like a bare pickle (e.g. torch.save with "
            "_use_new_zipfile_serialization=False); ember loads its own format, safetensors "
            "files and PyTorch's zip checkpoints",
        )
    meta, tensors = _parse(data, source)
    reader = _Reader(tensors, source, map_location, weights_only)
    structure = meta.get("ember.structure")
    if structure is None:  # a plain safetensors file: a dict of tensors
        return {name: reader.tensor({"$tensor": name}) for name in tensors}
    try:
        tree = json.loads(structure)
    except json.JSONDecodeError as exc:
        _fail(source, f"the structure metadata is not valid JSON ({exc})")
    try:
        return reader.decode(tree)
    except CheckpointError:
        raise
    except _PickleFailure as failure:
        raise failure.error from None
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        _fail(source, f"the structure metadata is malformed ({type(exc).__name__}: {exc})")


def _is_safetensors(data):
    """Whether data starts as a safetensors file does: a little-endian length, then
    that many bytes of JSON object.  Checked before the zip/pickle magic bytes,
    which a header length can happen to begin with (0x80, or "PK")."""
    if len(data) < 9:
        return False
    (n,) = struct.unpack("<Q", data[:8])
    return 8 + n <= len(data) and data[8:9] == b"{"


def _check_map_location(map_location):
    """Every tensor loads on the CPU (the only device of this build): a map_location
    naming another device is an error, not a silent CPU load."""
    targets = []
    if isinstance(map_location, (str, ec.device)):
        targets = [map_location]
    elif isinstance(map_location, dict):
        targets = list(map_location.values())
    for target in targets:
        if isinstance(target, (str, ec.device)) and ec.device(target).type != "cpu":
            from ember_core import _cuda

            _cuda.unavailable(f"ember.load(map_location={map_location!r})")


def save_to_bytes(obj):
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()
