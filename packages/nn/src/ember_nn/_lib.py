"""The one module that loads ember_nn's C kernels; statuses become exceptions here."""

from ember_nn._C import ffi, lib


def check(status, op):
    if status:
        raise RuntimeError(f"{op}: {ffi.string(lib.en_last_message()).decode('utf-8', 'replace')}")
