"""cffi build of ember_nn._C (fused optimizer kernels); the cdef is read from
csrc/ember_nn.h between its cdef markers."""

import os
import pathlib

import cffi

CSRC = pathlib.Path(__file__).resolve().parent
HEADER = CSRC / "ember_nn.h"


def read_cdef(header):
    text = header.read_text()
    begin, end = "/* cdef:begin */", "/* cdef:end */"
    return text[text.index(begin) + len(begin) : text.index(end)]


ffibuilder = cffi.FFI()
ffibuilder.cdef(read_cdef(HEADER))
ffibuilder.set_source(
    "ember_nn._C",
    '#include "ember_nn.h"',
    sources=[os.path.relpath(CSRC / "optim.c", CSRC.parent)],
    include_dirs=[os.path.relpath(CSRC, CSRC.parent)],
    extra_compile_args=[
        "-std=gnu11",
        "-O3",
        "-fopenmp",
        "-fno-math-errno",
        "-Wno-unused-parameter",
    ],
    extra_link_args=["-fopenmp"],
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
