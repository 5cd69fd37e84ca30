"""vmap by running the function once per batch element and stacking.

ember has no batched-tensor type and no batching rules: ``vmap(f)(x)`` calls
``f`` on ``x.select(in_dim, i)`` for every ``i`` and stacks the results along
``out_dims``.  That gives torch.vmap's results, shapes and argument errors
for every function that is "batch-element independent", which is what vmap
requires of a function anyway; it costs one Python call of ``f`` per
element.  What the loop cannot see is told apart as follows:

- randomness='error' (the default) raises on the first random op inside
  the vmapped call (any op that takes a ``generator``, dropout in training);
  'different' draws per element; 'same' restores the generator state before
  each element, so every element draws the same numbers.
- out_dims=None: the output must not depend on the batch; outputs that
  differ between elements are reported as torch reports a BatchedTensor.
- an empty batch runs ``f`` once on zeros of an element's shape to learn the
  output shapes, and returns empty outputs of those shapes.
"""

import functools

import ember_core as ec
from ember.utils import _pytree as pytree

Tensor = ec.Tensor

_randomness = []  # the randomness modes of the vmaps running now, innermost last


def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


_RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
    "of vmap"
)
_random_ops = {}


def _is_random(op, args):
    r = _random_ops.get(op)
    if r is None:
        r = _random_ops[op] = "generator" in op.params or op.name == "native_dropout"
    if r and op.name == "native_dropout":  # (input, p, train): random only when training
        return bool(args[2]) and args[1] > 0
    return r


def _random_guard(op, args, kwargs, call):
    """A dispatch handler, registered while a vmap runs: refuses random ops in
    randomness='error' mode."""
    if _randomness and _randomness[-1] == "error" and _is_random(op, args):
        raise RuntimeError(_RANDOM_ERROR)
    return call(args, kwargs)


def _check_randomness_arg(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs (``torch.vmap``).

    >>> x = ember.randn(8, 3)
    >>> vmap(ember.dot)(x, x).shape          # a dot product per row
    ember.Size([8])
    >>> vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)   # per-sample gradients

    in_dims / out_dims: an int, None (not mapped), or a nested tuple/list/dict
    of those matching the inputs / outputs.  See the module docstring for how
    it runs.
    """
    _check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_impl(func, in_dims, out_dims, randomness, args, kwargs)

    return wrapped


def _check_out_dims(out_dims, func):
    for d in pytree.tree_leaves(out_dims):
        if not (d is None or isinstance(d, int)):
            raise ValueError(
                f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                "None or a python collection of ints representing where in the outputs the "
                "vmapped dimension should appear."
            )


def _process_inputs(in_dims, args, func):
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
            f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    if len(args) == 0:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
            "trying to vmap over a function with no inputs. The latter is unsupported."
        )
    flat_args, spec = pytree.tree_flatten(args)
    flat_in_dims = pytree._broadcast_to_and_flatten(in_dims, spec)
    if flat_in_dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
            f"structure of `inputs`. in_dims has structure {pytree.tree_structure(in_dims)} but "
            f"inputs has structure {spec}."
        )
    for i, (arg, d) in enumerate(zip(flat_args, flat_in_dims)):
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                "in_dim must be either an integer dimension or None."
            )
        if d is not None and not isinstance(arg, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, "
                "please use None as the respective in_dim"
            )
        if d is not None:
            n = arg.dim()
            if d < -n or d >= n:
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some "
                    f"input, but that input is a Tensor of dimensionality {n} so expected in_dim "
                    f"to satisfy -{n} <= in_dim < {n}."
                )
            flat_in_dims[i] = d % n
    sizes = [a.shape[d] for a, d in zip(flat_args, flat_in_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0], flat_in_dims, flat_args, spec


def _element(flat_args, flat_in_dims, spec, i):
    return pytree.tree_unflatten(
        [a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_in_dims)], spec
    )


def _zeros_element(flat_args, flat_in_dims, spec):
    """Stand-in element for an empty batch: zeros of an element's shape."""
    leaves = []
    for a, d in zip(flat_args, flat_in_dims):
        if d is not None:
            shape = tuple(a.shape[:d]) + tuple(a.shape[d + 1 :])
            a = ec.zeros(shape, dtype=a.dtype, device=a.device)
        leaves.append(a)
    return pytree.tree_unflatten(leaves, spec)


def _vmap_impl(func, in_dims, out_dims, randomness, args, kwargs):
    _check_out_dims(out_dims, func)
    batch_size, flat_in_dims, flat_args, spec = _process_inputs(in_dims, args, func)
    outputs = []
    guard = randomness == "error" and not _randomness_error_active()
    _randomness.append(randomness)
    if guard:
        ec.register_handler(_random_guard)
    try:
        start_state = ec.get_rng_state() if randomness == "same" else None
        if batch_size == 0:
            outputs.append(func(*_zeros_element(flat_args, flat_in_dims, spec), **kwargs))
        for i in range(batch_size):
            if start_state is not None and i > 0:
                ec.set_rng_state(start_state)
            outputs.append(func(*_element(flat_args, flat_in_dims, spec, i), **kwargs))
    finally:
        _randomness.pop()
        if guard:
            ec.remove_handler(_random_guard)
    return _combine(outputs, out_dims, func, empty=batch_size == 0)


def _randomness_error_active():
    """Whether the guard handler is registered already (by an enclosing vmap)."""
    return "error" in _randomness


def _combine(outputs, out_dims, func, empty):
    name = _get_name(func)
    flat0, spec = pytree.tree_flatten(outputs[0])
    flat_all = [flat0]
    for o in outputs[1:]:
        f, s = pytree.tree_flatten(o)
        if s != spec:
            raise ValueError(
                f"vmap({name}, ...): `{name}` returned outputs of different structure for "
                f"different batch elements: {spec} and {s}"
            )
        flat_all.append(f)

    def incompatible():
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
            f"the structure of `outputs`. out_dims has structure "
            f"{pytree.tree_structure(out_dims)} but outputs has structure {spec}."
        )

    if isinstance(outputs[0], Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out_dims = list(out_dims)
        else:
            incompatible()
    else:
        flat_out_dims = pytree._broadcast_to_and_flatten(out_dims, spec)
        if flat_out_dims is None:
            incompatible()

    result = []
    for k, d in enumerate(flat_out_dims):
        column = [f[k] for f in flat_all]
        first = column[0]
        if d is None:
            if isinstance(first, Tensor) and not empty and _varies(column):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is "
                    "None"
                )
            result.append(first)
            continue
        if not isinstance(first, Tensor):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                f"{type(first)}. Did you mean to set out_dims= to None for output?"
            )
        for c in column:
            if not isinstance(c, Tensor):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(c)}. "
                    "Did you mean to set out_dims= to None for output?"
                )
        stacked = ec.stack(column, d)
        if empty:
            stacked = stacked.narrow(d % stacked.dim(), 0, 0)
        result.append(stacked)
    return pytree.tree_unflatten(result, spec)


def _varies(column):
    first = column[0]
    for c in column[1:]:
        if c is first:
            continue
        if c.shape != first.shape or bool((c != first).any()):
            return True
    return False
