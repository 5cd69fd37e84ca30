"""ember.utils.data is ember_data (datasets, samplers, DataLoader)."""

import sys

try:
    import ember_data
except ImportError as exc:  # pragma: no cover - ember depends on ember-data
    raise ImportError(
        "ember.utils.data needs the ember-data package: pip install ember-data"
    ) from exc

# Register every ember_data module under ember.utils.data too (the same module
# objects), so `import ember.utils.data.sampler` does not load a second copy.
ember_data._alias(__name__)
sys.modules[__name__] = ember_data
