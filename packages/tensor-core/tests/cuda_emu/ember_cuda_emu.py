"""The CUDA emulator's Python half (test support; Note [CUDA emulation] in
driver.c): it builds the emulated driver, compiles kernel groups with the host
C++ compiler instead of NVRTC, and runs commands in an emulated environment.

    python tests/cuda_emu/ember_cuda_emu.py run [--devices N] -- pytest -m cuda ...

runs a command whose ember_core sees CUDA devices emulated on the CPU.  What it
sets (an environment must be set before ember_core loads, hence a process):
``LD_LIBRARY_PATH`` starts with the emulated ``libcuda.so.1``/``libcudart.so``,
``EMBER_CUDA_EMULATE=1`` makes ``ember_core._cuda.compile.compile_group`` call
:func:`compile_group` here (this directory goes on ``PYTHONPATH``), and
``EMBER_CUDA_EMU_*`` configure the devices.

The emulation compiler: a group's source and headers (the same texts NVRTC
gets) are compiled by g++ with device.h force-included (what NVRTC provides
without headers) and entry.h appended (a table of the group's kernels, each
with a launcher generated from its function type), into a shared object.  The
lowered names NVRTC would give are the symbols g++ gives the same
instantiations (Itanium mangling; tests/test_cuda_emu.py checks they agree).
Builds are cached on disk like NVRTC's (Note [Kernel cache]): under
``<kernel cache>/emu/``, keyed by the same inputs with the compiler and the
emulator's headers in place of the NVRTC version.  A group is compiled together
with its siblings of other dtypes (same source, name ending in another dtype
suffix), which are cached too: tests sweep dtypes, and one g++ run for ten
groups costs little more than one.
"""

import argparse
import contextlib
import ctypes
import functools
import hashlib
import json
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading

HERE = pathlib.Path(__file__).resolve().parent
ALLOCATOR_FAKE = HERE.parent.parent.parent / "allocator" / "tests" / "fake_cuda.c"
DRIVER_SOURCES = (HERE / "driver.c", ALLOCATOR_FAKE, HERE / "ember_cuda_emu.h")
DEVICE_HEADERS = (HERE / "device.h", HERE / "entry.h", HERE / "ember_cuda_emu.h")
IMAGE_PREFIX = b"ember-cuda-emulation-module:"
COMPILE_TIMEOUT = 600
CXX_FLAGS = (
    "-std=c++17",
    os.environ.get("EMBER_CUDA_EMU_OPT", "-Og"),
    "-fPIC",
    "-fno-gnu-unique",
    "-D__CUDACC__",
    "-D__CUDACC_RTC__",
    "-DEMBER_CUDA_EMULATION=1",
    "-DNDEBUG",
    "-w",
)
LINK_FLAGS = ("-shared", "-Wl,-Bsymbolic")
# dtype suffixes of group names (ember_core._cuda.kernels.DTYPES)
_DTYPE_SUFFIX = re.compile(r"_(b|u8|i8|i16|i32|i64|f16|bf16|f32|f64)$")

_lock = threading.Lock()
_memo = {}  # cache key -> (image, lowered)
_siblings = {}  # (headers, options, includes, name stem) -> [groups of every dtype]
_loaded = []  # CDLLs kept alive (their names were read with dladdr)


class EmulationError(RuntimeError):
    """The emulation compiler failed (the message holds the compiler's output)."""


def _cxx():
    return os.environ.get("EMBER_CUDA_EMU_CXX") or shutil.which("g++") or "c++"


def _cc():
    return os.environ.get("EMBER_CUDA_EMU_CC_COMPILER") or shutil.which("gcc") or "cc"


@functools.cache
def _version(compiler):
    try:
        out = subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise EmulationError(f"the CUDA emulator needs a C/C++ compiler ({compiler}): {e}") from e
    return out.splitlines()[0] if out else compiler


