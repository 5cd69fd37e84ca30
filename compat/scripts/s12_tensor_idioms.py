# Common tensor idioms: indexing, where, einsum, one_hot, scatter_, gather, cat/stack, masks, topk, sort.
import torch
import torch.nn.functional as F


ERRORS = []


def chk(name, fn):
    """One independent check: prints CHECK name values, or CHECK name ERROR Type and carries on."""
    try:
        print("CHECK", name, *fn())
    except Exception as e:  # noqa: BLE001 - the audit wants every failure, not the first
        ERRORS.append(name)
        print(
            "CHECK", name, "ERROR", type(e).__name__, str(e).splitlines()[0][:100] if str(e) else ""
        )


x = torch.arange(24).reshape(2, 3, 4)
chk("idx1", lambda: (x[0, 1:, ::2].tolist(),))
chk("idx2", lambda: (x[..., -1].tolist(),))
chk("idx3", lambda: (x[:, None, 0].shape,))
chk("idx4", lambda: (x[[0, 1], [1, 2]].tolist(),))
chk("idx5", lambda: (x[x > 20].tolist(),))
mask = torch.tensor([True, False, True])
chk("idx6", lambda: (x[:, mask].shape,))
y = x.clone().float()
y[y > 10] = 0
y[:, 0] = -1
y[0, :, [0, 2]] = 7.5
chk("setitem", lambda: (y.sum().item(),))
a = torch.tensor([[1.0, -2.0], [-3.0, 4.0]])
chk("where", lambda: (torch.where(a > 0, a, torch.zeros_like(a)).tolist(),))
chk("where_scalar", lambda: (torch.where(a > 0, a, 0.0).tolist(),))
chk("where1", lambda: ([t.tolist() for t in torch.where(a > 0)],))
A = torch.arange(6.0).reshape(2, 3)
B = torch.arange(12.0).reshape(3, 4)
chk("einsum", lambda: (torch.einsum("ij,jk->ik", A, B).tolist(),))
chk("einsum_bmm", lambda: (torch.einsum("bij,bjk->bik", A[None], B[None]).shape,))
chk("einsum_trace", lambda: (torch.einsum("ii", torch.eye(3)).item(),))
labels = torch.tensor([0, 2, 1, 2])
oh = F.one_hot(labels, num_classes=3)
chk(
    "one_hot",
    lambda: (
        oh.tolist(),
        oh.dtype,
    ),
)
chk("one_hot_auto", lambda: (F.one_hot(labels).shape,))
z = torch.zeros(4, 3)
z.scatter_(1, labels.unsqueeze(1), 1.0)
chk("scatter_", lambda: (z.tolist(),))
chk("scatter_add", lambda: (torch.zeros(3).scatter_add(0, labels[:3], torch.ones(3)).tolist(),))
logits = torch.tensor([[0.1, 0.5, 0.4], [0.9, 0.05, 0.05]])
chk("gather", lambda: (logits.gather(1, torch.tensor([[1], [0]])).tolist(),))
chk(
    "cat",
    lambda: (
        torch.cat([A, A], dim=0).shape,
        torch.cat((A, A), 1).shape,
        torch.cat([A, A], dim=-1).shape,
    ),
)
chk(
    "stack",
    lambda: (
        torch.stack([A, A]).shape,
        torch.stack([A, A], dim=2).shape,
    ),
)
vals, idx = torch.topk(logits, 2, dim=1)
chk(
    "topk",
    lambda: (
        vals.tolist(),
        idx.tolist(),
    ),
)
s = torch.sort(torch.tensor([3, 1, 2]), descending=True)
chk(
    "sort",
    lambda: (
        s.values.tolist(),
        s.indices.tolist(),
    ),
)
chk("argsort", lambda: (torch.argsort(torch.tensor([3.0, 1.0, 2.0])).tolist(),))
u, inv, cnt = torch.unique(torch.tensor([3, 1, 3, 2, 1]), return_inverse=True, return_counts=True)
chk(
    "unique",
    lambda: (
        u.tolist(),
        inv.tolist(),
        cnt.tolist(),
    ),
)
chk(
    "nonzero",
    lambda: (
        torch.nonzero(a > 0).tolist(),
        (a > 0).nonzero(as_tuple=True)[1].tolist(),
    ),
)
chk("masked_fill", lambda: (a.masked_fill(a < 0, float("-inf")).tolist(),))
chk(
    "clamp",
    lambda: (
        a.clamp(min=-1, max=1).tolist(),
        torch.clamp(a, -2.5).tolist(),
    ),
)
chk("chunk", lambda: ([c.shape for c in torch.arange(10).chunk(3)],))
chk("split", lambda: ([c.tolist() for c in torch.arange(5).split([2, 3])],))
chk(
    "repeat",
    lambda: (
        A.repeat(2, 1).shape,
        A.expand(3, 2, 3).shape,
        torch.arange(3).repeat_interleave(2).tolist(),
    ),
)
chk(
    "flip",
    lambda: (
        torch.flip(A, dims=[1]).tolist(),
        A.flip(0).tolist(),
    ),
)
chk(
    "permute",
    lambda: (
        x.permute(2, 0, 1).shape,
        x.transpose(0, 2).shape,
        x.movedim(0, -1).shape,
    ),
)
chk(
    "squeeze",
    lambda: (
        torch.zeros(1, 3, 1).squeeze().shape,
        torch.zeros(1, 3, 1).squeeze(-1).shape,
    ),
)
chk(
    "tolist_types",
    lambda: (
        type(torch.tensor(3).item()),
        type(torch.tensor(3.5).item()),
        type(torch.tensor(True).item()),
    ),
)
chk(
    "numpy",
    lambda: (
        A.numpy().dtype,
        A.numpy().shape,
    ),
)
chk(
    "meshgrid",
    lambda: ([g.shape for g in torch.meshgrid(torch.arange(3), torch.arange(4), indexing="ij")],),
)
chk(
    "tril",
    lambda: (
        torch.tril(torch.ones(3, 3)).tolist(),
        torch.triu(torch.ones(3, 3), diagonal=1).sum().item(),
    ),
)
chk(
    "cumsum",
    lambda: (
        torch.cumsum(torch.arange(5), dim=0).tolist(),
        torch.arange(1, 5).cumprod(0).tolist(),
    ),
)
chk("bincount", lambda: (torch.bincount(torch.tensor([0, 1, 1, 3])).tolist(),))
chk("index_select", lambda: (A.index_select(1, torch.tensor([0, 2])).tolist(),))
chk("masked_select", lambda: (torch.masked_select(a, a > 0).tolist(),))
chk(
    "diag",
    lambda: (
        torch.diag(torch.tensor([1.0, 2.0])).tolist(),
        torch.diag(A).tolist(),
    ),
)
chk("outer", lambda: (torch.outer(torch.arange(2.0), torch.arange(3.0)).tolist(),))
chk(
    "allclose",
    lambda: (
        torch.allclose(A, A + 1e-9),
        torch.equal(A, A.clone()),
    ),
)
chk(
    "any_all",
    lambda: (
        (a > 0).any().item(),
        (a > 0).all(dim=1).tolist(),
    ),
)
chk(
    "index_put",
    lambda: (
        torch.zeros(5)
        .index_put_((torch.tensor([1, 3]),), torch.tensor(1.0), accumulate=True)
        .tolist(),
    ),
)
chk("narrow", lambda: (A.narrow(1, 1, 2).tolist(),))
chk("roll", lambda: (torch.roll(torch.arange(5), 2).tolist(),))
print("OK" if not ERRORS else f"ERRORS {len(ERRORS)}: {ERRORS}")
