"""ember.xpu (torch.xpu): Intel's GPU backend is not built into ember, so
``is_available()`` is False and ``device_count()`` is 0, as PyTorch answers on a
machine without an XPU; seeding and ``empty_cache`` are accepted (there is nothing
to seed or free), and what needs the device raises saying so."""

__all__ = [
    "current_device",
    "device_count",
    "empty_cache",
    "get_device_name",
    "get_device_properties",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_device",
    "synchronize",
]


def is_available():
    return False


def is_initialized():
    return False


def device_count():
    return 0


def manual_seed(seed):
    """Accepted: there is no XPU generator to seed."""


def manual_seed_all(seed):
    """Accepted: there is no XPU generator to seed."""


def seed():
    """Accepted: there is no XPU generator to seed."""


def seed_all():
    """Accepted: there is no XPU generator to seed."""


def empty_cache():
    """Accepted: no XPU memory is cached."""


def _no_xpu(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"ember.xpu.{name}: ember has no XPU backend (no Intel GPU support)")

    fn.__name__ = fn.__qualname__ = name
    return fn


current_device = _no_xpu("current_device")
get_device_name = _no_xpu("get_device_name")
get_device_properties = _no_xpu("get_device_properties")
set_device = _no_xpu("set_device")
synchronize = _no_xpu("synchronize")