def _digest(paths, extra=()):
    h = hashlib.sha256()
    for p in paths:
        h.update(pathlib.Path(p).read_bytes())
        h.update(b"\0")
    for e in extra:
        h.update(repr(e).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def cache_root():
    from ember_core._cuda import compile as _cuda_compile

    return pathlib.Path(_cuda_compile.cache_dir()) / "emu"


# ----------------------------------------------------------------- the driver


def build_driver(root=None):
    """Build the emulated driver (once per source version) and return the
    folder that holds libcuda.so.1 and libcudart.so (put it first on
    LD_LIBRARY_PATH)."""
    cc = _cc()
    flags = ["-std=gnu11", "-O2", "-g", "-fPIC", "-shared", "-U_FORTIFY_SOURCE"]
    flags += ["-DFAKE_CUDA_EMULATOR", f"-I{HERE}"]
    key = _digest(DRIVER_SOURCES, (_version(cc), *flags))
    root = pathlib.Path(root) if root else _default_root()
    out = root / f"driver-{key}"
    lib = out / "libcuda.so.1"
    if lib.exists():
        return out
    root.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=".driver-", dir=root))
    try:
        cmd = [cc, *flags, "-Wl,-soname,libcuda.so.1", "-o", str(tmp / "libcuda.so.1")]
        cmd += [str(HERE / "driver.c"), str(ALLOCATOR_FAKE), "-ldl", "-lpthread"]
        _run(cmd, "building the emulated CUDA driver")
        names = ("libcuda.so", "libcudart.so", "libcudart.so.13", "libcudart.so.12")
        names += ("libcublas.so.13", "libcublas.so.12", "libcublas.so")  # Note [Emulated cuBLAS]
        for name in names:
            (tmp / name).symlink_to("libcuda.so.1")
        try:
            tmp.rename(out)
        except OSError:  # another process built it first
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _default_root():
    base = os.environ.get("EMBER_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "ember", "kernels"
    )
    return pathlib.Path(base) / "emu"


def _run(cmd, what, cwd=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        raise EmulationError(f"{what}: timed out after {COMPILE_TIMEOUT} s") from e
    except OSError as e:
        raise EmulationError(f"{what}: {e}") from e
    if r.returncode != 0:
        raise EmulationError(f"{what} failed:\n$ {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


def environment(devices=None, base=None, root=None):
    """The environment of a process whose ember_core uses emulated CUDA."""
    env = dict(os.environ if base is None else base)
    driver = build_driver(root)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(driver), env.get("LD_LIBRARY_PATH", "")) if p
    )
    env["EMBER_CUDA_EMULATE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    if devices is not None:
        env["EMBER_CUDA_EMU_DEVICES"] = str(devices)
    return env


def is_emulated():
    """Whether this process runs on the emulator (its driver is loaded)."""
    return os.environ.get("EMBER_CUDA_EMULATE") == "1"


def driver():
    """The emulated driver loaded in this process, for direct driver-API
    calls in tests (the same library ember_core's runtime loaded)."""
    return ctypes.CDLL("libcuda.so.1")


# ------------------------------------------------------------ the compiler


@functools.cache
def compiler_id():
    """What, besides a group's own inputs, decides an emulation build: the
    compiler, its flags, the emulator's headers and this file."""
    digest = _digest([*DEVICE_HEADERS, __file__], (*CXX_FLAGS, *LINK_FLAGS))
    return f"emu:{_version(_cxx())}:{digest}"


def compile_group(group, arch):
    """(image, {name expression: lowered name}) of a group: from this
    process's memo, the disk cache, or the host compiler (with its dtype
    siblings).  Called by ember_core._cuda.compile under EMBER_CUDA_EMULATE=1."""
    from ember_core._cuda import compile as _cuda_compile

    cid = compiler_id()
    key = _cuda_compile.cache_key(group, arch, nvrtc=cid)
    hit = _memo.get(key)
    if hit is not None:
        return hit
    with _lock:
        hit = _memo.get(key) or _read_cache(key)
        if hit is None:
            batch = _batch_for(group)
            keys = [_cuda_compile.cache_key(g, arch, nvrtc=cid) for g in batch]
            todo = [(g, k) for g, k in zip(batch, keys) if k == key or _read_cache(k) is None]
            try:
                built = _build([g for g, _ in todo], arch)
            except EmulationError:
                if len(todo) == 1:
                    raise
                todo = [(group, key)]  # a sibling's failure is not this group's
                built = _build([group], arch)
            for (_, k), result in zip(todo, built):
                _write_cache(k, *result)
                _memo[k] = result
            hit = _memo[key]
        _memo[key] = hit
    return hit


def _split(source):
    """(leading #include lines, the rest) of a group's source: the includes are
    shared by many groups and precompiled; the rest (the op list expanded for
    one dtype, say) is the group's own."""
    lines = source.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("#include")):
        i += 1
    return "".join(lines[:i]), "".join(lines[i:])


