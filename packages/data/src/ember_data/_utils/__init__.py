"""The DataLoader's machinery (as ``torch.utils.data._utils``): collation,
fetching, worker processes and their transport, shared memory, pinning."""

from ember_data._utils import collate, exceptions, fetch, pin_memory, shm, transport, worker

# Seconds between checks while waiting on workers (as PyTorch's constant).
MP_STATUS_CHECK_INTERVAL = 5.0

__all__ = ["collate", "exceptions", "fetch", "pin_memory", "shm", "transport", "worker"]
