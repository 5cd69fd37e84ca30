"""CUDA status.  ember_core's CUDA kernels are not built yet; every CUDA request
fails here with a message saying why, so callers get one clear error."""


def is_available():
    return False


def device_count():
    return 0


def unavailable(op, dev=None):
    where = f" (asked for {dev})" if dev is not None else ""
    raise RuntimeError(
        f"{op}: ember was built without its CUDA backend{where}; CUDA tensors are not "
        "available yet. Use device='cpu'."
    )
