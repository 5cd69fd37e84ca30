"""The CUDA generators' seeds and states (torch.cuda's manual_seed, manual_seed_all,
seed, seed_all, initial_seed, get/set_rng_state(_all)): Note [Generators per device]
in _ops/random/random.py.  Seeding on a machine without CUDA checks the seed and
does nothing more, as PyTorch defers it until CUDA starts (which it never does
there); reading or setting a state needs the device."""

from ember_core._cuda import runtime as _cuda
from ember_core._ops.random import random as _random
from ember_core._tensor.device import device


def manual_seed(seed):
    """Seed the current CUDA device's default generator."""
    if not _cuda.is_available():
        _random.Generator().manual_seed(seed)  # the same checks of the seed
        return
    _random.manual_seed_cuda(seed)


def manual_seed_all(seed):
    """Seed every CUDA device's default generator."""
    _random.manual_seed_cuda(seed, all_devices=True)


def seed():
    """Seed the current CUDA device's generator from a non-deterministic source."""
    s = _random.Generator().seed()
    manual_seed(s)
    return s


def seed_all():
    """Seed every CUDA device's generator from one non-deterministic seed."""
    s = _random.Generator().seed()
    manual_seed_all(s)
    return s


def initial_seed():
    """The current CUDA device's generator's seed."""

    return _random.default_generator_for(device("cuda", _cuda.current_device())).initial_seed()


def _generator(device_, op):
    if isinstance(device_, int):
        dev = device("cuda", device_)
    else:
        dev = device(device_)
        if dev.type != "cuda":
            raise RuntimeError(f"{op}: expected a CUDA device, got {dev}")
    _cuda.require(dev, op)
    if dev.index is None:
        dev = device("cuda", _cuda.current_device())
    return _random.default_generator_for(dev)


def get_rng_state(device="cuda"):
    """The state of a CUDA device's default generator, as a uint8 tensor."""
    return _generator(device, "ember.cuda.get_rng_state").get_state()


def set_rng_state(new_state, device="cuda"):
    _generator(device, "ember.cuda.set_rng_state").set_state(new_state)


def get_rng_state_all():
    """The states of every CUDA device's generator (none without CUDA)."""
    return [get_rng_state(i) for i in range(_cuda.device_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
