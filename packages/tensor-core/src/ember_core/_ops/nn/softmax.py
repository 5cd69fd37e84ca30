"""softmax and log_softmax along one dim (torch.softmax, torch.log_softmax),
with their backward ops (torch._softmax_backward_data and
torch._log_softmax_backward_data), one fused C kernel each (csrc/cpu/nn/softmax.c)."""

from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._base.shape import normalize_dim
from ember_core._ops.nn import nnutil as U
from ember_core._ops.pointwise.elementwise import _tname
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import Tensor, empty


def _forward(op, log, input, dim, dtype):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    out_dtype = input._dtype if dtype is None else D.to_dtype(dtype)
    if not out_dtype.is_floating_point:
        raise NotImplementedError(
            f"\"{op}_lastdim_kernel_impl\" not implemented for '{_tname(out_dtype)}'"
        )
    shape = input._shape
    d = normalize_dim(dim, len(shape), op)
    x = U.compute(input, U.kernel_dtype(out_dtype))
    y = empty(shape, x._dtype, x._storage._device)
    if not shape:
        outer, size, inner = 1, 1, 1
    else:
        outer, size, inner = U.split_at(shape, d)
    kernel = U.fn("ec_softmax", x._numel * x._dtype.itemsize, y._storage._device)
    check(kernel(x._dtype.code, log, outer, size, inner, y._ptr, x._ptr), op)
    return U.restore(y, out_dtype)


@defop
def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim`` (computed stably), optionally after
    casting to ``dtype``.

    >>> softmax(ember_core.tensor([1.0, 1.0]), 0)
    tensor([0.5000, 0.5000])
    """
    return _forward("softmax", 0, input, dim, dtype)


@defop
def log_softmax(input, dim, dtype=None):
    """x - logsumexp(x) along ``dim``, optionally after casting to ``dtype``."""
    return _forward("log_softmax", 1, input, dim, dtype)


def _backward(op, log, grad_output, output, dim, input_dtype):
    shape = output._shape
    if grad_output._shape != shape:
        raise RuntimeError(
            f"{op}: grad_output of shape {list(grad_output._shape)} does not match output of "
            f"shape {list(shape)}"
        )
    y = U.compute(output)
    g = U.compute(grad_output, y._dtype)
    gi = empty(shape, y._dtype, y._storage._device)
    d = normalize_dim(dim, len(shape), op)
    outer, size, inner = U.split_at(shape, d) if shape else (1, 1, 1)
    kernel = U.fn("ec_softmax_backward", y._numel * y._dtype.itemsize, gi._storage._device)
    check(kernel(y._dtype.code, log, outer, size, inner, gi._ptr, g._ptr, y._ptr), op)
    return U.restore(gi, D.to_dtype(input_dtype) if input_dtype is not None else output._dtype)


@defop(method=False)
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """Gradient of softmax from its output: output * (grad - sum(grad * output))."""
    return _backward("_softmax_backward_data", 0, grad_output, output, dim, input_dtype)


@defop(method=False)
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    """Gradient of log_softmax from its output: grad - exp(output) * sum(grad)."""
    return _backward("_log_softmax_backward_data", 1, grad_output, output, dim, input_dtype)
