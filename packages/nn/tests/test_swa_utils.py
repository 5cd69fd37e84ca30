"""swa_utils: AveragedModel (equal-weight mean and EMA, buffers), update_bn
(BatchNorm statistics recomputed over a loader) against NumPy, and SWALR's
learning rates and AveragedModel's parameters against PyTorch."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_core as ec
import ember_nn as nn
from ember_nn.optim import swa_utils


def _snapshots(model, rng, n):
    """Set the model's parameters to n random states; yield after each."""
    for _ in range(n):
        for p in model.parameters():
            with_values = rng.standard_normal(tuple(p.shape)).astype(np.float32)
            p.data.copy_(ec.tensor(with_values))
        yield [to_numpy(p).copy() for p in model.parameters()]


def test_swa_average_is_the_mean_of_snapshots(rng):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    swa = swa_utils.AveragedModel(model)
    seen = []
    for snap in _snapshots(model, rng, 4):
        swa.update_parameters(model)
        seen.append(snap)
    assert swa.n_averaged.item() == 4 and swa.n_averaged.dtype is ec.int64
    for i, p in enumerate(swa.module.parameters()):
        np.testing.assert_allclose(to_numpy(p), np.mean([s[i] for s in seen], 0), rtol=1e-5)
    names = [n for n, _ in swa.named_buffers()]
    assert names[0] == "n_averaged" and "module.1.running_mean" in names
    x = ec.randn(2, 3)
    swa.eval()
    model.eval()
    assert swa(x).shape == (2, 4)


def test_ema_average(rng):
    model = nn.Linear(2, 2)
    ema = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))
    single = swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(0.9))
    expected = None
    for snap in _snapshots(model, rng, 3):
        ema.update_parameters(model)
        single.update_parameters(model)
        expected = snap if expected is None else [0.9 * e + 0.1 * s for e, s in zip(expected, snap)]
    for a, b, e in zip(ema.module.parameters(), single.module.parameters(), expected):
        np.testing.assert_allclose(to_numpy(a), e, rtol=1e-5)
        np.testing.assert_allclose(to_numpy(b), e, rtol=1e-5)
    with pytest.raises(ValueError, match="decay"):
        swa_utils.get_ema_avg_fn(1.5)


def test_update_bn_recomputes_statistics(rng):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.3))
    data = [ec.tensor(rng.standard_normal((8, 3)).astype(np.float32)) for _ in range(3)]
    model.eval()
    swa_utils.update_bn([(x, 0) for x in data], model)
    assert not model.training and model[1].momentum == 0.3
    with_grad_free = np.concatenate([to_numpy(model[0](x)) for x in data])
    np.testing.assert_allclose(to_numpy(model[1].running_mean), with_grad_free.mean(0), rtol=1e-5)
    assert model[1].num_batches_tracked.item() == 3


@pytest.mark.parity
@pytest.mark.parametrize("strategy, epochs", [("cos", 3), ("linear", 4), ("cos", 0)])
def test_swalr_matches_torch(torch, strategy, epochs):
    def lrs(opt_ns, sched_ns, param):
        opt = opt_ns.SGD([param], lr=0.5)
        sched = sched_ns.SWALR(opt, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
        out = []
        for _ in range(6):
            opt.step()
            sched.step()
            out.append(opt.param_groups[0]["lr"])
        return out

    import torch.optim.swa_utils as tsu

    ours = lrs(nn.optim, swa_utils, nn.Parameter(ec.zeros(1)))
    theirs = lrs(torch.optim, tsu, torch.nn.Parameter(torch.zeros(1)))
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@pytest.mark.parity
def test_averaged_model_matches_torch(torch, rng):
    import torch.optim.swa_utils as tsu

    snaps = [[rng.standard_normal(s) for s in [(2, 3), (2,)]] for _ in range(5)]
    ours_m, theirs_m = nn.Linear(3, 2).double(), torch.nn.Linear(3, 2).double()
    ours, theirs = swa_utils.AveragedModel(ours_m), tsu.AveragedModel(theirs_m)
    for snap in snaps:
        for p, q, v in zip(ours_m.parameters(), theirs_m.parameters(), snap):
            p.data.copy_(ec.tensor(v))
            q.data.copy_(torch.from_numpy(v))
        ours.update_parameters(ours_m)
        theirs.update_parameters(theirs_m)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(to_numpy(p), q.detach().numpy(), rtol=1e-12)
    assert list(ours.state_dict()) == list(theirs.state_dict())
