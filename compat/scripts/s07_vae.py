# VAE on digits with reparameterisation trick, BCE(sum) + KL, sampling from prior.
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.tensor(load_digits().data / 16.0, dtype=torch.float32)
loader = DataLoader(TensorDataset(X), batch_size=128, shuffle=True)


class VAE(nn.Module):
    def __init__(self, z=4):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, z)
        self.fc22 = nn.Linear(32, z)
        self.fc3 = nn.Linear(z, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


model = VAE()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
epoch_losses = []
for epoch in range(6):
    train_loss = 0
    for (data,) in loader:
        optimizer.zero_grad()
        recon, mu, logvar = model(data)
        loss = loss_function(recon, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    epoch_losses.append(train_loss / len(loader.dataset))
print(epoch_losses)
assert epoch_losses[-1] < epoch_losses[0]
with torch.no_grad():
    sample = model.decode(torch.randn(8, 4)).cpu()
    img = sample.view(8, 1, 8, 8)
assert img.min() >= 0 and img.max() <= 1
print("CHECK sample_shape", list(img.shape))
print("OK")
