"""The emulator against a GPU, kernel for kernel: run ember's elementwise and
cast kernels over special values (every float16 and bfloat16 bit pattern,
boundaries, NaNs, infinities, subnormals, integer extremes and zero divisors)
and the emulator's selftest kernels (shared memory, barriers, warp collectives,
atomics) on whatever CUDA driver this process loads, and save every output;
then compare two such runs bit for bit.

    # here, on the emulator
    python tests/cuda_emu/ember_cuda_emu.py run -- python tests/cuda_emu/hw_diff.py run emu.npz
    # on a GPU machine (needs only numpy, NVRTC and the NVIDIA driver; ember
    # itself is not built there: the kernel sources are read from csrc/)
    python tests/cuda_emu/hw_diff.py run gpu.npz
    python tests/cuda_emu/hw_diff.py compare emu.npz gpu.npz

Kernels are compiled by NVRTC (ember_core/_cuda/compile.py, loaded by path) or,
under EMBER_CUDA_EMULATE=1, by the emulation compiler, in batches of kernels of
one source.  The comparison reports, per kernel, the elements that differ: for
integer and boolean outputs and for the ops IEEE rounds exactly (casts, +, -,
*, /, sqrt, fmod, min/max, rounding functions...) any difference is a mismatch;
for transcendental functions it reports the largest difference in ulps (the
GPU's libdevice and glibc differ by a few).
"""

import argparse
import concurrent.futures
import ctypes
import dataclasses
import importlib.util
import os
import pathlib
import re
import sys
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
CSRC = HERE.parent.parent / "csrc"
SRC = HERE.parent.parent / "src" / "ember_core"
HEADERS = ("prelude.cuh", "ember_codes.h", "dtype_lists.h", "special.h", "elementwise_ops.h")
EW_HEADERS = (*HEADERS, "elementwise.cuh")

# dtype suffix -> (numpy storage dtype, numpy value dtype for reading)
DT = {
    "b": np.uint8,
    "u8": np.uint8,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "f16": np.uint16,
    "bf16": np.uint16,
    "f32": np.float32,
    "f64": np.float64,
}
FLOAT_SFX = ("f16", "bf16", "f32", "f64")
INT_SFX = ("u8", "i8", "i16", "i32", "i64")
# ops whose IEEE result is exact (any bit difference is a mismatch)
EXACT = {
    "COPY", "NEG", "ABS", "SIGN", "SQUARE", "RECIPROCAL", "SQRT", "FLOOR", "CEIL", "TRUNC",
    "ROUND", "FRAC", "ADD", "SUB", "MUL", "DIV", "FMOD", "MAXIMUM", "MINIMUM", "FMAX", "FMIN",
    "COPYSIGN", "EQ", "NE", "LT", "LE", "GT", "GE", "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR",
    "RSUB", "RDIV", "NEXTAFTER", "TRUNC_DIV", "RELU_BACKWARD", "THRESHOLD_BACKWARD", "ISNAN",
    "ISINF", "ISFINITE", "SIGNBIT", "LOGICAL_NOT", "RELU", "CLAMP",
}  # fmt: skip


def text(name):
    p = CSRC / name if (CSRC / name).exists() else CSRC / "cuda" / name
    if not p.exists():
        p = HERE / name
    return p.read_text()


@dataclasses.dataclass(frozen=True)
class Group:
    name: str
    source: str
    headers: tuple
    kernels: tuple
    options: tuple = ()

    def header_texts(self):
        return {h: text(h) for h in self.headers}


def _ops(list_name):
    body = text("elementwise_ops.h")
    start = body.index(f"#define {list_name}(")
    body = body[start : body.index("\n\n", start)]
    return re.findall(r"^\s*D\((\w+), DC, sfx, T, C, (\w+), (\w+),", body, re.M)


def cases():
    """[(kernel expression, kind, in sfx, out sfx, op)] of every case."""
    out = []
    for kind, lists, sfxs in (
        ("unary", ("UNARY_FLOAT_LIST",), FLOAT_SFX),
        ("unary", ("UNARY_INT_LIST",), INT_SFX),
        ("binary", ("BINARY_FLOAT_LIST",), FLOAT_SFX),
        ("binary", ("BINARY_INT_LIST",), INT_SFX),
    ):
        for op, _, osfx in _ops(lists[0]):
            for s in sfxs:
                f = f"{'U' if kind == 'unary' else 'B'}_{op}_{s}"
                out.append((f"ecu_{kind}_c<{f}>", kind, s, s if osfx == "sfx" else osfx, op))
    for d in DT:
        for s in DT:
            if d != s and (d in FLOAT_SFX or s in FLOAT_SFX):
                out.append((f"ecu_unary_c<CAST_{d}_{s}>", "unary", s, d, "CAST"))
    return out


