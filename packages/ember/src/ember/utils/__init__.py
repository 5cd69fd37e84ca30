"""ember.utils: ember.utils.data (from ember_data), ember.utils.checkpoint and
ember.utils.dlpack."""

from ember.utils import (
    checkpoint,  # noqa: F401 - torch.utils.checkpoint without an import
    dlpack,  # noqa: F401 - torch.utils.dlpack without an import
)
