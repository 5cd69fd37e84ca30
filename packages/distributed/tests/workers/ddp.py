"""DistributedDataParallel against one process (run by test_ddp.py under mpiexec -n 2 and 4):
N ranks with per-rank batch b end with the parameters of one process with batch N*b, in
float64 to 1e-6 -- for an MLP and a small CNN, fused and foreach optimizer steps, with
no_sync accumulation, unused parameters, static_graph, gradient_as_bucket_view; the
buckets' all-reduces start before backward finished; buffers and parameters come from
rank 0."""

import functools

import numpy as np

import ember_autograd
import ember_core as torch
import ember_distributed as dist
import ember_nn as nn
import ember_nn.functional as F
from ember_distributed.parallel import DistributedDataParallel as DDP
from ember_nn import optim

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
B = 6  # per-rank batch
TOL = 1e-6


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.tanh(self.fc1(x)))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 3)

    def forward(self, x):
        x = F.relu(self.bn(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class Branchy(nn.Module):
    """fc_rank0 is used only on rank 0, fc_never by nobody."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 3)
        self.fc_rank0 = nn.Linear(5, 3)
        self.fc_never = nn.Linear(5, 3)

    def forward(self, x, rank):
        y = self.fc(x)
        return y + self.fc_rank0(x) if rank == 0 else y


def make(cls):
    torch.manual_seed(0)
    return cls().double()


def perturb(model):
    # DDP must start every rank from rank 0's parameters and buffers
    with ember_autograd.no_grad():
        for p in model.parameters():
            p.add_(0.1 * r)
        for b in model.buffers():
            if b.dtype.is_floating_point:
                b.add_(r)


def batches(shape, steps, seed):
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.standard_normal((steps, n * B, *shape)))
    y = torch.tensor(rng.integers(0, 3, (steps, n * B)))
    return x, y


def max_diff(a, b):
    return max((p - q).abs().max().item() for p, q in zip(a.parameters(), b.parameters()))


def compare(cls, shape, opt_cls, steps=3, accumulate=1, **ddp_kwargs):
    ref, model = make(cls), make(cls)
    perturb(model)
    ddp = DDP(model, bucket_cap_mb=0.001, **ddp_kwargs)
    model.eval()  # BatchNorm: running statistics, the same for any split of the batch
    ref.eval()
    opt = opt_cls(ddp.parameters(), lr=0.05)
    ropt = opt_cls(ref.parameters(), lr=0.05)
    x, y = batches(shape, steps * accumulate, seed=7)
    mine = slice(r * B, (r + 1) * B)
    for s in range(steps):
        opt.zero_grad()
        ropt.zero_grad()
        for a in range(accumulate):
            xb, yb = x[s * accumulate + a], y[s * accumulate + a]
            if a < accumulate - 1:
                with ddp.no_sync():
                    F.cross_entropy(ddp(xb[mine]), yb[mine]).backward()
            else:
                F.cross_entropy(ddp(xb[mine]), yb[mine]).backward()
            F.cross_entropy(ref(xb), yb).backward()
        opt.step()
        ropt.step()
    return ref, model, ddp


# 1. MLP, SGD, several buckets
ref, model, ddp = compare(MLP, (5,), optim.SGD)
assert len(ddp._buckets) > 1, len(ddp._buckets)
err_mlp = max_diff(ref, model)
assert err_mlp < TOL, err_mlp

# 2. the CNN with Adam; BatchNorm: per-rank statistics differ from one big batch, so the
#    reference is the CNN in eval mode (running stats) -- and buffers must come from rank 0
ref, model = make(CNN), make(CNN)
perturb(model)
ddp = DDP(model, bucket_cap_mb=0.001)
every = [None] * n
dist.all_gather_object(every, [b.tolist() for b in model.buffers()])
assert all(e == every[0] for e in every), "buffers differ after construction"
assert every[0] == [b.tolist() for b in ref.buffers()]
model.eval()
ref.eval()
opt, ropt = optim.Adam(ddp.parameters(), lr=0.01), optim.Adam(ref.parameters(), lr=0.01)
x, y = batches((1, 8, 8), 3, seed=3)
for s in range(3):
    opt.zero_grad()
    ropt.zero_grad()
    F.cross_entropy(ddp(x[s][r * B : (r + 1) * B]), y[s][r * B : (r + 1) * B]).backward()
    F.cross_entropy(ref(x[s]), y[s]).backward()
    opt.step()
    ropt.step()
err_cnn = max_diff(ref, model)
assert err_cnn < TOL, err_cnn

# 3. no_sync: 3 micro-batches, 2 without communication
ref, model, ddp = compare(MLP, (5,), optim.SGD, steps=2, accumulate=3)
err_nosync = max_diff(ref, model)
assert err_nosync < TOL, err_nosync
ref, model, ddp = compare(CNN, (1, 8, 8), optim.SGD, steps=2, accumulate=2)
err_nosync_cnn = max_diff(ref, model)
assert err_nosync_cnn < TOL, err_nosync_cnn

# 4. static_graph and gradient_as_bucket_view
ref, model, ddp = compare(MLP, (5,), optim.SGD, static_graph=True)
assert max_diff(ref, model) < TOL
ref, model, ddp = compare(MLP, (5,), optim.SGD, gradient_as_bucket_view=True)
assert max_diff(ref, model) < TOL
assert model.fc1.weight.grad.data_ptr() in {
    b.flat.data_ptr() + off * 8 for b in ddp._buckets for off in b.offsets
}

# 4b. the fused and foreach optimizer steps (one C kernel per group) on DDP's averaged grads
for opt_cls in (
    functools.partial(optim.Adam, fused=True),
    functools.partial(optim.AdamW, foreach=True),
):
    ref, model, ddp = compare(MLP, (5,), opt_cls)
    err_fused = max_diff(ref, model)
    assert err_fused < TOL, err_fused

# 5. unused parameters: fc_rank0 used on rank 0 only, fc_never by nobody
ref, model = make(Branchy), make(Branchy)
ddp = DDP(model, find_unused_parameters=True, bucket_cap_mb=0.0001)
opt, ropt = optim.SGD(ddp.parameters(), lr=0.1), optim.SGD(ref.parameters(), lr=0.1)
x, y = batches((5,), 2, seed=11)
for s in range(2):
    opt.zero_grad()
    ropt.zero_grad()
    F.cross_entropy(ddp(x[s][r * B : (r + 1) * B], r), y[s][r * B : (r + 1) * B]).backward()
    # the reference: the mean of every rank's loss, each with its own forward
    sum(
        F.cross_entropy(ref(x[s][k * B : (k + 1) * B], k), y[s][k * B : (k + 1) * B])
        for k in range(n)
    ).div(n).backward()
    opt.step()
    ropt.step()
assert max_diff(ref, model) < TOL, max_diff(ref, model)
assert model.fc_never.weight.grad is None and ref.fc_never.weight.grad is None
assert model.fc_rank0.weight.grad is not None  # rank 1 gets rank 0's contribution / n

# 6. without find_unused_parameters, an unused parameter is PyTorch's error at the next forward
ddp = DDP(make(Branchy))
F.cross_entropy(ddp(x[0][:B], 1), y[0][:B]).backward()
try:
    ddp(x[0][:B], 1)
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e), e
    assert "fc_rank0.weight" in str(e) and "fc_never.weight" in str(e), e
else:
    raise AssertionError("no error for unused parameters")

# 7. overlap: when the first layer's weight (the last gradient of backward) arrives, the
#    buckets holding the later layers were already all-reduced asynchronously
model = make(MLP)
seen = {}


def last_hook(p):  # registered before DDP's: runs before DDP sees this gradient
    it = ddp._iteration
    seen["launched"] = [b for (i, b) in ddp._launch_log if i == it]
    seen["buckets"] = len(ddp._buckets)


model.fc1.weight.register_post_accumulate_grad_hook(last_hook)
ddp = DDP(model, bucket_cap_mb=0.0005)
F.cross_entropy(ddp(x[0][:B]), y[0][:B]).backward()
assert seen["buckets"] >= 3 and 1 <= len(seen["launched"]) < seen["buckets"], seen
assert seen["launched"] == list(range(len(seen["launched"]))), seen  # in bucket order
print(
    f"DDP OK rank {r}: max |param diff| mlp {err_mlp:.2e} cnn {err_cnn:.2e} "
    f"no_sync {err_nosync:.2e}/{err_nosync_cnn:.2e}; {len(seen['launched'])} of "
    f"{seen['buckets']} buckets launched before backward's last gradient",
    flush=True,
)
