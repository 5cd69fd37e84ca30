"""Namespace diff: public names of torch submodules vs ember's equivalents.

Usage: .venv/bin/python compat/namespace_diff.py [--all]
Prints, for each namespace, the names torch has and ember lacks (public = no leading underscore).
"""

import importlib
import sys

import torch

NAMESPACES = [
    "",
    "Tensor",
    "nn",
    "nn.functional",
    "nn.init",
    "nn.utils",
    "nn.utils.rnn",
    "nn.utils.parametrize",
    "optim",
    "optim.lr_scheduler",
    "utils.data",
    "autograd",
    "autograd.functional",
    "linalg",
    "special",
    "testing",
    "backends",
    "backends.cudnn",
    "cuda",
    "distributions",
    "fft",
    "sparse",
    "random",
    "amp",
    "jit",
    "utils.checkpoint",
    "nn.parameter",
]


def resolve(root, path):
    if path == "":
        return root
    if path == "Tensor":
        return root.Tensor
    try:
        return importlib.import_module(root.__name__ + "." + path)
    except Exception:
        obj = root
        for p in path.split("."):
            obj = getattr(obj, p, None)
            if obj is None:
                return None
        return obj


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


def main():
    import ember

    show_all = "--all" in sys.argv
    for ns in NAMESPACES:
        t = resolve(torch, ns)
        e = resolve(ember, ns)
        tn = public(t)
        if ns == "Tensor":
            tn |= {n for n in dir(t) if n.startswith("__") and n.endswith("__")}
        if e is None:
            print(f"== torch.{ns or '<top>'}: MISSING ENTIRELY in ember ({len(tn)} names)")
            continue
        en = set(dir(e))
        miss = sorted(tn - en)
        print(f"== torch.{ns or '<top>'}: torch {len(tn)} names, ember lacks {len(miss)}")
        if show_all or len(miss) < 400:
            print("   " + " ".join(miss))


if __name__ == "__main__":
    main()
