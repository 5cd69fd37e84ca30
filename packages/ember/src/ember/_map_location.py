"""Where ember.load puts each tensor: ``map_location`` read as torch.load reads it.

A checkpoint records the device each storage was saved from ("cpu", "cuda:0");
without ``map_location`` a storage goes back there.  A device (or its name) sends
every storage to it; a dict maps saved locations to new ones (others stay); a
callable gets ``(storage, location)`` -- here the storage is a flat tensor of its
elements, which has the ``.cuda()``/``.cpu()``/``.to()`` that such callables use
-- and returns the moved storage, or None for the default.
"""

import ember_core as ec


def placement(map_location, op="ember.load"):
    """``place(tensor, saved_location) -> tensor`` on the device map_location picks."""
    if map_location is None:
        target_of = None
    elif isinstance(map_location, (str, ec.device)):
        device = _device(map_location, op, map_location)

        def target_of(location):
            return device
    elif isinstance(map_location, dict):

        def target_of(location):
            return map_location.get(location, location)
    elif callable(map_location):
        target_of = None
    else:
        raise TypeError(
            f"{op}: map_location must be a device, a device name, a dict or a callable, "
            f"not {type(map_location).__name__}"
        )

    def place(t, location):
        if callable(map_location) and not isinstance(map_location, (str, ec.device, dict)):
            moved = map_location(t, location)
            if moved is not None:
                if not isinstance(moved, ec.Tensor):
                    raise TypeError(
                        f"{op}: the map_location callable returned a "
                        f"{type(moved).__name__}; it must return the storage it was given "
                        "(moved with .cuda()/.cpu()/.to()) or None"
                    )
                return moved
            target = location
        else:
            target = location if target_of is None else target_of(location)
        device = _device(target, op, map_location)
        if device.type == "cuda" and not ec.cuda.is_available():
            raise RuntimeError(
                f"{op}: the checkpoint holds tensors saved on '{location}' to be loaded onto "
                f"'{device}', but CUDA is not available (ember.cuda.is_available() is False). "
                "On a CPU-only machine, use ember.load with map_location=ember.device('cpu') "
                "to map the storages to the CPU."
            )
        return t if t.device == device else t.to(device)

    return place


def _device(target, op, map_location):
    try:
        device = ec.device(target)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise RuntimeError(f"{op}(map_location={map_location!r}): {exc}") from None
    if device.type not in ("cpu", "cuda", "meta"):
        raise RuntimeError(
            f"{op}(map_location={map_location!r}): tensors cannot be loaded onto device type "
            f"'{device.type}'; ember's tensors live on 'cpu', 'cuda' and 'meta'"
        )
    return device