def _variants(g):
    """A group as its one-variant groups (what launchers ask for)."""
    variants = sorted({v for v, _ in g.kernels})
    if len(variants) < 2 or not hasattr(g, "variant"):
        return [g]
    return [g.variant(v) for v in variants]


def _batch_for(group):
    """The group, the other variants of its group, and its siblings of other
    dtypes (every variant), when ember_core lists them (all_groups) and their
    sources can be built together: same headers, options and includes."""
    if os.environ.get("EMBER_CUDA_EMU_BATCH", "1") == "0":
        return [group]
    if not _siblings:
        try:
            from ember_core._cuda import kernels as _cuda_kernels

            groups = _cuda_kernels.all_groups()
        except Exception:  # noqa: BLE001 - batching is an optimisation only
            groups = []
        for g in groups:
            stem = _DTYPE_SUFFIX.sub("", g.name)
            ident = (g.headers, g.options, _split(g.source)[0], stem)
            _siblings.setdefault(ident, []).append(g)
        _siblings.setdefault(None, [])
    stem = _DTYPE_SUFFIX.sub("", group.name)
    ident = (group.headers, group.options, _split(group.source)[0], stem)
    full = [g for g in _siblings.get(ident, ()) if g.name == group.name]
    if not full or full[0].source != group.source:
        return [group]  # not one of ember's listed groups (a test's own, say)
    others = [g for g in _siblings[ident] if g.name != group.name]
    if stem == group.name:
        others = []
    batch = [group]
    for g in [full[0], *others]:
        batch += [v for v in _variants(g) if v != group]
    return batch


def _read_cache(key):
    base = cache_root() / key
    try:
        meta = json.loads((base.with_suffix(".json")).read_text())
        so = pathlib.Path(meta["so"])
        if not so.is_absolute():
            so = cache_root() / so
        if not so.exists():
            return None
        return _image(so, meta["shared"]), meta["lowered"]
    except (OSError, ValueError, KeyError):
        return None


def _write_cache(key, image, lowered):
    root = cache_root()
    text = image.rstrip(b"\0").decode()
    path, _, rest = text[len(IMAGE_PREFIX) :].partition("\n")
    shared = rest.partition("shared=")[2].strip()
    meta = {"so": os.path.relpath(path, root), "shared": shared, "lowered": lowered}
    fd, tmp = tempfile.mkstemp(prefix=".emu-", dir=root)
    with os.fdopen(fd, "w") as f:
        json.dump(meta, f)
    os.replace(tmp, root / (key + ".json"))


def _image(so, shared):
    return IMAGE_PREFIX + str(so).encode() + b"\nshared=" + shared.encode() + b"\n\0"


