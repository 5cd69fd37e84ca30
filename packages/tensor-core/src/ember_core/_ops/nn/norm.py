"""Normalization: layer_norm, batch_norm, group_norm, instance_norm and rms_norm
(torch's names and signatures).  The native_* ops run one fused C kernel each
way (csrc/cpu/nn/norm.c) and return the statistics their backward ops reuse; the
public ops are thin composites over them, as in PyTorch."""

import operator

from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._ops.nn import nnutil as U
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import copy_into
from ember_core._tensor.tensor import Tensor, empty, is_contig, written

_HALF = (D.float16, D.bfloat16)
_EPS = {
    "float16": 0.0009765625,
    "bfloat16": 0.0078125,
    "float32": 1.1920928955078125e-07,
    "float64": 2.220446049250313e-16,
}


def _param(op, input, t, name, numel, shape=None):
    """A weight/bias/running-stat operand as a contiguous tensor in the kernel
    dtype (None stays None), after PyTorch's checks."""
    if t is None:
        return None
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if shape is not None:
        if t._shape != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{list(t._shape)} and normalized_shape = {list(shape)}"
            )
    elif t._numel != numel:
        raise RuntimeError(f"{name} should contain {numel} elements not {t._numel}")
    _same_dtype(input, t)
    return U.compute(t, U.kernel_dtype(input._dtype))


def _same_dtype(input, t):
    # PyTorch's CPU kernels take parameters of the input's dtype, or float32 ones
    # for a float16/bfloat16 input
    if t._dtype is not input._dtype and not (input._dtype in _HALF and t._dtype is D.float32):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _stat_dtype(input, *params):
    if input._dtype in _HALF and any(p is not None and p._dtype is D.float32 for p in params):
        return D.float32
    return input._dtype


def _input(op, input):
    U.require_float(op, input)
    return U.compute(input)


# ------------------------------------------------------------- layer norm


def _normalized(op, input, normalized_shape):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    ns = tuple(normalized_shape)
    k = len(ns)
    if k and input._shape[-k:] == ns:
        return ns  # the common case, checked without converting each size
    ns = tuple(int(s) for s in ns)
    if k == 0 or len(input._shape) < k or tuple(input._shape[-k:]) != ns:
        raise RuntimeError(
            f"Given normalized_shape={list(ns)}, expected input with shape [*"
            + "".join(f", {s}" for s in ns)
            + f"], but got input of size{list(input._shape)}"
        )
    return ns


def _stat_shape(input, ns):
    return tuple(input._shape[: len(input._shape) - len(ns)]) + (1,) * len(ns)


