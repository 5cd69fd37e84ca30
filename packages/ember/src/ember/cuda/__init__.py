"""ember.cuda: CUDA devices, streams, events and memory -- ``ember_core.cuda``
under PyTorch's layout, plus the deprecated ``ember.cuda.amp`` spellings.

On a machine without a usable GPU ``is_available()`` is False, the memory
statistics read 0, and calls that need a GPU raise a RuntimeError saying why."""

from ember.cuda import amp, nvtx  # noqa: E402,F401 - torch.cuda.amp, torch.cuda.nvtx
from ember_core.cuda import *  # noqa: F403 - the public CUDA API
from ember_core.cuda import __all__ as _core_all

__all__ = [*_core_all, "amp", "nvtx"]
