"""ember.cuda: status of the CUDA backend.

ember's CUDA kernels are not built yet: is_available() is False, and calls that
need a GPU raise a RuntimeError saying so (seeding is accepted, as in PyTorch on
machines without a GPU)."""

from ember_core import _cuda


def is_available():
    return _cuda.is_available()


def device_count():
    return _cuda.device_count()


def _unavailable(name):
    def fn(*args, **kwargs):
        _cuda.unavailable(f"ember.cuda.{name}")

    fn.__name__ = name
    return fn


def manual_seed(seed):
    """Accepted for compatibility; there are no CUDA generators to seed."""


def manual_seed_all(seed):
    """Accepted for compatibility; there are no CUDA generators to seed."""


def is_initialized():
    return False


def empty_cache():
    """Nothing to free: no CUDA memory has been allocated."""


def is_bf16_supported(including_emulation=True):
    """False: there is no CUDA device."""
    return False


current_device = _unavailable("current_device")
set_device = _unavailable("set_device")
get_device_name = _unavailable("get_device_name")
get_device_properties = _unavailable("get_device_properties")
synchronize = _unavailable("synchronize")
memory_allocated = _unavailable("memory_allocated")
memory_reserved = _unavailable("memory_reserved")
max_memory_allocated = _unavailable("max_memory_allocated")
reset_peak_memory_stats = _unavailable("reset_peak_memory_stats")
Stream = _unavailable("Stream")
Event = _unavailable("Event")


from ember.cuda import amp  # noqa: E402,F401 - torch.cuda.amp