@defop(method=False)
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd) of layer norm over the trailing ``normalized_shape``."""
    ns = _normalized("layer_norm", input, normalized_shape)
    x = _input("layer_norm", input)
    w = _param("layer_norm", input, weight, "weight", 0, ns)
    b = _param("layer_norm", input, bias, "bias", 0, ns)
    cols = U.prod(ns)
    rows = x._numel // cols if cols else U.prod(x._shape[: len(x._shape) - len(ns)])
    sshape = _stat_shape(input, ns)
    y = empty(x._shape, x._dtype, x._storage._device)
    mean = empty(sshape, x._dtype, x._storage._device)
    rstd = empty(sshape, x._dtype, x._storage._device)
    kernel = U.fn("ec_row_norm", x._numel * x._dtype.itemsize, y._storage._device)
    check(
        kernel(
            x._dtype.code,
            0,
            rows,
            cols,
            float(eps),
            y._ptr,
            mean._ptr,
            rstd._ptr,
            x._ptr,
            U.ptr(w),
            U.ptr(b),
        ),
        "layer_norm",
    )
    sd = _stat_dtype(input, weight, bias)
    return U.restore(y, input._dtype), U.restore(mean, sd), U.restore(rstd, sd)


@defop(
    method=False,
    composite=True,
)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """Normalize over the trailing dims ``normalized_shape`` to zero mean and unit
    variance, then scale by weight and shift by bias (both optional)."""
    return native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


def _grad_out(op, grad_out, x):
    if grad_out._shape != x._shape:
        raise RuntimeError(
            f"{op}: grad_out of shape {list(grad_out._shape)} does not match input of shape "
            f"{list(x._shape)}"
        )
    return U.compute(grad_out, x._dtype)


def _mask(output_mask, n):
    return tuple(bool(m) for m in output_mask) if output_mask is not None else (True,) * n


@defop(
    method=False,
    differentiable=False,
)
def _native_layer_norm_backward(
    grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask
):
    """(grad_input, grad_weight, grad_bias) of layer norm, each None where
    output_mask (or a missing weight/bias) says so."""
    ns = _normalized("layer_norm_backward", input, normalized_shape)
    x = U.compute(input)
    g = _grad_out("layer_norm_backward", grad_out, x)
    w = None if weight is None else U.compute(weight, x._dtype)
    mi, mw, mb = _mask(output_mask, 3)
    mw, mb = mw and weight is not None, mb and bias is not None
    cols = U.prod(ns)
    rows = x._numel // cols if cols else 0
    dev = x._storage._device
    gi = empty(x._shape, x._dtype, dev) if mi else None
    gw = empty(ns, x._dtype, dev) if mw else None
    gb = empty(ns, x._dtype, dev) if mb else None
    kernel = U.fn("ec_row_norm_backward", x._numel * x._dtype.itemsize, g._storage._device)
    check(
        kernel(
            x._dtype.code,
            0,
            rows,
            cols,
            U.ptr(gi),
            U.ptr(gw),
            U.ptr(gb),
            g._ptr,
            x._ptr,
            U.compute(mean, x._dtype)._ptr,
            U.compute(rstd, x._dtype)._ptr,
            U.ptr(w),
        ),
        "layer_norm_backward",
    )
    return (
        None if gi is None else U.restore(gi, input._dtype),
        None if gw is None else U.restore(gw, weight._dtype),
        None if gb is None else U.restore(gb, bias._dtype),
    )


# --------------------------------------------------------------- RMS norm


@defop(method=False)
def _fused_rms_norm(input, normalized_shape, weight, eps):
    """(output, rstd) of RMS norm over the trailing ``normalized_shape``;
    eps None means the dtype's machine epsilon."""
    ns = _normalized("rms_norm", input, normalized_shape)
    x = _input("rms_norm", input)
    w = _param("rms_norm", input, weight, "weight", 0, ns)
    if eps is None:
        eps = _EPS[input._dtype.name]
    cols = U.prod(ns)
    rows = x._numel // cols if cols else U.prod(x._shape[: len(x._shape) - len(ns)])
    y = empty(x._shape, x._dtype, x._storage._device)
    rstd = empty(_stat_shape(input, ns), x._dtype, x._storage._device)
    kernel = U.fn("ec_row_norm", x._numel * x._dtype.itemsize, y._storage._device)
    check(
        kernel(x._dtype.code, 1, rows, cols, float(eps), y._ptr, 0, rstd._ptr, x._ptr, U.ptr(w), 0),
        "rms_norm",
    )
    return U.restore(y, input._dtype), U.restore(rstd, _stat_dtype(input, weight))


