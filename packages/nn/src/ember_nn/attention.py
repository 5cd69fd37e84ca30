"""ember.nn.attention: choosing the kernel behind scaled_dot_product_attention.

ember computes attention with one CPU implementation, the math one; PyTorch's CPU
build also runs its flash kernel.  The switches below are the same process-wide
flags as PyTorch's (`torch._C._set_sdp_use_*`): a script that selects
`SDPBackend.MATH` or `SDPBackend.FLASH_ATTENTION` runs, and one that leaves only
backends with no CPU kernel enabled gets PyTorch's "No viable backend" error.
"""

import contextlib
import enum

__all__ = ["SDPBackend", "WARN_FOR_UNFUSED_KERNELS", "sdpa_kernel"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The scaled_dot_product_attention backends (PyTorch's values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __repr__(self):
        return f"<SDPBackend.{self.name}: {self.value}>"

    def __str__(self):
        return f"SDPBackend.{self.name}"


# flag name (torch.backends.cuda.<name>_sdp_enabled) -> backend, in PyTorch's order
_BACKEND_NAMES = {
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "mem_efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
    "overrideable": SDPBackend.OVERRIDEABLE,
}
_enabled = {name: True for name in _BACKEND_NAMES}
_priority = [1, 2, 0, 3, 4]
# the backends that have a CPU kernel (in PyTorch's CPU build as in ember)
_CPU_BACKENDS = ("math", "flash")


def _get_enabled(name):
    return _enabled[name]


def _set_enabled(name, value):
    _enabled[name] = bool(value)


def _check_viable():
    """Raise PyTorch's error when no backend that can run on CPU is enabled."""
    if not any(_enabled[name] for name in _CPU_BACKENDS):
        raise RuntimeError(
            "No viable backend for scaled_dot_product_attention was found. This is likely due "
            "to turning off both the math kernel and the fused kernels."
        )


def _cur_sdpa_kernel_backends(with_priority=False):
    backends = [b for name, b in _BACKEND_NAMES.items() if _enabled[name]]
    if with_priority:
        backends.sort(key=lambda b: _priority.index(int(b)))
    return backends


def _sdpa_kernel(backends, set_priority=False):
    for name, backend in _BACKEND_NAMES.items():
        _enabled[name] = backend in backends
    if set_priority:
        order = [int(b) for b in backends]
        order += [b for b in _priority if b not in order]
        _priority[:] = order


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Enable only `backends` for scaled_dot_product_attention inside the block.

    >>> with sdpa_kernel(SDPBackend.MATH):
    ...     out = F.scaled_dot_product_attention(q, k, v)
    """
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(
            "Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
            f"{type(backends).__name__}"
        )
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, set_priority)
