# GAN on 2-D gaussian mixture: BCEWithLogitsLoss, detach, two optimizers, betas, label tensors via full_like.
import torch
import torch.nn as nn

torch.manual_seed(3)
latent = 8
G = nn.Sequential(nn.Linear(latent, 32), nn.LeakyReLU(0.2, inplace=True), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Linear") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.2)
        nn.init.zeros_(m.bias)


G.apply(weights_init)
D.apply(weights_init)
criterion = nn.BCEWithLogitsLoss()
optD = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
optG = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
real_label, fake_label = 1.0, 0.0
centers = torch.tensor([[2.0, 2.0], [-2.0, -2.0]])
for it in range(60):
    real = centers[torch.randint(0, 2, (64,))] + 0.1 * torch.randn(64, 2)
    b = real.size(0)
    label = torch.full((b,), real_label, dtype=torch.float)
    D.zero_grad()
    out = D(real).view(-1)
    errD_real = criterion(out, label)
    errD_real.backward()
    D_x = torch.sigmoid(out).mean().item()
    noise = torch.randn(b, latent)
    fake = G(noise)
    label.fill_(fake_label)
    out = D(fake.detach()).view(-1)
    errD_fake = criterion(out, label)
    errD_fake.backward()
    errD = errD_real + errD_fake
    optD.step()
    G.zero_grad()
    label.fill_(real_label)
    out = D(fake).view(-1)
    errG = criterion(out, label)
    errG.backward()
    optG.step()
    if it % 20 == 0:
        print(f"[{it}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} D(x): {D_x:.4f}")
with torch.no_grad():
    s = G(torch.randn(256, latent))
print("gen mean", s.mean(0).tolist(), "std", s.std(0).tolist())
assert torch.isfinite(s).all()
print("CHECK fake_requires_grad", fake.requires_grad, fake.detach().requires_grad)
print("OK")