@defop(method=False, composite=True)
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing ``normalized_shape``, times weight."""
    return _fused_rms_norm(input, normalized_shape, weight, eps)[0]


@defop(
    method=False,
    differentiable=False,
)
def _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, output_mask):
    """(grad_input, grad_weight) of RMS norm."""
    ns = _normalized("rms_norm_backward", input, normalized_shape)
    x = U.compute(input)
    g = _grad_out("rms_norm_backward", grad_out, x)
    w = None if weight is None else U.compute(weight, x._dtype)
    mi, mw = _mask(output_mask, 2)
    mw = mw and weight is not None
    cols = U.prod(ns)
    rows = x._numel // cols if cols else 0
    dev = x._storage._device
    gi = empty(x._shape, x._dtype, dev) if mi else None
    gw = empty(ns, x._dtype, dev) if mw else None
    kernel = U.fn("ec_row_norm_backward", x._numel * x._dtype.itemsize, g._storage._device)
    check(
        kernel(
            x._dtype.code,
            1,
            rows,
            cols,
            U.ptr(gi),
            U.ptr(gw),
            0,
            g._ptr,
            x._ptr,
            0,
            U.compute(rstd, x._dtype)._ptr,
            U.ptr(w),
        ),
        "rms_norm_backward",
    )
    return (
        None if gi is None else U.restore(gi, input._dtype),
        None if gw is None else U.restore(gw, weight._dtype),
    )


# ------------------------------------------------------------- batch norm


def _ncs(op, input):
    if len(input._shape) < 2:
        raise RuntimeError(
            f"{op}: expected an input with at least 2 dims (N, C, *), got shape "
            f"{list(input._shape)}"
        )
    n, c = input._shape[0], input._shape[1]
    return n, c, U.prod(input._shape[2:])


def _running(op, input, t, name, c):
    """A running-stat operand the kernel can update in place: (tensor for the
    kernel, tensor to copy back into or None)."""
    if t is None:
        return None, None
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if t._numel != c:
        raise RuntimeError(f"{name} should contain {c} elements not {t._numel}")
    _same_dtype(input, t)
    if t._contig or is_contig(t):
        return t, None
    tmp = empty(t._shape, t._dtype, t._storage._device)
    copy_into(tmp, t)
    return tmp, t


@defop(
    method=False,
)
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(output, save_mean, save_invstd) of batch norm over dim 1 of (N, C, *).

    Training normalizes with the batch statistics and updates running_mean and
    running_var in place (momentum, unbiased variance); otherwise the running
    statistics normalize (and are returned as save_mean and 1/sqrt(var + eps),
    where PyTorch returns empty tensors)."""
    n, c, s = _ncs("batch_norm", input)
    x = _input("batch_norm", input)
    w = _param("batch_norm", input, weight, "weight", c)
    b = _param("batch_norm", input, bias, "bias", c)
    rm, rm_back = _running("batch_norm", input, running_mean, "running_mean", c)
    rv, rv_back = _running("batch_norm", input, running_var, "running_var", c)
    if not training and (rm is None or rv is None):
        raise RuntimeError(
            f"running_{'mean' if rm is None else 'var'} must be defined in evaluation mode"
        )
    if (rm is None) != (rv is None):
        raise RuntimeError("batch_norm: running_mean and running_var must be given together")
    dev = x._storage._device
    y = empty(x._shape, x._dtype, dev)
    save_mean = empty((c,), x._dtype, dev)
    save_invstd = empty((c,), x._dtype, dev)
    if training and rm is not None:
        written(running_mean, "batch_norm")
        written(running_var, "batch_norm")
    rdtype = rm._dtype.code if rm is not None else 0
    kernel = U.fn("ec_batch_norm", x._numel * x._dtype.itemsize, y._storage._device)
    check(
        kernel(
            x._dtype.code,
            rdtype,
            n,
            c,
            s,
            bool(training),
            float(momentum),
            float(eps),
            y._ptr,
            save_mean._ptr,
            save_invstd._ptr,
            x._ptr,
            U.ptr(w),
            U.ptr(b),
            U.ptr(rm),
            U.ptr(rv),
        ),
        "batch_norm",
    )
    if training:
        if rm_back is not None:
            copy_into(rm_back, rm)
        if rv_back is not None:
            copy_into(rv_back, rv)
    sd = _stat_dtype(input, weight, bias, running_mean, running_var)
    return U.restore(y, input._dtype), U.restore(save_mean, sd), U.restore(save_invstd, sd)


@defop(method=False, composite=True, tags=("unchecked-overlap",))
def batch_norm(
    input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True
):
    """Batch normalization over dim 1 of (N, C, *) (torch.batch_norm's argument
    order; torch.nn.functional.batch_norm puts the running stats first)."""
    return native_batch_norm(
        input, weight, bias, running_mean, running_var, training, momentum, eps
    )[0]


@defop(
    method=False,
    differentiable=False,
)
def _native_batch_norm_backward(
    grad_out, input, weight, save_mean, save_invstd, training, output_mask
):
    """(grad_input, grad_weight, grad_bias) of batch norm; with training the
    statistics are the batch's (the gradient flows through them)."""
    n, c, s = _ncs("batch_norm_backward", input)
    x = U.compute(input)
    g = _grad_out("batch_norm_backward", grad_out, x)
    w = None if weight is None else U.compute(weight, x._dtype)
    mi, mw, mb = _mask(output_mask, 3)
    dev = x._storage._device
    gi = empty(x._shape, x._dtype, dev) if mi else None
    gw = empty((c,), x._dtype, dev) if mw else None
    gb = empty((c,), x._dtype, dev) if mb else None
    kernel = U.fn("ec_batch_norm_backward", x._numel * x._dtype.itemsize, g._storage._device)
    check(
        kernel(
            x._dtype.code,
            n,
            c,
            s,
            bool(training),
            U.ptr(gi),
            U.ptr(gw),
            U.ptr(gb),
            g._ptr,
            x._ptr,
            U.compute(save_mean, x._dtype)._ptr,
            U.compute(save_invstd, x._dtype)._ptr,
            U.ptr(w),
        ),
        "batch_norm_backward",
    )
    pdt = weight._dtype if weight is not None else input._dtype
    return (
        None if gi is None else U.restore(gi, input._dtype),
        None if gw is None else U.restore(gw, pdt),
        None if gb is None else U.restore(gb, pdt),
    )


