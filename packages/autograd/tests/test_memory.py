"""Memory (engine, SavedTensor, node lifetime): intermediates are freed as soon
as backward has used them, and the graph holds no reference cycles that need
the garbage collector (ember_allocator's statistics as the reference)."""

import gc

import pytest

import ember_allocator
import ember_autograd as ag
import ember_core as ec


def allocated():
    return ember_allocator.memory_stats()["allocated_bytes.all.current"]


@pytest.fixture
def no_gc():
    """Everything must be freed by reference counting alone."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def mlp_loss(x, w1, w2):
    h = (x @ w1).tanh()
    h = h * h.sigmoid()
    return ((h @ w2).relu() ** 2).mean()


def make_params():
    gen = ec.Generator().manual_seed(0)
    x = ec.randn(16, 32, generator=gen)
    w1 = ec.randn(32, 64, generator=gen).requires_grad_()
    w2 = ec.randn(64, 8, generator=gen).requires_grad_()
    return x, w1, w2


def test_backward_frees_every_intermediate(no_gc):
    x, w1, w2 = make_params()
    mlp_loss(x, w1, w2).backward()  # .grad tensors exist from here on
    before = allocated()
    loss = mlp_loss(x, w1, w2)
    assert allocated() > before  # the forward saved its activations
    loss.backward()
    # grads were accumulated in place; only the (kept) loss itself remains
    assert allocated() - before <= 512
    del loss
    assert allocated() == before


def test_graph_dropped_without_backward_is_freed(no_gc):
    x, w1, w2 = make_params()
    before = allocated()
    loss = mlp_loss(x, w1, w2)
    del loss
    assert allocated() == before


def test_retain_graph_keeps_saved_tensors_until_the_graph_goes(no_gc):
    x, w1, w2 = make_params()
    mlp_loss(x, w1, w2).backward()
    before = allocated()
    loss = mlp_loss(x, w1, w2)
    loss.backward(retain_graph=True)
    kept = allocated() - before
    assert kept > 512  # the saved activations are still there
    loss.backward()
    assert allocated() - before <= 512
    del loss
    assert allocated() == before


def test_grad_frees_intermediates_too(no_gc):
    x, w1, w2 = make_params()
    before = allocated()
    grads = ag.grad(mlp_loss(x, w1, w2), [w1, w2])
    assert allocated() - before == sum(ember_allocator_size(g) for g in grads)
    del grads
    assert allocated() == before


def ember_allocator_size(t):
    return -(-t.nbytes // 512) * 512  # the allocator rounds to 512 bytes


def test_ten_thousand_create_graph_steps_keep_memory_flat(no_gc):
    before = allocated()
    w = ec.randn(8, requires_grad=True)
    x = ec.randn(8)
    for k in range(10_001):
        loss = ((w * x).sin() ** 2).sum()
        loss.backward(create_graph=True)
        (gg,) = ag.grad(w.grad.sum(), w)  # second order through the grad's graph
        w.grad = None  # as optimizer.zero_grad() does
        if k == 0:
            after_first = allocated()
    assert allocated() == after_first  # flat from the first step on
    del loss, gg, w, x
    assert allocated() == before  # and everything goes by reference counting alone


def test_no_cycles_left_after_create_graph_backward_and_reset(no_gc):
    before = allocated()
    w = ec.randn(4, requires_grad=True)
    (w * w * w).sum().backward(create_graph=True)
    w.grad = None
    del w
    assert allocated() == before  # freed without the garbage collector


def test_deep_graph_memory_is_released(no_gc):
    before = allocated()
    x = ec.ones(64, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * 1.0001
    y.sum().backward()
    del y
    x.grad = None
    del x
    assert allocated() == before
