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

from ember_core._base.lib import ffi, lib
from ember_core._cuda import nn_kernels as _cuda_nn_kernels


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
REDUCE = _codes("EC_R_", "EC_R_NUM")
SCAN = _codes("EC_S_", "EC_S_NUM")


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


# ----------------------------------------- reductions and scans (reduce.cuh)

_REDUCE_HEADERS = ("prelude.cuh", "ember_codes.h", "dtype_lists.h", "store.cuh", "reduce.cuh")
_REDUCE_SOURCE = "".join(f'#include "{h}"\n' for h in _REDUCE_HEADERS)

# Reductions and scans that take floating-point inputs only (Python casts
# integers first; the launchers refuse them).
REDUCE_FLOAT_ONLY = ("MEAN", "NANSUM", "VAR", "STD", "NORM", "LOGSUMEXP")
SCAN_FLOAT_ONLY = ("LOGCUMSUMEXP",)


def _reduce_dtypes(name, float_only):
    return FLOATS if name in float_only else tuple(DTYPES)


def _reduce(op, dtype, dtype2):
    name, sfx = REDUCE[op], DTYPES[dtype][1]
    if dtype not in _reduce_dtypes(name, REDUCE_FLOAT_ONLY):
        raise RuntimeError(f"no CUDA reduction {name} for dtype code {dtype}")
    f = f"R_{name}<ecu_dt_{sfx}> "
    # the outer kernel first: it uses every part of the op (the compile test
    # builds each group's first kernel)
    kernels = (
        (lib.ECU_RED_OUTER, f"ecu_red_outer<{f}>"),
        (lib.ECU_RED_INNER, f"ecu_red_inner<{f}>"),
        (lib.ECU_RED_FINAL, f"ecu_red_final<{f}>"),
    )
    return Group(f"RED_{name}_{sfx}", _REDUCE_SOURCE, _REDUCE_HEADERS, kernels)


def _scan(op, dtype, dtype2):
    name, sfx = SCAN[op], DTYPES[dtype][1]
    if dtype not in _reduce_dtypes(name, SCAN_FLOAT_ONLY):
        raise RuntimeError(f"no CUDA scan {name} for dtype code {dtype}")
    f = f"S_{name}<ecu_dt_{sfx}> "
    kernels = ((lib.ECU_SCAN_SEQ, f"ecu_scan_seq<{f}>"), (lib.ECU_SCAN_LINE, f"ecu_scan_line<{f}>"))
    return Group(f"SCAN_{name}_{sfx}", _REDUCE_SOURCE, _REDUCE_HEADERS, kernels)


# ------------------------------------------------------ softmax (softmax.cuh)

_SOFTMAX_HEADERS = ("prelude.cuh", "ember_codes.h", "softmax.cuh")
_SOFTMAX_SOURCE = "".join(f'#include "{h}"\n' for h in _SOFTMAX_HEADERS)
_NN_FLOATS = (lib.EC_FLOAT32, lib.EC_FLOAT64)


def _softmax(op, dtype, dtype2):
    if op not in (0, 1) or dtype not in _NN_FLOATS:
        raise RuntimeError(f"no CUDA softmax kernel {op} for dtype code {dtype}")
    t, bwd = DTYPES[dtype][2], "true" if op else "false"
    kernels = (
        (lib.ECU_SM_ROWS, f"ecu_softmax_rows<{t}, {bwd}>"),
        (lib.ECU_SM_COLS, f"ecu_softmax_cols<{t}, {bwd}>"),
    )
    name = ("SOFTMAX_BWD_" if op else "SOFTMAX_") + DTYPES[dtype][1]
    return Group(name, _SOFTMAX_SOURCE, _SOFTMAX_HEADERS, kernels)


# ------------------------------------ random numbers (philox.h, random.cuh)

_RANDOM_HEADERS = (
    "prelude.cuh",
    "ember_codes.h",
    "dtype_lists.h",
    "store.cuh",
    "philox.h",
    "random.cuh",
)
_RANDOM_SOURCE = "".join(f'#include "{h}"\n' for h in _RANDOM_HEADERS)
# Note [Bit-identical random numbers]: no fused multiply-adds, as on the CPU
_NO_FMA = ("--fmad=false",)
RNG_KINDS = {
    getattr(lib, n): n[len("EC_RNG_") :]
    for n in dir(lib)
    if n.startswith("EC_RNG_") and isinstance(getattr(lib, n), int)
}


