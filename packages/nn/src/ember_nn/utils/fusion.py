"""Folding an eval-mode BatchNorm into the convolution or linear layer before
it (torch.nn.utils.fusion): one layer computing what the pair computed, for
inference.

>>> fused = fuse_conv_bn_eval(model.conv.eval(), model.bn.eval())
"""

import copy

import ember_core as ec
from ember_nn.parameter import Parameter

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of conv whose weight and bias include bn's normalisation (both in eval mode)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_conv_bn_eval: the BatchNorm must track running statistics")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight,
        fused.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
        transpose,
    )
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) Parameters of the convolution followed by the BatchNorm:
    ``w * gamma / sqrt(var + eps)`` per output channel (dim 1 when transposed) and
    ``(b - mean) * gamma / sqrt(var + eps) + beta``."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    if conv_b is None:
        conv_b = ec.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ec.ones_like(bn_rm)
    if bn_b is None:
        bn_b = ec.zeros_like(bn_rm)
    var_rsqrt = ec.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (bn_w * var_rsqrt).reshape(shape)).to(dtype=w_dtype)
    fused_b = ((conv_b - bn_rm) * var_rsqrt * bn_w + bn_b).to(dtype=b_dtype)
    return (
        Parameter(fused_w.detach(), conv_w.requires_grad),
        Parameter(fused_b.detach(), conv_b.requires_grad),
    )


def fuse_linear_bn_eval(linear, bn):
    """A copy of linear whose weight and bias include bn's normalisation (both in eval mode)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1"
        )
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fuse_linear_bn_eval: the BatchNorm must track running statistics")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the linear layer followed by the BatchNorm."""
    if linear_b is None:
        linear_b = ec.zeros_like(bn_rm)
    scale = bn_w * ec.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1)
    fused_b = (linear_b - bn_rm) * scale + bn_b
    return (
        Parameter(fused_w.detach(), linear_w.requires_grad),
        Parameter(fused_b.detach(), linear_b.requires_grad),
    )
