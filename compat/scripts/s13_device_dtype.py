# Device/dtype boilerplate: torch.device, .to(device, dtype), .cuda() guarded, dtype conversions.
import numpy as np
import torch
import torch.nn as nn


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


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
chk(
    "device",
    lambda: (
        device,
        device.type,
        str(device),
        repr(device),
    ),
)
chk(
    "device_eq",
    lambda: (
        device == torch.device("cpu"),
        str(torch.device("cpu:0")),
        torch.device("cpu:0").index,
    ),
)
use_cuda = torch.cuda.is_available()
kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}
t = torch.randn(3, 4).to(device)
chk(
    "t_device",
    lambda: (
        t.device,
        t.is_cuda,
        t.device.type == "cpu",
    ),
)
t2 = t.to(device, dtype=torch.float64)
t3 = t.to(torch.float16)
t4 = t.to("cpu")
t5 = t.to(t2)
chk(
    "to_dtypes",
    lambda: (
        t2.dtype,
        t3.dtype,
        t4.dtype,
        t5.dtype,
    ),
)
chk(
    "to_same",
    lambda: (
        t.to(device) is t,
        t.to(torch.float32) is t,
    ),
)
chk(
    "conv",
    lambda: (
        t.double().dtype,
        t.half().dtype,
        t.long().dtype,
        t.int().dtype,
        t.bool().dtype,
        t.float().dtype,
        t.bfloat16().dtype,
        t.byte().dtype,
        t.short().dtype,
        t.char().dtype,
    ),
)
chk(
    "type_str",
    lambda: (
        t.type(),
        t.long().type(),
        t.type(torch.float64).dtype,
    ),
)
chk(
    "dtype_props",
    lambda: (
        torch.float32.is_floating_point,
        torch.int64.is_floating_point,
        torch.float16.itemsize,
    ),
)
chk(
    "dtype_repr",
    lambda: (
        repr(torch.float32),
        str(torch.long),
        torch.float == torch.float32,
        torch.double is torch.float64,
    ),
)
chk("default_dtype", lambda: (torch.get_default_dtype(),))
chk(
    "finfo",
    lambda: (
        torch.finfo(torch.float32).eps,
        torch.finfo(torch.float16).max,
        torch.iinfo(torch.int32).max,
    ),
)
m = nn.Linear(3, 2).to(device)
m2 = nn.Linear(3, 2).double()
chk(
    "module_dtype",
    lambda: (
        next(m.parameters()).device,
        m2.weight.dtype,
    ),
)
m3 = nn.Linear(3, 2).to(dtype=torch.float64, device=device)
chk("module_to", lambda: (m3.weight.dtype,))
if torch.cuda.is_available():
    m.cuda()
z = torch.zeros(2, 3, dtype=torch.long, device=device)
o = torch.ones((2, 3), device="cpu", dtype=torch.bool)
chk(
    "factories",
    lambda: (
        z.dtype,
        o.dtype,
        torch.empty(2, 3, device=device).shape,
    ),
)
chk(
    "new_ops",
    lambda: (
        t.new_zeros(2).dtype,
        t.new_ones((2, 2)).shape,
        t.new_tensor([1, 2]).dtype,
        t.new_full((2,), 3.0).tolist(),
        t.new_empty(3).shape,
    ),
)
chk(
    "like",
    lambda: (
        torch.zeros_like(t, dtype=torch.int64).dtype,
        torch.full_like(t, 7).sum().item(),
        torch.rand_like(t).shape,
    ),
)
chk(
    "tensor_cpu",
    lambda: (
        t.cpu().numpy().dtype,
        t.detach().cpu().numpy().shape,
    ),
)
chk(
    "is_tensor",
    lambda: (
        torch.is_tensor(t),
        torch.is_floating_point(t),
        torch.numel(t),
        t.element_size(),
        t.nbytes,
    ),
)
chk("non_blocking", lambda: (t.to(device, non_blocking=True).shape,))
x = torch.tensor(np.array([1, 2, 3], dtype=np.int32))
chk(
    "np_int32",
    lambda: (
        x.dtype,
        torch.tensor(np.float64(2.5)).dtype,
        torch.tensor([np.float32(1.0)]).dtype,
    ),
)
chk("set_default_dtype", lambda: (torch.set_default_dtype(torch.float64),))
chk(
    "default64",
    lambda: (
        torch.tensor([1.0]).dtype,
        torch.zeros(2).dtype,
        torch.arange(3.0).dtype,
        torch.randn(2).dtype,
    ),
)
chk("reset_default_dtype", lambda: (torch.set_default_dtype(torch.float32),))
chk(
    "get_device",
    lambda: (
        t.get_device(),
        t.is_cpu if hasattr(t, "is_cpu") else "na",
    ),
)
print("OK" if not ERRORS else f"ERRORS {len(ERRORS)}: {ERRORS}")