def _random(op, dtype, dtype2):
    def group(name, kernels):
        return Group(name, _RANDOM_SOURCE, _RANDOM_HEADERS, tuple(kernels), _NO_FMA)

    if op in RNG_KINDS:
        return group(f"RNG_{RNG_KINDS[op]}", ((0, f"ecu_random_k<{op}>"),))
    _, sfx, t = DTYPES[dtype][:3]
    if op == lib.ECU_RNG_BERNOULLI_P and dtype in FLOATS:
        return group(f"RNG_BERNOULLI_P_{sfx}", ((0, f"ecu_bernoulli_p<ecu_dt_{sfx}>"),))
    if op == lib.ECU_RNG_DROPOUT and dtype in _NN_FLOATS:
        return group(f"RNG_DROPOUT_{sfx}", ((0, f"ecu_dropout_k<{t}>"),))
    if op == lib.ECU_RNG_MASKED_SCALE and dtype in _NN_FLOATS:
        return group(f"RNG_MASKED_SCALE_{sfx}", _strided("ecu_masked_scale_k", t))
    if op == lib.ECU_RNG_RANDPERM and dtype == lib.EC_INT64:
        kernels = ((lib.ECU_RNG_IOTA, "ecu_iota_k"), (lib.ECU_RNG_SHUFFLE, "ecu_randperm_k"))
        return group("RNG_RANDPERM", kernels)
    raise RuntimeError(f"no CUDA random kernel {op} for dtype code {dtype}")


# --------------------------------- arange, linspace, triangles (sequence.cuh)

_SEQUENCE_HEADERS = ("prelude.cuh", "ember_codes.h", "dtype_lists.h", "store.cuh", "sequence.cuh")
_SEQUENCE_SOURCE = "".join(f'#include "{h}"\n' for h in _SEQUENCE_HEADERS)
# the triangle kernels copy bits: one per item size (the launcher asks with
# the dtype of each size below)
_TRIANGLE_DTYPES = {
    lib.EC_UINT8: "uint8_t",
    lib.EC_INT16: "uint16_t",
    lib.EC_INT32: "uint32_t",
    lib.EC_INT64: "uint64_t",
}


def _sequence(op, dtype, dtype2):
    def group(name, kernels):
        return Group(name, _SEQUENCE_SOURCE, _SEQUENCE_HEADERS, tuple(kernels), _NO_FMA)

    if op == lib.ECU_SEQ_ARANGE:
        return group("SEQ_ARANGE", ((0, "ecu_arange_k"),))
    if op == lib.ECU_SEQ_LINSPACE:
        return group("SEQ_LINSPACE", ((0, "ecu_linspace_k"),))
    if op == lib.ECU_SEQ_TRIANGLE and dtype in _TRIANGLE_DTYPES:
        t = _TRIANGLE_DTYPES[dtype]
        return group(f"SEQ_TRIANGLE_{t}", _strided("ecu_triangle_k", t))
    raise RuntimeError(f"no CUDA sequence kernel {op} for dtype code {dtype}")


# ------------------------- indexing, masks, sorting (indexing.cuh, sort.cuh)

_INDEX_HEADERS = ("prelude.cuh", "ember_codes.h", "dtype_lists.h", "store.cuh", "indexing.cuh")
_INDEX_SOURCE = "".join(f'#include "{h}"\n' for h in _INDEX_HEADERS)
INDEX_MODES = tuple(range(lib.EC_INDEX_GET, lib.EC_INDEX_MIN + 1))
_MASKED = {lib.ECU_IX_MASKED_SELECT: "false", lib.ECU_IX_MASKED_SCATTER: "true"}


def _index(op, dtype, dtype2):
    sfx = DTYPES[dtype][1]
    if op in INDEX_MODES:
        return Group(
            f"INDEX_{op}_{sfx}",
            _INDEX_SOURCE,
            _INDEX_HEADERS,
            _strided("ecu_index_k", f"ecu_dt_{sfx}", f", {op}"),
        )
    if op in _MASKED and dtype in _TRIANGLE_DTYPES:  # bits: one kernel per item size
        t = _TRIANGLE_DTYPES[dtype]
        return Group(
            f"MASKED_{op}_{t}",
            _INDEX_SOURCE,
            _INDEX_HEADERS,
            _strided("ecu_masked_k", t, f", {_MASKED[op]}"),
        )
    if op == lib.ECU_IX_NONZERO:
        return Group(
            f"NONZERO_{sfx}", _INDEX_SOURCE, _INDEX_HEADERS, ((0, f"ecu_nonzero_k<ecu_dt_{sfx}>"),)
        )
    raise RuntimeError(f"no CUDA index kernel {op} for dtype code {dtype}")


