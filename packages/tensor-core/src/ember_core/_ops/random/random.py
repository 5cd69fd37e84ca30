"""Random numbers: Generator objects over the counter-based Philox kernel, the
default generator, and the random ops (rand, randn, randint, randperm, normal,
bernoulli, multinomial and the in-place samplers).

A generator's state is (seed, offset): each call uses the counters offset,
offset+1, ... and advances offset past them, so a draw depends only on the seed
and the position in the stream, never on the number of threads.

Note [Generators per device]
As in PyTorch, every device has its default generator: the CPU's is
``default_generator``, each CUDA device's is made at its first use
(``default_generator_for``), and a random op on a tensor takes its (seed,
offset) from the generator of the tensor's device (an explicit ``generator=``
must be of that device type).  ``manual_seed`` seeds all of them with the same
seed and offset 0, and every generator's offset advances by the same counters
for the same call, so one sequence of calls gives the same numbers on the CPU
and on a GPU, bit for bit (Note [Bit-identical random numbers], csrc/philox.h).
"""

import math
import os
import struct
import threading
import time

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop
from ember_core._base.lib import check, lib
from ember_core._cuda import runtime as _cuda
from ember_core._ops.pointwise.complex import as_real_view
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import contiguous, copy_into, to
from ember_core._tensor.creation import _dev, creation_out, tensor
from ember_core._tensor.device import CPU
from ember_core._tensor.device import device as _device
from ember_core._tensor.tensor import Tensor, is_contig, written
from ember_core._tensor.tensor import empty as _empty

_DEFAULT_SEED = 67280421310721


