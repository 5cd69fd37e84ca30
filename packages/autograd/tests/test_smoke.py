import numpy as np

import ember_autograd as ag
import ember_core as ec


def test_backward_of_product_sum():
    x = ec.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_every_differentiable_op_has_a_formula():
    missing = [
        name
        for name, op in ec.OPS.items()
        if op.differentiable
        and not op.composite
        and name not in ag.DERIVATIVES
        and not (op.inplace_of and op.inplace_of in ag.DERIVATIVES)
    ]
    assert missing == []