_SORT_HEADERS = ("prelude.cuh", "ember_codes.h", "dtype_lists.h", "store.cuh", "sort.cuh")
_SORT_SOURCE = "".join(f'#include "{h}"\n' for h in _SORT_HEADERS)
# variants (cuda/sort_launch.c): one tile per line, tiles of long lines, a wide
# step of a long line's merge, writing the results of long lines
_SORT_KERNELS = ("ecu_sort_small_k", "ecu_sort_tiles_k", "ecu_sort_step_k", "ecu_sort_finish_k")


_SEARCH_HEADERS = _INDEX_HEADERS + ("search.cuh",)
_SEARCH_SOURCE = "".join(f'#include "{h}"\n' for h in _SEARCH_HEADERS)
# ops of the sort family besides sorting (cuda/sort_launch.c)
SORT_OPS = {"SORT": 0, "SEARCHSORTED": 1, "BINCOUNT": 2, "HISTC": 3, "MULTINOMIAL": 4, "RDIST": 5}
# the per-element samplers (random_dist.h): gamma, its derivative, poisson, binomial
RDIST_KINDS = (0, 1, 2, 3)
_RDIST_HEADERS = ("prelude.cuh", "ember_codes.h", "special.h", "random_dist.h", "random_dist.cuh")
_RDIST_SOURCE = "".join(f'#include "{h}"\n' for h in _RDIST_HEADERS)
# multinomial draws Philox numbers as the CPU does (Note [Bit-identical random numbers])
_MULTINOMIAL_HEADERS = _INDEX_HEADERS + ("philox.h", "multinomial.cuh")
_MULTINOMIAL_SOURCE = "".join(f'#include "{h}"\n' for h in _MULTINOMIAL_HEADERS)


def _sort(op, dtype, dtype2):
    sfx = DTYPES[dtype][1]
    if op == SORT_OPS["SORT"]:
        kernels = tuple((v, f"{k}<ecu_dt_{sfx}>") for v, k in enumerate(_SORT_KERNELS))
        return Group(f"SORT_{sfx}", _SORT_SOURCE, _SORT_HEADERS, kernels)
    if op == SORT_OPS["SEARCHSORTED"]:
        kernels = ((0, f"ecu_searchsorted_k<ecu_dt_{sfx}>"),)
        return Group(f"SEARCHSORTED_{sfx}", _SEARCH_SOURCE, _SEARCH_HEADERS, kernels)
    if (
        op == SORT_OPS["BINCOUNT"]
        and dtype2 in DTYPES
        and (dtype in _NN_FLOATS or (dtype == lib.EC_INT64 and dtype2 == lib.EC_BOOL))
    ):
        w = DTYPES[dtype2][1]
        kernels = ((0, f"ecu_bincount_k<ecu_dt_{sfx}, ecu_dt_{w}>"),)
        return Group(f"BINCOUNT_{sfx}_{w}", _SEARCH_SOURCE, _SEARCH_HEADERS, kernels)
    if op == SORT_OPS["HISTC"] and dtype in FLOATS:
        k = "ecu_histc_small_k" if dtype in (lib.EC_FLOAT16, lib.EC_BFLOAT16) else "ecu_histc_k"
        kernels = ((int(k == "ecu_histc_small_k"), f"{k}<ecu_dt_{sfx}>"),)
        return Group(f"HISTC_{sfx}", _SEARCH_SOURCE, _SEARCH_HEADERS, kernels)
    if op == SORT_OPS["MULTINOMIAL"] and dtype in FLOATS:
        kernels = ((0, f"ecu_multinomial_k<ecu_dt_{sfx}>"),)
        return Group(
            f"MULTINOMIAL_{sfx}", _MULTINOMIAL_SOURCE, _MULTINOMIAL_HEADERS, kernels, _NO_FMA
        )
    if op == SORT_OPS["RDIST"] and dtype in _NN_FLOATS and dtype2 in RDIST_KINDS:
        t = DTYPES[dtype][2]
        kernels = ((0, f"ecu_rdist_k<{dtype2}, {t}>"),)
        return Group(f"RDIST_{dtype2}_{sfx}", _RDIST_SOURCE, _RDIST_HEADERS, kernels, _NO_FMA)
    raise RuntimeError(f"no CUDA sort-family kernel {op} for dtype codes {dtype}/{dtype2}")


