"""ember.nn.functional: the functional forms of layers, activations and losses.

Most functions are ember_core ops (C kernels with derivative formulas, or
composites declared in ember_core's op table), re-exported here as they are;
the functions defined here are the ones torch.nn.functional writes in Python
itself: argument handling in front of an op (legacy ``size_average``/``reduce``,
``inplace=``, size warnings) and short compositions of ops.  Names and semantics
follow torch.nn.functional.
"""

import math
import warnings

import ember_core as ec
from ember_core import (  # noqa: F401 - re-exported: ember_core's ops are these functions
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    bilinear,
    celu_,
    channel_shuffle,
    conv1d,
    conv2d,
    conv3d,
    conv_tbc,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    cosine_similarity,
    elu_,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    gelu,
    glu,
    hardshrink,
    hardtanh_,
    interpolate,
    leaky_relu_,
    logsigmoid,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
    native_channel_shuffle,
    one_hot,
    pad,
    pairwise_distance,
    pdist,
    pixel_shuffle,
    pixel_unshuffle,
    prelu,
    relu_,
    rms_norm,
    rrelu_,
    selu_,
    sigmoid,
    softplus,
    softshrink,
    softsign,
    tanh,
    threshold_,
)

Tensor = ec.Tensor

# ------------------------------------------------------------------ linear


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias: one GEMM (with the bias fused) for any number of
    leading dims, which are flattened into the GEMM's rows, so the weight's
    gradient is one GEMM too rather than a batched product and a sum."""
    if input.dim() == 2:
        return ec.addmm(bias, input, weight.t()) if bias is not None else input.mm(weight.t())
    if input.dim() > 2 and weight.dim() == 2:
        lead = tuple(input.shape[:-1])
        x = input.reshape(-1, input.shape[-1])
        out = ec.addmm(bias, x, weight.t()) if bias is not None else x.mm(weight.t())
        return out.reshape(lead + (weight.shape[0],))
    out = input.matmul(weight.t())
    return out + bias if bias is not None else out


# -------------------------------------------------------- convolution/pool
# ember_core ops (C kernels, derivative formulas in ember_autograd), re-exported.


def max_pool1d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return ec.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return ec.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return ec.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ec.adaptive_max_poolNd return (values, indices), as torch.adaptive_max_pool1d does.
def adaptive_max_pool1d(input, output_size, return_indices=False):
    values, indices = ec.adaptive_max_pool1d(input, output_size)
    return (values, indices) if return_indices else values


def adaptive_max_pool2d(input, output_size, return_indices=False):
    values, indices = ec.adaptive_max_pool2d(input, output_size)
    return (values, indices) if return_indices else values


def adaptive_max_pool3d(input, output_size, return_indices=False):
    values, indices = ec.adaptive_max_pool3d(input, output_size)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return ec.adaptive_max_pool1d(input, output_size)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return ec.adaptive_max_pool2d(input, output_size)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return ec.adaptive_max_pool3d(input, output_size)


def _lp_pool(avg_pool, n, input, norm_type, kernel_size, stride, ceil_mode):
    """(sum over the window of x ** p) ** (1 / p), as PyTorch: an average pool of
    x ** p times the window size."""
    ks = (kernel_size,) * n if isinstance(kernel_size, int) else tuple(kernel_size)
    size = 1
    for k in ks:
        size *= k
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(size).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(avg_pool1d, 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(avg_pool2d, 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(avg_pool3d, 3, input, norm_type, kernel_size, stride, ceil_mode)


# ------------------------------------------------------------- activations


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def threshold(input, threshold, value, inplace=False):
    return (
        ec.threshold_(input, threshold, value) if inplace else ec.threshold(input, threshold, value)
    )


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return (
        ec.hardtanh_(input, min_val, max_val) if inplace else ec.hardtanh(input, min_val, max_val)
    )


def elu(input, alpha=1.0, inplace=False):
    return ec.elu_(input, alpha) if inplace else ec.elu(input, alpha)


def selu(input, inplace=False):
    return input.selu_() if inplace else input.selu()


def celu(input, alpha=1.0, inplace=False):
    return ec.celu_(input, alpha) if inplace else ec.celu(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return (
        ec.leaky_relu_(input, negative_slope) if inplace else ec.leaky_relu(input, negative_slope)
    )


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return (
        ec.rrelu_(input, lower, upper, training)
        if inplace
        else ec.rrelu(input, lower, upper, training)
    )


def tanhshrink(input):
    return input - input.tanh()


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _default_dim("softmax", input.dim())
    return ec.softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _default_dim("softmin", input.dim())
    return ec.softmax(-input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _default_dim("log_softmax", input.dim())
    return ec.log_softmax(input, dim, dtype=dtype)


def _default_dim(name, ndim):
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    gumbels = -ec.empty_like(logits).exponential_().log()
    y = ((logits + gumbels) / tau).softmax(dim)
    if hard:
        index = y.argmax(dim, keepdim=True)
        positions = ec.arange(y.shape[dim]).reshape(
            [-1 if i == (dim % y.dim()) else 1 for i in range(y.dim())]
        )
        y_hard = (positions == index).to(y.dtype)
        return y_hard - y.detach() + y
    return y


def hardsigmoid(input, inplace=False):
    return input.hardsigmoid_() if inplace else input.hardsigmoid()


def silu(input, inplace=False):
    return input.silu_() if inplace else input.silu()


def mish(input, inplace=False):
    return input.mish_() if inplace else input.mish()


def hardswish(input, inplace=False):
    return input.hardswish_() if inplace else input.hardswish()


# ----------------------------------------------------------- normalization


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {size}"
        )


def _verify_spatial_size(size):
    n = 1
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {size}"
        )


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return ec.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    if use_input_stats:
        _verify_spatial_size(input.size())
    return ec.instance_norm(
        input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps
    )


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return ec.layer_norm(input, tuple(normalized_shape), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}"
        )
    _verify_batch_size(
        [input.size(0) * input.size(1) // num_groups, num_groups] + list(input.size()[2:])
    )
    return ec.group_norm(input, num_groups, weight, bias, eps)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    r = input / denom
    if out is not None:
        return out.copy_(r)
    return r


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    dim = input.dim()
    div = input.mul(input).unsqueeze(1)
    if dim == 3:
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        shape = input.shape
        div = div.reshape(shape[0], 1, shape[1], shape[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div.reshape(shape[0], 1, div.shape[2], -1), (size, 1), stride=1).squeeze(1)
        div = div.reshape(shape)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


# ----------------------------------------------------------------- dropout


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    return ec.dropout_(input, p, training) if inplace else ec.dropout(input, p, training)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return (
        ec.alpha_dropout_(input, p, training) if inplace else ec.alpha_dropout(input, p, training)
    )


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if inplace:
        return ec.feature_alpha_dropout_(input, p, training)
    return ec.feature_alpha_dropout(input, p, training)


def _feature_dropout(input, p, training, inplace):
    return (
        ec.feature_dropout_(input, p, training)
        if inplace
        else ec.feature_dropout(input, p, training)
    )


def _unbatched_feature_dropout(input, p, training, inplace):
    # channel-wise dropout of an input without its batch dim (in place: through a view)
    if inplace:
        ec.feature_dropout_(input.unsqueeze(0), p, training)
        return input
    return ec.feature_dropout(input.unsqueeze(0), p, training).squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input. Note that "
            "dropout1d "
            "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
            "dimension, and an optional batch dimension (i.e. 2D or 3D inputs)."
        )
    if inp_dim == 2:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated and will "
            "result "
            "in an error in a future release. To retain the behavior and silence this warning, "
            "please "
            "use dropout instead. Note that dropout2d exists to provide channel-wise dropout on "
            "inputs "
            "with 2 spatial dimensions, a channel dimension, and an optional batch dimension "
            "(i.e. 3D "
            "or 4D inputs).",
            stacklevel=2,
        )
    if inp_dim == 3:
        # as PyTorch: a 3-D input is read as (N, C, L), not as an unbatched (C, H, W)
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
            "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
            "dim. This behavior will change in a future release to interpret the input as one "
            "without "
            "a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
            "behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {inp_dim}-D input to dropout3d, which is deprecated and will "
            "result "
            "in an error in a future release. To retain the behavior and silence this warning, "
            "please "
            "use dropout instead. Note that dropout3d exists to provide channel-wise dropout on "
            "inputs "
            "with 3 spatial dimensions, a channel dimension, and an optional batch dimension "
            "(i.e. 4D "
            "or 5D inputs).",
            stacklevel=2,
        )
    if inp_dim != 5:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)


# ---------------------------------------------------------------- sparse


def _no_grad_embedding_renorm_(weight, input, max_norm, norm_type):
    import ember_autograd

    with ember_autograd.no_grad():
        ec.embedding_renorm_(weight, input, max_norm, norm_type)


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of ``weight`` at ``input``.  ``sparse=True`` still gives a dense
    gradient: ember has no sparse tensors."""
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        input = input.contiguous()
        _no_grad_embedding_renorm_(weight, input, max_norm, norm_type)
    return ec.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    if weight.dtype is ec.int64 and input.is_floating_point():
        warnings.warn(
            "Argument order of nn.functional.embedding_bag was changed. Usage "
            "`embedding_bag(weight, input, "
            "...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
            stacklevel=2,
        )
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            "then it must "
            f"have the same shape as the input ({input.shape})"
        )
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed "
                f"length sequences. However, found offsets of type {type(offsets)}"
            )
        offsets = ec.arange(0, input.numel(), input.size(1), dtype=input.dtype)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if mode == "sum":
        mode_enum = 0
    elif mode == "mean":
        mode_enum = 1
    elif mode == "max":
        mode_enum = 2
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    else:
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _no_grad_embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            "supported for "
            f"mode='sum' (got mode='{mode}'). Please open a feature request on GitHub."
        )
    ret, _, _, _ = ec.embedding_bag(
        weight,
        input,
        offsets,
        scale_grad_by_freq,
        mode_enum,
        sparse,
        per_sample_weights,
        include_last_offset,
        padding_idx,
    )
    return ret


