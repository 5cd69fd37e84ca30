"""Run a PyTorch script with ``torch`` (and every ``torch.*`` submodule) resolved to ember.

    python compat/ember_as_torch.py SCRIPT.py [args...]

Equivalent to editing the script's ``import torch`` into ``import ember as torch`` (and
``import torch.nn as nn`` into ``import ember.nn as nn`` ...), without touching the file.
A ``torch.X`` that ember lacks fails with the ModuleNotFoundError the edited script would give.
"""

import importlib
import importlib.abc
import importlib.util
import runpy
import sys


class _Loader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class EmberAsTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        target_name = "ember" + fullname[len("torch") :]
        module = importlib.import_module(target_name)  # raises ModuleNotFoundError naming ember.X
        return importlib.util.spec_from_loader(fullname, _Loader(module))


def install():
    sys.meta_path.insert(0, EmberAsTorch())


if __name__ == "__main__":
    install()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
