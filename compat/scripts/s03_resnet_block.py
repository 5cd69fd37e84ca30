# ResNet basic blocks with BatchNorm2d, kaiming init loop, running stats, eval mode, param groups.
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(
            in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False
        )
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


class ResNetTiny(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8))
        self.layer2 = nn.Sequential(BasicBlock(8, 16, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


torch.manual_seed(0)
model = ResNetTiny()
print(model)
print("CHECK n_params", sum(p.numel() for p in model.parameters()))
print("CHECK n_state", len(model.state_dict()))
print("CHECK state_keys", ",".join(list(model.state_dict().keys())[:8]))
print("CHECK num_batches_tracked_dtype", model.bn1.num_batches_tracked.dtype)
decay, no_decay = [], []
for name, p in model.named_parameters():
    (no_decay if p.ndim == 1 or name.endswith(".bias") else decay).append(p)
opt = torch.optim.SGD(
    [{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}],
    lr=0.05,
    momentum=0.9,
    nesterov=True,
)
x = torch.randn(16, 3, 8, 8)
y = torch.randint(0, 10, (16,))
losses = []
for step in range(15):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("losses", [round(l, 3) for l in losses])
assert losses[-1] < losses[0]
print("CHECK nbt", model.bn1.num_batches_tracked.item())
rm = model.bn1.running_mean.clone()
model.eval()
with torch.no_grad():
    out1 = model(x)
    out2 = model(x[:4])
assert torch.allclose(out1[:4], out2, atol=1e-5)
assert torch.equal(rm, model.bn1.running_mean)
print("CHECK out_shape", tuple(out1.shape))
print("OK")
