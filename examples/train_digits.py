"""Train a small CNN (or an MLP) on scikit-learn's bundled handwritten digits.

This is `make train`: it reads like a PyTorch script because ember's API is
PyTorch's.  Everything runs on the CPU in a couple of minutes:

    python examples/train_digits.py --epochs 15 --model cnn --out runs/digits

It prints a progress bar with loss and throughput, the test accuracy after each
epoch, and writes to --out the model's weights (model.safetensors, each tensor
named by its state_dict key, as safetensors.torch.save_model writes), the training
checkpoint (checkpoint.pt: model + optimizer state, PyTorch's zip format, which
torch.load reads) and a PNG of the loss/accuracy curves.
"""

import argparse
import json
import pathlib
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from tqdm import tqdm  # noqa: E402

import ember as torch  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.utils import safetensors  # noqa: E402
from ember.utils.data import DataLoader, random_split  # noqa: E402
from ember.utils.data.datasets import Digits  # noqa: E402


class CNN(nn.Module):
    """Two conv blocks and a small classifier head for 1x8x8 images."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(64 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.dropout(torch.flatten(x, 1))
        x = F.relu(self.fc1(x))
        return self.fc2(x)


class MLP(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64, 256),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(256, 128),
            nn.ReLU(),
            nn.Linear(128, num_classes),
        )

    def forward(self, x):
        return self.net(x)


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    loss_sum = 0.0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            total += y.numel()
    return loss_sum / total, correct / total


def plot(history, path):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    epochs = range(1, len(history["train_loss"]) + 1)
    ax1.plot(epochs, history["train_loss"], label="train")
    ax1.plot(epochs, history["test_loss"], label="test")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("cross-entropy")
    ax1.legend()
    ax2.plot(epochs, [a * 100 for a in history["test_acc"]], color="tab:green")
    ax2.set_xlabel("epoch")
    ax2.set_ylabel("test accuracy (%)")
    fig.suptitle("ember: digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/digits")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    dataset = Digits()  # 1x8x8 float32 images in [0, 1]
    n_test = len(dataset) // 5
    train_set, test_set = random_split(
        dataset, [len(dataset) - n_test, n_test], generator=torch.Generator().manual_seed(args.seed)
    )
    train_loader = DataLoader(
        train_set,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        generator=torch.Generator().manual_seed(args.seed),
    )
    test_loader = DataLoader(test_set, batch_size=256, num_workers=args.workers)

    model = CNN() if args.model == "cnn" else MLP()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    print(model)
    print(
        f"{sum(p.numel() for p in model.parameters())} parameters; {len(train_set)} training and "
        f"{len(test_set)} test images"
    )

    history = {"train_loss": [], "test_loss": [], "test_acc": []}
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        seen, loss_sum, t0 = 0, 0.0, time.perf_counter()
        bar = tqdm(train_loader, desc=f"epoch {epoch:2d}/{args.epochs}", unit="batch", leave=False)
        for x, y in bar:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            seen += y.numel()
            loss_sum += loss.item() * y.numel()
            bar.set_postfix(
                loss=f"{loss.item():.4f}", img_s=f"{seen / (time.perf_counter() - t0):.0f}"
            )
        scheduler.step()
        test_loss, test_acc = evaluate(model, test_loader)
        history["train_loss"].append(loss_sum / seen)
        history["test_loss"].append(test_loss)
        history["test_acc"].append(test_acc)
        rate = seen / (time.perf_counter() - t0)
        print(
            f"epoch {epoch:2d}: train loss {loss_sum / seen:.4f}  test loss {test_loss:.4f}  "
            f"test accuracy {test_acc * 100:.2f}%  ({rate:.0f} images/s)"
        )

    elapsed = time.perf_counter() - start
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": args.epochs,
            "model_kind": args.model,
        },
        out / "checkpoint.pt",
    )
    safetensors.save_model(model, out / "model.safetensors")
    plot(history, out / "curves.png")
    (out / "history.json").write_text(json.dumps(history, indent=2))
    print(f"done in {elapsed:.1f}s: final test accuracy {history['test_acc'][-1] * 100:.2f}%")
    print(f"wrote {out / 'model.safetensors'}, {out / 'checkpoint.pt'} and {out / 'curves.png'}")

    # Both files round-trip: a fresh model loaded from either scores the same.
    for name, state in [
        ("model.safetensors", safetensors.load_file(out / "model.safetensors")),
        ("checkpoint.pt", torch.load(out / "checkpoint.pt")["model"]),
    ]:
        restored = CNN() if args.model == "cnn" else MLP()
        restored.load_state_dict(state)
        _, acc = evaluate(restored, test_loader)
        if abs(acc - history["test_acc"][-1]) > 1e-9:
            raise SystemExit(
                f"{name} round trip changed the accuracy: {acc} != {history['test_acc'][-1]}"
            )
    return history


if __name__ == "__main__":
    main()
