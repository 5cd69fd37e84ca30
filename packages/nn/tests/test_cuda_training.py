"""Training on CUDA matches training on the CPU: small models (Linear + ReLU
+ LayerNorm + Embedding, cross entropy with label smoothing and ignore_index)
take 20 steps of SGD (momentum, Nesterov, weight decay), Adam and AdamW
(amsgrad) -- the optimizers' multi-tensor CUDA steps -- with clip_grad_norm_,
and end with the CPU run's losses and parameters; an optimizer without a CUDA
kernel takes the reference step there.  Marked `cuda`: runs on a GPU or on the
CUDA emulator (make test-cuda-emu)."""

import numpy as np
import pytest

import ember_core as ec
import ember_nn as nn
import ember_nn.functional as F
from ember_nn import optim

pytestmark = pytest.mark.cuda

STEPS = 20


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 12)).astype(np.float32)
    tokens = rng.integers(0, 30, (32, 3))
    y = rng.integers(0, 5, 32)
    y[::7] = -1  # ignored targets
    return ec.from_numpy(x), ec.from_numpy(tokens), ec.from_numpy(y)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 8, padding_idx=0)
        self.fc1 = nn.Linear(12 + 8, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 5)

    def forward(self, x, tokens):
        h = ec.cat([x, self.emb(tokens).mean(1)], 1)
        return self.fc2(F.relu(self.norm(self.fc1(h))))


def _train(device, make_opt, dtype=ec.float32):
    ec.manual_seed(0)
    model = Net().to(device=device, dtype=dtype)
    opt = make_opt(model.parameters())
    x, tokens, y = (t.to(device) for t in _data())
    x = x.to(dtype)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(x, tokens), y, ignore_index=-1, label_smoothing=0.1)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        losses.append(loss.detach())
    return (
        np.array([v.item() for v in losses]),
        [p.detach().cpu().numpy() for p in model.parameters()],
    )


OPTIMIZERS = {
    "SGD": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3),
    "SGD nesterov": lambda ps: optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True),
    "Adam": lambda ps: optim.Adam(ps, lr=1e-2),
    "AdamW amsgrad": lambda ps: optim.AdamW(ps, lr=1e-2, amsgrad=True),
    "RMSprop (reference step on CUDA)": lambda ps: optim.RMSprop(ps, lr=1e-2, momentum=0.5),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS), ids=list(OPTIMIZERS))
def test_training_on_cuda_matches_the_cpu(name):
    cpu_losses, cpu_params = _train("cpu", OPTIMIZERS[name])
    cuda_losses, cuda_params = _train("cuda", OPTIMIZERS[name])
    assert cpu_losses[-1] < cpu_losses[0]  # it trains
    np.testing.assert_allclose(cuda_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    for got, want in zip(cuda_params, cpu_params):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_training_in_float64_matches_closely():
    make = OPTIMIZERS["AdamW amsgrad"]
    cpu_losses, cpu_params = _train("cpu", make, ec.float64)
    cuda_losses, cuda_params = _train("cuda", make, ec.float64)
    np.testing.assert_allclose(cuda_losses, cpu_losses, rtol=1e-9, atol=1e-10)
    for got, want in zip(cuda_params, cpu_params):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-9)


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(6, 10, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(20, 4)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU], ids=["LSTM", "GRU"])
def test_recurrent_training_on_cuda_matches_the_cpu(cell):
    # the fused cell kernels with their gate GEMMs on cuBLAS, both directions
    rng = np.random.default_rng(2)
    x = ec.from_numpy(rng.standard_normal((5, 7, 6)).astype(np.float32))
    y = ec.from_numpy(rng.integers(0, 4, 5))
    runs = []
    for device in ("cpu", "cuda"):
        ec.manual_seed(0)
        model = Recurrent(cell).to(device)
        opt = optim.Adam(model.parameters(), lr=1e-2)
        losses = []
        for _ in range(8):
            opt.zero_grad()
            loss = F.cross_entropy(model(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, [p.detach().cpu().numpy() for p in model.parameters()]))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-4, atol=1e-5)
    for got, want in zip(runs[1][1], runs[0][1]):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_transformer_training_on_cuda_matches_the_cpu():
    # attention with a causal float mask and a key padding mask: the fused
    # attention kernel where scaled_dot_product_attention reaches it
    rng = np.random.default_rng(3)
    x = ec.from_numpy(rng.standard_normal((2, 7, 16)).astype(np.float32))
    pad = ec.tensor([[False] * 7, [False] * 5 + [True] * 2])
    runs = []
    for device in ("cpu", "cuda"):
        ec.manual_seed(0)
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True).to(device)
        mask = nn.Transformer.generate_square_subsequent_mask(7, device=device)
        opt = optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            y = layer(x.to(device), src_mask=mask, src_key_padding_mask=pad.to(device))
            loss = y.pow(2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, [p.detach().cpu().numpy() for p in layer.parameters()]))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-4, atol=1e-5)
    for got, want in zip(runs[1][1], runs[0][1]):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_multi_tensor_step_spans_launches():
    # more tensors than one launch holds and a tensor larger than one launch's
    # chunks (Note [Multi-tensor launches]): every element is updated once
    shapes = [(3,)] * 30 + [(5, 700000)]
    for make in (
        lambda ps: optim.SGD(ps, lr=0.5, momentum=0.9),
        lambda ps: optim.Adam(ps, lr=0.1),
    ):
        runs = []
        for device in ("cpu", "cuda"):
            rng = np.random.default_rng(1)
            params = [
                nn.Parameter(ec.from_numpy(rng.standard_normal(s).astype(np.float32)).to(device))
                for s in shapes
            ]
            opt = make(params)
            for step in range(2):
                for p in params:
                    p.grad = ec.ones_like(p) * (step + 1)
                opt.step()
            runs.append([p.detach().cpu().numpy() for p in params])
        for got, want in zip(runs[1], runs[0]):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_fused_without_a_cuda_kernel_is_a_clear_error():
    p = nn.Parameter(ec.ones(3, device="cuda"))
    p.grad = ec.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match="fused"):
        optim.Adagrad([p], lr=0.1, fused=True).step()