# ------------------------------------------------------------ distances


# pairwise_distance, cosine_similarity and pdist are ember_core ops (re-exported)


# ------------------------------------------------------------------ losses


def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    return ec.nll_loss(
        input, target, weight, ignore_index, _reduction(size_average, reduce, reduction)
    )


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    return ec.cross_entropy(
        input,
        target,
        weight,
        ignore_index,
        _reduction(size_average, reduce, reduction),
        label_smoothing,
    )


def _broadcast_shape(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                "non-singleton dimension"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


def _broadcast_tensors(input, target):
    if input.shape == target.shape:
        return input, target
    shape = _broadcast_shape(input.shape, target.shape)
    return input.expand(shape), target.expand(shape)


def _warn_size(input, target):
    if target.size() != input.size():
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they "
            "have the same size.",
            stacklevel=3,
        )


def _weighted(loss, weight, input, reduction, mean_by_weight):
    # torch.nn.functional's weighted pointwise losses
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_by_weight else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_tensors(input, target)
    if weight is not None:
        return _weighted(ec.mse_loss(input, target, "none"), weight, input, reduction, True)
    return ec.mse_loss(input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_tensors(input, target)
    if weight is not None:
        return _weighted(ec.l1_loss(input, target, "none"), weight, input, reduction, True)
    return ec.l1_loss(input, target, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _warn_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_tensors(input, target)
    return ec.smooth_l1_loss(input, target, reduction, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _warn_size(input, target)
    input, target = _broadcast_tensors(input, target)
    if weight is not None:
        return _weighted(
            ec.huber_loss(input, target, "none", delta), weight, input, reduction, False
        )
    return ec.huber_loss(input, target, reduction, delta)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    reduction = _reduction(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}) is "
            "deprecated. Please ensure they have the same size."
        )
    if weight is not None:
        weight = weight.expand(_broadcast_shape(target.size(), weight.size()))
    return ec.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    reduction = _reduction(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(
            f"Target size ({target.size()}) must be the same as input size ({input.size()})"
        )
    return ec.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size."
            "'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition."
            "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
            stacklevel=2,
        )
    reduced = ec.kl_div(input, target, "sum" if reduction == "batchmean" else reduction, log_target)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size()[0]
    return reduced


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    return ec.poisson_nll_loss(
        input, target, log_input, full, eps, _reduction(size_average, reduce, reduction)
    )


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    var = var.clamp_min(eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return ec.soft_margin_loss(input, target, _reduction(size_average, reduce, reduction))


def margin_ranking_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    return ec.margin_ranking_loss(
        input1, input2, target, margin, _reduction(size_average, reduce, reduction)
    )


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    return ec.hinge_embedding_loss(
        input, target, margin, _reduction(size_average, reduce, reduction)
    )


def cosine_embedding_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    return ec.cosine_embedding_loss(
        input1, input2, target, margin, _reduction(size_average, reduce, reduction)
    )


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    return ec.triplet_margin_loss(
        anchor,
        positive,
        negative,
        margin,
        p,
        eps,
        swap,
        _reduction(size_average, reduce, reduction),
    )


def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(-1)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def multi_margin_loss(
    input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"
):
    return ec.multi_margin_loss(
        input, target, p, margin, weight, _reduction(size_average, reduce, reduction)
    )


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return ec.multilabel_margin_loss(input, target, _reduction(size_average, reduce, reduction))


# ----------------------------------------------------- shape and resampling


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, "bilinear", align_corners=True)


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    # ember.nn.attention.sdpa_kernel may have switched off every CPU backend
    _sdpa_backends._check_viable()
    return ec.scaled_dot_product_attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa
    )


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C * kh * kw, L) sliding blocks."""
    return ec.im2col(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: (N, C * kh * kw, L) -> (N, C, H, W), summing overlapping blocks."""
    return ec.col2im(input, output_size, kernel_size, dilation, padding, stride)


