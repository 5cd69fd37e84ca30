# Printing tensors/models/sizes/dtypes; repr formats as users see them.
import torch
import torch.nn as nn

torch.manual_seed(0)
print("CHECK r1", repr(torch.tensor([1.0, 2.5, -3.0])))
print("CHECK r2", repr(torch.tensor([1, 2, 3])))
print("CHECK r3", repr(torch.tensor([True, False])))
print("CHECK r4", repr(torch.tensor(3.0)))
print("CHECK r5", repr(torch.tensor([1.0, 2.0], dtype=torch.float64)))
print("CHECK r6", repr(torch.tensor([1, 2], dtype=torch.int32)))
print("CHECK r7", repr(torch.tensor([[1.123456789, 2.0], [3.0, 4.0]])))
print("CHECK r8", repr(torch.tensor([1e-8, 1.0, 1e8])))
print("CHECK r9", repr(torch.tensor([1.0, 2.0], requires_grad=True)))
print("CHECK r10", repr(torch.tensor([1.0, 2.0], requires_grad=True) * 2))
print("CHECK r11", repr(torch.zeros(0)))
print("CHECK r12", repr(torch.zeros(2, 0)))
print("CHECK r13", repr(torch.tensor([float("nan"), float("inf"), -float("inf")])))
print("CHECK r14", repr(torch.arange(2000)))
print("CHECK r15", repr(torch.tensor([0.1, 0.25], dtype=torch.float16)))
print("CHECK r16", repr(torch.tensor([100000.0, 1.5])))
print("CHECK r17", repr(torch.ones(2, 2).sum(dim=0, keepdim=True)))
print("CHECK r18", repr(torch.tensor(5)))
print("CHECK r19", str(torch.tensor([1.5, 2.5])))
print("CHECK r20", repr(torch.tensor([1, 2], dtype=torch.uint8)))
print("CHECK r21", repr(torch.tensor([-0.0, 0.5])))
print("CHECK r22", repr(torch.tensor([[1, 2], [3, 4]]).float().mean(0)))
print("CHECK r23", f"{torch.tensor(3.14159):.2f}", "{:.3f}".format(torch.tensor(2.0).item()))
print("CHECK r24", repr(torch.tensor([1.0]).reshape(1, 1, 1)))
print("CHECK size", torch.zeros(2, 3).shape, repr(torch.Size([2, 3])), str(torch.Size([])))
print("CHECK dtype", torch.float32, torch.int64, torch.bool)
print("CHECK device", torch.device("cpu"), repr(torch.device("cpu")))
model = nn.Sequential(
    nn.Conv2d(1, 4, 3, stride=2, padding=1),
    nn.BatchNorm2d(4),
    nn.ReLU(inplace=True),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(16, 10, bias=False),
    nn.Dropout(p=0.5),
    nn.LSTM(10, 5, batch_first=True),
    nn.Embedding(10, 3, padding_idx=0),
    nn.LayerNorm(3),
    nn.GELU(),
    nn.LeakyReLU(0.1),
    nn.Softmax(dim=1),
    nn.Identity(),
    nn.AdaptiveAvgPool2d(1),
    nn.ConvTranspose2d(2, 2, 2, 2),
    nn.Upsample(scale_factor=2, mode="nearest"),
    nn.Tanh(),
    nn.MultiheadAttention(8, 2),
    nn.GroupNorm(2, 4),
    nn.Dropout2d(0.2),
    nn.Sigmoid(),
    nn.GRU(3, 3, num_layers=2, bidirectional=True),
    nn.AvgPool2d(2),
    nn.PReLU(),
    nn.ELU(),
)
print(model)
for i, line in enumerate(str(model).splitlines()):
    print(f"CHECK model_line{i}", line)
p = nn.Parameter(torch.tensor([1.0, 2.0]))
print("CHECK param", repr(p))
print("CHECK loss_repr", repr(nn.CrossEntropyLoss()), repr(nn.MSELoss(reduction="sum")))
print(
    "CHECK opt_repr", repr(torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)).splitlines()[0:3]
)
print("CHECK grad_fn", type((p * 2).grad_fn).__name__, type((p + 1).sum().grad_fn).__name__)
torch.set_printoptions(precision=2)
print("CHECK po", repr(torch.tensor([1.23456, 2.0])))
torch.set_printoptions(precision=4, sci_mode=False)
print("CHECK po2", repr(torch.tensor([1e-8, 1.0])))
torch.set_printoptions(profile="default")
print("OK")
