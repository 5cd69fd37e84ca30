# Training-script boilerplate: seeding, cudnn flags, threads, AMP (disabled on CPU), deterministic, version checks.
import os
import random

import numpy as np
import torch
import torch.nn as nn


def set_seed(seed=42):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    os.environ["PYTHONHASHSEED"] = str(seed)


set_seed()
print("CHECK version", isinstance(torch.__version__, str))
torch.set_num_threads(1)
print("CHECK threads", torch.get_num_threads())
device = "cuda" if torch.cuda.is_available() else "cpu"
print("CHECK cuda_count", torch.cuda.device_count())
a = torch.rand(3)
torch.manual_seed(42)
b = torch.rand(3)
torch.manual_seed(42)
print("CHECK reseed_same", torch.equal(b, torch.rand(3)))
g = torch.Generator().manual_seed(1)
print(
    "CHECK gen",
    torch.equal(
        torch.randn(2, generator=g), torch.randn(2, generator=torch.Generator().manual_seed(1))
    ),
)
print("CHECK initial_seed", torch.initial_seed())
state = torch.get_rng_state()
r1 = torch.randn(2)
torch.set_rng_state(state)
print("CHECK rng_state", torch.equal(r1, torch.randn(2)))
model = nn.Linear(4, 2).to(device)
opt = torch.optim.Adam(model.parameters(), 1e-3)
scaler = torch.cuda.amp.GradScaler(enabled=(device == "cuda"))
x = torch.randn(8, 4, device=device)
with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=False):
    loss = model(x).pow(2).mean()
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
print("CHECK amp_ok", True)
scaler2 = torch.amp.GradScaler("cuda", enabled=False)
with torch.amp.autocast("cpu", enabled=False):
    pass
torch.use_deterministic_algorithms(False)
torch.set_float32_matmul_precision("high")
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
print("CHECK mps", hasattr(torch.backends, "mps") and torch.backends.mps.is_available())
compiled = torch.compile(model) if hasattr(torch, "compile") else model
print("CHECK compiled_call", compiled(x).shape)
torch.set_printoptions(precision=3)
print("CHECK amp_autocast_cpu", torch.is_autocast_enabled())
with torch.autograd.profiler.record_function("step"):
    pass
print("OK")
