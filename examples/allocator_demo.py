"""The caching allocator under a training workload: the memory a small CNN's
training steps allocate and free, replayed through ember_allocator.

    python examples/allocator_demo.py --out runs/allocator_demo [--steps 6] [--batch 64]

Each step does what a framework does for a CIFAR-sized convnet
(conv-relu-pool, conv-relu-pool, linear-relu, linear, cross-entropy): a forward
pass that keeps the activations backward needs and frees temporaries (im2col
workspaces, pooling indices it no longer needs), a backward pass that frees each
activation once used and allocates gradients, and an SGD-with-momentum update
whose buffers live across steps.  Every tensor's memory is written once, as a
kernel writing its output would, so first-touch page faults show in the times.

It prints the cache hit rate, how many system allocations served how many tensor
allocations, per-step times, the allocator's statistics, and writes
``timeline.png`` (allocated vs reserved bytes over time) and ``history.json``
(the raw events, for ``tools/memory_timeline.py``) to --out.
"""

import argparse
import ctypes
import json
import pathlib
import sys
import time

import ember_allocator

ROOT = pathlib.Path(__file__).resolve().parent.parent
F32, I64 = 4, 8


def conv(name, cin, cout, k, hw):
    return {"kind": "conv", "name": name, "cin": cin, "cout": cout, "k": k, "hw": hw}


def pool(name, c, hw):
    return {"kind": "pool", "name": name, "c": c, "hw": hw}


def linear(name, fin, fout):
    return {"kind": "linear", "name": name, "fin": fin, "fout": fout}


def relu(name, numel_per_sample):
    return {"kind": "relu", "name": name, "numel": numel_per_sample}


# A small CNN for 3x32x32 images: what the tensors of one sample weigh.
NET = [
    conv("conv1", 3, 32, 3, 32),
    relu("relu1", 32 * 32 * 32),
    pool("pool1", 32, 32),
    conv("conv2", 32, 64, 3, 16),
    relu("relu2", 64 * 16 * 16),
    pool("pool2", 64, 16),
    linear("fc1", 64 * 8 * 8, 256),
    relu("relu3", 256),
    linear("fc2", 256, 10),
]


def parameters(layer):
    if layer["kind"] == "conv":
        return {"weight": layer["cout"] * layer["cin"] * layer["k"] ** 2, "bias": layer["cout"]}
    if layer["kind"] == "linear":
        return {"weight": layer["fout"] * layer["fin"], "bias": layer["fout"]}
    return {}


class Memory:
    """Tensors as blocks of the allocator; every new tensor is written once."""

    def __init__(self, allocator):
        self.allocator = allocator

    def new(self, nbytes):
        block = self.allocator.allocate(nbytes)
        ctypes.memset(block.ptr, 0, nbytes)  # the kernel producing it writes it
        return block


def forward(mem, batch, x):
    """Returns (logits, saved): saved[i] is what layer i keeps for backward."""
    saved = []
    for layer in NET:
        kind = layer["kind"]
        if kind == "conv":
            hw, cin, cout, k = layer["hw"], layer["cin"], layer["cout"], layer["k"]
            cols = mem.new(batch * cin * k * k * hw * hw * F32)  # im2col workspace
            out = mem.new(batch * cout * hw * hw * F32)
            del cols
            saved.append([x])  # the input, for the weight gradient
        elif kind == "relu":
            out = mem.new(batch * layer["numel"] * F32)
            saved.append([out])  # the output, for the mask
        elif kind == "pool":
            hw, c = layer["hw"] // 2, layer["c"]
            out = mem.new(batch * c * hw * hw * F32)
            indices = mem.new(batch * c * hw * hw * I64)
            saved.append([indices])
        else:
            out = mem.new(batch * layer["fout"] * F32)
            saved.append([x])
        x = out
    return x, saved


