"""Mixed precision on CUDA: autocast('cuda') casts CUDA tensors (and only
them) by the op table's policies, and GradScaler keeps its scale on the
device, checks and unscales gradients there (one synchronisation per step,
in step()), skips steps that overflowed and backs the scale off -- the same
decisions as a CPU scaler given the same gradients.  Marked `cuda`: runs on a
GPU or on the CUDA emulator (make test-cuda-emu)."""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA device"),
]


def test_autocast_cuda_casts_cuda_tensors_only():
    a = ember.randn(4, 5, device="cuda")
    b = ember.randn(5, 3, device="cuda")
    c = ember.randn(4, 5)
    with ember.autocast("cuda", dtype=ember.float16):
        assert (a @ b).dtype is ember.float16
        assert (c @ c.T).dtype is ember.float32  # a CPU tensor in a CUDA region
        logits = a @ b
        loss = F.cross_entropy(logits, ember.tensor([0, 1, 2, 0], device="cuda"))
        assert loss.dtype is ember.float32  # on the fp32 list
    with ember.autocast("cuda", dtype=ember.bfloat16):
        assert (a @ b).dtype is ember.bfloat16
    assert (a @ b).dtype is ember.float32
    want = (a.cpu().half().float() @ b.cpu().half().float()).numpy()
    with ember.autocast("cuda"):
        got = (a @ b).float().cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def _run(device, poison_steps):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = ember.amp.GradScaler(device, init_scale=2.0**10, growth_interval=2)
    x = ember.from_numpy(np.random.default_rng(0).standard_normal((16, 6)).astype(np.float32))
    y = ember.arange(16) % 3
    x, y = x.to(device), y.to(device)
    scales = []
    for step in range(6):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        if step in poison_steps:
            model[0].weight.grad[0, 0] = float("inf")
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return scales, [p.detach().cpu().numpy() for p in model.parameters()]


def test_grad_scaler_on_cuda_matches_the_cpu():
    cpu_scales, cpu_params = _run("cpu", poison_steps=(2,))
    cuda_scales, cuda_params = _run("cuda", poison_steps=(2,))
    assert cuda_scales == cpu_scales
    assert cuda_scales[2] == cuda_scales[1] / 2  # the poisoned step backed off
    for got, want in zip(cuda_params, cpu_params):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_grad_scaler_state_lives_on_the_device():
    scaler = ember.amp.GradScaler("cuda")
    out = scaler.scale(ember.ones(2, device="cuda"))
    assert out.device.type == "cuda"
    assert scaler._scale.device.type == "cuda"
    assert scaler.get_scale() == 2.0**16
