# Tabular regression with sklearn preprocessing, float64->float32, batched MSE training, R2 via sklearn.
import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_diabetes
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

X, y = load_diabetes(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
sc = StandardScaler().fit(Xtr)
Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
ym, ys = ytr.mean(), ytr.std()
Xtr_t = torch.tensor(Xtr, dtype=torch.float32)
ytr_t = torch.tensor((ytr - ym) / ys, dtype=torch.float32).view(-1, 1)
Xte_t = torch.FloatTensor(Xte)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.RMSprop(model.parameters(), lr=1e-2)
loss_fn = nn.MSELoss()
perm_losses = []
for epoch in range(40):
    perm = torch.randperm(Xtr_t.size(0))
    for i in range(0, Xtr_t.size(0), 32):
        idx = perm[i : i + 32]
        opt.zero_grad()
        loss = loss_fn(model(Xtr_t[idx]), ytr_t[idx])
        loss.backward()
        opt.step()
    perm_losses.append(loss.item())
model.eval()
with torch.no_grad():
    pred = model(Xte_t).squeeze(1).numpy() * ys + ym
r2 = r2_score(yte, pred)
print("R2", r2)
assert r2 > 0.0, r2
lt = torch.LongTensor([1, 2])
print(
    "CHECK legacy_ctor",
    lt.dtype,
    torch.FloatTensor(2, 3).shape,
    torch.Tensor([1, 2]).dtype,
    torch.Tensor(2, 2).shape,
)
print(
    "CHECK legacy_isinstance",
    isinstance(lt, torch.LongTensor) if hasattr(torch, "LongTensor") else "na",
)
print("OK")
