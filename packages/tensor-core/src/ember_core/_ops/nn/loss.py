"""Losses: nll_loss (a C kernel each way, csrc/cpu/nn/loss.c), cross_entropy
(log_softmax + nll_loss, or class probabilities), binary_cross_entropy(_with_logits)
with PyTorch's gradients, the pointwise losses as compositions, and the margin and
ranking losses (margin_ranking, hinge_embedding, cosine_embedding, triplet_margin,
soft_margin, multi_margin, multilabel_margin) and poisson_nll as compositions.

``reduction`` is 'none', 'mean' or 'sum' (or PyTorch's enum values 0, 1, 2, as
torch.kl_div and torch.binary_cross_entropy_with_logits take).  Argument
checking that torch.nn.functional does in Python (size warnings, legacy
size_average/reduce, 'batchmean') lives in ember_nn.functional.
"""

import math

from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._ops.linalg.distance import cosine_similarity, pairwise_distance
from ember_core._ops.nn import nnutil as U
from ember_core._ops.nn.embedding import embedding
from ember_core._ops.nn.softmax import log_softmax
from ember_core._ops.pointwise.elementwise import _tname, minimum, where
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import ones_like, zeros
from ember_core._tensor.tensor import Tensor, empty

_NONE, _MEAN, _SUM = 0, 1, 2


def _reduce(loss, code):
    if code == _MEAN:
        return loss.mean()
    if code == _SUM:
        return loss.sum()
    return loss


def _float_loss(op, input, target):
    for t, name in ((input, "input"), (target, "target")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    dt = D.result_type(input, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{_tname(dt)}'")


# ------------------------------------------------------------- nll / CE


def _nll_layout(op, input, target):
    """(n, c, s, output shape for 'none') after PyTorch's shape checks."""
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{op}(): input and target must be Tensors")
    if target._dtype not in (D.int64, D.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {_tname(target._dtype)}"
        )
    nd = len(input._shape)
    if nd == 0:
        raise ValueError(f"{op}: expected an input of at least 1 dim, got a 0-d tensor")
    if nd == 1:
        if len(target._shape) > 1 or target._numel != 1:
            raise RuntimeError(
                f"{op}: 0D or 1D target tensor expected, multi-target not supported (input "
                f"of shape {list(input._shape)}, target of shape {list(target._shape)})"
            )
        return 1, input._shape[0], 1, target._shape
    n, c = input._shape[0], input._shape[1]
    if not target._shape or target._shape[0] != n:
        raise ValueError(
            f"Expected input batch_size ({n}) to match target batch_size "
            f"({target._shape[0] if target._shape else 0})."
        )
    expected = (n,) + tuple(input._shape[2:])
    if target._shape != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target._shape)}")
    return n, c, U.prod(input._shape[2:]), target._shape


def _class_weight(input, weight, c):
    if weight is None:
        return None
    if not isinstance(weight, Tensor):
        raise TypeError(f"argument 'weight' must be Tensor, not {type(weight).__name__}")
    if weight._numel != c:
        raise RuntimeError(
            f"weight tensor should be defined either for all {c} classes or no classes but got "
            f"weight tensor of shape: {list(weight._shape)}"
        )
    if weight._dtype is not input._dtype:
        raise RuntimeError(
            f"expected scalar type {_tname(input._dtype)} but found {_tname(weight._dtype)}"
        )
    return U.compute(weight)


def _target(target):
    return U.compute(target, D.int64)


