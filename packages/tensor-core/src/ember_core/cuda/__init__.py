"""ember_core.cuda: CUDA devices, streams, events and memory, under PyTorch's
names (``ember.cuda`` re-exports this module).

Tensors go to a GPU with ``device='cuda'``, ``.cuda()`` or ``.to('cuda')``; ops
on them queue ember's own CUDA kernels (compiled by NVRTC at first use and
cached on disk, Note [Kernel cache]) on the current stream and return at once.
On a machine without a usable GPU ``is_available()`` is False and anything that
needs one raises a RuntimeError saying why.

>>> import ember_core as ec
>>> if ec.cuda.is_available():
...     x = ec.ones(3, device='cuda') * 2
...     x.cpu().tolist()
"""

from ember_core._cuda.runtime import OutOfMemoryError
from ember_core._cuda.runtime import compile_all as _compile_all  # noqa: F401 - gpu-check, benchmarks
from ember_core.cuda._devices import (
    current_device,
    device,
    device_count,
    device_of,
    driver_version,
    get_device_capability,
    get_device_name,
    get_device_properties,
    init,
    is_available,
    is_bf16_supported,
    is_initialized,
    set_device,
    synchronize,
)
from ember_core.cuda._memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from ember_core.cuda._random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from ember_core.cuda._streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = [
    "Event",
    "ExternalStream",
    "OutOfMemoryError",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "driver_version",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_per_process_memory_fraction",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]
