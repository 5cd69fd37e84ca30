"""cffi build of ember_distributed._C; the cdef is read from the header."""

import os
import pathlib

import cffi

CSRC = pathlib.Path(__file__).resolve().parent
HEADER = CSRC / "ember_distributed.h"


def read_cdef(header):
    text = header.read_text()
    begin, end = "/* cdef:begin */", "/* cdef:end */"
    return text[text.index(begin) + len(begin) : text.index(end)]


ffibuilder = cffi.FFI()
ffibuilder.cdef(read_cdef(HEADER))
ffibuilder.set_source(
    "ember_distributed._C",
    '#include "ember_distributed.h"',
    sources=[os.path.relpath(CSRC / "mpi_fast.c", CSRC.parent)],
    include_dirs=[os.path.relpath(CSRC, CSRC.parent)],
    extra_compile_args=["-std=gnu11", "-O2"],
    libraries=["dl"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