SELFTEST = (
    "st_block_sum<256>",
    "st_block_scan",
    "st_warp_ops",
    "st_atomics",
)


def _dtype_rows():
    """sfx -> (code, sfx, storage, compute, kind), from csrc/dtype_lists.h."""
    rows = re.findall(r"X\((EC_\w+), (\w+), (\w+), (\w+), ([BIF])\)", text("dtype_lists.h"))
    return {r[1]: r for r in rows}


def _expansion(case, rows):
    """The op-list expansion that defines a case's functor (as ember_core's
    _cuda_kernels writes it: a group expands its own dtype only)."""
    expr, kind, isfx, osfx, op = case
    if op == "CAST":
        return f"ECU_CAST_FUNCTOR({', '.join(rows[osfx])}, {', '.join(rows[isfx])})\n"
    family = "UNARY" if kind == "unary" else "BINARY"
    k = {"F": "FLOAT", "I": "INT", "B": "BOOL"}[rows[isfx][4]]
    functor = f"ECU_{family}_FUNCTOR"
    return f"{family}_{k}_LIST({functor}, {', '.join(rows[isfx][:4])})\n"


def groups():
    includes = "".join(f'#include "{h}"\n' for h in EW_HEADERS)
    rows = _dtype_rows()
    all_cases = cases()
    size = int(os.environ.get("HW_DIFF_BATCH", "60"))
    out = []
    for i in range(0, len(all_cases), size):
        part = all_cases[i : i + size]
        expansions = dict.fromkeys(_expansion(c, rows) for c in part)
        src = includes + "".join(expansions)
        out.append(Group(f"batch{i}", src, EW_HEADERS, tuple((0, c[0]) for c in part)))
    st = '#include "prelude.cuh"\n#include "ember_codes.h"\n#include "selftest.cuh"\n'
    out.append(
        Group("selftest", st, ("prelude.cuh", "ember_codes.h", "selftest.cuh"),
              tuple((0, e) for e in SELFTEST))
    )  # fmt: skip
    return out


# ------------------------------------------------------------------- inputs


def float_values(sfx, rng):
    if sfx == "f16":
        return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    if sfx == "bf16":
        return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    ft = np.float32 if sfx == "f32" else np.float64
    info = np.finfo(ft)
    special = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 1e-7, np.pi, 20.0, 88.7]
    special += [709.0, -745.0, 1e30, -1e30, np.inf, -np.inf, np.nan, info.max, -info.max]
    special += [info.tiny, info.tiny / 2, info.smallest_subnormal, 65504.0, 65519.99, 65520.0]
    special += [0.9999999, 1.0000001, -0.9999999, 2**24 + 1, 2**53, 0.49999997, 123456.5]
    base = np.array(special, dtype=np.float64).astype(ft)
    scales = 10.0 ** rng.integers(-8, 9, 4000)
    rand = (rng.standard_normal(4000) * scales).astype(ft)
    h = np.arange(0, 1 << 16, 7, dtype=np.uint32).astype(np.uint16).view(np.float16)
    vals = np.concatenate([base, rand, h.astype(ft), np.nextafter(h.astype(ft), ft(np.inf))])
    if sfx == "f32":
        nan = np.array([0x7FC00001, 0xFFC00000, 0x7F800001, 0xFF812345], np.uint32).view(ft)
        vals = np.concatenate([vals, nan])
    return vals.astype(ft)


def int_values(sfx, rng):
    t = DT[sfx]
    info = np.iinfo(t)
    special = [0, 1, -1, 2, -2, 3, 7, 8, 31, 32, 33, 63, 64, 65, 100, info.min, info.max]
    special += [info.min + 1, info.max - 1]
    special = [v for v in special if info.min <= v <= info.max]
    rand = rng.integers(info.min, info.max, 2000, endpoint=True, dtype=np.int64)
    return np.concatenate([np.array(special, np.int64), rand]).astype(t)


def inputs(sfx, rng):
    if sfx == "b":
        return np.array([0, 1, 2, 255] * 8, np.uint8)
    return float_values(sfx, rng) if sfx in FLOAT_SFX else int_values(sfx, rng)


def binary_inputs(sfx, rng):
    v = inputs(sfx, rng)
    if sfx in ("f16", "bf16"):  # every pattern is too many pairs: a sample
        v = v[rng.permutation(len(v))[:400]]
        v = np.concatenate([v, np.array([0, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x3C00], np.uint16)])
        if sfx == "bf16":
            v[-6:] = [0, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x3F80]
    else:
        v = v[: min(len(v), 160)]
    a = np.repeat(v, len(v))
    b = np.tile(v, len(v))
    return a, b


# -------------------------------------------------------------------- running


class Params(ctypes.Structure):
    _fields_ = [
        ("p0", ctypes.c_double),
        ("p1", ctypes.c_double),
        ("i0", ctypes.c_int64),
        ("i1", ctypes.c_int64),
        ("status", ctypes.c_int),
    ]


