"""Where ember_data's randomness comes from.

With ember_core installed, samplers draw from ember's generators, so that
``ember.manual_seed`` and ``ember.Generator`` steer shuffling exactly as
``torch.manual_seed``/``torch.Generator`` steer PyTorch's.  Without it they draw
from NumPy: the global RandomState by default, or a ``numpy.random.Generator``
(or ``RandomState``) passed as ``generator=``.  The two sources give different
orders for the same seed; each is deterministic.

Every sampler goes through the few functions here, so the choice of source is
made in one place.
"""

import numpy as np

try:
    import ember_core as _ec
except ImportError:  # NumPy-only install
    _ec = None  # type: ignore[assignment, unused-ignore]  # (unused when ember_core is not found)

_MAX_SEED = 2**63 - 1


def ember_core():
    """The ember_core module, or None when it is not installed."""
    return _ec


def check_generator(generator, op):
    """Raise a TypeError naming ``op`` unless ``generator`` is usable here."""
    if generator is None or isinstance(generator, (np.random.Generator, np.random.RandomState)):
        return generator
    if _ec is not None and isinstance(generator, _ec.Generator):
        return generator
    kinds = "an ember Generator, " if _ec is not None else ""
    raise TypeError(
        f"{op}: generator must be {kinds}a numpy.random.Generator or a numpy.random.RandomState, "
        f"got {type(generator).__name__}"
    )


def random_seed(generator=None):
    """A seed in [0, 2**63 - 1) drawn from ``generator`` (None: the default source),
    as PyTorch draws ``torch.empty((), dtype=torch.int64).random_(generator=g)``."""
    if isinstance(generator, np.random.Generator):
        return int(generator.integers(0, _MAX_SEED))
    if isinstance(generator, np.random.RandomState):
        return int(generator.randint(0, _MAX_SEED, dtype=np.int64))
    if _ec is not None:
        return int(_ec.randint(0, _MAX_SEED, (1,), generator=generator).item())
    return int(np.random.randint(0, _MAX_SEED, dtype=np.int64))


def new_generator(seed):
    """A fresh generator of the preferred kind, seeded with ``seed``."""
    if _ec is not None:
        return _ec.Generator().manual_seed(seed)
    return np.random.Generator(np.random.PCG64(seed))


def _numpy_source(generator):
    """The NumPy generator to draw from, or None when ember draws."""
    if isinstance(generator, (np.random.Generator, np.random.RandomState)):
        return generator
    if generator is None and _ec is None:
        return np.random.mtrand._rand  # the global RandomState behind np.random.*
    return None


def randperm(n, generator):
    """A random permutation of range(n) as a list of ints."""
    source = _numpy_source(generator)
    if source is not None:
        return source.permutation(n).tolist()
    return _ec.randperm(n, generator=generator).tolist()


def randint(high, size, generator):
    """``size`` ints uniform in [0, high) as a list."""
    source = _numpy_source(generator)
    if isinstance(source, np.random.Generator):
        return source.integers(0, high, size).tolist()
    if source is not None:
        return source.randint(0, high, size, dtype=np.int64).tolist()
    return _ec.randint(0, high, (size,), generator=generator, dtype=_ec.int64).tolist()


def multinomial(weights, num_samples, replacement, generator):
    """``num_samples`` indices drawn with probability proportional to ``weights``
    (a 1-D float64 array), with or without replacement, as a list."""
    source = _numpy_source(generator)
    if source is not None:
        total = weights.sum()
        if not np.isfinite(total) or total <= 0 or (weights < 0).any():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > np.count_nonzero(weights):
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            )
        return source.choice(
            len(weights), num_samples, replace=replacement, p=weights / total
        ).tolist()
    w = _ec.from_numpy(np.ascontiguousarray(weights, dtype=np.float64))
    return _ec.multinomial(w, num_samples, replacement, generator=generator).tolist()


def get_state(generator):
    """The generator's state as plain Python data (for state_dict)."""
    if isinstance(generator, np.random.Generator):
        return {"kind": "numpy.Generator", "state": generator.bit_generator.state}
    if isinstance(generator, np.random.RandomState):
        return {"kind": "numpy.RandomState", "state": generator.get_state(legacy=False)}
    return {"kind": "ember", "state": bytes(generator.get_state().tolist())}


def set_state(generator, state):
    """Restore a state from get_state into a generator of the same kind."""
    kind = state["kind"]
    if isinstance(generator, np.random.Generator) and kind == "numpy.Generator":
        generator.bit_generator.state = state["state"]
    elif (
        isinstance(generator, np.random.RandomState)
        and kind == "numpy.RandomState"
        or _ec is not None
        and isinstance(generator, _ec.Generator)
        and kind == "ember"
    ):
        generator.set_state(state["state"])
    else:
        raise ValueError(
            f"load_state_dict: the saved generator state is of kind {kind!r}, "
            f"which does not fit this sampler's {type(generator).__name__}"
        )
