"""Derivative formulas of the convolution, pooling, padding and resampling ops
(ember_core._ops.nn.conv, _pool, _resample), registered into the same table as
_derivatives.py.

Every backward op here is linear in its gradient argument and is the adjoint
of another op (convolution_backward of convolution, _avg_pool_backward of
_avg_pool, the scatter of max pooling of its gather...), so each formula of a
backward op is that other op: double backward needs no new kernels.
"""

import ember_core as ec
from ember_autograd._formula import derivative

# ------------------------------------------------------------ convolution


def _bias_size(weight, transposed, groups):
    return [weight.shape[1] * groups if transposed else weight.shape[0]]


@derivative("convolution", inputs=("input", "weight", "bias"))
def _(grad, input, weight, stride, padding, dilation, transposed, output_padding, groups, needs):
    return ec.convolution_backward(
        grad,
        input,
        weight,
        _bias_size(weight, transposed, groups),
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        needs,
    )


def _given(g, mask, shape):
    """The gradient of a convolution_backward output, or None where that output
    was not computed (or came back unused)."""
    if not mask or g is None or tuple(g.shape) != tuple(shape):
        return None
    return g


@derivative("convolution_backward", inputs=("grad_output", "input", "weight"), outputs=(0, 1, 2))
def _(
    grads,
    grad_output,
    input,
    weight,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    output_mask,
    needs,
):
    # Note [Convolution double backward]
    # For the bilinear convolution F(x, w), convolution_backward returns the
    # adjoints gx = Fx*(gy; w), gw = Fw*(gy; x) and gb = sum(gy).  With ggx,
    # ggw, ggb the gradients flowing into those outputs:
    #   d/d gy = F(ggx, w) + F(x, ggw) + ggb (broadcast)
    #   d/d x  = Fx*(gy; ggw)      d/d w = Fw*(gy; ggx)
    ggx = _given(grads[0], output_mask[0], input.shape)
    ggw = _given(grads[1], output_mask[1], weight.shape)
    ggb = grads[2] if output_mask[2] and grads[2] is not None and grads[2].dim() == 1 else None
    params = (stride, padding, dilation, transposed, output_padding, groups)
    g_gy = g_x = g_w = None
    if needs[0]:
        if ggx is not None:
            g_gy = ec.convolution(ggx, weight, None, *params)
        if ggw is not None:
            t = ec.convolution(input, ggw, None, *params)
            g_gy = t if g_gy is None else g_gy + t
        if ggb is not None:
            t = ggb.reshape([1, -1] + [1] * (grad_output.dim() - 2)).expand(grad_output.shape)
            g_gy = t if g_gy is None else g_gy + t
    bias = _bias_size(weight, transposed, groups)
    if needs[1] and ggw is not None:
        g_x = ec.convolution_backward(grad_output, input, ggw, bias, *params, (True, False, False))[
            0
        ]
    if needs[2] and ggx is not None:
        g_w = ec.convolution_backward(
            grad_output, ggx, weight, bias, *params, (False, True, False)
        )[1]
    return g_gy, g_x, g_w


@derivative("im2col")
def _(grad, input_shape, kernel_size, dilation, padding, stride):
    return ec.col2im(grad, input_shape[-2:], kernel_size, dilation, padding, stride)


@derivative("col2im")
def _(grad, kernel_size, dilation, padding, stride):
    return ec.im2col(grad, kernel_size, dilation, padding, stride)


# --------------------------------------------------------------- pooling


@derivative("_max_pool", outputs=(0,))
def _(grad, input_shape, result):
    return ec._max_pool_backward(grad, result[1], input_shape)


@derivative("_adaptive_max_pool", outputs=(0,))
def _(grad, input_shape, result):
    return ec._max_pool_backward(grad, result[1], input_shape)


@derivative("_max_pool_backward", inputs=("grad_output",))
def _(grad, indices):
    return ec._max_pool_double_backward(grad, indices)


@derivative("_max_pool_double_backward")
def _(grad, input_shape, indices):
    return ec._max_pool_backward(grad, indices, input_shape)


@derivative("_avg_pool")
def _(
    grad, input_shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    return ec._avg_pool_backward(
        grad,
        input_shape,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


@derivative("_avg_pool_backward", inputs=("grad_output",))
def _(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return ec._avg_pool(
        grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


@derivative("_adaptive_avg_pool")
def _(grad, input_shape):
    return ec._adaptive_avg_pool_backward(grad, input_shape)


@derivative("_adaptive_avg_pool_backward", inputs=("grad_output",))
def _(grad, grad_output_shape):
    return ec._adaptive_avg_pool(grad, grad_output_shape[2:])


# ---------------------------------------------------------------- padding


@derivative("constant_pad_nd")
def _(grad, pad):
    return ec.constant_pad_nd(grad, [-p for p in pad], 0)


@derivative("_pad_mode")
def _(grad, input_shape, pad, mode):
    return ec._pad_mode_backward(grad, input_shape, pad, mode)


@derivative("_pad_mode_backward", inputs=("grad_output",))
def _(grad, pad, mode):
    return ec._pad_mode(grad, pad, mode)


# ---------------------------------------------------------- interpolation


@derivative("_upsample_nearest")
def _(grad, input_shape, output_size, scales, exact):
    return ec._upsample_nearest_backward(grad, input_shape, output_size, scales, exact)


@derivative("_upsample_nearest_backward", inputs=("grad_output",))
def _(grad, output_size, scales, exact):
    return ec._upsample_nearest(grad, output_size, scales, exact)


@derivative("_upsample_linear")
def _(grad, input_shape, output_size, align_corners, scales):
    return ec._upsample_linear_backward(grad, input_shape, output_size, align_corners, scales)


@derivative("_upsample_linear_backward", inputs=("grad_output",))
def _(grad, output_size, align_corners, scales):
    return ec._upsample_linear(grad, output_size, align_corners, scales)


@derivative("_upsample_bicubic")
def _(grad, input_shape, output_size, align_corners, scales):
    return ec._upsample_bicubic_backward(grad, input_shape, output_size, align_corners, scales)


@derivative("_upsample_bicubic_backward", inputs=("grad_output",))
def _(grad, output_size, align_corners, scales):
    return ec._upsample_bicubic(grad, output_size, align_corners, scales)
