"""cffi build of ember_autograd._C (the handler's and the engine's hot paths);
the cdef is read from csrc/ember_autograd.h between its cdef markers.

The module's real content is CPython objects (types and functions working on
Python objects, which cffi cannot pass): ``lib.ea_install()`` adds them to the
module once at import (Note [C extension] in autograd.c)."""

import os
import pathlib

import cffi

CSRC = pathlib.Path(__file__).resolve().parent
HEADER = CSRC / "ember_autograd.h"


def read_cdef(header):
    text = header.read_text()
    begin, end = "/* cdef:begin */", "/* cdef:end */"
    return text[text.index(begin) + len(begin) : text.index(end)]


ffibuilder = cffi.FFI()
ffibuilder.cdef(read_cdef(HEADER))
ffibuilder.set_source(
    "ember_autograd._C",
    '#include "ember_autograd.h"',
    sources=[os.path.relpath(CSRC / "autograd.c", CSRC.parent)],
    # headers autograd.c includes: a change to one recompiles it
    depends=[os.path.relpath(CSRC / h, CSRC.parent) for h in ("ember_autograd.h", "slots.h")],
    include_dirs=[os.path.relpath(CSRC, CSRC.parent)],
    # autograd.c uses the full (version-specific) CPython API
    py_limited_api=False,
    extra_compile_args=["-std=gnu11", "-O2", "-Wno-unused-parameter"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
