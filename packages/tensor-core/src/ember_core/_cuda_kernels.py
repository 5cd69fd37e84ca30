"""Which CUDA kernels make up a compile group, and from which sources.

A launcher that misses in the kernel table asks for one kernel: (family, op,
dtype, dtype2, variant).  Its group is one NVRTC program -- a small source that
includes the embedded headers (Note [Embedded kernel sources]) and expands the
op list of its dtype only -- and the name expressions of its kernel templates,
one per launch variant; the variant asked for is compiled.  Everything here
is plain Python (no GPU needed), so it is unit-tested on any machine, and the
compile test (tests/test_cuda_compile.py) walks ``all_groups()``.
"""

import dataclasses
import re

from ember_core._lib import ffi, lib


def _header_text(name):
    text = lib.ecu_source(name.encode())
    if text == ffi.NULL:
        raise RuntimeError(f"the CUDA kernel source {name!r} is not built into ember_core._C")
    return ffi.string(text).decode()


def _dtype_table():
    """dtype code -> (code name, suffix, storage type, compute type, kind B/I/F), read
    from the X-macro lists of csrc/dtype_lists.h (the embedded copy)."""
    rows = re.findall(r"X\((EC_\w+), (\w+), (\w+), (\w+), ([BIF])\)", _header_text("dtype_lists.h"))
    return {getattr(lib, r[0]): r for r in rows}


DTYPES = _dtype_table()
FLOATS = tuple(c for c, r in DTYPES.items() if r[4] == "F")
INTS = tuple(c for c, r in DTYPES.items() if r[4] == "I")
_KIND_LIST = {"F": "FLOAT", "I": "INT", "B": "BOOL"}

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

    def variant(self, variant):
        """The group reduced to one launch variant's kernel (what a launcher asked for)."""
        kernels = tuple(k for k in self.kernels if k[0] == variant)
        if not kernels:
            raise RuntimeError(f"CUDA kernel group {self.name} has no variant {variant}")
        return dataclasses.replace(self, kernels=kernels)


_ELEMENTWISE_HEADERS = (
    "prelude.cuh",
    "ember_codes.h",
    "dtype_lists.h",
    "special.h",
    "elementwise_ops.h",
    "elementwise.cuh",
)
_ELEMENTWISE_INCLUDES = "".join(f'#include "{h}"\n' for h in _ELEMENTWISE_HEADERS)


def _dtype_args(dtype):
    """The X-macro arguments of a dtype: 'EC_FLOAT32, f32, float, float'."""
    return ", ".join(DTYPES[dtype][:4])


def _list(family, dtype, functor):
    """One dtype's expansion of a shared op list (csrc/elementwise_ops.h)."""
    kind = _KIND_LIST[DTYPES[dtype][4]]
    return f"{family}_{kind}_LIST({functor}, {_dtype_args(dtype)})\n"


def _strided(template, functor, extra=""):
    return (
        (S32, f"{template}<{functor}{extra}, true>"),
        (S64, f"{template}<{functor}{extra}, false>"),
    )


def _elementwise(name, expansion, kernels):
    return Group(name, _ELEMENTWISE_INCLUDES + expansion, _ELEMENTWISE_HEADERS, tuple(kernels))


def _unary(op, dtype, dtype2):
    f = f"U_{UNARY[op]}_{DTYPES[dtype][1]}"
    kernels = ((C, f"ecu_unary_c<{f}>"), *_strided("ecu_unary_s", f))
    return _elementwise(f, _list("UNARY", dtype, "ECU_UNARY_FUNCTOR"), kernels)


def _binary(op, dtype, dtype2):
    f = f"B_{BINARY[op]}_{DTYPES[dtype][1]}"
    kernels = ((C, f"ecu_binary_c<{f}>"), *_strided("ecu_binary_s", f))
    return _elementwise(f, _list("BINARY", dtype, "ECU_BINARY_FUNCTOR"), kernels)


def _ternary(op, dtype, dtype2):
    _, sfx, storage, _, kind = DTYPES[dtype]
    f = f"T_{TERNARY[op]}_{sfx}"
    if op == lib.EC_T_WHERE:
        expansion = f"ECU_WHERE_FUNCTOR({_dtype_args(dtype)}, {kind})\n"
        a = "uint8_t"
    else:
        expansion = _list("TERNARY", dtype, "ECU_TERNARY_FUNCTOR")
        a = storage
    return _elementwise(f, expansion, _strided("ecu_ternary_s", f, f", {a}, {storage}"))


def _cast(op, dtype, dtype2):
    f = f"CAST_{DTYPES[dtype][1]}_{DTYPES[dtype2][1]}"
    d, s = DTYPES[dtype], DTYPES[dtype2]
    expansion = f"ECU_CAST_FUNCTOR({', '.join(d)}, {', '.join(s)})\n"
    kernels = ((C, f"ecu_unary_c<{f}>"), *_strided("ecu_unary_s", f))
    return _elementwise(f, expansion, kernels)


def _fill(op, dtype, dtype2):
    t = DTYPES[dtype][2]
    kernels = ((C, f"ecu_fill_c<{t}>"), *_strided("ecu_fill_s", t))
    return _elementwise(f"FILL_{DTYPES[dtype][1]}", "", kernels)


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
