"""ember.utils: ember.utils.data (from ember_data), ember.utils.checkpoint,
ember.utils.dlpack and ember.utils.safetensors."""

from ember.utils import (
    checkpoint,  # noqa: F401 - torch.utils.checkpoint without an import
    dlpack,  # noqa: F401 - torch.utils.dlpack without an import
    safetensors,  # noqa: F401 - safetensors.torch's API for ember tensors
)
