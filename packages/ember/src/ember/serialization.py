"""ember.save / ember.load: checkpoints in PyTorch's zip format.

``ember.save`` writes what ``torch.save`` writes (Note [Torch zip checkpoints] in
_torch_checkpoint.py), so ``torch.load(path, weights_only=True)`` reads ember's
tensors, state_dicts, optimizer states and containers of plain values, and any
object pickles as it would with torch (a NumPy array loads as a NumPy array).  ember
adds one thing torch ignores: a SHA-256 of the whole file in the zip archive's
comment, so that ember.load detects any altered byte (Note [Checkpoint integrity]).

``ember.load`` reads:
- zip checkpoints, from ember.save (digest checked) or from torch.save;
- ember's earlier formats 1-2 (the safetensors layout, digest checked) and plain
  safetensors files, as a dict of tensors (_safetensors.py).
With ``weights_only=True`` (the default, as in PyTorch 2.6+) no code from the file
runs: pickled globals must be allowlisted (_unpickling.py, ``add_safe_globals``).

Saving to a path writes a temporary file in the same directory, fsyncs it and
renames it over the target, so a crash never leaves a half-written checkpoint
behind (Note [Save temporaries]: a save killed before the rename leaves
``.<target name>.ember-save-<random>.tmp``, which the next save to that target
removes).  The file gets mode 0644 less the umask, as torch.save's does.
"""

import glob
import hashlib
import io
import os
import pickle
import tempfile

try:
    import fcntl
except ImportError:  # not POSIX: stale temporaries are not recognised (Note [Save temporaries])
    fcntl = None


from . import _safetensors, _torch_checkpoint
from ._checkpoint_errors import CheckpointError, fail
from ._map_location import placement
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

FORMAT_VERSION = 3  # 1-2: the safetensors layout; 3: PyTorch's zip format, sealed

# Note [Checkpoint integrity]
# ember.save ends the zip archive with a comment of 77 bytes, "ember-sha256:" and
# the SHA-256 (hex) of every byte of the file, the comment's own 64 digits read as
# "0"s.  Zip readers (torch.load's, Python's zipfile) ignore the comment; ember.load
# checks it before reading anything else, so one altered byte anywhere -- a record
# name, a dtype in data.pkl, a hyperparameter, tensor data, the zip directory --
# fails with CheckpointError (tests/test_fuzz_checkpoint.py flips every byte).  A
# file is ember's when any of its three marks is there: the end-of-directory record
# at its place before a 77-byte comment, the "ember-sha256:" prefix, or the record
# "<archive>/.data/ember_format"; one flipped byte cannot erase all three, so a
# damaged ember file is never read as an unsealed PyTorch one.  Files from torch.save
# have no seal: the zip records' CRC-32s are all that is checked.  Formats 1-2 carry
# their digest in the safetensors header (Note [Digest of formats 1-2], _safetensors.py).
_SEAL_PREFIX = b"ember-sha256:"
_SEAL_LENGTH = len(_SEAL_PREFIX) + 64
_SEAL_BLANK = _SEAL_PREFIX + b"0" * 64
_END_OF_DIRECTORY = b"PK\x05\x06"
_END_RECORD_LENGTH = 22
_FORMAT_RECORD = ".data/ember_format"


def _seal_marks(data):
    at = len(data) - _SEAL_LENGTH - _END_RECORD_LENGTH
    return (
        at >= 0 and data[at : at + 4] == _END_OF_DIRECTORY,
        data[-_SEAL_LENGTH:].startswith(_SEAL_PREFIX),
        ("/" + _FORMAT_RECORD).encode() in data,
    )


def _check_seal(data, source):
    """Verify an ember zip checkpoint's digest (Note [Checkpoint integrity])."""
    if not any(_seal_marks(data)):
        return  # a checkpoint from torch.save
    seal = data[-_SEAL_LENGTH:]
    digest = seal[len(_SEAL_PREFIX) :]
    ok = seal.startswith(_SEAL_PREFIX) and len(data) > _SEAL_LENGTH
    if ok:
        h = hashlib.sha256(memoryview(data)[: len(data) - _SEAL_LENGTH])
        h.update(_SEAL_BLANK)
        ok = h.hexdigest().encode() == digest
    if not ok:
        fail(source, "the file does not match its checksum: it was modified or damaged")


