"""The meta device (shapes and dtypes, no memory), the default device of factory
functions (set_default_device, ``with device(...)``), and torch.cuda's RNG-state API
on a machine without CUDA."""

import threading

import pytest

import ember_core as ec


def test_meta_tensors_have_shapes_dtypes_and_no_data():
    x = ec.empty(3, 4, device="meta")
    assert x.is_meta and x.device == ec.device("meta") and x.shape == (3, 4)
    assert x.data_ptr() == 0 and x.untyped_storage().nbytes() == 48
    huge = ec.empty(10**13, device="meta")  # no memory is taken
    assert huge.shape == (10**13,)
    assert repr(x) == "tensor(..., device='meta', size=(3, 4))"
    assert repr(ec.empty(2, device="meta", dtype=ec.int32)) == (
        "tensor(..., device='meta', size=(2,), dtype=ember.int32)"
    )
    assert repr(ec.empty((), device="meta")) == "tensor(..., device='meta', size=())"


def test_ops_on_meta_tensors_compute_shapes_and_dtypes():
    a = ec.randn(4, 3, device="meta")
    b = ec.ones(3, 5, device="meta", dtype=ec.float64)
    c = a @ b.float()
    assert c.is_meta and c.shape == (4, 5) and c.dtype == ec.float32
    assert (a + 1).shape == (4, 3) and a.sum(0).shape == (3,) and a.t().contiguous().is_meta
    assert ec.cat([a, a]).shape == (8, 3) and a.to(ec.float16).dtype == ec.float16
    assert ec.ones(3).to("meta").is_meta
    x = ec.zeros(2, 3, device="meta")
    x.copy_(ec.ones(2, 3))  # into meta: nothing moves, shapes are checked
    with pytest.raises(RuntimeError):
        x.copy_(ec.ones(4, 3))


def test_values_cannot_leave_a_meta_tensor():
    x = ec.empty(3, device="meta")
    for read in (lambda: x.cpu(), x.tolist, lambda: x[0].item(), lambda: float(x[0])):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
            read()
    with pytest.raises(NotImplementedError):
        ec.nonzero(x)  # a data-dependent shape
    with pytest.raises(TypeError, match="numpy"):
        x.numpy()


def test_default_device_and_the_device_context_manager():
    assert ec.get_default_device() == ec.device("cpu")
    with ec.device("meta"):
        assert ec.get_default_device() == ec.device("meta")
        made = [ec.empty(2), ec.zeros(2), ec.randn(2), ec.arange(3), ec.tensor([1.0])]
        assert all(t.is_meta for t in made)
        assert ec.ones(2, device="cpu").device.type == "cpu"  # an explicit device wins
        assert ec.ones(2).add(1).is_meta
    assert ec.empty(2).device.type == "cpu"
    ec.set_default_device("meta")
    try:
        assert ec.ones(2).is_meta and ec.get_default_device().type == "meta"
        seen = []
        thread = threading.Thread(target=lambda: seen.append(ec.ones(1).device.type))
        thread.start()
        thread.join()
        assert seen == ["cpu"]  # per thread, as PyTorch's
    finally:
        ec.set_default_device(None)
    assert ec.ones(2).device.type == "cpu"


def test_cuda_default_device_needs_cuda():
    if ec.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ec.set_default_device("cuda")
    with pytest.raises(RuntimeError, match="CUDA is not available"), ec.device("cuda"):
        pass
    assert ec.get_default_device().type == "cpu"


def test_cuda_rng_state_api_without_cuda():
    if ec.cuda.is_available():
        pytest.skip("CUDA is available here")
    ec.cuda.manual_seed(3)  # accepted, as PyTorch defers it until CUDA starts
    ec.cuda.manual_seed_all(3)
    assert ec.cuda.get_rng_state_all() == []
    ec.cuda.set_rng_state_all([])
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ec.cuda.get_rng_state()
    with pytest.raises(RuntimeError, match="Overflow"):
        ec.cuda.manual_seed(2**70)


@pytest.mark.cuda
def test_cuda_rng_state_round_trip(cuda):
    ec.cuda.manual_seed(5)
    state = ec.cuda.get_rng_state()
    a = ec.rand(4, device="cuda").cpu().tolist()
    ec.cuda.set_rng_state(state)
    assert ec.rand(4, device="cuda").cpu().tolist() == a
    states = ec.cuda.get_rng_state_all()
    assert len(states) == ec.cuda.device_count()
    ec.cuda.set_rng_state_all(states)
    with ec.device("cuda"):
        assert ec.zeros(2).device.type == "cuda"