# The declaration `extern __shared__ T name[];` (any qualifiers before it).
_EXTERN_SHARED = re.compile(r"\bextern\s+__shared__\s+([^;{}]*?)\s*\b(\w+)\s*\[\s*\]\s*;")
_ALIGN = re.compile(r"\b(?:__align__|alignas)\s*\([^)]*\)\s*")


def rewrite(text):
    """A kernel source as the emulation compiles it: every `extern __shared__`
    array becomes a pointer to the module's dynamic shared memory."""

    def repl(m):
        t = _ALIGN.sub("", m.group(1)).strip()
        return f"{t}* const {m.group(2)} = reinterpret_cast<{t}*>(ember_emu_dynamic_shared);"

    text = _EXTERN_SHARED.sub(repl, text)
    if re.search(r"\bextern\s+__shared__\b", text):
        raise EmulationError(
            "the CUDA emulator understands `extern __shared__ T name[];` declarations only"
        )
    return text


def _matching(text, i, open_, close):
    """Index just past the bracket matching text[i] (== open_)."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def launch_bounds(texts):
    """{kernel name: (template parameter list or None, bound expression)}
    from the __launch_bounds__ in the sources (None: conflicting)."""
    found = {}
    for text in texts:
        for m in re.finditer(r"__launch_bounds__\s*\(", text):
            end = _matching(text, m.end() - 1, "(", ")")
            if end < 0:
                continue
            args = text[m.end() : end - 1]
            depth, cut = 0, len(args)
            for j, ch in enumerate(args):  # the first argument
                depth += ch in "(<[" and 1 or (ch in ")>]" and -1 or 0)
                if ch == "," and depth == 0:
                    cut = j
                    break
            expr = args[:cut].strip()
            name = re.match(r"\s*(\w+)\s*\(", text[end:])
            if not name or not expr or "#" in text[m.start() : end]:
                continue
            before = text[: m.start()]
            g = before.rfind("__global__")
            head = before[:g].rstrip() if g >= 0 else ""
            params = None
            if head.endswith(">"):
                depth = 0
                for j in range(len(head) - 1, -1, -1):
                    depth += head[j] == ">" and 1 or (head[j] == "<" and -1 or 0)
                    if depth == 0:
                        if re.search(r"\btemplate\s*$", head[:j]):
                            params = head[j + 1 : -1]
                        break
            entry = (params, expr)
            key = name.group(1)
            if key in found and found[key] != entry:
                found[key] = None
            else:
                found[key] = entry
    return found


def _template_args(expr):
    """('name', 'args' or None) of a name expression like ns::k<A, B>."""
    e = expr.strip().lstrip("&").strip()
    i = e.find("<")
    if i < 0:
        return e.split("::")[-1].strip(), None
    end = _matching(e, i, "<", ">")
    return e[:i].split("::")[-1].strip(), e[i + 1 : end - 1] if end > 0 else None


def _generated(groups, bounds):
    """The C++ that follows a group's source: bound helpers and the table."""
    lines = ['#include "entry.h"']
    entries, helpers = [], {}
    for g in groups:
        for _, expr in g.kernels:
            name, args = _template_args(expr)
            b = bounds.get(name) if bounds else None
            bound = "0u"
            if b is not None:
                params, bexpr = b
                if params is None and args is None:
                    bound = f"(unsigned)({bexpr})"
                elif params is not None and args is not None:
                    helper = f"ember_emu_lb_{name}"
                    helpers[helper] = (
                        f"template <{params}> constexpr unsigned {helper}() "
                        f"{{ return (unsigned)({bexpr}); }}"
                    )
                    bound = f"({helper}<{args}>())"
            target = expr.strip() if expr.strip().startswith("&") else f"&{expr.strip()}"
            target = target[1:]
            entries.append(f"    EMBER_EMU_KERNEL({json.dumps(expr)}, {bound}, {target})")
    lines += helpers.values()
    # one entry per distinct expression
    seen, unique = set(), []
    for e in entries:
        if e not in seen:
            seen.add(e)
            unique.append(e)
    lines.append("EMBER_EMU_MODULE(\n" + ",\n".join(unique) + ")")
    return "\n".join(lines) + "\n"


