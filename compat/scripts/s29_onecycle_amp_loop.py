# Training loop as in many tutorials: OneCycleLR per batch, grad clipping, GradScaler/autocast
# guarded for CPU, eval under no_grad, best-checkpoint save/load with map_location.
import copy
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.RandomState(0)
X = rng.randn(256, 10).astype(np.float32)
w = rng.randn(10, 3).astype(np.float32)
y = (X @ w).argmax(1)
train = TensorDataset(torch.from_numpy(X[:192]), torch.from_numpy(y[:192]))
val = TensorDataset(torch.from_numpy(X[192:]), torch.from_numpy(y[192:]))
train_loader = DataLoader(train, batch_size=32, shuffle=True)
val_loader = DataLoader(val, batch_size=64)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(10, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 3)
)
model.to(device)
epochs = 6
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
scheduler = torch.optim.lr_scheduler.OneCycleLR(
    optimizer, max_lr=1e-2, epochs=epochs, steps_per_epoch=len(train_loader)
)
scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
ckpt_dir = tempfile.mkdtemp()
best_acc, best_state, lrs = 0.0, None, []


def evaluate(m):
    m.eval()
    correct, total, loss_sum = 0, 0, 0.0
    with torch.no_grad():
        for xb, yb in val_loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            out = m(xb)
            loss_sum += F.cross_entropy(out, yb, reduction="sum").item()
            correct += (out.argmax(dim=1) == yb).sum().item()
            total += yb.size(0)
    return correct / total, loss_sum / total


for epoch in range(epochs):
    model.train()
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, enabled=use_amp):
            loss = F.cross_entropy(model(xb), yb)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    acc, val_loss = evaluate(model)
    print(f"epoch {epoch} val_acc={acc:.3f} val_loss={val_loss:.4f} lr={lrs[-1]:.6f}")
    if acc >= best_acc:
        best_acc = acc
        best_state = copy.deepcopy(model.state_dict())
        torch.save(
            {
                "epoch": epoch,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "best_acc": best_acc,
            },
            os.path.join(ckpt_dir, "best.pt"),
        )
print("CHECK n_lrs", len(lrs), "peak_at", int(np.argmax(lrs)))
print("CHECK lrs", [round(v, 6) for v in lrs[::8]])
print("CHECK grad_norm_type", type(grad_norm).__name__, grad_norm.dim())
print("CHECK scaler_scale", scaler.get_scale() if use_amp else 1.0, scaler.is_enabled())
assert best_acc > 0.7, best_acc
ckpt = torch.load(os.path.join(ckpt_dir, "best.pt"), map_location=torch.device("cpu"))
fresh = nn.Sequential(
    nn.Linear(10, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 3)
)
fresh.load_state_dict(ckpt["model"])
acc2, _ = evaluate(fresh)
print("CHECK reloaded_matches", acc2 == ckpt["best_acc"], sorted(ckpt.keys()))
ckpt2 = torch.load(os.path.join(ckpt_dir, "best.pt"), map_location="cpu", weights_only=True)
print("CHECK weights_only_keys", sorted(ckpt2["model"].keys()))
opt2 = torch.optim.AdamW(fresh.parameters(), lr=1e-3, weight_decay=1e-2)
opt2.load_state_dict(ckpt["optimizer"])
print("CHECK opt_groups", sorted(opt2.param_groups[0].keys()))
for k, v in best_state.items():
    assert torch.equal(v, ckpt["model"][k]), k
print("OK")
