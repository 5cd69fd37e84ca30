"""The inspection namespace: ``__array_namespace_info__()``."""

import ember_core as ec
from ember_core._tensor import dtype as D
from ember_core.array_api._helpers import device_arg

_CPU = ec.device("cpu")

_DTYPES = {
    "bool": D.bool_,
    "int8": D.int8,
    "int16": D.int16,
    "int32": D.int32,
    "int64": D.int64,
    "uint8": D.uint8,
    "uint16": D.uint16,
    "uint32": D.uint32,
    "uint64": D.uint64,
    "float32": D.float32,
    "float64": D.float64,
    "complex64": D.complex64,
    "complex128": D.complex128,
}

_KIND = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "numeric": (
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ),  # fmt: skip
}


class Info:
    """What this namespace supports: capabilities, devices and dtypes."""

    __module__ = "ember_core.array_api"

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return _CPU

    def default_dtypes(self, *, device=None):
        device_arg(device)
        return {
            "real floating": D.get_default_dtype(),
            "complex floating": D.default_complex_dtype(),
            "integral": D.int64,
            "indexing": D.int64,
        }

    def devices(self):
        return [_CPU]

    def dtypes(self, *, device=None, kind=None):
        device_arg(device)
        if kind is None:
            return dict(_DTYPES)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        out = {}
        for k in kinds:
            if isinstance(k, D.dtype):
                out.update({n: d for n, d in _DTYPES.items() if d is k})
                continue
            try:
                names = _KIND[k]
            except KeyError:
                raise ValueError(f"dtypes: unknown kind {k!r}") from None
            out.update({n: _DTYPES[n] for n in names})
        return out


def __array_namespace_info__():
    return Info()
