"""ember.utils: ember.utils.data (from ember_data), ember.utils.checkpoint,
ember.utils.dlpack, ember.utils.safetensors and ember.utils.benchmark."""

from ember.utils import (
    benchmark,  # noqa: F401 - torch.utils.benchmark without an import
    checkpoint,  # noqa: F401 - torch.utils.checkpoint without an import
    dlpack,  # noqa: F401 - torch.utils.dlpack without an import
    safetensors,  # noqa: F401 - safetensors.torch's API for ember tensors
)