def _compiler():
    if os.environ.get("EMBER_CUDA_EMULATE") == "1":
        import ember_cuda_emu

        return lambda g, arch: ember_cuda_emu._build([g], arch)[0]
    spec = importlib.util.spec_from_file_location("_cuda_compile", SRC / "_cuda" / "compile.py")
    cc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cc)
    return lambda g, arch: cc.compile_source(g, arch)


def run(out_path):
    sys.path.insert(0, str(HERE))
    import driver_api

    lib = ctypes.CDLL("libcuda.so.1")
    drv = driver_api.Driver(lib)
    vp = ctypes.c_void_p
    drv.check(lib.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), vp()
    drv.check(lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    drv.check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
    drv.check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    major, minor, name = ctypes.c_int(), ctypes.c_int(), ctypes.create_string_buffer(200)
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
    lib.cuDeviceGetName(name, 200, dev)
    arch = major.value * 10 + minor.value
    print(f"device: {name.value.decode()} (sm_{arch})", flush=True)
    compile_ = _compiler()
    gs = groups()
    workers = min(len(gs), os.cpu_count() or 2)
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        built = list(pool.map(lambda g: compile_(g, arch), gs))
    fns = {}
    for g, (image, lowered) in zip(gs, built):
        module = drv.load(image)
        for _, e in g.kernels:
            fns[e] = drv.function(module, lowered[e])
    print(f"{len(fns)} kernels loaded", flush=True)
    results = {"device": np.array(name.value.decode())}
    prm = Params(0.5, 2.0, 1, 2, 0)
    bprm = Params(1.0, 0.0, 1, 0, 0)
    for expr, kind, isfx, osfx, _op in cases():
        rng = np.random.default_rng(zlib.crc32(expr.encode()))  # inputs of its own
        if kind == "unary":
            a = inputs(isfx, rng)
            n = len(a)
            args = [a]
        else:
            a, b = binary_inputs(isfx, rng)
            n = len(a)
            args = [a, b]
        out_nbytes = n * np.dtype(DT[osfx]).itemsize
        bufs = [drv.alloc(max(x.nbytes, 16)) for x in args]
        o = drv.alloc(max(out_nbytes, 16))
        for p, x in zip(bufs, args):
            drv.to_device(p, np.ascontiguousarray(x))
        c64 = ctypes.c_uint64
        if kind == "unary":
            kargs = [ctypes.c_int64(n), c64(o), c64(bufs[0]), prm]
        else:
            zero = ctypes.c_uint64(0)
            kargs = [ctypes.c_int64(n), c64(o), c64(bufs[0]), c64(bufs[1]), zero, zero, bprm]
        blocks = (n + 511) // 512
        drv.check(drv.launch(fns[expr], (blocks,), (128,), kargs), expr)
        host = np.empty(n, DT[osfx])
        drv.to_host(host, o)
        for p in (*bufs, o):
            drv.free(p)
        results[expr] = host
        results[expr + ":in"] = np.array([zlib.crc32(np.ascontiguousarray(x)) for x in args])
    results.update(_selftests(drv, fns))
    drv.check(drv.synchronize(), "synchronize")
    np.savez_compressed(out_path, **results)
    print(f"{len(results) - 1} outputs saved to {out_path}")


def _selftests(drv, fns):
    c64, ci = ctypes.c_uint64, ctypes.c_int
    rng = np.random.default_rng(99)
    out = {}

    def dev(a):
        p = drv.alloc(max(a.nbytes, 16))
        drv.to_device(p, np.ascontiguousarray(a))
        return p

    x = rng.standard_normal(5000).astype(np.float32)
    px, po = dev(x), dev(np.zeros(20, np.float32))
    drv.check(drv.launch(fns["st_block_sum<256>"], (20,), (256,), [c64(px), c64(po), ci(5000)]), "")
    r = np.zeros(20, np.float32)
    drv.to_host(r, po)
    out["st_block_sum"] = r
    xi = rng.integers(-50, 50, 1000).astype(np.int32)
    px, po = dev(xi), dev(np.zeros(1000, np.int32))
    drv.check(
        drv.launch(fns["st_block_scan"], (4,), (256,), [c64(px), c64(po), ci(1000)], smem=2048),
        "scan",
    )
    r = np.zeros(1000, np.int32)
    drv.to_host(r, po)
    out["st_block_scan"] = r
    v = ((np.arange(96) * 37) % 101).astype(np.int32)
    px, po = dev(v), dev(np.zeros(96 * 16, np.int64))
    drv.check(drv.launch(fns["st_warp_ops"], (1,), (96,), [c64(px), c64(po)]), "warp")
    r = np.zeros(96 * 16, np.int64)
    drv.to_host(r, po)
    out["st_warp_ops"] = r
    v = ((np.arange(1000) * 7) % 50).astype(np.int32)
    bufs = [dev(v), dev(np.zeros(16, np.int32)), dev(np.zeros(1, np.float32))]
    bufs += [dev(np.zeros(1, np.uint64)), dev(np.zeros(1, np.int32)), dev(np.zeros(16, np.int32))]
    args = [c64(bufs[0]), ci(1000), *[c64(b) for b in bufs[1:]]]
    drv.check(drv.launch(fns["st_atomics"], (4,), (256,), args), "atomics")
    parts = []
    for b, (n, t) in zip(bufs[1:], [(16, np.int32), (1, np.float32), (1, np.uint64), (1, np.int32),
                                    (16, np.int32)]):  # fmt: skip
        h = np.zeros(n, t)
        drv.to_host(h, b)
        parts.append(h.view(np.uint8))
    out["st_atomics"] = np.concatenate(parts)
    return out


# ------------------------------------------------------------------ comparing


def _as_float(raw, sfx):
    if sfx == "f16":
        return raw.view(np.float16).astype(np.float64)
    if sfx == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return raw.astype(np.float64)


def _ulps(a, b, sfx):
    """|a - b| in units of the last place of the output type (finite values)."""
    bits = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}[sfx]
    m = np.maximum(np.abs(a), np.abs(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where(m > 0, m, 1)))
        return np.abs(a - b) / np.exp2(e - bits)


