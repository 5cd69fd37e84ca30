"""Docstrings from the op table's declarations.

Note [Generated docstrings]
Every op's public function carries a docstring in PyTorch's layout, built from
its declaration (Note [Op table]) where the implementation's own says less.
They are made when the wheel is built, with the stubs (Note [Stubs]): _stubgen
writes them into the stubs (for editors) and into ``_opdocs.json``, which
``ember_core/__init__.py`` applies at import (building them at import would
cost ~0.1 s).  The layout:

    exp(input, *, out=None) -> Tensor

    <the implementation's docstring, or a summary made from the op's facts>

    Args:
        input (Tensor): the input tensor.
        out (Tensor, optional): the output tensor.

    <facts: Tensor method, in-place form, aliases, broadcasting, autograd>

    Example::

        >>> x = ember.tensor([0.25, 0.5, 1.0])
        >>> y = ember.exp(x)

The signature line comes first unless the docstring already starts with the
op's name; ``Args`` are added when the docstring has none, one line per
parameter from GLOSSARY (parameters it does not know are listed by name only);
the example, for pointwise ops over floating inputs only, when it has no
``>>>`` of its own.  An implementation's docstring is never rewritten, only
framed.  tests/test_opdoc.py runs every generated example.
"""

import inspect

# Parameter name -> (type as PyTorch's docs write it, description).
GLOSSARY = {
    "input": ("Tensor", "the input tensor."),
    "other": ("Tensor or Number", "the second operand, broadcast with ``input``."),
    "out": ("Tensor", "the output tensor."),
    "dim": ("int or tuple of ints", "the dimension or dimensions to operate over."),
    "keepdim": ("bool", "whether the output keeps each reduced dimension, with size 1."),
    "dtype": ("ember.dtype", "the desired data type of the result."),
    "device": ("ember.device", "the device of the result."),
    "requires_grad": ("bool", "whether autograd records operations on the result."),
    "generator": ("ember.Generator", "the pseudorandom number generator to draw from."),
    "alpha": ("Number", "the multiplier for ``other``."),
    "weight": ("Tensor", "the weight tensor."),
    "bias": ("Tensor", "the bias added to the output."),
    "stride": ("int or tuple", "the stride of the window."),
    "padding": ("int or tuple", "the implicit padding on each side of the input."),
    "dilation": ("int or tuple", "the spacing between the window's elements."),
    "groups": ("int", "the number of blocked connections from input to output channels."),
    "kernel_size": ("int or tuple", "the size of the window."),
    "ceil_mode": ("bool", "whether the output size is rounded up instead of down."),
    "output_size": ("int or tuple", "the size of the output."),
    "size": ("int...", "the shape of the result: integers, or one sequence of them."),
    "reduction": ("str", "how the per-element results are reduced: ``'none'``, "
                  "``'mean'`` or ``'sum'``."),
    "target": ("Tensor", "the target tensor."),
    "index": ("LongTensor", "the indices of the elements to select or write."),
    "src": ("Tensor", "the source tensor."),
    "source": ("Tensor", "the source tensor."),
    "value": ("Number", "the value to use."),
    "eps": ("float", "a value added to denominators for numerical stability."),
    "memory_format": ("ember.memory_format", "the memory layout of the result."),
    "layout": ("ember.layout", "the layout of the result (only ``ember.strided``)."),
    "pin_memory": ("bool", "whether the result is allocated in pinned host memory."),
    "inplace": ("bool", "whether to write the result into ``input``."),
    "training": ("bool", "whether the op is in training mode."),
    "align_corners": ("bool", "whether corner pixels of input and output are aligned."),
    "tensors": ("sequence of Tensors", "the tensors to operate on."),
    "indices": ("LongTensor", "the indices."),
    "mask": ("BoolTensor", "the mask."),
    "start": ("Number", "the first value."),
    "end": ("Number", "the end of the interval."),
    "step": ("Number", "the gap between consecutive values."),
}  # fmt: skip
_FLOAT_EXAMPLE = "ember.tensor([0.25, 0.5, 1.0])"


def signature_line(op, returns=None):
    return f"{op.name}{op.signature}" + (f" -> {returns}" if returns else "")


def _arg_line(param):
    known = GLOSSARY.get(param.name)
    optional = param.default is not inspect.Parameter.empty
    star = "*" if param.kind is param.VAR_POSITIONAL else ""
    if known is None:
        return f"    {star}{param.name}"
    kind, text = known
    return f"    {star}{param.name} ({kind}{', optional' if optional else ''}): {text}"


def args_section(op, sig):
    params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    if not params:
        return ""
    return "Args:\n" + "\n".join(_arg_line(p) for p in params)


def facts(op, ops):
    out = []
    if op.inplace_of:
        out.append(f"The in-place form of ``{op.inplace_of}``: writes into ``input``.")
    if op.method and op.function:
        out.append(f"Also a Tensor method: ``Tensor.{op.name}``.")
    elif op.method:
        out.append(f"A Tensor method only: ``Tensor.{op.name}``.")
    inplace = ops.get(op.name + "_")
    if inplace is not None and inplace.inplace_of == op.name:
        out.append(f"In-place form: ``{op.name}_``.")
    if op.aliases:
        out.append("Aliases: " + ", ".join(f"``{a}``" for a in op.aliases) + ".")
    if "pointwise" in op.tags:
        out.append("Elementwise; tensor arguments broadcast together.")
    if "reduction" in op.tags:
        out.append("A reduction over ``dim`` (every dimension when it is None).")
    if op.view:
        out.append("Returns a view of ``input`` (no copy).")
    if "random" in op.tags:
        out.append("Draws from ``generator`` (the default generator when None).")
    if not op.differentiable:
        out.append("Not differentiable.")
    return " ".join(out)


def example(op, sig):
    """A runnable example for pointwise ops over floating inputs, else ''."""
    if "pointwise" not in op.tags or "float-result" not in op.tags or op.inplace_of:
        return ""
    required = [
        p.name
        for p in sig.parameters.values()
        if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD
    ]
    if required == ["input"]:
        call = f"ember.{op.name}(x)"
    elif required == ["input", "other"]:
        call = f"ember.{op.name}(x, x)"
    else:
        return ""
    return f"Example::\n\n    >>> x = {_FLOAT_EXAMPLE}\n    >>> y = {call}"


def docstring(op, ops, doc, returns=None):
    """``doc`` (the op's own docstring, or None) framed as Note [Generated
    docstrings]; ``returns``: the result type for the signature line."""
    sig = _parse(op)
    body = inspect.cleandoc(doc) if doc else ""
    parts = []
    if not body.startswith(op.name + "("):
        parts.append(signature_line(op, returns))
    if body:
        parts.append(body)
    if "Args:" not in body and "Arguments:" not in body:
        section = args_section(op, sig)
        if section:
            parts.append(section)
    text = facts(op, ops)
    if text:
        parts.append(text)
    if ">>>" not in body:
        ex = example(op, sig)
        if ex:
            parts.append(ex)
    return "\n\n".join(parts) + "\n"


def _parse(op):
    holder = {}
    namespace = {"inf": float("inf"), "nan": float("nan")}
    exec(f"def f{op.signature}: pass", namespace, holder)  # noqa: S102 - the op table's
    return inspect.signature(holder["f"])
