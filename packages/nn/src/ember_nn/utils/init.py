"""skip_init (torch.nn.utils.skip_init): build a module whose parameters the
caller will overwrite."""

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Instantiate ``module_cls(*args, **kwargs)`` for parameters that will be
    overwritten (e.g. loaded from a checkpoint). As in PyTorch the class must take
    a ``device`` argument, and the initial values are unspecified: ember has no
    meta device to skip the initialisers, so they run as usual."""
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to be skipped")
    return module_cls(*args, **kwargs)
