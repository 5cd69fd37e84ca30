"""Hogwild! training on scikit-learn's handwritten digits.

Several processes update one model whose parameters live in shared memory
(`model.share_memory()`), without locks, as in the PyTorch paper's Hogwild
example.  Each process trains on its own shard of the training set, so all of
them together see the data as often as one process training alone; the script
trains that single-process baseline too and prints both test accuracies.

    python examples/hogwild_digits.py --num-processes 4 --epochs 20

Needs scikit-learn (`pip install scikit-learn`) for the dataset.  It reads like
the PyTorch script it mirrors (examples/mnist_hogwild): `import ember as torch`.
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits

import ember as torch
import ember.multiprocessing as mp
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
from ember.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.fc1 = nn.Linear(64, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def load(seed):
    """(x_train, y_train, x_test, y_test): pixels scaled to [0, 1], a fixed 80/20 split."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    train, test = order[:cut], order[cut:]
    return (
        torch.from_numpy(x[train]),
        torch.from_numpy(y[train]),
        torch.from_numpy(x[test]),
        torch.from_numpy(y[test]),
    )


def train(rank, args, model, x, y):
    """SGD on this process's shard, writing straight into the shared parameters."""
    torch.manual_seed(args.seed + rank)
    torch.set_num_threads(1)  # the processes share the cores
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    model.train()
    for _ in range(args.epochs):
        for data, target in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(data), target)
            loss.backward()
            optimizer.step()


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main(argv=None):
    parser = argparse.ArgumentParser(description="Hogwild! training on the digits dataset")
    parser.add_argument("--num-processes", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start-method", default="spawn", choices=mp.get_all_start_methods())
    args = parser.parse_args(argv)

    x_train, y_train, x_test, y_test = load(args.seed)

    # Hogwild: one model in shared memory, updated by every process at once.
    torch.manual_seed(args.seed)
    model = Net()
    model.share_memory()
    ctx = mp.get_context(args.start_method)
    n = args.num_processes
    t0 = time.perf_counter()
    processes = []
    for rank in range(n):
        # the shards travel through shared memory too: nothing is copied
        p = ctx.Process(target=train, args=(rank, args, model, x_train[rank::n], y_train[rank::n]))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a training process failed (exit code {p.exitcode})")
    hogwild_time = time.perf_counter() - t0
    hogwild = accuracy(model, x_test, y_test)

    # The baseline: the same model trained by one process on all the data.
    torch.manual_seed(args.seed)
    single_model = Net()
    t0 = time.perf_counter()
    train(0, args, single_model, x_train, y_train)
    single_time = time.perf_counter() - t0
    single = accuracy(single_model, x_test, y_test)

    print(f"hogwild, {n} processes: test accuracy {hogwild:.4f} ({hogwild_time:.1f} s)")
    print(f"single process:        test accuracy {single:.4f} ({single_time:.1f} s)")
    return hogwild, single


if __name__ == "__main__":
    main()
