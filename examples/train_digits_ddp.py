"""`make train`'s digits CNN under DistributedDataParallel.

    python -m ember.distributed.run --nproc-per-node 2 examples/train_digits_ddp.py --epochs 15
    mpiexec -n 2 python examples/train_digits_ddp.py

Every process trains on its shard of the training set (DistributedSampler) with batch
64 / world size, so the global batch and the learning rate are those of the single-process
script; DDP averages the gradients.  Rank 0 evaluates, prints, and saves the checkpoint
(after a barrier, as PyTorch scripts do); ``--compare`` also trains the same model in one
process and prints both accuracies.
"""

import argparse
import pathlib

from train_digits import CNN, evaluate  # noqa: E402 - the same model as `make train`

import ember as torch
import ember.distributed as dist
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler, random_split
from ember.utils.data.datasets import Digits


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=64, help="global batch")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/digits_ddp")
    args = p.parse_args(argv)

    dist.init_process_group()  # env:// under the launcher, or the MPI world under mpiexec
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    dataset = Digits()
    n_test = len(dataset) // 5
    train_set, test_set = random_split(
        dataset, [len(dataset) - n_test, n_test], generator=torch.Generator().manual_seed(args.seed)
    )
    sampler = DistributedSampler(train_set, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size // world, sampler=sampler)
    test_loader = DataLoader(test_set, batch_size=256)
    model = DDP(CNN())
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    for epoch in range(1, args.epochs + 1):
        model.train()
        sampler.set_epoch(epoch)
        loss_sum = torch.zeros(2, dtype=torch.float64)
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            loss_sum += torch.tensor([loss.item() * y.numel(), y.numel()], dtype=torch.float64)
        dist.all_reduce(loss_sum)  # the epoch's mean loss over every process
        scheduler.step()
        if rank == 0:
            _, acc = evaluate(model.module, test_loader)
            mean = loss_sum[0].item() / loss_sum[1].item()
            print(
                f"epoch {epoch:2d}: train loss {mean:.4f}  test accuracy {acc * 100:.2f}% "
                f"({world} processes)",
                flush=True,
            )
    if rank == 0:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        torch.save({"model": model.module.state_dict()}, out / "checkpoint.pt")
        print(f"final test accuracy {acc * 100:.2f}%; wrote {out / 'checkpoint.pt'}")
    dist.barrier()  # the checkpoint exists before any process goes on
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
