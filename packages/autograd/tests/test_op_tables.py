"""The derivative table and the forward-mode table against ember_core's op
table (Note [Op table]): both are keyed by ops of the table, every
differentiable op that the handlers see has a backward formula, and every
pointwise or linear one a forward-mode rule, explicit or derived from its
declaration's tags."""

import ember_autograd as ag
import ember_core as ec
from ember_autograd import forward_ad
from ember_autograd._formula import OpTable

OPS = ec.OPS


def _base(op):
    return OPS.get(op.inplace_of) if op.inplace_of else None


def _in(table, op):
    base = _base(op)
    return op in table or (base is not None and base in table)


def _tagged(op, tag):
    base = _base(op)
    return tag in op.tags or (base is not None and tag in base.tags)


def _seen_by_handlers():
    """The differentiable ops autograd and forward mode see (composites are not:
    the ops they call are)."""
    return [op for op in OPS.values() if op.differentiable and not op.composite]


def test_the_tables_are_keyed_by_ops_of_the_table():
    for table in (ag.DERIVATIVES, forward_ad.JVPS):
        assert isinstance(table, OpTable)
        for op in table:
            assert OPS[op.name] is op, op.name
    assert "add" in ag.DERIVATIVES and "not an op" not in ag.DERIVATIVES


def test_every_differentiable_op_has_a_backward_formula():
    missing = [op.name for op in _seen_by_handlers() if not _in(ag.DERIVATIVES, op)]
    assert missing == [], f"differentiable ops without a formula: {missing}"


def test_every_pointwise_differentiable_op_has_a_forward_rule():
    # derived: a pointwise op's backward formula, fed the tangent, gives its tangent
    missing = [
        op.name
        for op in _seen_by_handlers()
        if _tagged(op, "pointwise") and not (_in(forward_ad.JVPS, op) or _in(ag.DERIVATIVES, op))
    ]
    assert missing == [], f"pointwise ops without a forward-mode rule: {missing}"


def test_every_linear_op_has_a_forward_rule():
    # derived: the op applied to its first input's tangent, which needs every other
    # differentiable input to be absent (else the op needs an explicit rule)
    for op in _seen_by_handlers():
        if "linear" not in op.tags or op in forward_ad.JVPS:
            continue
        formula = ag.DERIVATIVES[op]
        assert formula.inputs == (op.params[0],), (op.name, formula.inputs)
        assert forward_ad.linear_rule(op) is forward_ad.linear_rule(op)


def test_ops_without_forward_rules_say_so():
    # everything else that is differentiable raises a clear error in forward mode
    ruled = {
        op.name
        for op in _seen_by_handlers()
        if _in(forward_ad.JVPS, op)
        or (_tagged(op, "pointwise") and _in(ag.DERIVATIVES, op))
        or _tagged(op, "linear")
    }
    assert "cumprod" not in ruled and {"sum", "view", "add", "matmul", "cat"} <= ruled
    assert not hasattr(forward_ad, "ELEMENTWISE")
