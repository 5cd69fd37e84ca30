# Custom Dataset/DataLoader features: dict samples, collate_fn, workers, random_split, samplers, Subset.
import numpy as np
import torch
from torch.utils.data import (
    ConcatDataset,
    DataLoader,
    Dataset,
    RandomSampler,
    Subset,
    SubsetRandomSampler,
    WeightedRandomSampler,
    random_split,
    IterableDataset,
    default_collate,
)


class MyDataset(Dataset):
    def __init__(self, n=50):
        self.x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        self.y = np.arange(n) % 3

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        return {"x": torch.from_numpy(self.x[idx]), "y": int(self.y[idx]), "name": f"s{idx}"}


ds = MyDataset()
loader = DataLoader(ds, batch_size=8, shuffle=False)
batch = next(iter(loader))
print(
    "CHECK dict_batch",
    sorted(batch.keys()),
    batch["x"].shape,
    batch["y"].dtype,
    batch["y"].tolist(),
    batch["name"][:2],
)
print("CHECK len_loader", len(loader), len(DataLoader(ds, batch_size=8, drop_last=True)))


def collate(samples):
    xs = torch.stack([s["x"] for s in samples])
    ys = torch.tensor([s["y"] for s in samples])
    return xs, ys


if __name__ == "__main__":
    wl = DataLoader(ds, batch_size=10, num_workers=2, collate_fn=collate, persistent_workers=False)
    tot = 0
    for xs, ys in wl:
        tot += xs.sum().item()
    print("CHECK worker_sum", tot)
    g = torch.Generator()
    g.manual_seed(0)
    train, val = random_split(ds, [40, 10], generator=g)
    print("CHECK split_len", len(train), len(val), type(train).__name__)
    train2, val2 = random_split(range(10), [0.8, 0.2])
    print("CHECK frac_split", len(train2), len(val2))
    sub = Subset(ds, [0, 5, 10])
    print("CHECK subset", [s["y"] for s in sub])
    cat = ConcatDataset([ds, sub])
    print("CHECK concat", len(cat), cat[51]["name"])
    weights = [0.0 if i % 2 else 1.0 for i in range(len(ds))]
    ws = WeightedRandomSampler(weights, num_samples=20, replacement=True)
    idxs = list(ws)
    print("CHECK weighted_even", all(i % 2 == 0 for i in idxs), len(idxs))
    srs = SubsetRandomSampler([1, 2, 3])
    print("CHECK srs", sorted(list(srs)))
    rl = DataLoader(ds, batch_size=5, sampler=RandomSampler(ds, generator=g))
    seen = torch.cat([b["x"][:, 0] for b in rl])
    print("CHECK random_sampler_perm", sorted(seen.tolist()) == sorted(ds.x[:, 0].tolist()))

    class Stream(IterableDataset):
        def __iter__(self):
            for i in range(7):
                yield torch.tensor([i, i * i])

    print("CHECK iterable", [b.tolist() for b in DataLoader(Stream(), batch_size=3)])
    print("CHECK default_collate", default_collate([(1, 2.0), (3, 4.0)]))
    tl = DataLoader(list(zip(range(6), "abcdef")), batch_size=4)
    print("CHECK tuple_list", [b for b in tl])
    npl = DataLoader(np.arange(10, dtype=np.float64), batch_size=4)
    print("CHECK np_batches", [b.dtype for b in npl][0], [b.tolist() for b in npl][-1])
    print("OK")
