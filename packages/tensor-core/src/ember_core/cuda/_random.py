"""The CUDA generators' seeds (torch.cuda's manual_seed, manual_seed_all,
seed, seed_all, initial_seed): Note [Generators per device] in _ops/random/random.py."""

from ember_core._cuda import runtime as _cuda
from ember_core._ops.random import random as _random
from ember_core._tensor.device import device


def manual_seed(seed):
    """Seed the current CUDA device's default generator."""
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
