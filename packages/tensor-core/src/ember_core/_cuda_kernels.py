"""Which CUDA kernels make up a compile group, and from which sources.

A launcher that misses in the kernel table asks for one group: (family, op,
dtype, dtype2).  A group is one NVRTC program -- a small source that includes
the embedded headers (Note [Embedded kernel sources]) -- and the name
expressions of its kernel templates, one per launch variant.  Everything here
is plain Python (no GPU needed), so it is unit-tested on any machine, and the
compile test (tests/test_cuda_compile.py) walks ``all_groups()``.
"""

import dataclasses
import re

from ember_core._lib import ffi, lib

# dtype code -> (suffix, device storage type), as in csrc/dtype_lists.h
DTYPES = {
    lib.EC_BOOL: ("b", "uint8_t"),
    lib.EC_UINT8: ("u8", "uint8_t"),
    lib.EC_INT8: ("i8", "int8_t"),
    lib.EC_INT16: ("i16", "int16_t"),
    lib.EC_INT32: ("i32", "int32_t"),
    lib.EC_INT64: ("i64", "int64_t"),
    lib.EC_FLOAT16: ("f16", "ec_f16"),
    lib.EC_BFLOAT16: ("bf16", "ec_bf16"),
    lib.EC_FLOAT32: ("f32", "float"),
    lib.EC_FLOAT64: ("f64", "double"),
}
FLOATS = (lib.EC_FLOAT16, lib.EC_BFLOAT16, lib.EC_FLOAT32, lib.EC_FLOAT64)
INTS = (lib.EC_UINT8, lib.EC_INT8, lib.EC_INT16, lib.EC_INT32, lib.EC_INT64)

C, S32, S64 = lib.ECU_VAR_C, lib.ECU_VAR_S32, lib.ECU_VAR_S64


def _codes(prefix, count_name):
    """{code: NAME} of the C op enum EC_<prefix>_NAME (read from the cdef)."""
    names = {}
    for attr in dir(lib):
        if attr.startswith(prefix) and attr != count_name:
            names[getattr(lib, attr)] = attr[len(prefix) :]
    return names


UNARY = _codes("EC_U_", "EC_U_NUM")
BINARY = _codes("EC_B_", "EC_B_NUM")
TERNARY = _codes("EC_T_", "EC_T_NUM")


def _header_text(name):
    text = lib.ecu_source(name.encode())
    if text == ffi.NULL:
        raise RuntimeError(f"the CUDA kernel source {name!r} is not built into ember_core._C")
    return ffi.string(text).decode()


@dataclasses.dataclass(frozen=True)
class Group:
    """One NVRTC program: its source, the headers it includes (by name), and
    (variant, name expression) for each kernel it instantiates."""

    name: str
    source: str
    headers: tuple
    kernels: tuple
    options: tuple = ()

    def header_texts(self):
        return {h: _header_text(h) for h in self.headers}


_ELEMENTWISE_HEADERS = (
    "prelude.cuh",
    "ember_codes.h",
    "dtype_lists.h",
    "special.h",
    "elementwise_ops.h",
    "elementwise.cuh",
)
_ELEMENTWISE_SOURCE = "".join(f'#include "{h}"\n' for h in _ELEMENTWISE_HEADERS)


def _strided(template, functor, extra=""):
    return (
        (S32, f"{template}<{functor}{extra}, true>"),
        (S64, f"{template}<{functor}{extra}, false>"),
    )


def _elementwise(name, kernels):
    return Group(name, _ELEMENTWISE_SOURCE, _ELEMENTWISE_HEADERS, tuple(kernels))


def _unary(op, dtype, dtype2):
    f = f"U_{UNARY[op]}_{DTYPES[dtype][0]}"
    return _elementwise(f, ((C, f"ecu_unary_c<{f}>"), *_strided("ecu_unary_s", f)))


def _binary(op, dtype, dtype2):
    f = f"B_{BINARY[op]}_{DTYPES[dtype][0]}"
    return _elementwise(f, ((C, f"ecu_binary_c<{f}>"), *_strided("ecu_binary_s", f)))


def _ternary(op, dtype, dtype2):
    sfx, storage = DTYPES[dtype]
    f = f"T_{TERNARY[op]}_{sfx}"
    a = "uint8_t" if op == lib.EC_T_WHERE else storage
    return _elementwise(f, _strided("ecu_ternary_s", f, f", {a}, {storage}"))


def _cast(op, dtype, dtype2):
    f = f"CAST_{DTYPES[dtype][0]}_{DTYPES[dtype2][0]}"
    return _elementwise(f, ((C, f"ecu_unary_c<{f}>"), *_strided("ecu_unary_s", f)))


def _fill(op, dtype, dtype2):
    t = DTYPES[dtype][1]
    return _elementwise(
        f"FILL_{DTYPES[dtype][0]}", ((C, f"ecu_fill_c<{t}>"), *_strided("ecu_fill_s", t))
    )


FAMILIES = {
    lib.ECU_FAM_UNARY: _unary,
    lib.ECU_FAM_BINARY: _binary,
    lib.ECU_FAM_TERNARY: _ternary,
    lib.ECU_FAM_CAST: _cast,
    lib.ECU_FAM_FILL: _fill,
}


def group(family, op, dtype, dtype2):
    """The compile group a launcher asked for."""
    make = FAMILIES.get(family)
    if make is None or dtype not in DTYPES or (family == lib.ECU_FAM_CAST and dtype2 not in DTYPES):
        raise RuntimeError(
            f"no CUDA kernel group for family {family}, op {op}, dtypes {dtype}/{dtype2}"
        )
    return make(op, dtype, dtype2)


# ----------------------------------------------------- every group (tests)

# The dtypes each elementwise list is expanded for (csrc/cuda/elementwise.cuh).
_KIND_DTYPES = {"FLOAT": FLOATS, "INT": INTS, "BOOL": (lib.EC_BOOL,)}


def _list_ops(list_name):
    """Op names in one list of csrc/elementwise_ops.h (the embedded copy)."""
    text = _header_text("elementwise_ops.h")
    start = text.index(f"#define {list_name}(")
    body = text[start : text.index("\n\n", start)]
    return re.findall(r"^\s*D\((\w+),", body, re.M)


def all_groups():
    """Every compile group the launchers can ask for, for the compile test."""
    by_name = {
        "UNARY": ({v: k for k, v in UNARY.items()}, lib.ECU_FAM_UNARY),
        "BINARY": ({v: k for k, v in BINARY.items()}, lib.ECU_FAM_BINARY),
        "TERNARY": ({v: k for k, v in TERNARY.items()}, lib.ECU_FAM_TERNARY),
    }
    out = []
    for list_kind, (codes, family) in by_name.items():
        for kind, dtypes in _KIND_DTYPES.items():
            if list_kind == "TERNARY" and kind == "BOOL":
                continue
            for op_name in _list_ops(f"{list_kind}_{kind}_LIST"):
                out += [group(family, codes[op_name], dt, 0) for dt in dtypes]
    out += [group(lib.ECU_FAM_TERNARY, lib.EC_T_WHERE, dt, 0) for dt in DTYPES]
    out += [group(lib.ECU_FAM_CAST, 0, d, s) for d in DTYPES for s in DTYPES]
    out += [group(lib.ECU_FAM_FILL, 0, dt, 0) for dt in DTYPES]
    return out
