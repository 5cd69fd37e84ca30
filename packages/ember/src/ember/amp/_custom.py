"""custom_fwd / custom_bwd: autocast for custom autograd Functions, as
``torch.amp.custom_fwd`` / ``custom_bwd``.

``custom_fwd`` records, on the Function's ctx, whether autocast was on for
``device_type`` when forward ran (and its dtype); with ``cast_inputs`` it
instead runs forward with autocast off, its floating inputs on that device
cast to ``cast_inputs``.  ``custom_bwd`` runs backward under the autocast
state forward saw.
"""

import functools

import ember_core as ec


def _cast(value, device_type, dtype):
    if isinstance(value, ec.Tensor):
        if value.is_floating_point() and value.device.type == device_type:
            return value.to(dtype)
        return value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {
            _cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate a custom Function's ``forward`` (see the module docstring).

    >>> class MyMM(ember.autograd.Function):
    ...     @staticmethod
    ...     @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
    ...     def forward(ctx, a, b): ...
    """
    from ember import amp

    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = amp.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = amp.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if amp.is_autocast_enabled(device_type):
            with amp.autocast(device_type=device_type, enabled=False):
                return fwd(
                    *_cast(args, device_type, cast_inputs),
                    **_cast(kwargs, device_type, cast_inputs),
                )
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate a custom Function's ``backward``: it runs under the autocast
    state its forward (decorated with ``custom_fwd``) ran under."""
    from ember import amp

    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with amp.autocast(
            device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype
        ):
            return bwd(*args, **kwargs)

    return decorate_bwd
