"""Compiling CUDA kernels with NVRTC, and the on-disk kernel cache.

Note [Kernel cache]
A compiled group is stored as ``<key>.cubin`` (the image ``cuModuleLoadData``
takes; PTX where NVRTC cannot target the device directly) plus ``<key>.json``
(the mangled name of each kernel) under ``$EMBER_CACHE_DIR`` or
``~/.cache/ember/kernels``.  The key hashes everything that decides the image:
the program source and every header's text, the name expressions, the options,
the target architecture and the NVRTC version.  Files are written to a
temporary name and renamed, so concurrent processes never read half a file.

NVRTC comes from NVIDIA's ``nvidia-cuda-nvrtc`` wheel (found with
``cuda-pathfinder``; ``pip install 'ember-tensor-core[cuda]'``) or from a CUDA
toolkit on the library path.  nvcc is not needed anywhere.
"""

import ctypes
import hashlib
import json
import os
import tempfile
import threading

_lock = threading.Lock()
_nvrtc = []  # [CDLL] once loaded
_memo = {}  # key -> (image, lowered names): groups loaded in this process


class CompileError(RuntimeError):
    """NVRTC rejected a kernel source (the message holds its log)."""


def _load_nvrtc():
    if _nvrtc:
        return _nvrtc[0]
    errors = []
    path = None
    try:
        from cuda import pathfinder

        path = pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path
    except Exception as e:  # not installed, or no NVRTC in any place it looks
        errors.append(f"cuda-pathfinder: {e}")
    names = [path] if path else []
    names += ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
            continue
        _declare(lib)
        _nvrtc.append(lib)
        return lib
    raise RuntimeError(
        "NVRTC (libnvrtc), which compiles ember's CUDA kernels, was not found; install it "
        "with `pip install 'ember-tensor-core[cuda]'` (the nvidia-cuda-nvrtc wheel) or put a "
        "CUDA toolkit's lib64 on the library path. Tried: " + "; ".join(errors)
    )


def _declare(lib):
    p, c_int, c_size = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    cpp = ctypes.POINTER(ctypes.c_char_p)
    lib.nvrtcCreateProgram.argtypes = [
        ctypes.POINTER(p),
        ctypes.c_char_p,
        ctypes.c_char_p,
        c_int,
        cpp,
        cpp,
    ]
    lib.nvrtcAddNameExpression.argtypes = [p, ctypes.c_char_p]
    lib.nvrtcCompileProgram.argtypes = [p, c_int, cpp]
    lib.nvrtcGetProgramLogSize.argtypes = [p, ctypes.POINTER(c_size)]
    lib.nvrtcGetProgramLog.argtypes = [p, ctypes.c_char_p]
    lib.nvrtcGetCUBINSize.argtypes = [p, ctypes.POINTER(c_size)]
    lib.nvrtcGetCUBIN.argtypes = [p, ctypes.c_char_p]
    lib.nvrtcGetPTXSize.argtypes = [p, ctypes.POINTER(c_size)]
    lib.nvrtcGetPTX.argtypes = [p, ctypes.c_char_p]
    lib.nvrtcGetLoweredName.argtypes = [p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
    lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(p)]
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    lib.nvrtcVersion.argtypes = [ctypes.POINTER(c_int), ctypes.POINTER(c_int)]
    lib.nvrtcGetNumSupportedArchs.argtypes = [ctypes.POINTER(c_int)]
    lib.nvrtcGetSupportedArchs.argtypes = [ctypes.POINTER(c_int)]


def nvrtc_version():
    lib = _load_nvrtc()
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


def supported_archs():
    lib = _load_nvrtc()
    n = ctypes.c_int()
    lib.nvrtcGetNumSupportedArchs(ctypes.byref(n))
    archs = (ctypes.c_int * n.value)()
    lib.nvrtcGetSupportedArchs(archs)
    return list(archs)


def arch_of(device):
    """The compute capability of a CUDA device as an int, e.g. 90."""
    # here, not at the top: tests/cuda_emu/hw_diff.py loads this module by path
    # on a machine where ember_core is not built
    from ember_core._base.lib import ffi, lib

    v = ffi.new("int*")
    lib.ecu_device_attribute(device, 75, v)  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    major = v[0]
    lib.ecu_device_attribute(device, 76, v)
    return major * 10 + v[0]


def target(arch):
    """The option that targets ``arch``: real machine code when NVRTC knows the
    architecture, else PTX for the newest one it knows (the driver finishes it)."""
    archs = supported_archs()
    if arch in archs:
        return f"--gpu-architecture=sm_{arch}", "cubin"
    older = [a for a in archs if a <= arch]
    return f"--gpu-architecture=compute_{max(older) if older else min(archs)}", "ptx"


