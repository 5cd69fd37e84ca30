# Linear regression: manual gradient descent with requires_grad, LBFGS with closure, closed form.
import numpy as np
import torch

rng = np.random.RandomState(0)
X_np = rng.randn(100, 3).astype(np.float32)
w_true = np.array([1.5, -2.0, 0.5], dtype=np.float32)
y_np = X_np @ w_true + 0.3 + 0.01 * rng.randn(100).astype(np.float32)
X = torch.from_numpy(X_np)
y = torch.from_numpy(y_np).unsqueeze(1)

# manual GD
w = torch.zeros(3, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr = 0.1
for epoch in range(200):
    y_pred = X @ w + b
    loss = ((y_pred - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
print("CHECK gd_w", [round(v, 3) for v in w.detach().view(-1).tolist()], "b", round(b.item(), 3))

# LBFGS
model = torch.nn.Linear(3, 1)
with torch.no_grad():
    model.weight.fill_(0.0)
    model.bias.zero_()
opt = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=50, line_search_fn="strong_wolfe")
crit = torch.nn.MSELoss()


def closure():
    opt.zero_grad()
    loss = crit(model(X), y)
    loss.backward()
    return loss


for _ in range(3):
    loss = opt.step(closure)
print(
    "CHECK lbfgs_w",
    [round(v, 3) for v in model.weight.view(-1).tolist()],
    round(model.bias.item(), 3),
)
print("CHECK lbfgs_loss_small", float(loss) < 1e-3)

# closed form
Xa = torch.cat([X, torch.ones(X.shape[0], 1)], dim=1)
sol = torch.linalg.lstsq(Xa, y).solution
print("CHECK lstsq", [round(v, 3) for v in sol.view(-1).tolist()])
w_ne = torch.linalg.solve(Xa.T @ Xa, Xa.T @ y)
w_inv = torch.inverse(Xa.t().mm(Xa)).mm(Xa.t()).mm(y)
assert torch.allclose(w_ne, w_inv, atol=1e-4)
print("OK")
