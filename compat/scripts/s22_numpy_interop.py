# NumPy interop: sharing semantics, dtype inference, scalars, as_tensor, from_numpy of non-contiguous.
import numpy as np
import torch


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


a = np.arange(6, dtype=np.float32).reshape(2, 3)
t = torch.from_numpy(a)
a[0, 0] = 100
chk("share_from", lambda: (t[0, 0].item(),))
t[1, 1] = -1
chk("share_back", lambda: (a[1, 1],))
n = t.numpy()
n[0, 1] = 42
chk("numpy_share", lambda: (t[0, 1].item(),))
chk(
    "infer",
    lambda: (
        torch.tensor(np.zeros(3)).dtype,
        torch.tensor(np.zeros(3, dtype=np.int16)).dtype,
        torch.tensor(np.array([True])).dtype,
        torch.from_numpy(np.zeros(2, dtype=np.uint8)).dtype,
    ),
)
chk(
    "as_tensor",
    lambda: (
        torch.as_tensor(a).dtype,
        torch.as_tensor([1, 2]).dtype,
        torch.as_tensor(a, dtype=torch.float64).dtype,
    ),
)
at = torch.as_tensor(a)
a[0, 2] = 9
chk("as_tensor_share", lambda: (at[0, 2].item(),))
chk("tensor_copy", lambda: (torch.tensor(a)[0, 2].item(),))
nc = np.arange(12).reshape(3, 4)[:, ::2]
chk(
    "noncontig",
    lambda: (
        torch.from_numpy(nc.copy()).tolist(),
        torch.tensor(nc).tolist(),
    ),
)
try:
    torch.from_numpy(np.arange(12).reshape(3, 4)[:, ::-1])
    print("CHECK neg_stride none")
except ValueError:
    print("CHECK neg_stride ValueError")
chk(
    "np_scalar_mul",
    lambda: (
        (torch.ones(2) * np.float64(2.0)).dtype,
        (torch.ones(2) * np.float32(2.0)).tolist(),
    ),
)
chk(
    "np_array_of_tensor",
    lambda: (
        np.array(torch.tensor([1.0, 2.0])).dtype,
        np.asarray(torch.arange(3)).tolist(),
    ),
)
chk(
    "mixed_list",
    lambda: (
        torch.tensor([1, 2.5]).dtype,
        torch.tensor([True, 1]).dtype,
        torch.tensor([[1], [2]]).shape,
    ),
)
chk("list_of_tensors", lambda: (torch.tensor([torch.tensor(1.0), torch.tensor(2.0)]).tolist(),))
chk(
    "stack_np",
    lambda: (torch.stack([torch.from_numpy(np.ones(2)), torch.from_numpy(np.zeros(2))]).dtype,),
)
chk(
    "float_from_t",
    lambda: (
        float(torch.tensor([2.5])),
        int(torch.tensor(3.9)),
        bool(torch.tensor([1])),
    ),
)
chk(
    "np_func",
    lambda: (
        np.mean(torch.tensor([1.0, 3.0]).numpy()),
        np.exp(torch.zeros(1).numpy()).tolist(),
    ),
)
chk(
    "arr_interface",
    lambda: (
        torch.tensor(np.float32(1.5)).shape,
        torch.tensor(np.array(5)).dim(),
    ),
)
chk(
    "idx_by_np",
    lambda: (
        torch.arange(10)[np.array([1, 3])].tolist(),
        torch.arange(10)[np.int64(4)].item(),
    ),
)
chk("tensor_of_range", lambda: (torch.tensor(range(4)).tolist(),))
chk("from_numpy_f16", lambda: (torch.from_numpy(np.ones(2, dtype=np.float16)).dtype,))
chk("numpy_force", lambda: (torch.ones(2, requires_grad=True).detach().numpy().tolist(),))
chk(
    "numpy_bool",
    lambda: (
        torch.tensor([True]).numpy().dtype,
        torch.tensor([1], dtype=torch.int8).numpy().dtype,
    ),
)
chk(
    "tolist_nested",
    lambda: (
        torch.arange(4).view(2, 2).tolist(),
        torch.tensor(2.0).tolist(),
    ),
)
print("OK" if not ERRORS else f"ERRORS {len(ERRORS)}: {ERRORS}")