def triplet_margin_with_distance_loss(
    anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction="mean"
):
    """max(d(a, p) - d(a, n) + margin, 0) with any distance function (pairwise by default)."""
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = ec.minimum(d_neg, dist(positive, negative))
    loss = (margin + d_pos - d_neg).clamp_min(0)
    return _reduce(loss, reduction)


# ------------------------------------------------------- sampling and CTC loss
# argument checks in front of ember_core ops (grid_sampler and _ctc_loss are C
# kernels both ways).

_ALIGN_CORNERS_WARNING = (
    "Default {} behavior has changed to align_corners=False since 1.3.0. Please specify "
    "align_corners=True if the old behavior is desired. See the documentation of {} for details."
)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H, W) or (N, C, D, H, W) at the normalised positions
    of grid (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3); mode 'bilinear', 'nearest' or
    'bicubic' (4-D only), padding_mode 'zeros', 'border' or 'reflection'."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING.format("grid_sample", "grid_sample"), stacklevel=2)
        align_corners = False
    return ec.grid_sample(input, grid, mode, padding_mode, align_corners)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine maps theta (N, 2, 3) for an output
    of size (N, C, H, W), or (N, 3, 4) for (N, C, D, H, W); feed it to
    grid_sample (a spatial transformer)."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING.format("affine_grid", "grid_sample"), stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                f"Got {list(theta.shape)}."
            )
        spatial_size = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                f"Got {list(theta.shape)}."
            )
        spatial_size = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if align_corners and min(spatial_size) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise ValueError(
            f"Expected theta's batch size {theta.shape[0]} to match size[0] = {size[0]}"
        )
    return ec.affine_grid_generator(theta, size, align_corners)


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    """Connectionist Temporal Classification loss: log_probs (T, N, C) (or (T,
    C)) from a log_softmax, targets padded (N, S) or concatenated, per-element
    input and target lengths (tensors or ints)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return ec.ctc_loss(
        log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity
    )


# ------------------------------------------------------------ attention
# MultiheadAttention as a function, with PyTorch's mask handling (ember_nn._attention).
from ember_nn import _attention as _mha  # noqa: E402
from ember_nn import attention as _sdpa_backends  # noqa: E402
from ember_nn import grad  # noqa: E402, F401 - torch.nn.functional.grad is torch.nn.grad

multi_head_attention_forward = _mha.multi_head_attention_forward
