"""ember.nn.utils: gradient clipping, parameter vectors, sequence packing,
parametrizations (weight/spectral norm), conv/linear + BatchNorm fusion."""

from ember_nn.utils import (
    fusion,
    parametrizations,
    parametrize,
    prune,
    rnn,
    stateless,  # functional_call
)
from ember_nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from ember_nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from ember_nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from ember_nn.utils.init import skip_init

# the hook-based spectral norm, memory-format conversion
from ember_nn.utils.memory_format import (
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
)
from ember_nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from ember_nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm",
    "convert_conv2d_weight_memory_format",
    "convert_conv3d_weight_memory_format",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "fusion",
    "get_total_norm",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "prune",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "skip_init",
    "stateless",
    "spectral_norm",
    "vector_to_parameters",
    "weight_norm",
]
