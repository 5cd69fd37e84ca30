"""Make ember's subpackages the very modules of the packages behind them, so
``import ember.nn.functional as F`` and ``ember.nn.functional is
ember_nn.functional`` both hold."""

import importlib
import sys


def alias(name, target):
    """Register module ``target`` (a name or a module) as ``name`` in sys.modules."""
    module = importlib.import_module(target) if isinstance(target, str) else target
    sys.modules[name] = module
    return module
