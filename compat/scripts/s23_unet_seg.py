# Mini UNet: ConvTranspose2d, F.interpolate, Upsample, skip concat, BCEWithLogits + Dice, pad.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def double_conv(i, o):
    return nn.Sequential(
        nn.Conv2d(i, o, 3, padding=1),
        nn.BatchNorm2d(o),
        nn.ReLU(inplace=True),
        nn.Conv2d(o, o, 3, padding=1),
        nn.BatchNorm2d(o),
        nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.d1 = double_conv(1, 8)
        self.d2 = double_conv(8, 16)
        self.up = nn.ConvTranspose2d(16, 8, kernel_size=2, stride=2)
        self.u1 = double_conv(16, 8)
        self.out = nn.Conv2d(8, 1, 1)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)

    def forward(self, x):
        x1 = self.d1(x)
        x2 = self.d2(F.max_pool2d(x1, 2))
        u = self.up(x2)
        dy, dx = x1.size(2) - u.size(2), x1.size(3) - u.size(3)
        u = F.pad(u, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        y = self.u1(torch.cat([x1, u], dim=1))
        up_check = self.up2(x2)
        return self.out(y), up_check


def dice_loss(logits, target, eps=1.0):
    p = torch.sigmoid(logits)
    inter = (p * target).sum(dim=(2, 3))
    union = p.sum(dim=(2, 3)) + target.sum(dim=(2, 3))
    return 1 - ((2 * inter + eps) / (union + eps)).mean()


x = torch.rand(4, 1, 16, 16)
mask = (x > 0.5).float()
model = UNet()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
bce = nn.BCEWithLogitsLoss()
ls = []
for i in range(15):
    opt.zero_grad()
    logits, upc = model(x)
    loss = bce(logits, mask) + dice_loss(logits, mask)
    loss.backward()
    opt.step()
    ls.append(loss.item())
print("CHECK shapes", list(logits.shape), list(upc.shape))
print("loss", ls[0], ls[-1])
assert ls[-1] < ls[0]
img = torch.arange(16.0).view(1, 1, 4, 4)
print("CHECK interp_nearest", F.interpolate(img, scale_factor=2, mode="nearest")[0, 0, :2].tolist())
print(
    "CHECK interp_bilinear",
    [
        round(v, 4)
        for v in F.interpolate(img, size=(3, 3), mode="bilinear", align_corners=False)
        .view(-1)
        .tolist()
    ],
)
print(
    "CHECK interp_bicubic",
    round(F.interpolate(img, size=(6, 6), mode="bicubic", align_corners=False).sum().item(), 3),
)
print(
    "CHECK interp_1d",
    F.interpolate(torch.arange(4.0).view(1, 1, 4), size=6, mode="linear").view(-1).tolist(),
)
print(
    "CHECK pad_reflect",
    F.pad(img, (1, 1, 1, 1), mode="reflect").shape,
    F.pad(img, (1, 1, 0, 0), mode="replicate")[0, 0, 0].tolist(),
)
print("CHECK avgpool", F.avg_pool2d(img, 2).view(-1).tolist(), F.adaptive_max_pool2d(img, 1).item())
print("CHECK pixel_shuffle", F.pixel_shuffle(torch.arange(8.0).view(1, 4, 1, 2), 2).shape)
print("CHECK unfold", F.unfold(img, kernel_size=2, stride=2).shape)
print(
    "CHECK grid_sample",
    F.grid_sample(img, torch.zeros(1, 2, 2, 2), align_corners=False).view(-1).tolist(),
)
print("OK")
