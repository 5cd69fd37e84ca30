"""convert_conv2d/3d_weight_memory_format: re-lay the weights of every
(transposed) convolution in a model in the given memory format (e.g.
channels_last), keeping the Parameter objects so optimizers still hold them."""

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, classes):
    if isinstance(module, classes):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, classes)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Lay out the weight of every Conv2d/ConvTranspose2d in `module` in
    `memory_format`; returns `module`.

    >>> convert_conv2d_weight_memory_format(model, ember.channels_last)
    """
    from ember_nn.modules.conv import Conv2d, ConvTranspose2d

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Lay out the weight of every Conv3d/ConvTranspose3d in `module` in
    `memory_format` (channels_last_3d); returns `module`."""
    from ember_nn.modules.conv import Conv3d, ConvTranspose3d

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
