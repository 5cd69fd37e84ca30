"""The safetensors layout: plain safetensors files, and ember's own checkpoint
formats 1 and 2, which ember.save wrote before it wrote PyTorch's zip format.

Layout (any safetensors reader reads it):

    8 bytes   little-endian u64: N, the length of the JSON header
    N bytes   JSON header: {"<name>": {"dtype": "F32", "shape": [...],
              "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
    the rest  the tensors' bytes, back to back, in header order

ember's formats 1-2 kept the saved object's structure in ``__metadata__``
("ember.structure": JSON with tensors as {"$tensor": name} and other values tagged)
and a digest ("ember.file_sha256": SHA-256 of the whole file with its own 64 digits
read as "0"s; format 1: "ember.sha256", of the data region only).  ember.load
still reads them, digest checked (Note [Digest of formats 1-2]);
``ember.utils.safetensors`` writes plain files (tensors named by their keys) with
``serialize``.  Reading parses JSON and copies bytes: it never runs code from the
file, except a value pickled into a format-2 structure, which goes through the
weights-only unpickler.
"""

import base64
import collections
import hashlib
import io
import json
import math
import struct

import ember_core as ec
from ember_core._interop import numpy as _interop
from ember_core._tensor import dtype as _dtype

from . import _checkpoint_errors, _unpickling
from ._checkpoint_errors import CheckpointError

DTYPE_CODES = {
    ec.bool: "BOOL",
    ec.uint8: "U8",
    ec.int8: "I8",
    ec.int16: "I16",
    ec.int32: "I32",
    ec.int64: "I64",
    ec.uint16: "U16",  # U16/U32/U64/C64: what the safetensors package (0.4+) writes
    ec.uint32: "U32",
    ec.uint64: "U64",
    ec.complex64: "C64",
    ec.float16: "F16",
    ec.bfloat16: "BF16",
    ec.float32: "F32",
    ec.float64: "F64",
}
_CODE_DTYPES = {v: k for k, v in DTYPE_CODES.items()}
_MAX_HEADER = 100 * 1024 * 1024


_fail = _checkpoint_errors.fail


def is_safetensors(data):
    """Whether data starts as a safetensors file does: a little-endian length, then
    that many bytes of JSON object.  Checked before the zip/pickle magic bytes,
    which a header length can happen to begin with (0x80, or "PK")."""
    if len(data) < 9:
        return False
    (n,) = struct.unpack("<Q", data[:8])
    return 8 + n <= len(data) and data[8:9] == b"{"


def serialize(tensors, metadata=None):
    """The bytes of a plain safetensors file of ``tensors`` ({name: Tensor}, in
    that order), with string ``metadata``."""
    header = {}
    chunks = []
    offset = 0
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"safetensors: tensor names must be strings, got {name!r}")
        if not isinstance(t, ec.Tensor):
            raise TypeError(f"safetensors: {name!r} is a {type(t).__name__}, not a Tensor")
        if t.dtype not in DTYPE_CODES:
            known = ", ".join(d.name for d in DTYPE_CODES)
            raise TypeError(
                f"safetensors: {name!r} has dtype {t.dtype}, which the safetensors format "
                f"cannot store (it stores {known})"
            )
        data = contiguous_bytes(t)
        header[name] = {
            "dtype": DTYPE_CODES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    if metadata:
        bad = {k: v for k, v in metadata.items() if not (isinstance(k, str) and isinstance(v, str))}
        if bad:
            raise TypeError(f"safetensors: metadata keys and values must be strings: {bad!r}")
        header["__metadata__"] = dict(metadata)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # align the data region to 8 bytes
    return b"".join([struct.pack("<Q", len(text)), text, *chunks])


def contiguous_bytes(t):
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.detach().contiguous()
    n = t.numel() * t.element_size()
    if n == 0:
        return b""
    return bytes(_interop.ffi.buffer(_interop.ffi.cast("char*", t.data_ptr()), n))


# Note [Digest of formats 1-2] (the zip format's seal: Note [Checkpoint integrity])
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
    """Verify an ember format 1-2 file's digest (Note [Digest of formats 1-2])."""
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


def parse(data, source):
    """(metadata, {name: (dtype, shape, bytes)}) of a safetensors file, checked."""
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


def make_tensor(dtype, shape, raw):
    t = ec.empty(tuple(shape), dtype=dtype)
    if raw:
        _interop.ffi.memmove(_interop.ffi.cast("char*", t.data_ptr()), raw, len(raw))
    return t


class _PickleFailure(Exception):
    """Carries an exception raised while unpickling a value out of decode(), so that
    load re-raises it as it is (not as a malformed-structure CheckpointError)."""

    def __init__(self, error):
        self.error = error


class Reader:
    def __init__(self, tensors, source, place, weights_only=True):
        self.raw = tensors
        self.made = {}
        self.source = source
        self.place = place  # (tensor, saved location) -> tensor: _map_location
        self.weights_only = weights_only

    def tensor(self, node):
        name = node["$tensor"]
        if name not in self.raw:
            _fail(self.source, f"the structure refers to a missing tensor {name!r}")
        t = self.made.get(name)
        if t is None:
            dtype, shape, raw = self.raw[name]
            t = self.place(make_tensor(dtype, shape, raw), "cpu")
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
            return _dtype.DTYPES_BY_NAME[value]
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


def load(data, source, place, weights_only):
    """The object in a safetensors-layout file: ember's format 1-2 structure, or a
    dict of tensors for a plain file."""
    meta, tensors = parse(data, source)
    reader = Reader(tensors, source, place, weights_only)
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
