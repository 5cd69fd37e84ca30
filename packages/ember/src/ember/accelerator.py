"""ember.accelerator (torch.accelerator): the current accelerator, if any.

ember's only accelerator would be CUDA (``ember.cuda``); on a machine or build
without it there is none, and, as in PyTorch, ``is_available()`` is False,
``current_accelerator()`` is None, ``device_count()`` is 0 and what needs a
device raises ``RuntimeError("Cannot access accelerator device when none is
available.")``."""

import contextlib

__all__ = [
    "current_accelerator",
    "current_device_idx",
    "current_device_index",
    "current_stream",
    "device_count",
    "device_index",
    "empty_cache",
    "empty_host_cache",
    "get_device_capability",
    "get_memory_info",
    "reset_accumulated_memory_stats",
    "set_stream",
    "is_available",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_peak_memory_stats",
    "set_device_idx",
    "set_device_index",
    "synchronize",
]

_NONE = "Cannot access accelerator device when none is available."


def _cuda():
    from ember import cuda

    return cuda


def is_available():
    return _cuda().is_available()


def device_count():
    return _cuda().device_count() if is_available() else 0


def current_accelerator(check_available=False):
    """``ember.device("cuda")`` when CUDA is usable, else None."""
    if not is_available():
        return None
    from ember_core import device

    return device("cuda")


def _cuda_fn(name):
    if not is_available():
        raise RuntimeError(_NONE)
    return getattr(_cuda(), name)


def current_device_index():
    return _cuda_fn("current_device")()


current_device_idx = current_device_index


def set_device_index(device):
    _cuda_fn("set_device")(device)


set_device_idx = set_device_index


def current_stream(device=None):
    return _cuda_fn("current_stream")(device)


def synchronize(device=None):
    _cuda_fn("synchronize")(device)


def empty_cache():
    _cuda_fn("empty_cache")()


def empty_host_cache():
    _cuda_fn("empty_host_cache")()


def get_device_capability(device=None):
    return _cuda_fn("get_device_capability")(device)


def get_memory_info(device_index=None):
    return _cuda_fn("mem_get_info")(device_index)


def set_stream(stream):
    _cuda_fn("set_stream")(stream)


def reset_accumulated_memory_stats(device_index=None):
    _cuda_fn("reset_accumulated_memory_stats")(device_index)


def memory_allocated(device_index=None):
    return _cuda_fn("memory_allocated")(device_index)


def max_memory_allocated(device_index=None):
    return _cuda_fn("max_memory_allocated")(device_index)


def memory_reserved(device_index=None):
    return _cuda_fn("memory_reserved")(device_index)


def max_memory_reserved(device_index=None):
    return _cuda_fn("max_memory_reserved")(device_index)


def memory_stats(device_index=None):
    return _cuda_fn("memory_stats")(device_index)


def reset_peak_memory_stats(device_index=None):
    _cuda_fn("reset_peak_memory_stats")(device_index)


@contextlib.contextmanager
def device_index(device):
    """Make ``device`` the current accelerator index inside the block (None: no change)."""
    if device is None:
        yield
        return
    previous = current_device_index()
    set_device_index(device)
    try:
        yield
    finally:
        set_device_index(previous)
