"""Docstrings generated from the op table (Note [Generated docstrings],
ember_core/_codegen/opdoc.py): every public op has one in PyTorch's layout, and every
generated example runs."""

import inspect

import pytest

import ember_core as ec
from ember_core._base import dispatch as _dispatch
from ember_core._codegen import opdoc as _opdoc

PUBLIC = {name: op for name, op in _dispatch.OPS.items() if op.public}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_op_has_a_framed_docstring(name):
    op = PUBLIC[name]
    doc = _dispatch.public_function(name).__doc__
    assert doc, f"{name}: no docstring"
    assert doc.startswith(name + "("), f"{name}: the docstring does not open with the signature"
    params = [p.name for p in _opdoc._parse(op).parameters.values() if p.kind is not p.VAR_KEYWORD]
    if params and "Args:" not in (op.doc or "") and "Arguments:" not in (op.doc or ""):
        assert "\nArgs:\n" in doc
        for p in params:
            assert f"\n    {p}" in doc or f"\n    *{p}" in doc, (name, p)


def test_implementation_docstrings_are_kept():
    for name, op in PUBLIC.items():
        if op.doc:
            body = inspect.cleandoc(op.doc)
            assert body in _dispatch.public_function(name).__doc__, name


def test_conv2d_and_functional():
    doc = ec.conv2d.__doc__
    assert doc.startswith("conv2d(input, weight, bias=None, stride=1, padding=0")
    assert "weight (Tensor): the weight tensor." in doc
    assert "bias (Tensor, optional)" in doc
    assert ec.Tensor.exp.__doc__ == ec.exp.__doc__  # the method is the function


def _examples():
    for name in PUBLIC:
        doc = _dispatch.public_function(name).__doc__
        if "Example::\n\n    >>> x = " in doc:
            yield name, doc


def test_generated_examples_run():
    ran = 0
    for name, doc in _examples():
        code = doc[doc.index("Example::") :].splitlines()
        lines = [line.strip()[4:] for line in code if line.strip().startswith(">>> ")]
        namespace = {"ember": ec}
        exec("\n".join(lines), namespace)  # noqa: S102 - our own generated examples
        assert isinstance(namespace["y"], ec.Tensor), name
        ran += 1
    assert ran >= 20, ran


def test_facts_follow_the_declaration():
    add = _opdoc.docstring(PUBLIC["add"], _dispatch.OPS, None, "Tensor")
    assert add.startswith("add(input, other, *, alpha=1, out=None) -> Tensor")
    assert "In-place form: ``add_``." in add and "broadcast" in add
    abs_ = _opdoc.docstring(PUBLIC["abs"], _dispatch.OPS, None)
    assert "Aliases: ``absolute``." in abs_
