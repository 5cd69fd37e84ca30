"""cffi build of ember_core._C (out-of-line API mode).

The cdef is read from csrc/ember_core.h between its cdef markers, so the C API is
declared exactly once.  BLAS comes from the scipy-openblas32 wheel: its headers
at build time, its shared library at run time (found through an rpath relative to
this extension, and preloaded by ember_core._lib as a fallback).
"""

import os
import pathlib

import cffi
import scipy_openblas32

CSRC = pathlib.Path(__file__).resolve().parent
HEADER = CSRC / "ember_core.h"
SOURCES = [
    "iter.c",
    "copy.c",
    "elementwise.c",
    "fast_exp.c",
    "reduce.c",
    "blas.c",
    "random.c",
    "shape.c",
    # indexing, sorting and counting (tc-index)
    "index.c",
    "sort.c",
    # nn-conv: convolution, pooling, padding and resampling
    "conv.c",
    "pool.c",
    "resample.c",
]
# nn kernels: softmax, norms, losses, activations, dropout, embedding, RNN cells
SOURCES += [
    "softmax.c",
    "norm.c",
    "loss.c",
    "activation.c",
    "dropout.c",
    "embedding.c",
    "rnn.c",
]
# tc-core: DLPack capsules (uses the Python C API, see dlpack.c)
SOURCES += ["dlpack.c"]
# linalg: LAPACK-backed factorizations and solvers
SOURCES += ["linalg.c"]
# nnk: grid_sample and the CTC loss
SOURCES += ["sampling.c"]
# dist: gamma, Poisson and binomial samplers
SOURCES += ["random_dist.c"]
# surface: torch.special's functions; geqrf and LDL^T (sytrf/sytrs)
SOURCES += ["special_fn.c", "linalg_qr.c"]

# Kernels are short for small tensors: the wrappers keep the GIL rather than pay
# ~100 ns to release and re-take it on every call.  Long-running calls go through
# function pointers instead (see ember_core._lib.nogil), which release it.
KEEP_GIL = """
#undef Py_BEGIN_ALLOW_THREADS
#undef Py_END_ALLOW_THREADS
#define Py_BEGIN_ALLOW_THREADS {
#define Py_END_ALLOW_THREADS }
"""


def read_cdef(header: pathlib.Path) -> str:
    text = header.read_text()
    begin, end = "/* cdef:begin */", "/* cdef:end */"
    return text[text.index(begin) + len(begin) : text.index(end)]


def _rel(path):
    return os.path.relpath(path, CSRC.parent)


ffibuilder = cffi.FFI()
ffibuilder.cdef(read_cdef(HEADER))
ffibuilder.set_source(
    "ember_core._C",
    KEEP_GIL + '#include "ember_core.h"',
    sources=[_rel(CSRC / s) for s in SOURCES],
    # headers and *.inc templates: a change to one rebuilds the extension
    depends=sorted(_rel(p) for pattern in ("*.h", "*.inc") for p in CSRC.glob(pattern)),
    include_dirs=[_rel(CSRC), scipy_openblas32.get_include_dir()],
    library_dirs=[scipy_openblas32.get_lib_dir()],
    libraries=[scipy_openblas32.get_library(), "m"],
    # Portable flags only: no -march=native in what ships.  -fwrapv makes integer
    # overflow wrap (PyTorch's semantics) instead of being undefined.
    extra_compile_args=[
        "-std=gnu11",
        "-O3",
        "-fopenmp",
        "-fwrapv",
        "-fno-math-errno",
        # no fused multiply-adds: a value must not depend on which loop (vector
        # clone, scalar tail, strided path) computed it
        "-ffp-contract=off",
        "-Werror=int-conversion",
        "-Werror=incompatible-pointer-types",
        "-Werror=implicit-function-declaration",
        "-Wno-unused-parameter",
        "-Wno-unused-variable",
        "-Wno-unused-local-typedefs",
    ],
    extra_link_args=["-fopenmp", "-Wl,-rpath,$ORIGIN/../scipy_openblas32/lib"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
