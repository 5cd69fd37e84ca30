# Small CNN on digits: Conv2d/MaxPool2d/Flatten/Dropout, Adam + StepLR, unsqueeze(1).
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from sklearn.datasets import load_digits
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(42)
X, y = load_digits(return_X_y=True)
X = torch.from_numpy(X).float().div(16.0).reshape(-1, 8, 8).unsqueeze(1)
y = torch.from_numpy(y).long()
print("CHECK X_shape", list(X.shape))
loader = DataLoader(TensorDataset(X[:1200], y[:1200]), batch_size=32, shuffle=True, drop_last=True)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1, 1)
        self.pool = nn.MaxPool2d(2, 2)
        self.dropout1 = nn.Dropout2d(0.1)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(32 * 2 * 2, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.dropout1(x)
        x = self.flatten(x)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


model = Net()
optimizer = optim.Adam(model.parameters(), lr=1e-2)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
first = last = None
for epoch in range(1, 4):
    model.train()
    for data, target in loader:
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if first is None:
            first = loss.item()
        last = loss.item()
    scheduler.step()
    print(epoch, scheduler.get_last_lr(), last)
print("CHECK lr", scheduler.get_last_lr()[0])
model.eval()
with torch.no_grad():
    out = model(X[1200:])
    test_loss = F.nll_loss(out, y[1200:], reduction="sum").item() / len(out)
    pred = out.argmax(dim=1)
    acc = pred.eq(y[1200:]).sum().item() / len(y[1200:])
print(f"test loss {test_loss:.4f} acc {acc:.3f}")
assert last < first and acc > 0.85
print("OK")
