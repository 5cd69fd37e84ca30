"""A few CUDA driver API calls through ctypes, for tests that launch their own
kernels: on the emulator (the emulated libcuda.so.1) or on a GPU (the real
one), whichever this process loaded.  Kernels are compiled the way ember
compiles its own (ember_core._cuda.compile.compile_group: NVRTC, or the
emulation compiler under EMBER_CUDA_EMULATE=1)."""

import ctypes
import dataclasses
import pathlib

HERE = pathlib.Path(__file__).resolve().parent


class DriverError(RuntimeError):
    def __init__(self, code, what, text):
        super().__init__(f"{what}: {text} (CUresult {code})")
        self.code = code


class Driver:
    """The CUDA driver this process uses; calls run in the current context
    (make one current first, e.g. by any ember CUDA op on this thread)."""

    def __init__(self, lib=None):
        self.lib = lib or ctypes.CDLL("libcuda.so.1")
        L = self.lib
        vp, u, sz = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t
        L.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        L.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
        L.cuLaunchKernel.argtypes = [vp, u, u, u, u, u, u, u, vp, ctypes.POINTER(vp), vp]
        L.cuFuncSetAttribute.argtypes = [vp, ctypes.c_int, ctypes.c_int]
        L.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), sz]
        L.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        L.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, vp, sz]
        L.cuMemcpyDtoH_v2.argtypes = [vp, ctypes.c_uint64, sz]
        L.cuCtxSynchronize.argtypes = []
        L.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        L.cuStreamSynchronize.argtypes = [vp]

    def check(self, code, what):
        if code:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(code, ctypes.byref(text))
            raise DriverError(code, what, (text.value or b"?").decode(errors="replace"))

    def load(self, image):
        m = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(m), image), "cuModuleLoadData")
        return m

    def function(self, module, name):
        f = ctypes.c_void_p()
        self.check(
            self.lib.cuModuleGetFunction(ctypes.byref(f), module, name.encode()),
            f"cuModuleGetFunction({name})",
        )
        return f

    def launch(self, f, grid, block, args, smem=0, stream=None):
        """args: ctypes values (c_int, c_uint64 for pointers, ...)."""
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        ptrs = (ctypes.c_void_p * max(len(args), 1))(
            *[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args]
        )
        return self.lib.cuLaunchKernel(f, *grid, *block, smem, stream, ptrs, None)

    def set_attribute(self, f, attr, value):
        return self.lib.cuFuncSetAttribute(f, attr, value)

    def alloc(self, nbytes):
        p = ctypes.c_uint64()
        self.check(self.lib.cuMemAlloc_v2(ctypes.byref(p), nbytes), "cuMemAlloc")
        return p.value

    def free(self, p):
        self.check(self.lib.cuMemFree_v2(p), "cuMemFree")

    def to_device(self, p, array):
        self.check(self.lib.cuMemcpyHtoD_v2(p, array.ctypes.data, array.nbytes), "HtoD")

    def to_host(self, array, p):
        self.check(self.lib.cuMemcpyDtoH_v2(array.ctypes.data, p, array.nbytes), "DtoH")

    def synchronize(self):
        return self.lib.cuCtxSynchronize()


def file_group(name, source, files, kernels, options=(), embedded=("prelude.cuh", "ember_codes.h")):
    """A compile group whose headers are some of ember's embedded kernel
    sources and the given files (tests' own kernels)."""
    from ember_core._cuda import kernels as _cuda_kernels

    texts = {pathlib.Path(f).name: pathlib.Path(f).read_text() for f in files}

    @dataclasses.dataclass(frozen=True)
    class FileGroup(_cuda_kernels.Group):
        def header_texts(self):
            out = {h: _cuda_kernels._header_text(h) for h in self.headers if h not in texts}
            out.update(texts)
            return out

    headers = (*embedded, *texts)
    kernels = tuple((i, k) for i, k in enumerate(kernels))
    return FileGroup(name, source, headers, kernels, tuple(options))


def compile_and_load(driver, group, device=0):
    """{name expression: CUfunction} of a group on the current device."""
    from ember_core._cuda import compile as _cuda_compile

    image, lowered = _cuda_compile.compile_group(group, _cuda_compile.arch_of(device))
    module = driver.load(image)
    return {expr: driver.function(module, lowered[expr]) for _, expr in group.kernels}
