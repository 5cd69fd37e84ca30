"""nn.attention: sdpa_kernel switches the process-wide backend flags and restores
them, SDPBackend has PyTorch's values, and only CPU-less selections fail (as in
PyTorch's CPU build); parity of the flags and of the error."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_core as ec
import ember_nn as nn
import ember_nn.functional as F
from ember_nn.attention import SDPBackend, sdpa_kernel
from ember_nn.attention import _cur_sdpa_kernel_backends as current


def test_enum_values():
    assert [(b.name, int(b)) for b in SDPBackend] == [
        ("ERROR", -1),
        ("MATH", 0),
        ("FLASH_ATTENTION", 1),
        ("EFFICIENT_ATTENTION", 2),
        ("CUDNN_ATTENTION", 3),
        ("OVERRIDEABLE", 4),
    ]
    assert repr(SDPBackend.MATH) == "<SDPBackend.MATH: 0>"


def test_flags_set_and_restored():
    before = current()
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        assert set(current()) == {SDPBackend.MATH, SDPBackend.FLASH_ATTENTION}
    assert current() == before
    with pytest.raises(AssertionError, match="got int"), sdpa_kernel(3):
        pass


def test_selected_backend_runs_or_fails(rng):
    q = ec.tensor(rng.standard_normal((1, 2, 3, 4)))
    ref = to_numpy(F.scaled_dot_product_attention(q, q, q))
    with sdpa_kernel(SDPBackend.MATH):
        np.testing.assert_allclose(to_numpy(F.scaled_dot_product_attention(q, q, q)), ref)
    for backend in (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, []):
        with sdpa_kernel(backend), pytest.raises(RuntimeError, match="No viable backend"):
            F.scaled_dot_product_attention(q, q, q)
    mha = nn.MultiheadAttention(4, 2)
    with sdpa_kernel(SDPBackend.MATH):
        mha(ec.randn(3, 1, 4), ec.randn(3, 1, 4), ec.randn(3, 1, 4))


@pytest.mark.parity
def test_parity(torch, rng):
    from torch.nn.attention import SDPBackend as TB
    from torch.nn.attention import sdpa_kernel as tk

    q = rng.standard_normal((1, 2, 3, 4))
    for names in (
        ["MATH"],
        ["FLASH_ATTENTION"],
        ["EFFICIENT_ATTENTION"],
        ["CUDNN_ATTENTION"],
        ["MATH", "CUDNN_ATTENTION"],
        [],
    ):
        with tk([getattr(TB, n) for n in names]):
            try:
                t = torch.nn.functional.scaled_dot_product_attention(*[torch.tensor(q)] * 3)
            except RuntimeError as e:
                t = e
        with sdpa_kernel([getattr(SDPBackend, n) for n in names]):
            if isinstance(t, RuntimeError):
                with pytest.raises(RuntimeError) as info:
                    F.scaled_dot_product_attention(*[ec.tensor(q)] * 3)
                assert str(info.value) == str(t)
            else:
                e = F.scaled_dot_product_attention(*[ec.tensor(q)] * 3)
                np.testing.assert_allclose(to_numpy(e), to_numpy(t), atol=1e-10)
