"""ember.mps (torch.mps): Apple's Metal backend is not built into ember, so
``is_available()`` is False and ``device_count()`` is 0; seeding is accepted
(as PyTorch accepts it without MPS), and what needs the device raises."""

__all__ = ["device_count", "is_available", "manual_seed", "seed", "synchronize"]


def is_available():
    return False


def device_count():
    return 0


def manual_seed(seed):
    """Accepted: there is no MPS generator to seed."""


def seed():
    """Accepted: there is no MPS generator to seed."""


def _no_mps(name, native):
    def fn(*args, **kwargs):
        raise RuntimeError(f"Cannot execute {native}() without MPS backend.")

    fn.__name__ = fn.__qualname__ = name
    return fn


synchronize = _no_mps("synchronize", "deviceSynchronize")
empty_cache = _no_mps("empty_cache", "emptyCache")
