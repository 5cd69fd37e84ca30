"""ember.utils.data is ember_data (datasets, samplers, DataLoader)."""

import sys

try:
    import ember_data
except ImportError as exc:  # pragma: no cover - ember depends on ember-data
    raise ImportError("ember.utils.data needs the ember-data package: pip install ember-data") from exc

sys.modules[__name__] = ember_data
