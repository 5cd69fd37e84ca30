"""Note [Autograd entry point], seen from ember_core alone: without an installed
ember_autograd, requires_grad still works and backward() says what to install."""

import importlib.metadata

import pytest

import ember_core as ec
from ember_core._base import autograd_loader as _autograd_loader


def test_without_autograd_backward_says_what_to_install(monkeypatch):
    monkeypatch.setattr(_autograd_loader, "_state", {"tried": False, "loaded": None})
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [])
    x = ec.ones(2).requires_grad_()
    assert x.requires_grad and x.is_leaf
    if ec.Tensor.__dict__["backward"] is _autograd_loader._core_methods["backward"]:
        with pytest.raises(RuntimeError, match="pip install ember-autograd"):
            x.sum().backward()


def test_the_entry_point_is_looked_up_once(monkeypatch):
    calls = []

    def entry_points(group):
        calls.append(group)
        return []

    monkeypatch.setattr(_autograd_loader, "_state", {"tried": False, "loaded": None})
    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    assert _autograd_loader.load() is None and _autograd_loader.load() is None
    assert calls == ["ember_core.autograd"]
