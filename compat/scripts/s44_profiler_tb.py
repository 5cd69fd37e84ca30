# A training loop instrumented the usual way: torch.profiler with a schedule,
# record_function labels, a trace handler, TensorBoard logging read back with
# tensorboard's EventAccumulator, and the single-process branch of torch.distributed.
import json
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.tensorboard import SummaryWriter

# --- the usual distributed guards, taking the single-process path
if dist.is_available() and dist.is_initialized():
    rank, world_size = dist.get_rank(), dist.get_world_size()
else:
    rank, world_size = 0, 1
print("CHECK dist_path", rank, world_size, dist.is_initialized())
try:
    dist.get_rank()
except ValueError as e:
    print("CHECK dist_get_rank_error", type(e).__name__, "process group" in str(e))
is_main = rank == 0

# --- a small model with fixed weights and data
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (0.5 + 0.1 * i))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.linspace(-1, 1, 32).reshape(8, 4)
y = x.sum(1, keepdim=True) * 0.3


def train_step():
    with record_function("forward"):
        loss = nn.functional.mse_loss(model(x), y)
    with record_function("backward"):
        opt.zero_grad()
        loss.backward()
    with record_function("optimizer"):
        opt.step()
    return loss.item()


tmp = tempfile.mkdtemp()
cycles = []


def on_ready(prof):
    counts = {a.key: a.count for a in prof.key_averages()}
    names = {e.name for e in prof.events()}
    cycles.append(prof.step_num)
    print(
        "CHECK cycle",
        prof.step_num,
        counts.get("ProfilerStep*"),
        counts.get("forward"),
        counts.get("backward"),
        counts.get("optimizer"),
    )
    print(
        "CHECK cycle_has_ops",
        any(n.startswith("aten::") for n in names),
        {"aten::addmm", "aten::relu"} <= names,
    )
    path = os.path.join(tmp, f"trace_{prof.step_num}.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        spans = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    print(
        "CHECK trace_ranges",
        sorted({e["name"] for e in spans} & {"forward", "backward", "optimizer"}),
    )


losses = []
with profile(
    activities=[ProfilerActivity.CPU],
    schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
    on_trace_ready=on_ready,
    record_shapes=True,
) as prof:
    for step in range(10):
        losses.append(train_step())
        prof.step()
print("CHECK cycles", cycles)
print("CHECK losses", [round(v, 5) for v in losses[:3]], round(losses[-1], 5))

# The whole-block profiler without a schedule, with shapes and memory.
with profile(record_shapes=True, profile_memory=True) as prof2:
    with record_function("eval"):
        out = model(x)
        scaled = out * 2
keys = prof2.key_averages(group_by_input_shape=True)
mul = [a for a in keys if a.key == "aten::mul"]
print("CHECK mul_shapes", [a.input_shapes for a in mul][:1], [a.count for a in mul])
table = prof2.key_averages().table(sort_by="cpu_time_total", row_limit=5)
print("CHECK table_header", table.splitlines()[1].split())
print("CHECK table_top", table.splitlines()[3].split()[0], table.splitlines()[-1].split(":")[0])

# --- TensorBoard: log, then read the event files back
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

logdir = os.path.join(tmp, "tb")
with SummaryWriter(logdir) as writer:
    for step, value in enumerate(losses[:5]):
        writer.add_scalar("loss/train", value, step)
    writer.add_scalars("cmp", {"a": 1.0, "b": 2.0}, 0)
    writer.add_histogram("w0", model[0].weight, 0)
    writer.add_image("img", torch.linspace(0, 1, 3 * 4 * 6).reshape(3, 4, 6), 0)
    writer.add_text("notes", "fixed-weight run", 0)
    writer.add_hparams({"lr": 0.05, "opt": "sgd"}, {"hp/final_loss": losses[-1]}, run_name="hp")
acc = EventAccumulator(logdir, size_guidance={"images": 0, "tensors": 0})
acc.Reload()
print("CHECK tb_scalars", [(e.step, round(e.value, 5)) for e in acc.Scalars("loss/train")])
h = acc.Histograms("w0")[0].histogram_value
print("CHECK tb_hist", h.num, round(h.min, 5), round(h.max, 5), round(h.sum, 4), int(sum(h.bucket)))
img = acc.Images("img")[0]
print("CHECK tb_image", img.width, img.height)
print("CHECK tb_text", acc.Tensors("notes/text_summary")[0].tensor_proto.string_val[0].decode())
cmp = EventAccumulator(os.path.join(logdir, "cmp_b"))
cmp.Reload()
print("CHECK tb_scalars_dir", cmp.Scalars("cmp")[0].value)
hp = EventAccumulator(os.path.join(logdir, "hp"))
hp.Reload()
print("CHECK tb_hparams_metric", round(hp.Scalars("hp/final_loss")[0].value, 5))
print("OK")
