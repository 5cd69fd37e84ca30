"""DataLoader throughput: ember_data vs PyTorch's torch.utils.data, same run.

A 20,000 x 3 x 32 x 32 uint8 in-memory dataset; each sample goes through a
random crop (padding 4) and a random horizontal flip (the same NumPy transform
code for both loaders, so the loaders are what is compared); batch 128,
shuffled; num_workers 0 and 2.  Reports images/s over a whole epoch and the
time from iter(loader) to the first batch, as medians of --repeat epochs.

    python benchmarks/data.py [--repeat 5] [--n 20000]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import fmt_time, table, try_import  # noqa: E402

import ember_data  # noqa: E402
from ember_data.datasets import transforms as T  # noqa: E402


class Images:
    """N images (3, 32, 32) uint8 in memory, with a crop+flip augmentation."""

    def __init__(self, n, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
        self.labels = rng.integers(0, 10, n).tolist()
        self.transform = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip()])

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.transform(self.images[i]), self.labels[i]


def one_epoch(loader):
    """(seconds to the first batch, images/s over the epoch) of a fresh loader."""
    t0 = time.perf_counter()
    it = iter(loader)
    x, _ = next(it)
    first = time.perf_counter() - t0
    seen = len(x)
    for x, _ in it:
        seen += len(x)
    return first, seen / (time.perf_counter() - t0)


def measure(makers, repeat):
    """Medians over `repeat` rounds; each round runs every library once, in
    turn, so that the machine's load falls on all of them alike."""
    samples = {name: [] for name in makers}
    for _ in range(repeat):
        for name, make in makers.items():
            samples[name].append(one_epoch(make()))
    return {
        name: (statistics.median(s[0] for s in runs), statistics.median(s[1] for s in runs))
        for name, runs in samples.items()
    }


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args(argv)

    dataset = Images(args.n)
    torch = try_import("torch")
    libs = {"ember_data": ember_data.DataLoader}
    if torch is not None:
        import torch.utils.data

        libs["torch"] = torch.utils.data.DataLoader

    rows = []
    for workers in (0, 2):
        makers = {
            name: lambda DataLoader=DataLoader, workers=workers: DataLoader(
                dataset, batch_size=args.batch_size, shuffle=True, num_workers=workers
            )
            for name, DataLoader in libs.items()
        }
        results = measure(makers, args.repeat)
        e_first, e_rate = results["ember_data"]
        t_first, t_rate = results.get("torch", (None, None))
        rows.append(
            [
                workers,
                f"{e_rate:,.0f}",
                f"{t_rate:,.0f}" if t_rate else "-",
                f"{e_rate / t_rate:.2f}x" if t_rate else "-",
                fmt_time(e_first),
                fmt_time(t_first),
                f"{t_first / e_first:.2f}x" if t_first else "-",
            ]
        )
    print(
        f"DataLoader: {args.n} x 3x32x32 uint8, crop(pad 4)+flip, batch {args.batch_size}, "
        f"shuffled; medians of {args.repeat} epochs"
    )
    table(
        rows,
        [
            "num_workers",
            "ember img/s",
            "torch img/s",
            "ember/torch",
            "ember 1st batch",
            "torch 1st batch",
            "torch/ember",
        ],
    )


if __name__ == "__main__":
    main()
