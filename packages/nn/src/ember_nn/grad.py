"""ember.nn.grad: gradients of convolutions with respect to their input or weight,
given the gradient of their output (torch.nn.grad).

Each is the vector-Jacobian product of the convolution, taken through ember's
autograd: a convolution is linear in each argument, so the point at which the
product is taken does not matter (zeros for the input, the given tensors
otherwise).  The result stays differentiable when its arguments require grad.
"""

import ember_autograd as ag
import ember_core as ec

__all__ = [
    "conv1d_input",
    "conv1d_weight",
    "conv2d_input",
    "conv2d_weight",
    "conv3d_input",
    "conv3d_weight",
]


def _vjp(conv, input, weight, grad_output, wrt_input, stride, padding, dilation, groups):
    create_graph = ag.is_grad_enabled() and any(
        t.requires_grad for t in (input, weight, grad_output)
    )
    with ag.enable_grad():
        x = input if (not wrt_input and create_graph) else input.detach()
        w = weight if (wrt_input and create_graph) else weight.detach()
        leaf = (x if wrt_input else w).detach().requires_grad_(True)
        x, w = (leaf, w) if wrt_input else (x, leaf)
        out = conv(x, w, None, stride, padding, dilation, groups)
        if tuple(out.shape) != tuple(grad_output.shape):
            raise RuntimeError(
                f"{conv.__name__} gradient: grad_output has shape {list(grad_output.shape)} but "
                f"the convolution's output has shape {list(out.shape)}"
            )
        (grad,) = ag.grad(out, leaf, grad_output, create_graph=create_graph)
    return grad


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    x = ec.zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device)
    return _vjp(conv, x, weight, grad_output, True, stride, padding, dilation, groups)


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    w = ec.zeros(tuple(weight_size), dtype=input.dtype, device=input.device)
    return _vjp(conv, input, w, grad_output, False, stride, padding, dilation, groups)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv1d with respect to its input of shape `input_size`.

    >>> conv1d_input(x.shape, w, grad_out)  # == autograd.grad(conv1d(x, w), x, grad_out)
    """
    return _input_grad(
        ec.conv1d, input_size, weight, grad_output, stride, padding, dilation, groups
    )


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv1d with respect to its weight of shape `weight_size`."""
    return _weight_grad(
        ec.conv1d, input, weight_size, grad_output, stride, padding, dilation, groups
    )


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv2d with respect to its input of shape `input_size`."""
    return _input_grad(
        ec.conv2d, input_size, weight, grad_output, stride, padding, dilation, groups
    )


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv2d with respect to its weight of shape `weight_size`."""
    return _weight_grad(
        ec.conv2d, input, weight_size, grad_output, stride, padding, dilation, groups
    )


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv3d with respect to its input of shape `input_size`."""
    return _input_grad(
        ec.conv3d, input_size, weight, grad_output, stride, padding, dilation, groups
    )


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of conv3d with respect to its weight of shape `weight_size`."""
    return _weight_grad(
        ec.conv3d, input, weight_size, grad_output, stride, padding, dilation, groups
    )