def _options(group):
    out = []
    for o in group.options:
        if o.startswith(("-D", "-U", "-I")):
            out.append(o)
        elif o.startswith(("--define-macro=", "--undefine-macro=")):
            flag = "-D" if o.startswith("--define") else "-U"
            out.append(flag + o.split("=", 1)[1])
    return out


def _prepared(group, flags):
    """The folder holding the group's includes (after device.h) as `group.h`,
    its headers, and, where g++ can make one, a precompiled `group.h.gch`:
    groups share their includes, whose parsing is most of a build."""
    texts = group.header_texts()
    prefix = _split(group.source)[0]
    key = _digest(DEVICE_HEADERS, (prefix, sorted(texts.items()), flags, compiler_id()))
    root = cache_root()
    final = root / f"source-{key}"
    if final.exists():
        with contextlib.suppress(OSError):
            os.utime(final)  # recently used: kept by _prune
        return final
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=".source-", dir=root))
    try:
        for name, text in texts.items():
            p = tmp / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(rewrite(text))
        (tmp / "group.h").write_text('#include "device.h"\n' + rewrite(prefix) + "\n")
        try:
            cmd = [_cxx(), *flags, f"-I{HERE}", f"-I{tmp}", "-x", "c++-header"]
            _run([*cmd, str(tmp / "group.h"), "-o", str(tmp / "group.h.gch")], "precompiling")
        except EmulationError:
            (tmp / "group.h.gch").unlink(missing_ok=True)  # compiles without it
        try:
            tmp.rename(final)
        except OSError:  # another process made it first
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    _prune(root, "source-*", keep=8)  # precompiled headers are big (~10 MB)
    return final


