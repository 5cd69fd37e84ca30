"""The op table is the one source of facts about ops (Note [Op table] in
_base/dispatch.py): every name an alias, a tag, a policy or an in-place form refers
to is an op of the table, the facts are well formed and bound as declared, and
no list of op names is kept beside the table."""

import ast
import pathlib

import pytest

import ember_core as ec
from ember_core._base import autocast as _autocast
from ember_core._base import dispatch as _dispatch
from ember_core._base.dispatch import ALIASES, AUTOCAST_POLICIES, OPS, TAGS, ops_tagged

SRC = pathlib.Path(ec.__file__).parent


def test_every_alias_names_an_op_and_is_bound_like_it():
    assert ALIASES
    for alias, target in ALIASES.items():
        assert target in OPS, f"alias {alias!r} names {target!r}, which is not an op"
        assert alias not in OPS, f"alias {alias!r} shadows an op"
        op = OPS[target]
        if op.public and op.function:
            assert getattr(ec, alias) is getattr(ec, target), alias
        if op.public and op.method:
            assert getattr(ec.Tensor, alias) is getattr(ec.Tensor, target), alias
        assert _dispatch.resolve(alias) is op
    for op in OPS.values():
        for alias in op.aliases:
            assert ALIASES[alias] == op.name
    # one mechanism for the in-place form too: arccos_ names acos_
    assert ALIASES["arccos_"] == "acos_" and ec.Tensor.arccos_ is ec.Tensor.acos_


def test_every_tag_is_known_and_queries_read_the_table():
    for op in OPS.values():
        assert op.tags <= TAGS, (op.name, op.tags - TAGS)
    for tag in TAGS:
        tagged = ops_tagged(tag)
        assert tagged, f"no op is tagged {tag!r}"
        assert tagged == [op for op in OPS.values() if tag in op.tags]
    with pytest.raises(ValueError, match="unknown tag"):
        ops_tagged("elementwise")
    with pytest.raises(ValueError, match="unknown tags"):
        ec.defop(tags=("elementwise",))(lambda input: input)


def test_tags_say_what_the_ops_are():
    pointwise = {op.name for op in ops_tagged("pointwise")}
    assert {"add", "exp", "where", "logit", "isclose"} <= pointwise
    assert {"sum", "amax", "quantile", "dist"} <= {op.name for op in ops_tagged("reduction")}
    assert {"view", "sum", "select_scatter"} <= {op.name for op in ops_tagged("linear")}
    assert {"hann_window", "asarray", "range"} <= {op.name for op in ops_tagged("creation")}
    for op in ops_tagged("linear"):
        # linear ops are differentiable: applied to a tangent, they give its image
        assert op.differentiable, op.name


def test_every_autocast_policy_is_a_known_policy_of_an_op():
    declared = [op for op in OPS.values() if op.autocast is not None]
    assert declared
    for op in declared:
        assert op.autocast in AUTOCAST_POLICIES or callable(op.autocast), op.name
        if op.composite:  # a composite's generated function checks the autocast flag
            assert _dispatch.public_function(op.name) is not op.impl, op.name
    # PyTorch's fp32 losses are ops with their policy
    for name in ("margin_ranking_loss", "mse_loss", "triplet_margin_loss", "quantile"):
        assert OPS[name].autocast == _autocast.FP32
    assert OPS["linalg_vecdot"].autocast == _autocast.LOWER
    assert OPS["cat"].autocast == _autocast.PROMOTE
    with pytest.raises(ValueError, match="unknown autocast policy"):
        ec.defop(autocast="fp64")(lambda input: input)


def test_in_place_forms_name_their_op():
    for op in OPS.values():
        if op.inplace_of is None:
            continue
        # the out-of-place op, or (for copy_, zero_, uniform_... which PyTorch has in
        # place only) the op's own name without its underscore
        assert op.inplace_of in OPS or op.name == op.inplace_of + "_", op.name
        assert op.name.endswith("_") or op.name == "__setitem__", op.name


def test_functions_and_methods_are_bound_as_declared():
    for name, op in OPS.items():
        if not op.public:
            assert name not in ec.__dict__ or not callable(ec.__dict__[name]), name
            continue
        assert (ec.__dict__.get(name) is _dispatch.public_function(name)) == op.function, name
        if op.method and not name.startswith("_"):
            method = op.method if callable(op.method) else _dispatch.public_function(name)
            assert ec.Tensor.__dict__[name] is method, name
    # only-method ops (PyTorch has no function for them)
    assert not hasattr(ec, "sum_to_size") and ec.ones(2, 3).sum_to_size(1, 3).shape == (1, 3)
    with pytest.raises(ValueError, match="neither a function nor a method"):
        ec.defop(method=False, function=False)(lambda input: input)


def test_the_removed_side_lists_stay_removed():
    from ember_core._ops.pointwise import elementwise as _elementwise

    assert not hasattr(_autocast, "POLICY")
    assert not hasattr(_dispatch, "STAR_KEYWORDS")
    assert not hasattr(_elementwise, "UNSUPPORTED")
    assert not (SRC / "_math_extra.py").exists()


# Literal collections of op names that are not facts about the ops they name:
# (module, first name) -> what they are.
NOT_OP_FACTS = {
    (
        "_ops/nn/activation.py",
        "hardshrink",
    ): "the C kernels of csrc/cpu/nn/activation.c, by kernel name",
    (
        "_ops/pointwise/elementwise.py",
        "floor",
    ): "the rounding kernels integers skip (kernel detail)",
    (
        "_ops/pointwise/elementwise.py",
        "add",
    ): "argument parsing of the binary kernels (two numbers)",
    (
        "_ops/pointwise/elementwise.py",
        "maximum",
    ): "argument parsing of the binary kernels (tensors only)",
    (
        "_ops/pointwise/elementwise.py",
        "copysign",
    ): "argument parsing of the binary kernels (tensor first)",
    ("_ops/nn/embedding.py", "sum"): "embedding_bag's mode names",
    ("_ops/indexing/index_ops.py", "sum"): "scatter_reduce's reduce modes",
    ("_ops/indexing/index_ops.py", "prod"): "index_reduce's reduce modes",
    (
        "_ops/reduction/sorting.py",
        "sort",
    ): "the torch.return_types classes of the (values, indices) ops",
    ("array_api/_elementwise.py", "add"): "the array API's function names",
    ("array_api/_elementwise.py", "clip"): "the array API's function names",
}


def _op_name_collections(path):
    names = set(OPS) | set(ALIASES)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elts = node.elts
        elif isinstance(node, ast.Dict):
            elts = node.keys
        else:
            continue
        strs = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(strs) >= 3 and len(strs) == len(elts) and all(s in names for s in strs):
            yield node.lineno, strs


def test_no_lists_of_op_names_beside_the_table():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for line, strs in _op_name_collections(path):
            if (str(path.relative_to(SRC)), strs[0]) not in NOT_OP_FACTS:
                found.append(f"{path.relative_to(SRC)}:{line}: {strs}")
    assert not found, (
        "lists of op names outside the op table (make them facts of the declarations "
        "and query the table, e.g. ops_tagged('pointwise')):\n" + "\n".join(found)
    )
