"""ember.cpu: the CPU device module (torch.cpu), with torch.cpu.amp."""

from ember.cpu import amp  # noqa: F401 - torch.cpu.amp

__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """CPU ops finish before they return: nothing to wait for."""
