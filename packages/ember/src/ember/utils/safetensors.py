"""safetensors files with ``safetensors.torch``'s API: flat dicts of tensors named by
their keys, which any safetensors reader (``safetensors.numpy.load_file``,
``safetensors.torch.load_file``, other tools) reads by name.

    from ember.utils import safetensors
    safetensors.save_model(model, "model.safetensors")        # state_dict keys
    state = safetensors.load_file("model.safetensors")        # {"fc.weight": Tensor, ...}

The format (8-byte header length, JSON header, raw little-endian bytes) is ember's
own reader and writer (ember/_safetensors.py, shared with ember.load), so every
dtype the safetensors package stores (bfloat16, uint16/32/64 and complex64 included)
round-trips without NumPy; complex128, which the format has no code for, raises.  A file is written
atomically (temporary file, fsync, rename), mode 0644 less the umask.  Tensors that
share memory are written as separate copies: the format has no views.
"""

import os

import ember_core as ec

from .. import _safetensors, serialization

__all__ = ["load", "load_file", "load_model", "save", "save_file", "save_model"]


def save(tensors, metadata=None):
    """The bytes of a safetensors file of ``tensors`` ({name: Tensor}).

    >>> data = save({"w": ember.ones(2)})
    """
    return _safetensors.serialize(_checked(tensors), metadata)


def save_file(tensors, filename, metadata=None):
    """Write ``tensors`` ({name: Tensor}) to ``filename``, each under its name.

    >>> save_file(model.state_dict(), "model.safetensors", metadata={"format": "pt"})
    """
    data = save(tensors, metadata)
    serialization.write_atomically(filename, lambda out: out.write(data))


def load(data, device="cpu"):
    """{name: Tensor} of a safetensors file's bytes."""
    return _tensors(bytes(data), "<bytes>", device)


def load_file(filename, device="cpu"):
    """{name: Tensor} of the safetensors file ``filename``.

    >>> model.load_state_dict(load_file("model.safetensors"))
    """
    with open(filename, "rb") as f:
        return _tensors(f.read(), repr(os.fspath(filename)), device)


def save_model(model, filename, metadata=None, force_contiguous=False):
    """Write ``model.state_dict()`` to ``filename`` (metadata ``{"format": "pt"}`` as
    safetensors.torch writes, which loaders such as transformers look for)."""
    meta = {"format": "pt", **(metadata or {})}
    save_file(model.state_dict(), filename, meta)


def load_model(model, filename, strict=True, device="cpu"):
    """Load ``filename`` into ``model``; returns (missing keys, unexpected keys)."""
    result = model.load_state_dict(load_file(filename, device), strict=strict)
    return list(result.missing_keys), list(result.unexpected_keys)


def _checked(tensors):
    if not isinstance(tensors, dict):
        raise TypeError(f"safetensors: expected a dict of tensors, got {type(tensors).__name__}")
    return tensors


def _tensors(data, source, device):
    _, entries = _safetensors.parse(data, source)
    out = {}
    for name, (dtype, shape, raw) in entries.items():
        t = _safetensors.make_tensor(dtype, shape, raw)
        out[name] = t if ec.device(device).type == "cpu" else t.to(device)
    return out