def cache_dir():
    d = os.environ.get("EMBER_CACHE_DIR")
    if d:
        return d
    return os.path.join(os.path.expanduser("~"), ".cache", "ember", "kernels")


BASE_OPTIONS = ("-std=c++17", "-DNDEBUG")


def cache_key(group, arch, nvrtc=None):
    """The hash that names a compiled group on disk (Note [Kernel cache])."""
    h = hashlib.sha256()
    parts = [group.source, *sorted(group.header_texts().items()), *(e for _, e in group.kernels)]
    parts += [*BASE_OPTIONS, *group.options, str(arch), str(nvrtc or nvrtc_version())]
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def compile_group(group, arch):
    """(image, {name expression: lowered name}) of a group for ``arch``, from the
    process's memo, the disk cache, or NVRTC."""
    if os.environ.get("EMBER_CUDA_EMULATE") == "1":
        return _emulation().compile_group(group, arch)
    key = cache_key(group, arch)
    hit = _memo.get(key)
    if hit is not None:
        return hit
    with _lock:
        hit = _memo.get(key) or _read_cache(key)
        if hit is None:
            hit = compile_source(group, arch)
            _write_cache(key, *hit)
        _memo[key] = hit
    return hit


def _emulation():
    """Test-only: under EMBER_CUDA_EMULATE=1 the kernels are built for the CPU
    emulation of the CUDA driver (packages/tensor-core/tests/cuda_emu, which
    the emulated test environment puts on the path), not by NVRTC."""
    try:
        import ember_cuda_emu
    except ImportError as e:
        raise RuntimeError(
            "EMBER_CUDA_EMULATE=1, but the CUDA emulator (packages/tensor-core/tests/cuda_emu) "
            "is not on the path; run through tests/cuda_emu/ember_cuda_emu.py"
        ) from e
    return ember_cuda_emu


def compile_source(group, arch, kind=None):
    """Run NVRTC on a group; raises CompileError with NVRTC's log.  ``kind``
    'ptx' asks for PTX (no machine code) whatever the architecture."""
    lib = _load_nvrtc()
    headers = group.header_texts()
    names = [n.encode() for n in headers]
    texts = [t.encode() for t in headers.values()]
    prog = ctypes.c_void_p()
    _ok(
        lib,
        lib.nvrtcCreateProgram(
            ctypes.byref(prog),
            group.source.encode(),
            f"{group.name}.cu".encode(),
            len(names),
            (ctypes.c_char_p * len(texts))(*texts),
            (ctypes.c_char_p * len(names))(*names),
        ),
        "nvrtcCreateProgram",
    )
    try:
        for _, expr in group.kernels:
            _ok(lib, lib.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
        arch_opt, target_kind = target(arch)
        if kind == "ptx":
            arch_opt = arch_opt.replace("sm_", "compute_")
        kind = kind or target_kind
        opts = [o.encode() for o in (arch_opt, *BASE_OPTIONS, *group.options)]
        status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        if status != 0:
            raise CompileError(
                f"NVRTC could not compile the CUDA kernels {group.name} for sm_{arch}: "
                f"{lib.nvrtcGetErrorString(status).decode()}\n{_log(lib, prog)}"
            )
        size = ctypes.c_size_t()
        if kind == "cubin":
            lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetCUBIN(prog, buf)
        else:
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, buf)
        lowered = {}
        for _, expr in group.kernels:
            out = ctypes.c_char_p()
            _ok(lib, lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(out)), expr)
            lowered[expr] = out.value.decode()
        return buf.raw, lowered
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _ok(lib, status, what):
    if status != 0:
        raise CompileError(f"NVRTC: {what} failed: {lib.nvrtcGetErrorString(status).decode()}")


def _log(lib, prog):
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, buf)
    return buf.value.decode(errors="replace")


def _read_cache(key):
    base = os.path.join(cache_dir(), key)
    try:
        with open(base + ".json") as f:
            lowered = json.load(f)
        with open(base + ".cubin", "rb") as f:
            image = f.read()
    except (OSError, ValueError):
        return None
    return image, lowered


def _write_cache(key, image, lowered):
    d = cache_dir()
    try:
        os.makedirs(d, exist_ok=True)
        for suffix, data in ((".cubin", image), (".json", json.dumps(lowered).encode())):
            fd, tmp = tempfile.mkstemp(prefix=".ember-kernel-", dir=d)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, os.path.join(d, key + suffix))
    except OSError:
        pass  # an unwritable cache only costs a recompile next time
