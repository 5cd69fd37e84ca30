import numpy as np

import ember_core as ec


def test_matmul_and_sum_match_numpy():
    x = ec.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    np.testing.assert_allclose((x @ x.T).numpy(), a @ a.T)
    assert (x @ x.T).sum().item() == 52.0