def _write_sealed(obj, out, archive_name, pickle_protocol):
    """Write the checkpoint to ``out`` (a seekable, readable file at position 0), then
    its digest over its last 64 bytes."""
    marker = {_FORMAT_RECORD: f"{FORMAT_VERSION}\n".encode()}
    _torch_checkpoint.write(
        obj, out, archive_name, pickle_protocol, comment=_SEAL_BLANK, extra_records=marker
    )
    out.flush()
    out.seek(0)
    h = hashlib.sha256()
    for chunk in iter(lambda: out.read(1 << 20), b""):
        h.update(chunk)
    out.seek(-64, os.SEEK_END)
    out.write(h.hexdigest().encode())


def _archive_name(f):
    """torch.save's name for the folder inside the archive: the file's name without
    its extension, or "archive"."""
    if isinstance(f, (str, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        if stem and "/" not in stem:
            return stem
    return "archive"


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True):
    """Write obj to f (a path or a writable binary file) as PyTorch's zip checkpoint,
    which ``torch.load`` reads.  Writing a path is atomic.

    >>> ember.save({"model": model.state_dict(), "epoch": 3}, "ckpt.pt")
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError(
            "ember.save: pickle_module must be the standard library's pickle (ember writes "
            f"PyTorch's tensor records with it); got {pickle_module!r}"
        )
    if not _use_new_zipfile_serialization:
        raise ValueError(
            "ember.save: _use_new_zipfile_serialization=False (PyTorch's legacy format) is "
            "not supported; ember writes the zip format"
        )
    protocol = 2 if pickle_protocol is None else pickle_protocol
    archive_name = _archive_name(f)
    if not isinstance(f, (str, os.PathLike)):
        buf = io.BytesIO()
        _write_sealed(obj, buf, archive_name, protocol)
        f.write(buf.getvalue())
        return
    write_atomically(f, lambda out: _write_sealed(obj, out, archive_name, protocol))


def write_atomically(path, write):
    """Call write(out) on a temporary file next to path (opened "w+b"), then give it
    mode 0644 less the umask, fsync it and rename it over path (Note [Save
    temporaries])."""
    path = os.fspath(path)
    _remove_stale_temporaries(path)
    fd, tmp = _temporary_for(path)
    try:
        with os.fdopen(fd, "w+b") as out:
            write(out)
            out.flush()
            os.fchmod(out.fileno(), 0o644 & ~_umask())  # mkstemp made it 0600
            os.fsync(out.fileno())
            os.replace(tmp, path)  # before closing, which releases the lock
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask():
    """The process's umask, read without changing it where Linux tells it (setting it
    to read it back would race with other threads creating files)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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


# ------------------------------------------------------------------ loading


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kwargs):
    """Read a checkpoint written by ember.save or by PyTorch's torch.save (zip format),
    ember's earlier formats, or any safetensors file (as a dict of tensors).
    With weights_only=True (the default) no code from the file runs: pickled values
    may only use allowlisted globals.

    >>> state = ember.load("ckpt.pt")
    """
    if isinstance(f, (str, os.PathLike)):
        source = repr(os.fspath(f))
        with open(f, "rb") as fh:
            data = fh.read()
    elif isinstance(f, (bytes, bytearray)):
        source, data = "<bytes>", bytes(f)
    else:
        source = "<file>"
        data = f.read()
    place = placement(map_location)
    if _safetensors.is_safetensors(data):
        return _safetensors.load(data, source, place, weights_only)
    if data[:2] == b"PK":
        _check_seal(data, source)
        return _torch_checkpoint.load(data, source, place, weights_only)
    if data[:1] == b"\x80":
        fail(
            source,
            "this looks like a bare pickle (e.g. torch.save with "
            "_use_new_zipfile_serialization=False); ember loads zip checkpoints (its own and "
            "PyTorch's) and safetensors files",
        )
    if len(data) < 8:
        fail(
            source,
            f"the file is {len(data)} bytes long, too short for a checkpoint header (truncated?)",
        )
    return _safetensors.load(data, source, place, weights_only)  # raises, saying why


def save_to_bytes(obj):
    """The bytes ember.save writes for obj."""
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()