def compare(a_path, b_path, limit):
    A, B = np.load(a_path), np.load(b_path)
    print(f"A: {A['device']}\nB: {B['device']}")
    info = {c[0]: c for c in cases()}
    bad, soft = [], []
    for key in sorted(set(A.files) & set(B.files) - {"device"}):
        if key.endswith(":in"):
            if not np.array_equal(A[key], B[key]):
                bad.append((key, "the inputs differ (numpy's random streams?)"))
            continue
        x, y = A[key], B[key]
        if x.shape != y.shape:
            bad.append((key, f"shapes {x.shape} / {y.shape}"))
            continue
        if key not in info:  # selftests: bit for bit
            if not np.array_equal(x.view(np.uint8), y.view(np.uint8)):
                bad.append((key, f"{np.count_nonzero(x != y)} elements differ"))
            continue
        _, _, _, osfx, op = info[key]
        if osfx not in FLOAT_SFX:
            d = np.count_nonzero(x != y)
            if d:
                i = np.nonzero(x != y)[0][:3]
                bad.append((key, f"{d} of {x.size} differ, e.g. at {i}: {x[i]} / {y[i]}"))
            continue
        fx, fy = _as_float(x, osfx), _as_float(y, osfx)
        bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
        differ = x.view(bits) != y.view(bits)
        nx, ny = np.isnan(fx), np.isnan(fy)
        nan_pattern = np.count_nonzero(nx & ny & differ)
        nan_diff = np.count_nonzero(nx != ny)
        both = ~nx & ~ny
        neq = both & (fx != fy)
        inf_diff = np.count_nonzero(neq & (np.isinf(fx) | np.isinf(fy)))
        fin = neq & np.isfinite(fx) & np.isfinite(fy)
        worst = float(_ulps(fx[fin], fy[fin], osfx).max()) if fin.any() else 0.0
        zero_sign = np.count_nonzero(both & (fx == fy) & differ)
        exact = op in EXACT or op == "CAST"
        msg = []
        if nan_diff:
            msg.append(f"{nan_diff} NaN/non-NaN")
        if inf_diff:
            msg.append(f"{inf_diff} inf/finite")
        if fin.any():
            i = np.nonzero(fin)[0][0]
            msg.append(f"{np.count_nonzero(fin)} finite differ (max {worst:.3g} ulp; e.g. "
                       f"{fx[i]!r} / {fy[i]!r})")  # fmt: skip
        if zero_sign:
            msg.append(f"{zero_sign} signed zeros")
        if nan_pattern:
            msg.append(f"{nan_pattern} NaN bit patterns")
        if not msg:
            continue
        hard = nan_diff or inf_diff or zero_sign or (exact and fin.any()) or worst > limit
        (bad if hard else soft).append((key, "; ".join(msg)))
    for title, rows in (("MISMATCHES", bad), (f"within {limit} ulp / NaN payloads", soft)):
        print(f"\n{title}: {len(rows)}")
        for k, m in rows:
            print(f"  {k}: {m}")
    return 1 if bad else 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--ulps", type=float, default=4.0, help="tolerance of inexact ops")
    args = p.parse_args(argv)
    if args.cmd == "run":
        run(args.out)
        return 0
    return compare(args.a, args.b, args.ulps)


if __name__ == "__main__":
    sys.exit(main())