class Generator:
    """A stream of random numbers: ``Generator().manual_seed(0)``."""

    def __init__(self, device="cpu"):
        self.device = CPU if str(device) == "cpu" else _device(device)
        self._seed = _DEFAULT_SEED
        self._offset = 0
        self._lock = threading.Lock()

    def manual_seed(self, seed):
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise RuntimeError(
                f"Overflow when unpacking long long: seed {seed} does not fit 64 bits"
            )
        self._seed = seed & 0xFFFFFFFFFFFFFFFF
        self._offset = 0
        return self

    def seed(self):
        """Seed from a non-deterministic source; returns the seed."""
        s = int.from_bytes(os.urandom(8), "little") ^ time.time_ns()
        self.manual_seed(s & 0x7FFFFFFFFFFFFFFF)
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The state as a uint8 tensor (seed and offset, 16 bytes)."""

        return tensor(list(struct.pack("<QQ", self._seed, self._offset)), dtype=D.uint8)

    def set_state(self, state):
        data = bytes(state.tolist()) if isinstance(state, Tensor) else bytes(state)
        if len(data) != 16:
            raise RuntimeError(
                f"Generator.set_state: expected a 16-byte state, got {len(data)} bytes"
            )
        self._seed, self._offset = struct.unpack("<QQ", data)
        return self

    def take(self, counters):
        """Reserve ``counters`` Philox counters: returns (seed, first offset)."""
        with self._lock:
            offset = self._offset
            # a uint64 counter, as Philox's: wraps instead of growing past what the
            # kernels take (a huge request that then fails to allocate must not
            # leave the generator unusable)
            self._offset = (offset + counters) & 0xFFFFFFFFFFFFFFFF
        return self._seed, offset

    def __getstate__(self):
        return {"device": str(self.device), "seed": self._seed, "offset": self._offset}

    def __setstate__(self, state):
        self.__init__(state["device"])
        self._seed, self._offset = state["seed"], state["offset"]

    def __repr__(self):
        return f"<ember.Generator seed={self._seed} offset={self._offset}>"


default_generator = Generator()
_meta_generator = Generator("meta")
_cuda_generators = {}  # device index -> that device's default generator
_cuda_seed = [_DEFAULT_SEED]  # what a CUDA default generator starts from


def default_generator_for(dev):
    """The default generator of device ``dev`` (Note [Generators per device])."""
    if dev.type == "cpu":
        return default_generator
    if dev.type == "meta":  # its kernels draw nothing (Note [Meta tensors])
        return _meta_generator
    if dev.type != "cuda":
        raise NotImplementedError(f"random numbers: no generator for device type '{dev.type}'")
    index = dev.index if dev.index is not None else 0
    g = _cuda_generators.get(index)
    if g is None:
        with default_generator._lock:
            g = _cuda_generators.get(index)
            if g is None:
                g = Generator(f"cuda:{index}").manual_seed(_cuda_seed[0])
                _cuda_generators[index] = g
    return g


def manual_seed(seed):
    """Seed the default generator of every device (and return the CPU's)."""
    g = default_generator.manual_seed(seed)
    manual_seed_cuda(seed, all_devices=True)
    return g


def manual_seed_cuda(seed, all_devices=False):
    """Seed the current CUDA device's default generator, or every CUDA device's
    (those made later too)."""
    seed = int(Generator().manual_seed(seed)._seed)  # the same checks and wrapping
    if all_devices:
        _cuda_seed[0] = seed
        for g in list(_cuda_generators.values()):
            g.manual_seed(seed)
        return

    default_generator_for(_device("cuda", _cuda.current_device())).manual_seed(seed)


def seed():
    s = default_generator.seed()
    manual_seed_cuda(s, all_devices=True)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def _gen(generator, dev=None):
    """The generator a random op on device ``dev`` (the CPU by default) draws from."""
    if generator is None:
        return default_generator if dev is None else default_generator_for(dev)
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an ember Generator, got {type(generator).__name__}")
    kind = "cpu" if dev is None else dev.type
    if generator.device.type != kind:
        raise RuntimeError(
            f"Expected a '{kind}' device type for generator but found '{generator.device.type}'"
        )
    return generator


def _fill_random(t, kind, generator, p0=0.0, p1=0.0, i0=0, i1=0, op="random"):
    """Fill tensor t (any layout) from the generator's stream."""
    if t._dtype.is_complex:
        # both parts from the real stream; a standard complex normal has variance
        # 1 in total (1/2 per part), as in PyTorch
        if kind not in (lib.EC_RNG_UNIFORM, lib.EC_RNG_NORMAL):
            raise NotImplementedError(f"{op}: not implemented for complex tensors")

        scale = math.sqrt(0.5) if kind == lib.EC_RNG_NORMAL else 1.0
        _fill_random(as_real_view(t), kind, generator, p0, p1 * scale, i0, i1, op)
        return t
    g = _gen(generator, t._storage._device)
    n = t._numel
    seed, offset = g.take(lib.ec_random_counters(kind, t._dtype.code, n))
    if is_contig(t):
        check(
            t._storage._device._k.ec_random(
                kind, t._dtype.code, n, t._ptr, seed, offset, p0, p1, i0, i1
            ),
            op,
        )
        return t
    tmp = _empty(t._shape, t._dtype, t._storage._device)
    check(
        tmp._storage._device._k.ec_random(
            kind, t._dtype.code, n, tmp._ptr, seed, offset, p0, p1, i0, i1
        ),
        op,
    )

    copy_into(t, tmp)
    return t


def _new(op, size, dtype, device, requires_grad, float_only=True):
    shape = _shape.as_shape(size, op)
    dt = D.to_dtype(dtype) or D.get_default_dtype()
    if float_only and dt.category < 2:
        raise RuntimeError(f"\"{op}\" not implemented for '{dt.name}' (use a floating point dtype)")
    return _empty(shape, dt, _dev(device)), requires_grad


def _into_out(op, size, out, dtype, requires_grad):
    """rand/randn/normal(..., out=t): t itself (checked, resized), floating point only."""

    t = creation_out(op, out, _shape.as_shape(size, op), dtype)
    if t._dtype.category < 2:
        raise RuntimeError(
            f"\"{op}\" not implemented for '{t._dtype.name}' (use a floating point dtype)"
        )
    return t, requires_grad


def _int_arg(op, name, v):
    """int(v) for a bound or count (a float with an integral value too)."""
    try:
        return int(v)
    except (OverflowError, ValueError):  # inf, nan
        raise TypeError(f"{op}(): argument '{name}' must be int, not {v!r}") from None


def _done(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


@defop(
    "rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None)",
    method=False,
    differentiable=False,
)
def rand(size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Uniform samples in [0, 1)."""
    if out is None:
        t, rg = _new("rand", size, dtype, device, requires_grad)
    else:
        t, rg = _into_out("rand", size, out, dtype, requires_grad)
    return _done(_fill_random(t, lib.EC_RNG_UNIFORM, generator, 0.0, 1.0, op="rand"), rg)


@defop(
    "randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None)",
    method=False,
    differentiable=False,
)
def randn(size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Standard normal samples."""
    if out is None:
        t, rg = _new("randn", size, dtype, device, requires_grad)
    else:
        t, rg = _into_out("randn", size, out, dtype, requires_grad)
    return _done(_fill_random(t, lib.EC_RNG_NORMAL, generator, 0.0, 1.0, op="randn"), rg)


@defop(
    method=False,
    differentiable=False,
)
def randint(
    low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False
):
    """Integers uniform in [low, high): randint(high, size) or randint(low, high, size)."""
    if size is None:
        if high is None:
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    low, high = _int_arg("randint", "low", low), _int_arg("randint", "high", high)
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )

    dt = D.to_dtype(dtype) or D.int64
    t = _empty(_shape.as_shape((size,), "randint"), dt, _dev(device))
    return _done(
        _fill_random(t, lib.EC_RNG_RANDINT, generator, i0=low, i1=high, op="randint"), requires_grad
    )


@defop(
    method=False,
    differentiable=False,
)
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1."""
    n = _int_arg("randperm", "n", n)
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")

    dev = _dev(device)
    seed, offset = _gen(generator, dev).take((n + 1) // 2)
    idx = _empty((n,), D.int64, dev)
    check(idx._storage._device._k.ec_randperm(n, idx._ptr, seed, offset), "randperm")
    dt = D.to_dtype(dtype) or D.int64
    if dt is not D.int64:
        idx = to(idx, dt)
    return _done(idx, requires_grad)


@defop(
    method=False,
    differentiable=False,
)
def normal(
    mean=0.0,
    std=1.0,
    size=None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad=False,
    out=None,
):
    """Normal samples: mean and std may be tensors (broadcast) or numbers (with size)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        shape = _shape.broadcast_shapes(
            getattr(mean, "_shape", ()), getattr(std, "_shape", ()), op="normal"
        )
        ref = mean if isinstance(mean, Tensor) else std
        z = _empty(shape, ref._dtype, ref._storage._device)
        _fill_random(z, lib.EC_RNG_NORMAL, generator, 0.0, 1.0, op="normal")
        r = z * std + mean
        if out is not None:
            return out.copy_(r)
        return r
    if size is None:
        raise TypeError("normal(): with numbers for mean and std, size is required")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if out is None:
        t, rg = _new("normal", (size,), dtype, device, requires_grad)
    else:
        t, rg = _into_out("normal", (size,), out, dtype, requires_grad)
    return _done(
        _fill_random(t, lib.EC_RNG_NORMAL, generator, float(mean), float(std), op="normal"), rg
    )


@defop(differentiable=False)
def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples with probabilities from input (or the number p), in input's dtype."""
    if p is not None:
        t = _empty(input._shape, input._dtype, input._storage._device)
        return _fill_random(t, lib.EC_RNG_BERNOULLI, generator, float(p), op="bernoulli")
    if input._dtype.category < 2:
        raise RuntimeError(f"\"bernoulli_tensor_cpu_p_\" not implemented for '{input._dtype.name}'")

    probs = contiguous(input)
    t = _empty(input._shape, input._dtype, input._storage._device)
    g = _gen(generator, t._storage._device)
    seed, offset = g.take((input._numel + 3) // 4)
    check(
        t._storage._device._k.ec_bernoulli_tensor(
            t._dtype.code, probs._dtype.code, t._numel, t._ptr, probs._ptr, seed, offset
        ),
        "bernoulli",
    )
    if out is not None:
        return out.copy_(t)
    return t


@defop(differentiable=False)
def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Sample category indices from the rows of non-negative weights."""
    if len(input._shape) not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {len(input._shape)}")
    if input._dtype.category < 2:
        raise RuntimeError("multinomial only supports floating-point dtypes for input")
    cats = input._shape[-1]
    if cats == 0:
        raise RuntimeError("multinomial: the number of categories cannot be zero")
    if not replacement and num_samples > cats:
        raise RuntimeError(
            "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    if num_samples <= 0:
        raise RuntimeError("multinomial: cannot sample n_sample <= 0 samples")

    w = contiguous(input)
    rows = 1 if len(input._shape) == 1 else input._shape[0]
    out = _empty((rows, num_samples), D.int64, input._storage._device)
    g = _gen(generator, out._storage._device)
    seed, offset = g.take(rows * num_samples)
    check(
        w._storage._device._k.ec_multinomial(
            w._dtype.code,
            rows,
            cats,
            w._ptr,
            num_samples,
            bool(replacement),
            out._ptr,
            seed,
            offset,
        ),
        "multinomial",
    )
    if len(input._shape) == 1:
        out._shape = (num_samples,)
        out._stride = (1,)
    return out


# -------------------------------------------------------- in-place samplers


def _inplace(op, t):
    written(t, op)
    return t


@defop(
    inplace_of="uniform",
    differentiable=False,
)
def uniform_(input, from_=0.0, to=1.0, *, generator=None):
    """Fill with uniform samples in [from_, to)."""
    if input._dtype.category < 2:
        raise RuntimeError(f"\"uniform_\" not implemented for '{input._dtype.name}'")
    if from_ > to:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}"
        )
    return _fill_random(
        _inplace("uniform_", input),
        lib.EC_RNG_UNIFORM,
        generator,
        float(from_),
        float(to),
        op="uniform_",
    )


@defop(
    inplace_of="normal",
    differentiable=False,
)
def normal_(input, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill_random(
        _inplace("normal_", input),
        lib.EC_RNG_NORMAL,
        generator,
        float(mean),
        float(std),
        op="normal_",
    )


@defop(inplace_of="random", differentiable=False)
def random_(input, from_=0, to=None, *, generator=None):
    """Fill with integers uniform in [from_, to); random_(to) means [0, to); with no
    bounds, [0, 2**mantissa] for floats or the dtype's range for integers."""
    dt = input._dtype
    if to is None:
        if from_ != 0:
            from_, to = 0, from_
        elif dt.category == 2:
            to = 2 ** {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dt.name] + 1
        elif dt is D.bool_:
            to = 2
        else:
            to = dt.max + 1
    from_, to = int(from_), int(to)
    if from_ >= to:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}"
        )
    if dt.category < 2:  # integers and bool: both ends must fit the dtype
        lo, hi = (0, 1) if dt is D.bool_ else (dt.min, dt.max)
        if not lo <= from_ <= hi:
            raise RuntimeError(f"random_: from is out of bounds for {dt.name} (from={from_})")
        if not lo <= to - 1 <= hi:
            raise RuntimeError(f"random_: to - 1 is out of bounds for {dt.name} (to={to})")
    t = _inplace("random_", input)
    if to - from_ == 1 << 64:  # every 64-bit pattern
        return _fill_random(t, lib.EC_RNG_BITS, generator, op="random_")
    # The kernel draws from_ + [0, to - from_) in 64-bit wrap-around arithmetic, so a
    # bound of 2**63 or more (int64's random_() is [0, 2**63 - 1]) passes wrapped.
    return _fill_random(t, lib.EC_RNG_RANDINT, generator, i0=from_, i1=_wrap64(to), op="random_")


def _wrap64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


@defop(inplace_of="bernoulli", differentiable=False)
def bernoulli_(input, p=0.5, *, generator=None):
    if isinstance(p, Tensor):
        return input.copy_(bernoulli(p.expand(input._shape).contiguous(), generator=generator))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill_random(
        _inplace("bernoulli_", input), lib.EC_RNG_BERNOULLI, generator, float(p), op="bernoulli_"
    )


@defop(
    inplace_of="exponential",
    differentiable=False,
)
def exponential_(input, lambd=1.0, *, generator=None):
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill_random(
        _inplace("exponential_", input),
        lib.EC_RNG_EXPONENTIAL,
        generator,
        float(lambd),
        op="exponential_",
    )


@defop(
    inplace_of="cauchy",
    differentiable=False,
)
def cauchy_(input, median=0.0, sigma=1.0, *, generator=None):
    return _fill_random(
        _inplace("cauchy_", input),
        lib.EC_RNG_CAUCHY,
        generator,
        float(median),
        float(sigma),
        op="cauchy_",
    )


@defop(
    inplace_of="log_normal",
    differentiable=False,
)
def log_normal_(input, mean=1.0, std=2.0, *, generator=None):
    return _fill_random(
        _inplace("log_normal_", input),
        lib.EC_RNG_LOG_NORMAL,
        generator,
        float(mean),
        float(std),
        op="log_normal_",
    )


@defop(inplace_of="geometric", differentiable=False)
def geometric_(input, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill_random(
        _inplace("geometric_", input), lib.EC_RNG_GEOMETRIC, generator, float(p), op="geometric_"
    )


def _like(fn):
    def like(
        input, *, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None
    ):
        return fn(
            input._shape,
            generator=generator,
            dtype=dtype or input._dtype,
            device=device or input._storage._device,
            requires_grad=requires_grad,
        )

    return like


rand_like = defop(
    "rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None)",  # noqa: E501 - one string, as PyTorch spells it
    method=False,
    differentiable=False,
)(
    lambda input, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None: (  # noqa: E501
        _like(rand)(
            input, dtype=dtype, device=device, requires_grad=requires_grad, generator=generator
        )
    )
)
randn_like = defop(
    "randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None)",  # noqa: E501 - one string, as PyTorch spells it
    method=False,
    differentiable=False,
)(
    lambda input, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None: (  # noqa: E501
        _like(randn)(
            input, dtype=dtype, device=device, requires_grad=requires_grad, generator=generator
        )
    )
)


@defop(
    method=False,
    differentiable=False,
)
def randint_like(
    input, low=0, high=None, *, dtype=None, device=None, requires_grad=False, generator=None
):
    if high is None:
        low, high = 0, low
    return randint(
        low,
        high,
        input._shape,
        generator=generator,
        dtype=dtype or input._dtype,
        device=device or input._storage._device,
        requires_grad=requires_grad,
    )