def backward(mem, batch, graph, grads):
    """Frees the activations as their layer's backward runs; allocates grads.
    ``graph`` holds the only references to the forward's tensors."""
    grad = mem.new(batch * NET[-1]["fout"] * F32)  # d loss / d logits (softmax - onehot)
    del graph["logits"]
    saved = graph["saved"]
    for i in range(len(NET) - 1, -1, -1):
        layer = NET[i]
        kind = layer["kind"]
        for pname, numel in parameters(layer).items():
            if kind == "conv" and pname == "weight":
                hw, cin, k = layer["hw"], layer["cin"], layer["k"]
                cols = mem.new(batch * cin * k * k * hw * hw * F32)
                grads[(layer["name"], pname)] = mem.new(numel * F32)
                del cols
            else:
                grads[(layer["name"], pname)] = mem.new(numel * F32)
        if i == 0:
            break  # no gradient for the input images
        if kind == "conv":
            in_numel = layer["cin"] * layer["hw"] ** 2
        elif kind == "linear":
            in_numel = layer["fin"]
        elif kind == "pool":
            in_numel = layer["c"] * layer["hw"] ** 2
        else:
            in_numel = layer["numel"]
        grad_in = mem.new(batch * in_numel * F32)
        saved[i] = None  # this layer's saved tensors are no longer needed
        grad = grad_in
    del grad
    saved.clear()


def train_step(mem, batch, grads, momentum):
    images = mem.new(batch * 3 * 32 * 32 * F32)  # the DataLoader's batch
    labels = mem.new(batch * I64)
    logits, saved = forward(mem, batch, images)
    graph = {"logits": logits, "saved": saved}
    del images, logits, saved  # the graph keeps them (images until conv1's backward)
    loss = mem.new(F32)
    backward(mem, batch, graph, grads)
    del labels, loss
    for key, grad in grads.items():  # SGD with momentum: buffers live across steps
        if key not in momentum:
            momentum[key] = mem.new(grad.nbytes)
    grads.clear()  # zero_grad(set_to_none=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/allocator_demo", help="output directory")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    allocator = ember_allocator.CachingAllocator("host", history=100_000)
    mem = Memory(allocator)
    weights = {
        (layer["name"], p): mem.new(n * F32) for layer in NET for p, n in parameters(layer).items()
    }
    grads, momentum, step_times = {}, {}, []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        train_step(mem, args.batch, grads, momentum)
        step_times.append(time.perf_counter() - t0)

    s = allocator.memory_stats()
    f = ember_allocator.format_bytes
    requests = s["cache_hits"] + s["cache_misses"]
    print(f"ember_allocator demo: {args.steps} training steps of a small CNN, batch {args.batch}")
    print(
        f"  {requests} tensor allocations served by {s['num_device_alloc']} system allocations: "
        f"cache hit rate {s['cache_hits'] / requests:.1%}"
    )
    print(
        "  step times: "
        + ", ".join(f"{t * 1e3:.1f} ms" for t in step_times)
        + "  (the first step faults its pages in; later steps reuse them)"
    )
    for name in ("allocated", "reserved"):
        now, peak = s[f"{name}_bytes.all.current"], s[f"{name}_bytes.all.peak"]
        print(f"  {name + ' now':<14} {f(now):>12}   peak {f(peak)}")
    print(
        f"  segments       {s['segment.all.current']:>12}   "
        f"(small {s['segment.small_pool.current']}, large {s['segment.large_pool.current']})"
    )
    print(f"  inactive split {f(s['inactive_split_bytes.all.current']):>12}   OOMs {s['num_ooms']}")

    events = allocator.history()
    (out / "history.json").write_text(json.dumps({"events": events}))
    sys.path.insert(0, str(ROOT / "tools"))
    import memory_timeline

    png = memory_timeline.plot_timeline(
        events, out / "timeline.png", title=f"small CNN, {args.steps} steps"
    )
    print(f"  timeline: {png} ({len(events)} events; raw events in {out / 'history.json'})")

    del weights
    momentum.clear()
    allocator.empty_cache()
    assert allocator.memory_stats()["reserved_bytes.all.current"] == 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