def _prune(root, pattern, keep):
    """Remove all but the `keep` newest entries matching `pattern` (the
    modules already built do not need them)."""
    entries = sorted(root.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[keep:]:
        shutil.rmtree(old, ignore_errors=True)


def _build(groups, arch):
    """Compile groups (same headers, options and includes) into one shared
    object; returns (image, lowered) for each."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    first = groups[0]
    flags = [*CXX_FLAGS, f"-D__CUDA_ARCH__={arch * 10}", *_options(first)]
    source = _prepared(first, flags)
    rests = []
    for g in groups:  # each group's own part, once (variants share theirs)
        rest = _split(g.source)[1]
        if rest not in rests:
            rests.append(rest)
    own = rewrite("".join(rests))
    bounds = launch_bounds([first.source, *rests, *first.header_texts().values()])
    ident = (_split(first.source)[0], own, sorted(first.header_texts().items()))
    ident += ([g.kernels for g in groups],)
    so_name = f"{first.name}-{_digest([], (*ident, flags, compiler_id()))}.so"
    cmd = [_cxx(), *flags, *LINK_FLAGS, f"-I{HERE}", f"-I{source}"]
    cmd += ["-include", str(source / "group.h")]
    work = pathlib.Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        src = work / "group.cpp"
        out = work / so_name
        for attempt_bounds in (bounds, None):
            src.write_text(own + "\n" + _generated(groups, attempt_bounds))
            try:
                _run([*cmd, "-o", str(out), str(src)], f"compiling {first.name} for the emulator")
            except EmulationError as e:
                if attempt_bounds is None or not bounds:
                    raise EmulationError(
                        f"the CUDA emulator could not compile the kernels {first.name}: {e}"
                    ) from None
                continue
            if attempt_bounds is None and bounds:
                sys.stderr.write(
                    f"ember CUDA emulator: {first.name}: __launch_bounds__ not checked "
                    "(their expressions do not compile outside the kernel)\n"
                )
            break
        shared = ",".join(f"{off:x}:{size}" for off, size in shared_statics(out))
        final = root / so_name
        os.replace(out, final)
        names = lowered_names(final)
        results = []
        for g in groups:
            lowered = {expr: names[expr] for _, expr in g.kernels}
            results.append((_image(final, shared), lowered))
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def lowered_names(so):
    """{name expression: symbol} of a built module (dladdr of each kernel)."""
    lib = ctypes.CDLL(str(so), mode=os.RTLD_LOCAL | os.RTLD_NOW)
    _loaded.append(lib)

    class Kernel(ctypes.Structure):
        _fields_ = [
            ("expr", ctypes.c_char_p),
            ("fn", ctypes.c_void_p),
            ("run", ctypes.c_void_p),
            ("nparams", ctypes.c_uint),
            ("sizes", ctypes.c_void_p),
            ("aligns", ctypes.c_void_p),
            ("is_ptr", ctypes.c_void_p),
            ("max_threads", ctypes.c_uint),
        ]

    class Module(ctypes.Structure):
        _fields_ = [
            ("abi", ctypes.c_int),
            ("nkernels", ctypes.c_uint),
            ("kernels", ctypes.c_void_p),
        ]

    class DlInfo(ctypes.Structure):
        _fields_ = [
            ("dli_fname", ctypes.c_char_p),
            ("dli_fbase", ctypes.c_void_p),
            ("dli_sname", ctypes.c_char_p),
            ("dli_saddr", ctypes.c_void_p),
        ]

    info = lib.ember_emu_module_info
    info.restype = ctypes.POINTER(Module)
    m = info().contents
    kernels = ctypes.cast(m.kernels, ctypes.POINTER(Kernel))
    libc = ctypes.CDLL(None)
    names = {}
    for i in range(m.nkernels):
        k = kernels[i]
        d = DlInfo()
        if not libc.dladdr(ctypes.c_void_p(k.fn), ctypes.byref(d)) or not d.dli_sname:
            raise EmulationError(f"{so}: no symbol for kernel {k.expr.decode()}")
        names[k.expr.decode()] = d.dli_sname.decode()
    return names


def shared_statics(so):
    """[(offset, size)] of the function-scope zero-initialised statics of a
    module (the `static` that device.h makes of __shared__): .bss objects
    whose names mangle a function-local entity (_ZZ)."""
    data = pathlib.Path(so).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []  # not little-endian ELF64: no shared-memory poisoning
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, _, _, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize
        )
        sections.append((name, typ, flags, addr, off, size, link, entsize))
    shstr = sections[shstrndx]

    def sname(i):
        start = shstr[4] + sections[i][0]
        return data[start : data.index(b"\0", start)].decode()

    out = []
    for sec in sections:
        if sec[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sec[6]]
        for j in range(sec[5] // sec[7]):
            st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", data, sec[4] + j * sec[7]
            )
            if st_info & 0xF != 1 or not st_size or st_shndx == 0 or st_shndx >= len(sections):
                continue  # objects only
            start = strtab[4] + st_name
            name = data[start : data.index(b"\0", start)].decode(errors="replace")
            if not name.startswith("_ZZ") or "ember_emu" in name:
                continue
            if not sname(st_shndx).startswith(".bss"):
                continue
            out.append((st_value, st_size))
    return sorted(set(out))


# ----------------------------------------------------------------- commands


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run a command with emulated CUDA devices")
    run.add_argument("--devices", type=int, default=None)
    run.add_argument("--timeout", type=float, default=None, help="seconds (default: none)")
    run.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("build", help="build the emulated driver; print its folder")
    args = parser.parse_args(argv)
    if args.cmd == "build":
        print(build_driver())
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    env = environment(devices=args.devices)
    try:
        return subprocess.run(command, env=env, timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:
        sys.stderr.write(f"ember CUDA emulator: {command[0]} timed out after {args.timeout} s\n")
        return 124


if __name__ == "__main__":
    sys.exit(main())