# ------------------------------------------------------------- group norm


def _index(op, name, v):
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}") from None


@defop(method=False)
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(output, mean, rstd) of group norm; mean/rstd are (N, group)."""
    x = _input("group_norm", input)
    N, C, HxW, group = (
        _index("native_group_norm", name, v)
        for name, v in (("N", N), ("C", C), ("HxW", HxW), ("group", group))
    )
    if N * C * HxW != x._numel:
        raise RuntimeError(
            f"group_norm: N={N}, C={C}, HxW={HxW} do not match an input of shape "
            f"{list(input._shape)}"
        )
    if group <= 0 or C % group:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {list(input._shape)} and num_groups={group}"
        )
    w = _param("group_norm", input, weight, "weight", C)
    b = _param("group_norm", input, bias, "bias", C)
    dev = x._storage._device
    y = empty(x._shape, x._dtype, dev)
    mean = empty((N, group), x._dtype, dev)
    rstd = empty((N, group), x._dtype, dev)
    kernel = U.fn("ec_group_norm", x._numel * x._dtype.itemsize, y._storage._device)
    check(
        kernel(
            x._dtype.code,
            N,
            C,
            HxW,
            group,
            float(eps),
            y._ptr,
            mean._ptr,
            rstd._ptr,
            x._ptr,
            U.ptr(w),
            U.ptr(b),
        ),
        "group_norm",
    )
    sd = _stat_dtype(input, weight, bias)
    return U.restore(y, input._dtype), U.restore(mean, sd), U.restore(rstd, sd)


@defop(
    method=False,
    composite=True,
)
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """Normalize each group of channels of each sample of (N, C, *), then scale
    and shift per channel."""
    n, c, s = _ncs("group_norm", input)
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {list(input._shape)} and num_groups={num_groups}"
        )
    return native_group_norm(input, weight, bias, n, c, s, num_groups, eps)[0]


@defop(
    method=False,
    differentiable=False,
)
def _native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
    """(grad_input, grad_weight, grad_bias) of group norm."""
    x = U.compute(input)
    g = _grad_out("group_norm_backward", grad_out, x)
    w = None if weight is None else U.compute(weight, x._dtype)
    mi, mw, mb = _mask(output_mask, 3)
    dev = x._storage._device
    gi = empty(x._shape, x._dtype, dev) if mi else None
    gw = empty((C,), x._dtype, dev) if mw else None
    gb = empty((C,), x._dtype, dev) if mb else None
    kernel = U.fn("ec_group_norm_backward", x._numel * x._dtype.itemsize, g._storage._device)
    check(
        kernel(
            x._dtype.code,
            N,
            C,
            HxW,
            group,
            U.ptr(gi),
            U.ptr(gw),
            U.ptr(gb),
            g._ptr,
            x._ptr,
            U.compute(mean, x._dtype)._ptr,
            U.compute(rstd, x._dtype)._ptr,
            U.ptr(w),
        ),
        "group_norm_backward",
    )
    pdt = weight._dtype if weight is not None else input._dtype
    return (
        None if gi is None else U.restore(gi, input._dtype),
        None if gw is None else U.restore(gw, pdt),
        None if gb is None else U.restore(gb, pdt),
    )


# ---------------------------------------------------------- instance norm


@defop(
    method=False,
    composite=True,
)
def instance_norm(
    input,
    weight,
    bias,
    running_mean,
    running_var,
    use_input_stats,
    momentum,
    eps,
    cudnn_enabled=True,
):
    """Normalize each channel of each sample of (N, C, *) over its spatial dims:
    batch norm of the input seen as (1, N * C, *), as PyTorch computes it; the
    running stats (optional) get the mean of the per-sample updates."""
    n, c, _ = _ncs("instance_norm", input)

    def rep(t):
        return None if t is None else t.repeat(n)

    rm, rv = rep(running_mean), rep(running_var)
    shape = (1, n * c) + tuple(input._shape[2:])
    out = batch_norm(
        input.contiguous().view(shape),
        rep(weight),
        rep(bias),
        rm,
        rv,
        use_input_stats,
        momentum,
        eps,
        cudnn_enabled,
    )
    if running_mean is not None:
        running_mean.copy_(rm.view(n, c).mean(0))
    if running_var is not None:
        running_var.copy_(rv.view(n, c).mean(0))
    return out.view(input._shape)
