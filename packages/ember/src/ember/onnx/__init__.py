"""ember.onnx (torch.onnx): ``export`` writes a model as an ONNX graph.

The model runs once on the example inputs while a handler on ember_core's op table
records its ops (Note [ONNX tracing] in _tracer.py); each op becomes ONNX nodes
through its entry in _mappings.py, and the graph is written with the ``onnx``
package (``pip install 'ember[onnx]'``) after ``onnx.checker`` accepts it.
Importing ember.onnx needs nothing beyond ember: ``onnx`` is imported by export.
"""

import os

import ember_autograd
import ember_core as ec

from ._tracer import Graph, Tracer, UnsupportedOperatorError, element_type

__all__ = ["UnsupportedOperatorError", "export", "is_in_onnx_export"]

DEFAULT_OPSET = 18
MIN_OPSET = 13  # Unsqueeze/Squeeze/Split take their axes as inputs from 13 on
_exporting = False


def is_in_onnx_export():
    """Whether an export is recording the model right now."""
    return _exporting


def export(
    model,
    args,
    f,
    *,
    input_names=None,
    output_names=None,
    dynamic_axes=None,
    opset_version=None,
    export_params=True,
    do_constant_folding=True,
    verbose=False,
    **kwargs,
):
    """Write ``model`` (called as ``model(*args)``) to ``f`` (a path or a binary file)
    as an ONNX model; returns the ``onnx.ModelProto``.

    >>> ember.onnx.export(model, (x,), "model.onnx", input_names=["x"],
    ...                   output_names=["logits"], dynamic_axes={"x": {0: "batch"}})

    ``dynamic_axes`` ({name: {axis: dim_name}} or {name: [axes]}) declares input and
    output dims symbolic; sizes the model computes in Python from a tensor's shape
    are recorded as the numbers they were on ``args``.  An op without an ONNX
    mapping raises UnsupportedOperatorError naming it.
    """
    global _exporting
    try:
        import onnx
    except ImportError as exc:
        raise ImportError(
            "ember.onnx.export writes graphs with the onnx package: pip install 'ember[onnx]'"
        ) from exc
    from ._mappings import MAPPINGS

    if not export_params:
        raise ValueError("ember.onnx.export: export_params=False is not supported")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if opset < MIN_OPSET:
        raise ValueError(f"ember.onnx.export: opset_version must be {MIN_OPSET} or later")
    if isinstance(args, ec.Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    if not isinstance(args, tuple):
        raise TypeError("ember.onnx.export: args must be a tensor or a tuple of tensors")
    # the graph's inputs: every tensor in args, nested tuples (an LSTM's (h, c)) flattened
    inputs = _flatten_outputs(args, "args")
    input_names = list(input_names or [])
    input_names += [f"input_{i}" for i in range(len(input_names), len(inputs))]

    graph = Graph(onnx, opset)
    for name, a in zip(input_names, inputs):
        graph.bind(a, name)
    tracer = Tracer(graph, MAPPINGS)
    was_training = getattr(model, "training", False)
    if was_training:
        model.eval()  # as torch.onnx.export's default (TrainingMode.EVAL)
    _exporting = True
    ec.register_handler(tracer)
    try:
        with ember_autograd.no_grad():
            outputs = model(*args)
    finally:
        ec._dispatch.remove_handler(tracer)
        _exporting = False
        if was_training:
            model.train()
    outputs = _flatten_outputs(outputs)
    output_names = list(output_names or [])
    output_names += [f"output_{i}" for i in range(len(output_names), len(outputs))]
    for i, out in enumerate(outputs):
        if not graph.is_traced(out):
            raise UnsupportedOperatorError(
                f"ember.onnx.export: output {i} of the model does not depend on its inputs "
                "through ops the export recorded (computed from Python numbers, .item() or "
                ".tolist()?); it would be a constant in the graph"
            )
    for name, out in zip(output_names, outputs):  # name the graph's outputs
        graph.nodes.append(onnx.helper.make_node("Identity", [graph.name(out)], [name]))

    dynamic = _dynamic_axes(dynamic_axes, input_names + output_names)
    proto = onnx.helper.make_model(
        onnx.helper.make_graph(
            graph.nodes,
            type(model).__name__,
            [_value_info(onnx, n, a, dynamic) for n, a in zip(input_names, inputs)],
            [_value_info(onnx, n, o, dynamic) for n, o in zip(output_names, outputs)],
            graph.initializers,
        ),
        opset_imports=[onnx.helper.make_opsetid("", opset)],
        producer_name="ember",
    )
    onnx.checker.check_model(proto, full_check=True)
    if isinstance(f, (str, os.PathLike)):
        onnx.save_model(proto, os.fspath(f))
    else:
        f.write(proto.SerializeToString())
    return proto


def _flatten_outputs(outputs, what="the model's outputs"):
    if isinstance(outputs, ec.Tensor):
        return [outputs]
    if isinstance(outputs, (list, tuple)):
        flat = []
        for o in outputs:
            flat += _flatten_outputs(o, what)
        return flat
    raise TypeError(
        f"ember.onnx.export: {what} hold a {type(outputs).__name__}; export needs tensors, "
        "or (nested) tuples and lists of them"
    )


def _dynamic_axes(dynamic_axes, names):
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if name not in names:
            raise ValueError(
                f"ember.onnx.export: dynamic_axes names {name!r}, not an input or output"
            )
        if isinstance(axes, dict):
            out[name] = {int(a): str(d) for a, d in axes.items()}
        else:
            out[name] = {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
    return out


def _value_info(onnx, name, t, dynamic):
    dims = list(t.shape)
    for axis, dim_name in dynamic.get(name, {}).items():
        dims[axis] = dim_name
    return onnx.helper.make_tensor_value_info(name, element_type(onnx, t.dtype), dims)
