# Checkpoints other tools read: what this script saves with torch.save, a separate
# PyTorch process loads with torch.load(weights_only=True) and re-saves; this script
# then loads PyTorch's file.
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import torch
import torch.nn as nn

folder = tempfile.mkdtemp()
path = os.path.join(folder, "ckpt.pt")

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.from_numpy(np.random.RandomState(0).randn(16, 4).astype(np.float32))
for _ in range(3):
    opt.zero_grad()
    model(X).pow(2).mean().backward()
    opt.step()
base = torch.arange(12.0).reshape(3, 4)
torch.save(
    {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "epoch": 3,
        "base": base,
        "column": base[:, 1],
        "tags": {"a", "b"},
        "series": np.linspace(0.0, 1.0, 5),
    },
    path,
)
print("CHECK mode", oct(os.stat(path).st_mode & 0o777))

# A real PyTorch process reads the file (weights only, NumPy allowed as PyTorch asks)...
reader = textwrap.dedent(
    """
    import json, sys, numpy as np, torch
    allowed = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.float64))]
    with torch.serialization.safe_globals(allowed):
        ck = torch.load(sys.argv[1], weights_only=True)
    shared = ck["column"].untyped_storage().data_ptr() == ck["base"].untyped_storage().data_ptr()
    print(json.dumps({
        "keys": sorted(ck), "epoch": ck["epoch"], "tags": sorted(ck["tags"]),
        "model": {k: v.tolist() for k, v in ck["model"].items()},
        "lr": ck["optimizer"]["param_groups"][0]["lr"],
        "steps": [s["step"].item() for s in ck["optimizer"]["state"].values()],
        "column": ck["column"].tolist(), "shared": shared, "series": type(ck["series"]).__name__,
    }))
    ck["column"].mul_(10)  # a view of base: base changes too
    torch.save(ck, sys.argv[2])
    """
)
back_path = os.path.join(folder, "from_torch.pt")
out = subprocess.run(
    [sys.executable, "-c", reader, path, back_path], capture_output=True, text=True, check=True
)
seen = json.loads(out.stdout)
print("CHECK torch_reads", seen["keys"], seen["epoch"], seen["tags"], seen["lr"], seen["steps"])
print("CHECK torch_view", seen["column"], seen["shared"], seen["series"])
same = all(
    np.allclose(np.asarray(seen["model"][k]), v.numpy()) for k, v in model.state_dict().items()
)
print("CHECK torch_weights_equal", same)

# ... and this script reads what PyTorch saved.
ck = torch.load(back_path, weights_only=False)
print("CHECK base_after", ck["base"].tolist(), type(ck["series"]).__name__)
model2 = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
print("CHECK load", model2.load_state_dict(ck["model"]))
model.eval(), model2.eval()
with torch.no_grad():
    print("CHECK outputs_equal", torch.equal(model(X), model2(X)))

print("OK")
