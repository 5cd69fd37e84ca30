"""Samplers with per-element parameters (csrc/cpu/random/random_dist.c): ``_standard_gamma``
(Marsaglia-Tsang), its derivative w.r.t. the shape ``_standard_gamma_grad``
(implicit reparameterisation; the formula lives in ember_autograd),
``_sample_dirichlet``, ``poisson`` and ``binomial``.

Each element draws from its own Philox stream of the generator
(Note [Per-element random streams] in random_dist.c), so results are
reproducible under ``manual_seed`` and independent of the thread count.
"""

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._ops.random.random import _gen
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import Tensor
from ember_core._tensor.tensor import empty as _empty

_NOGIL_ELEMS = 1 << 14
# PyTorch's names of the dtypes, for its "not implemented for" messages
_TORCH_NAMES = {
    "float16": "Half",
    "bfloat16": "BFloat16",
    "float32": "Float",
    "float64": "Double",
    "bool": "Bool",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
}
_TINY = {"float32": 1.1754943508222875e-38, "float64": 2.2250738585072014e-308}


def _fn(name, n, dev):
    return getattr(dev._kn if n > _NOGIL_ELEMS else dev._k, name)


def _work(op, t, kernel_name):
    """t as a contiguous float32/float64 tensor (half types compute in float32)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument must be a Tensor, not {type(t).__name__}")
    dt = t._dtype
    if not dt.is_floating_point:  # float dtypes never reach the lookup below
        name = _TORCH_NAMES.get(dt.name, dt.name)
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{name}'")
    if dt is not D.float32 and dt is not D.float64:
        t = t.to(D.float32)
    return t.contiguous()


def _finish(r, dtype):
    return r if r._dtype is dtype else r.to(dtype)


@defop(method=True)
def _standard_gamma(input, generator=None):
    """Gamma(input, 1) samples, one per element of ``input`` (the shapes)."""
    a = _work("_standard_gamma", input, "gamma_cpu")
    out = _empty(a._shape, a._dtype, a._storage._device)
    seed, offset = _gen(generator, a._storage._device).take(a._numel)
    n = a._numel
    check(
        _fn("ec_standard_gamma", n, a._storage._device)(
            a._dtype.code, n, a._ptr, out._ptr, seed, offset
        ),
        "_standard_gamma",
    )
    return _finish(out, input._dtype)


@defop(method=True, differentiable=False)
def _standard_gamma_grad(input, output):
    """d output / d input for output ~ Gamma(input, 1), elementwise."""
    if input._shape != output._shape:
        raise RuntimeError(
            f"_standard_gamma_grad: shapes of alpha {list(input._shape)} and sample "
            f"{list(output._shape)} differ"
        )
    a = _work("_standard_gamma_grad", input, "_standard_gamma_grad_cpu")
    x = _work("_standard_gamma_grad", output, "_standard_gamma_grad_cpu").to(a._dtype)
    out = _empty(a._shape, a._dtype, a._storage._device)
    n = a._numel
    check(
        _fn("ec_standard_gamma_grad", n, a._storage._device)(
            a._dtype.code, n, a._ptr, x._ptr, out._ptr
        ),
        "_standard_gamma_grad",
    )
    return _finish(out, input._dtype)


@defop(method=False, differentiable=False)
def _sample_dirichlet(input, generator=None):
    """Dirichlet(input) samples along the last dimension (normalised gammas)."""
    if input.dim() < 1:
        raise RuntimeError("_sample_dirichlet: expected a tensor with at least one dimension")
    g = _standard_gamma(input.detach(), generator)
    x = g / g.sum(-1, keepdim=True)
    return x.clamp(min=_TINY.get(x._dtype.name, 6.103515625e-05))


@defop(method=False)
def poisson(input, generator=None):
    """Poisson samples with rates ``input`` (same shape and dtype)."""
    r = _work("poisson", input, "poisson_cpu")
    out = _empty(r._shape, r._dtype, r._storage._device)
    seed, offset = _gen(generator, r._storage._device).take(r._numel)
    n = r._numel
    check(
        _fn("ec_poisson", n, r._storage._device)(r._dtype.code, n, r._ptr, out._ptr, seed, offset),
        "poisson",
    )
    return _finish(out, input._dtype)


@defop(method=False)
def binomial(count, prob, generator=None):
    """Binomial(count, prob) samples; count and prob broadcast together."""
    if not isinstance(count, Tensor) or not isinstance(prob, Tensor):
        raise TypeError("binomial(): argument 'count' and 'prob' must be Tensors")
    if count._dtype is not prob._dtype:
        # PyTorch's wording: prob must have count's dtype
        raise RuntimeError(
            f"Found dtype {_TORCH_NAMES.get(prob._dtype.name, prob._dtype.name)} but expected "
            f"{_TORCH_NAMES.get(count._dtype.name, count._dtype.name)}"
        )

    shape = _shape.broadcast_shapes(count._shape, prob._shape, op="binomial")
    c = _work("binomial", count.expand(shape), "binomial_cpu")
    p = _work("binomial", prob.expand(shape), "binomial_cpu").to(c._dtype)
    out = _empty(c._shape, c._dtype, c._storage._device)
    seed, offset = _gen(generator, c._storage._device).take(c._numel)
    n = c._numel
    check(
        _fn("ec_binomial", n, c._storage._device)(
            c._dtype.code, n, c._ptr, p._ptr, out._ptr, seed, offset
        ),
        "binomial",
    )
    return _finish(out, count._dtype)