def index_groups():
    """Every indexing and sorting group (csrc/cuda/indexing.cuh, sort.cuh)."""
    out = [group(lib.ECU_FAM_INDEX, m, dt, 0) for m in INDEX_MODES for dt in DTYPES]
    out += [group(lib.ECU_FAM_INDEX, op, dt, 0) for op in _MASKED for dt in _TRIANGLE_DTYPES]
    out += [group(lib.ECU_FAM_INDEX, lib.ECU_IX_NONZERO, dt, 0) for dt in DTYPES]
    out += [group(lib.ECU_FAM_SORT, 0, dt, 0) for dt in DTYPES]
    out += [group(lib.ECU_FAM_SORT, SORT_OPS["SEARCHSORTED"], dt, 0) for dt in DTYPES]
    out.append(group(lib.ECU_FAM_SORT, SORT_OPS["BINCOUNT"], lib.EC_INT64, lib.EC_BOOL))
    out += [group(lib.ECU_FAM_SORT, SORT_OPS["BINCOUNT"], o, w) for o in _NN_FLOATS for w in DTYPES]
    out += [group(lib.ECU_FAM_SORT, SORT_OPS["HISTC"], dt, 0) for dt in FLOATS]
    out += [group(lib.ECU_FAM_SORT, SORT_OPS["MULTINOMIAL"], dt, 0) for dt in FLOATS]
    out += [
        group(lib.ECU_FAM_SORT, SORT_OPS["RDIST"], dt, k) for dt in _NN_FLOATS for k in RDIST_KINDS
    ]
    return out


FAMILIES = {
    lib.ECU_FAM_UNARY: _unary,
    lib.ECU_FAM_BINARY: _binary,
    lib.ECU_FAM_TERNARY: _ternary,
    lib.ECU_FAM_CAST: _cast,
    lib.ECU_FAM_FILL: _fill,
    lib.ECU_FAM_REDUCE: _reduce,
    lib.ECU_FAM_SCAN: _scan,
    lib.ECU_FAM_SOFTMAX: _softmax,
    lib.ECU_FAM_RANDOM: _random,
    lib.ECU_FAM_SEQUENCE: _sequence,
    lib.ECU_FAM_INDEX: _index,
    lib.ECU_FAM_SORT: _sort,
    lib.ECU_FAM_NN: _cuda_nn_kernels.nn_group,
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
    out += reduction_groups()
    out += [group(lib.ECU_FAM_SOFTMAX, op, dt, 0) for op in (0, 1) for dt in _NN_FLOATS]
    out += random_groups()
    out += [
        group(lib.ECU_FAM_SEQUENCE, op, 0, 0) for op in (lib.ECU_SEQ_ARANGE, lib.ECU_SEQ_LINSPACE)
    ]
    out += [group(lib.ECU_FAM_SEQUENCE, lib.ECU_SEQ_TRIANGLE, dt, 0) for dt in _TRIANGLE_DTYPES]
    out += index_groups()
    out += _cuda_nn_kernels.nn_groups()
    return out


def random_groups():
    """Every random-number group (csrc/cuda/random.cuh)."""
    out = [group(lib.ECU_FAM_RANDOM, kind, 0, 0) for kind in sorted(RNG_KINDS)]
    out += [group(lib.ECU_FAM_RANDOM, lib.ECU_RNG_BERNOULLI_P, dt, 0) for dt in FLOATS]
    for op in (lib.ECU_RNG_DROPOUT, lib.ECU_RNG_MASKED_SCALE):
        out += [group(lib.ECU_FAM_RANDOM, op, dt, 0) for dt in _NN_FLOATS]
    out.append(group(lib.ECU_FAM_RANDOM, lib.ECU_RNG_RANDPERM, lib.EC_INT64, 0))
    return out


def reduction_groups():
    """Every reduction and scan group (csrc/cuda/reduce.cuh)."""
    out = []
    for table, family, float_only in (
        (REDUCE, lib.ECU_FAM_REDUCE, REDUCE_FLOAT_ONLY),
        (SCAN, lib.ECU_FAM_SCAN, SCAN_FLOAT_ONLY),
    ):
        for op, name in sorted(table.items()):
            out += [group(family, op, dt, 0) for dt in _reduce_dtypes(name, float_only)]
    return out
