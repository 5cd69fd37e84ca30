"""The torch names ember adds on top of ember_core (the surface task): gathered
here from the modules that implement them, so ``ember/__init__`` imports one
place.  Importing this module also attaches the Tensor methods."""

from ember import _tensor_methods  # noqa: F401 - attaches the Tensor methods
from ember._creation_extra import *  # noqa: F403
from ember._creation_extra import __all__ as _creation_all
from ember._math_extra import *  # noqa: F403
from ember._math_extra import __all__ as _math_all
from ember._switches import *  # noqa: F403
from ember._switches import __all__ as _switches_all
from ember._views_extra import *  # noqa: F403
from ember._views_extra import __all__ as _views_all

__all__ = sorted(set(_creation_all) | set(_math_all) | set(_switches_all) | set(_views_all))
