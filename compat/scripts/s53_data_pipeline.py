# The torch.utils.data toolbox: random_split, Subset, ConcatDataset, TensorDataset,
# WeightedRandomSampler, BatchSampler, custom collate_fn with padding, IterableDataset
# with worker sharding, worker_init_fn, persistent workers, pin_memory on a CPU box.
import numpy as np
import torch
from torch.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)
from torch.nn.utils.rnn import pad_sequence


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": torch.arange(i % 4 + 1, dtype=torch.float32) * i, "y": i * i}


def collate(batch):
    xs = pad_sequence([b["x"] for b in batch], batch_first=True, padding_value=-1.0)
    return xs, torch.tensor([b["y"] for b in batch])


ds = Squares(10)
a, b = random_split(ds, [7, 3], generator=torch.Generator().manual_seed(42))
print("CHECK split_sizes", len(a), len(b), sorted(a.indices + b.indices) == list(range(10)))
sub = Subset(ds, [1, 3, 5])
cat = ConcatDataset([sub, Subset(ds, [0, 2])])
print("CHECK concat", len(cat), cat[3]["y"], cat[4]["y"], cat.cumulative_sizes)
loader = DataLoader(ds, batch_size=4, shuffle=False, collate_fn=collate)
for xs, ys in loader:
    print("CHECK padded", tuple(xs.shape), ys.tolist(), xs[1].tolist())
    break
td = TensorDataset(torch.arange(6.0).view(3, 2), torch.tensor([0, 1, 0]))
print("CHECK tensords", len(td), [t.tolist() for t in td[1]])
bs = list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False))
print("CHECK batch_sampler", bs)
ws = WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], num_samples=5, replacement=True)
print("CHECK weighted", list(ws))
rs = RandomSampler(range(5), generator=torch.Generator().manual_seed(0))
print("CHECK random_sampler_perm", sorted(list(rs)))


class Shards(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(wid, self.n, nw))


seen = sorted(
    int(v) for batch in DataLoader(Shards(10), batch_size=2, num_workers=2) for v in batch
)
print("CHECK shards", seen)


def init_fn(worker_id):
    np.random.seed(1000 + worker_id)


class Noisy(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor([i, np.random.randint(0, 1000)])


l2 = DataLoader(
    Noisy(),
    batch_size=2,
    num_workers=2,
    worker_init_fn=init_fn,
    persistent_workers=True,
    pin_memory=True,
)
e1 = torch.cat(list(l2))
e2 = torch.cat(list(l2))
print("CHECK persistent_ids", e1[:, 0].tolist(), e2[:, 0].tolist())
print("CHECK pinned_cpu", e1.device.type)
l3 = DataLoader(td, batch_size=2, drop_last=True, prefetch_factor=2, num_workers=1)
print("CHECK drop_last", len(l3), [b[0].shape for b in l3])
print("OK")
