"""ember.random: the default generator's seed and state (torch.random)."""

import contextlib

import ember_core as ec

manual_seed = ec.manual_seed
seed = ec.seed
initial_seed = ec.initial_seed
get_rng_state = ec.get_rng_state
set_rng_state = ec.set_rng_state
default_generator = ec.default_generator


@contextlib.contextmanager
def fork_rng(
    devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"
):
    """Run the block with the default generator's state saved and restored afterwards."""
    if not enabled:
        yield
        return
    state = ec.get_rng_state()
    try:
        yield
    finally:
        ec.set_rng_state(state)


__all__ = [
    "default_generator",
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "seed",
    "set_rng_state",
]