@defop(method=False, autocast="fp32")
def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log likelihood of log-probabilities ``input`` (C), (N, C) or
    (N, C, d1, ...) at class indices ``target``; ``weight`` rescales classes and
    'mean' divides by the summed weight of the counted targets."""
    code = U.reduction_code(reduction, "nll_loss")
    n, c, s, none_shape = _nll_layout("nll_loss", input, target)
    U.require_float("nll_loss", input)
    x = U.compute(input)
    w = _class_weight(input, weight, c)
    t = _target(target)
    dev = x._storage._device
    if code == _NONE:
        out = empty(tuple(none_shape), x._dtype, dev)
        total = None
    else:
        out = empty((), x._dtype, dev)
        total = empty((), x._dtype, dev)
    check(
        U.fn("ec_nll_loss", x._numel * x._dtype.itemsize, out._storage._device)(
            x._dtype.code,
            n,
            c,
            s,
            code,
            int(ignore_index),
            out._ptr,
            U.ptr(total),
            x._ptr,
            t._ptr,
            U.ptr(w),
        ),
        "nll_loss",
    )
    return U.restore(out, input._dtype)


@defop(method=False)
def _nll_loss_backward(grad_output, input, target, weight, reduction, ignore_index):
    """Gradient of nll_loss with respect to its input: -weight[target] * grad at
    each target (divided by the total weight for 'mean'), zero elsewhere."""
    code = U.reduction_code(reduction, "nll_loss_backward")
    n, c, s, _ = _nll_layout("nll_loss_backward", input, target)
    kd = U.kernel_dtype(input._dtype)
    g = U.compute(grad_output, kd)
    w = None if weight is None else U.compute(weight, kd)
    t = _target(target)
    gi = empty(input._shape, kd, input._storage._device)
    check(
        U.fn("ec_nll_loss_backward", gi._numel * kd.itemsize, gi._storage._device)(
            kd.code, n, c, s, code, int(ignore_index), gi._ptr, g._ptr, t._ptr, U.ptr(w)
        ),
        "nll_loss_backward",
    )
    return U.restore(gi, input._dtype)


@defop(
    method=False,
    composite=True,
    autocast="fp32",
)
def cross_entropy(
    input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    """Cross entropy of logits ``input`` (C), (N, C) or (N, C, d1, ...) against
    class indices, or against class probabilities of input's shape."""
    code = U.reduction_code(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError("cross_entropy(): input and target must be Tensors")
    class_dim = 0 if len(input._shape) == 1 else 1
    if (
        len(input._shape) == 2
        and len(target._shape) == 1
        and label_smoothing == 0
        and target._dtype in (D.int64, D.uint8)
    ):
        return _fused_cross_entropy(input, target, weight, ignore_index, code)[0]
    logp = log_softmax(input, class_dim)
    if input._shape == target._shape and target._dtype not in (D.int64, D.uint8):
        return _ce_probabilities(logp, target, weight, code, label_smoothing, class_dim)
    if label_smoothing > 0:
        return _ce_smoothed(logp, target, weight, ignore_index, code, label_smoothing, class_dim)
    return nll_loss(logp, target, weight, ignore_index, code)


@defop(method=False, autocast="fp32")
def _fused_cross_entropy(input, target, weight, ignore_index, reduction):
    """(loss, lse): cross entropy of (N, C) logits at class indices in one pass
    per row (log-softmax is never written); lse is each row's log-sum-exp."""
    code = U.reduction_code(reduction, "cross_entropy")
    n, c, _, _ = _nll_layout("cross_entropy", input, target)
    U.require_float("cross_entropy", input)
    x = U.compute(input)
    w = _class_weight(input, weight, c)
    t = _target(target)
    dev = x._storage._device
    lse = empty((n,), x._dtype, dev)
    out = empty((n,) if code == _NONE else (), x._dtype, dev)
    total = None if code == _NONE else empty((), x._dtype, dev)
    check(
        U.fn("ec_cross_entropy", x._numel * x._dtype.itemsize, out._storage._device)(
            x._dtype.code,
            n,
            c,
            code,
            int(ignore_index),
            out._ptr,
            U.ptr(total),
            lse._ptr,
            x._ptr,
            t._ptr,
            U.ptr(w),
        ),
        "cross_entropy",
    )
    return U.restore(out, input._dtype), lse


@defop(
    method=False,
    differentiable=False,
)
def _fused_cross_entropy_backward(grad_output, input, target, weight, ignore_index, reduction, lse):
    """Gradient of _fused_cross_entropy: grad * weight[t] * (softmax(input) -
    onehot(t)) per row (divided by the total weight for 'mean')."""
    code = U.reduction_code(reduction, "cross_entropy_backward")
    n, c, _, _ = _nll_layout("cross_entropy_backward", input, target)
    x = U.compute(input)
    kd = x._dtype
    g = U.compute(grad_output, kd)
    w = None if weight is None else U.compute(weight, kd)
    gi = empty(x._shape, kd, x._storage._device)
    check(
        U.fn("ec_cross_entropy_backward", x._numel * kd.itemsize, gi._storage._device)(
            kd.code,
            n,
            c,
            code,
            int(ignore_index),
            gi._ptr,
            g._ptr,
            U.compute(lse, kd)._ptr,
            x._ptr,
            _target(target)._ptr,
            U.ptr(w),
        ),
        "cross_entropy_backward",
    )
    return U.restore(gi, input._dtype)


def _class_view(weight, ndim, class_dim):
    shape = [1] * ndim
    shape[class_dim] = -1
    return weight.reshape(shape)


def _ce_probabilities(logp, target, weight, code, smoothing, class_dim):
    if not target._dtype.is_floating_point:
        raise RuntimeError(
            "Expected floating point type for target with class probabilities, got "
            f"{target._dtype.name}"
        )
    n_classes = logp._shape[class_dim]
    if smoothing > 0:
        target = target * (1 - smoothing) + smoothing / n_classes
    prod = logp * target
    if weight is not None:
        _class_weight(logp, weight, n_classes)
        prod = prod * _class_view(weight, len(logp._shape), class_dim)
    if code == _NONE:
        return -prod.sum(class_dim)
    if code == _SUM:
        return -prod.sum()
    if logp._numel == 0:
        return -prod.sum() * float("nan")
    return -prod.sum() / (logp._numel // n_classes)


def _ce_smoothed(logp, target, weight, ignore_index, code, smoothing, class_dim):
    # PyTorch's formula: (1 - eps) * nll + eps / C * (the loss against a uniform
    # target), with ignored targets masked out of both
    n_classes = logp._shape[class_dim]
    nll = nll_loss(logp, target, weight, ignore_index, code)
    ignore = target == ignore_index
    if weight is not None:
        _class_weight(logp, weight, n_classes)
        smooth = -(logp * _class_view(weight, len(logp._shape), class_dim)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    zero = empty((), smooth._dtype, smooth._storage._device).zero_()
    smooth = smooth.where(ignore.logical_not(), zero)
    if code == _MEAN:
        if weight is not None:
            safe = target.where(ignore.logical_not(), empty((), target._dtype).zero_())
            w_t = embedding(weight.reshape(-1, 1), U.compute(safe, D.int64)).reshape(target._shape)
            ret = smooth.sum() / w_t.where(ignore.logical_not(), zero).sum()
        else:
            ret = smooth.sum() / ignore.logical_not().sum()
    elif code == _SUM:
        ret = smooth.sum()
    else:
        ret = smooth
    return nll * (1 - smoothing) + ret * (smoothing / n_classes)


# -------------------------------------------------------------- binary


@defop(method=False, autocast="fp32")
def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-w * (t * log(x) + (1 - t) * log(1 - x)) with the logs clamped at -100, as
    PyTorch does; input must lie in [0, 1]."""
    code = U.reduction_code(reduction, "binary_cross_entropy")
    _float_loss("binary_cross_entropy", input, target)
    if input._shape != target._shape:
        raise ValueError(
            f"Using a target size ({list(target._shape)}) that is different to the input size "
            f"({list(input._shape)}) is deprecated. Please ensure they have the same size."
        )
    if not ((input >= 0) & (input <= 1)).all().item():
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_x = input.log().clamp_min(-100)
    log_1mx = (-input).log1p().clamp_min(-100)
    loss = (target - 1) * log_1mx - target * log_x
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, code)


@defop(
    method=False,
    autocast="fp32",
)
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction="mean"):
    """Binary cross entropy of sigmoid(input), computed stably from the logits;
    ``pos_weight`` weighs the positive term (broadcast along the class dim)."""
    code = U.reduction_code(reduction, "binary_cross_entropy_with_logits")
    _float_loss("binary_cross_entropy_with_logits", input, target)
    if input._shape != target._shape:
        raise ValueError(
            f"Target size ({list(target._shape)}) must be the same as input size "
            f"({list(input._shape)})"
        )
    log_sig = input.logsigmoid()
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sig
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, code)


# ------------------------------------------------------------ pointwise


@defop(method=False, composite=True, autocast="fp32")
def mse_loss(input, target, reduction="mean"):
    """(input - target)^2, reduced."""
    code = U.reduction_code(reduction, "mse_loss")
    _float_loss("mse", input, target)
    return _reduce((input - target).square(), code)


@defop(method=False, composite=True, autocast="fp32")
def l1_loss(input, target, reduction="mean"):
    """|input - target|, reduced."""
    code = U.reduction_code(reduction, "l1_loss")
    _float_loss("l1", input, target)
    return _reduce((input - target).abs(), code)


@defop(method=False, composite=True, autocast="fp32")
def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    code = U.reduction_code(reduction, "smooth_l1_loss")
    _float_loss("smooth_l1", input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, code)
    return _reduce(where(d < beta, d.square() * (0.5 / beta), d - 0.5 * beta), code)


@defop(method=False, composite=True, autocast="fp32")
def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta)."""
    code = U.reduction_code(reduction, "huber_loss")
    _float_loss("huber", input, target)
    if delta <= 0:
        raise RuntimeError(
            f"huber_loss does not support non-positive values for delta, got {delta}"
        )
    d = (input - target).abs()
    return _reduce(where(d < delta, d.square() * 0.5, (d - 0.5 * delta) * delta), code)


@defop(method=False, composite=True, autocast="fp32")
def kl_div(input, target, reduction="mean", log_target=False):
    """Pointwise KL divergence with ``input`` in log space: target * (log target -
    input), or exp(target) * (target - input) when ``log_target``."""
    code = U.reduction_code(reduction, "kl_div")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    return _reduce(loss, code)


# -------------------------------------------------------- margins and ranking
# PyTorch's aten forms (torch.margin_ranking_loss, torch._C._nn.soft_margin_loss...):
# reduction is 'none', 'mean', 'sum' or their enum values and, as observed in
# PyTorch 2.13, defaults to no reduction.  torch.nn.functional resolves the
# legacy size_average/reduce arguments and passes it explicitly.


@defop(method=False, composite=True, autocast="fp32")
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """max(0, -target * (input1 - input2) + margin), reduced."""
    code = U.reduction_code(reduction, "margin_ranking_loss")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), code)


@defop(method=False, composite=True, autocast="fp32")
def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """input where target is 1, max(0, margin - input) where it is -1, reduced."""
    code = U.reduction_code(reduction, "hinge_embedding_loss")
    # as PyTorch: a target that is not -1 keeps the input, one that is not 1 adds the
    # margin term (so targets other than +-1 get both)
    zero = zeros((), dtype=input.dtype)
    pos = where(target != -1, input, zero)
    neg = where(target != 1, (margin - input).clamp_min(0), zero)
    return _reduce(pos + neg, code)


@defop(method=False, composite=True, autocast="fp32")
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    code = U.reduction_code(reduction, "cosine_embedding_loss")
    cos = cosine_similarity(input1, input2, -1)
    zero = zeros((), dtype=cos.dtype)
    loss = where(target == 1, 1 - cos, where(target == -1, (cos - margin).clamp_min(0), zero))
    return _reduce(loss, code)


@defop(method=False, composite=True, autocast="fp32")
def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=0
):
    """max(0, d(anchor, positive) - d(anchor, negative) + margin), d the pairwise
    p-norm distance (with ``swap``, d(anchor, negative) is the smaller of it and
    d(positive, negative))."""
    code = U.reduction_code(reduction, "triplet_margin_loss")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), code)


