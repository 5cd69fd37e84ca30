"""ember.utils: ember.utils.data (from ember_data) and ember.utils.checkpoint."""

from ember.utils import checkpoint  # noqa: F401 - torch.utils.checkpoint without an import
