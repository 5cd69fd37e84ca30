"""Finding ember_autograd without the umbrella: ``pip install ember-autograd`` is
enough for ``backward()`` to work.

Note [Autograd entry point]
ember_core stores the autograd slots but never records a graph: ember_autograd does,
through a dispatch handler it registers when imported (it also replaces
``Tensor.backward``, ``requires_grad_`` and the grad properties).  A graph exists
only for ops run after that import, so ember_core loads ember_autograd at the first
moment one could be needed: when a tensor first asks for gradients
(``requires_grad_(True)``, ``requires_grad=True`` at creation, a Parameter), or at
a ``backward()`` call.  It finds it through the entry point group
``ember_core.autograd`` that ember-autograd's pyproject declares, so ember_core
names no package above it.  Without one installed, backward() raises saying what
to install.
"""

import importlib
import importlib.metadata

GROUP = "ember_core.autograd"
_state = {"tried": False, "loaded": None}
_core_methods = {}  # name -> ember_core's own form of a Tensor method autograd replaces


def remember(cls, *names):
    for name in names:
        _core_methods[name] = cls.__dict__[name]


def loads_now(cls, name):
    """Whether this call loaded ember_autograd and it replaced ``cls.<name>``: the
    caller then calls the method again.  Only the first call looks (ember_autograd's
    forms may call ember_core's own afterwards)."""
    if _state["tried"]:
        return False
    return load() is not None and cls.__dict__[name] is not _core_methods[name]


def load():
    """Import the installed autograd (once); returns its module, or None."""
    if not _state["tried"]:
        _state["tried"] = True
        for entry in importlib.metadata.entry_points(group=GROUP):
            _state["loaded"] = importlib.import_module(entry.value)
            break
    return _state["loaded"]