@defop(method=False, composite=True, autocast="fp32")
def soft_margin_loss(input, target, reduction=0):
    """log(1 + exp(-target * input)), reduced."""
    code = U.reduction_code(reduction, "soft_margin_loss")
    return _reduce((-target * input).exp().log1p(), code)


@defop(method=False, composite=True, autocast="fp32")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, reduction=0):
    """Multi-class hinge loss of (N, C) scores: sum over i != y of
    max(0, margin - x[y] + x[i]) ** p (weighted by weight[y]) / C."""
    code = U.reduction_code(reduction, "multi_margin_loss")
    n, c = input.shape
    x_y = input.gather(1, target.unsqueeze(1))
    loss = (margin - x_y + input).clamp_min(0)
    if p == 2:
        loss = loss * loss
    if weight is not None:
        loss = loss * weight[target].unsqueeze(1)
    mask = ones_like(loss).scatter_(1, target.unsqueeze(1), 0.0)
    return _reduce((loss * mask).sum(1) / c, code)


@defop(method=False, composite=True, autocast="fp32")
def multilabel_margin_loss(input, target, reduction=0):
    """sum over targets j and non-targets i of max(0, 1 - (x[y_j] - x[i])) / C; target
    lists class indices, ended by the first -1."""
    code = U.reduction_code(reduction, "multilabel_margin_loss")
    squeeze = input.dim() == 1
    x = input.unsqueeze(0) if squeeze else input
    y = target.unsqueeze(0) if squeeze else target
    n, c = x.shape
    # targets before the first -1 count
    valid = (y >= 0).to(D.int64).cumprod(1).to(D.bool_)
    idx = where(valid, y, zeros((), dtype=y.dtype))
    is_target = zeros((n, c), dtype=x.dtype, device=x.device)
    is_target = is_target.scatter_add_(1, idx, valid.to(x.dtype)).clamp_max(1)
    x_t = x.gather(1, idx)  # (n, c): the score of each listed target
    margins = (1 - x_t.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)  # (n, target j, class i)
    margins = margins * valid.to(x.dtype).unsqueeze(2) * (1 - is_target).unsqueeze(1)
    loss = margins.sum((1, 2)) / c
    if squeeze:
        loss = loss.squeeze(0)
    return _reduce(loss, code)


@defop(method=False, composite=True, autocast="fp32")
def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """exp(input) - target * input (log_input), else input - target * log(input + eps);
    with ``full`` the Stirling term of target > 1 added."""
    code = U.reduction_code(reduction, "poisson_nll_loss")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + (2 * math.pi * target).log() * 0.5
        loss = loss + where(target > 1, stirling, zeros((), dtype=loss.dtype))
    return _reduce(loss, code)
