"""Training-step throughput of CPU-sized analogues of the six models in the PyTorch
paper's throughput table, ember vs PyTorch in one run (samples/s, medians).

Target (issue 6): every model at least 0.83x PyTorch's throughput (the paper's
bar: within 17% of the fastest), the MLP and NCF at least 1.0x.  Also small-op
programs (issue 17: at least PyTorch's throughput on one thread), character-level
models where what an op costs to issue counts more than its kernel: Bengio's MLP
(`charmlp`), a GRU cell unrolled step by step (`chargru`), a 2-layer 128-wide GPT
(`chargpt`, block 64, batch 12).

The same model code runs on both libraries: it is written against a module `T`
(ember or torch) with `T.nn`, so ember runs exactly what PyTorch runs.
"""

import argparse
import importlib.util
import os
import sys

# The shared harness, loaded by its path: this directory stays off sys.path so no
# benchmark script can shadow a standard-library module for the libraries below.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
_spec = importlib.util.spec_from_file_location("_harness", os.path.join(_HERE, "_harness.py"))
_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)
median_time, table, try_import = _harness.median_time, _harness.table, _harness.try_import


def build(T, name):
    nn = T.nn
    F = T.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
            )

        def forward(self, x):
            return self.net(x)

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 32, 3, padding=1)
            self.c2 = nn.Conv2d(32, 64, 3, padding=1)
            self.fc1 = nn.Linear(64 * 8 * 8, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.c1(x)), 2)
            x = F.max_pool2d(F.relu(self.c2(x)), 2)
            return self.fc2(F.relu(self.fc1(x.flatten(1))))

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            out = F.relu(self.b1(self.c1(x)))
            out = self.b2(self.c2(out))
            return F.relu(out + (x if self.short is None else self.short(x)))

    class ResNet18(nn.Module):
        def __init__(self, width=64):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()
            )
            layers, cin = [], width
            for i, n in enumerate((2, 2, 2, 2)):
                cout = width * 2**i
                for j in range(n):
                    layers.append(Block(cin, cout, 2 if (j == 0 and i > 0) else 1))
                    cin = cout
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, 10)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    class MobileNet(nn.Module):
        def __init__(self):
            super().__init__()

            def dw(cin, cout, stride):
                return nn.Sequential(
                    nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
                    nn.BatchNorm2d(cin),
                    nn.ReLU(),
                    nn.Conv2d(cin, cout, 1, bias=False),
                    nn.BatchNorm2d(cout),
                    nn.ReLU(),
                )

            self.features = nn.Sequential(
                nn.Conv2d(3, 32, 3, 1, 1, bias=False),
                nn.BatchNorm2d(32),
                nn.ReLU(),
                dw(32, 64, 1),
                dw(64, 128, 2),
                dw(128, 128, 1),
                dw(128, 256, 2),
                dw(256, 256, 1),
                dw(256, 512, 2),
            )
            self.fc = nn.Linear(512, 10)

        def forward(self, x):
            return self.fc(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))

    class LSTMLM(nn.Module):
        def __init__(self, vocab=10000, hidden=256):
            super().__init__()
            self.emb = nn.Embedding(vocab, hidden)
            self.lstm = nn.LSTM(hidden, hidden)
            self.dec = nn.Linear(hidden, vocab)

        def forward(self, x):
            out, _ = self.lstm(self.emb(x))
            return self.dec(out)

    class NCF(nn.Module):
        def __init__(self, users=10000, items=10000, dim=64):
            super().__init__()
            self.u = nn.Embedding(users, dim)
            self.i = nn.Embedding(items, dim)
            self.mlp = nn.Sequential(
                nn.Linear(2 * dim, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1)
            )

        def forward(self, users, items):
            return self.mlp(T.cat([self.u(users), self.i(items)], 1)).squeeze(1)

    # Small-op programs (issue 17): character-level models in the spirit of well-known
    # minimal examples, where what an op costs to issue matters more than its kernel.
    vocab = 65

    class CharMLP(nn.Module):  # Bengio et al. 2003's model, as in makemore
        def __init__(self, block=8, emb=24, hidden=256):
            super().__init__()
            self.emb = nn.Embedding(vocab, emb)
            self.h = nn.Linear(block * emb, hidden)
            self.ln = nn.LayerNorm(hidden)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, idx):
            return self.out(T.tanh(self.ln(self.h(self.emb(idx).flatten(1)))))

    class CharGRU(nn.Module):  # a GRU cell unrolled over the block, one step at a time
        def __init__(self, emb=32, hidden=128):
            super().__init__()
            self.emb = nn.Embedding(vocab, emb)
            self.cell = nn.GRUCell(emb, hidden)
            self.out = nn.Linear(hidden, vocab)
            self.hidden = hidden

        def forward(self, idx):
            x = self.emb(idx)
            h = T.zeros(idx.shape[0], self.hidden)
            logits = []
            for t in range(idx.shape[1]):
                h = self.cell(x[:, t], h)
                logits.append(self.out(h))
            return T.stack(logits, 1)

    class Attention(nn.Module):
        def __init__(self, width, heads, block):
            super().__init__()
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.heads = heads
            self.register_buffer("mask", T.tril(T.ones(block, block)).view(1, 1, block, block))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = (
                y.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                for y in self.qkv(x).split(c, dim=2)
            )
            att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
            att = F.softmax(att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")), dim=-1)
            return self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))

    class GPTBlock(nn.Module):
        def __init__(self, width, heads, block):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.attn = Attention(width, heads, block)
            self.fc, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(F.gelu(self.fc(self.ln2(x))))

    class CharGPT(nn.Module):  # nanoGPT's model: 2 layers, 128 wide, block 64
        def __init__(self, width=128, heads=4, layers=2, block=64):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(block, width)
            self.blocks = nn.Sequential(*[GPTBlock(width, heads, block) for _ in range(layers)])
            self.ln = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(T.arange(idx.shape[1]))
            return self.head(self.ln(self.blocks(x)))

    T.manual_seed(0)
    if name == "mlp":
        model, batch = MLP(), 128
        x, y = T.randn(batch, 784), T.randint(0, 10, (batch,))
        return model, batch, lambda: F.cross_entropy(model(x), y)
    if name == "cnn":
        model, batch = SmallCNN(), 64
        x, y = T.randn(batch, 3, 32, 32), T.randint(0, 10, (batch,))
        return model, batch, lambda: F.cross_entropy(model(x), y)
    if name == "resnet18":
        model, batch = ResNet18(), 32
        x, y = T.randn(batch, 3, 32, 32), T.randint(0, 10, (batch,))
        return model, batch, lambda: F.cross_entropy(model(x), y)
    if name == "mobilenet":
        model, batch = MobileNet(), 32
        x, y = T.randn(batch, 3, 32, 32), T.randint(0, 10, (batch,))
        return model, batch, lambda: F.cross_entropy(model(x), y)
    if name == "lstm":
        model, seq, batch = LSTMLM(), 35, 20
        x, y = T.randint(0, 10000, (seq, batch)), T.randint(0, 10000, (seq * batch,))
        return model, batch, lambda: F.cross_entropy(model(x).reshape(-1, 10000), y)
    if name == "ncf":
        model, batch = NCF(), 1024
        u, i = T.randint(0, 10000, (batch,)), T.randint(0, 10000, (batch,))
        y = T.randint(0, 2, (batch,)).float()
        return model, batch, lambda: F.binary_cross_entropy_with_logits(model(u, i), y)
    if name == "charmlp":
        model, batch, block = CharMLP(), 32, 8
        x, y = T.randint(0, vocab, (batch, block)), T.randint(0, vocab, (batch,))
        return model, batch, lambda: F.cross_entropy(model(x), y)
    if name in ("chargru", "chargpt"):
        model, batch, block = (CharGRU(), 32, 16) if name == "chargru" else (CharGPT(), 12, 64)
        x, y = T.randint(0, vocab, (batch, block)), T.randint(0, vocab, (batch * block,))
        return model, batch, lambda: F.cross_entropy(model(x).view(-1, vocab), y)
    raise ValueError(name)


def throughput(T, name, repeat, warmup=3, compiled=False):
    """Samples/s of training steps of model `name` built with library T (median step);
    ``compiled``: the whole step (forward, backward, optimizer) through T.compile."""
    model, batch, loss_fn = build(T, name)
    opt = T.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()

    if compiled:  # ember.compile: one eager call, two recordings, then replays
        step = T.compile(step)
        warmup += 3
    for _ in range(warmup):
        step()
    return batch / median_time(step, number=1, repeat=repeat, min_time=0)


# JAX's jit, for `--compile`: the MLP and NCF steps written in JAX (same sizes,
# SGD with momentum 0.9), compiled by XLA as a whole.
JAX_MODELS = ("mlp", "ncf")


def jax_throughput(name, repeat, warmup=3):
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)

    def linear(key, fan_in, fan_out):
        k1, k2 = jax.random.split(key)
        bound = 1 / fan_in**0.5
        return (
            jax.random.uniform(k1, (fan_in, fan_out), minval=-bound, maxval=bound),
            jax.random.uniform(k2, (fan_out,), minval=-bound, maxval=bound),
        )

    def mlp(params, h):
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i < len(params) - 1:
                h = jax.nn.relu(h)
        return h

    keys = jax.random.split(key, 8)
    if name == "mlp":
        batch, sizes = 128, (784, 256, 256, 10)
        params = {"mlp": [linear(keys[i], a, b) for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]}
        x = jax.random.normal(keys[5], (batch, 784))
        y = jax.random.randint(keys[6], (batch,), 0, 10)

        def loss_fn(p):
            logits = mlp(p["mlp"], x)
            return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))

    elif name == "ncf":
        batch, dim, sizes = 1024, 64, (128, 128, 64, 1)
        params = {
            "u": jax.random.normal(keys[0], (10000, dim)),
            "i": jax.random.normal(keys[1], (10000, dim)),
            "mlp": [linear(keys[2 + i], a, b) for i, (a, b) in enumerate(zip(sizes, sizes[1:]))],
        }
        u = jax.random.randint(keys[5], (batch,), 0, 10000)
        it = jax.random.randint(keys[6], (batch,), 0, 10000)
        y = jax.random.randint(keys[7], (batch,), 0, 2).astype(jnp.float32)

        def loss_fn(p):
            z = mlp(p["mlp"], jnp.concatenate([p["u"][u], p["i"][it]], 1))[:, 0]
            return jnp.mean(jnp.maximum(z, 0) - z * y + jnp.log1p(jnp.exp(-jnp.abs(z))))

    else:
        raise ValueError(name)

    @jax.jit
    def step(params, mom):
        loss, grads = jax.value_and_grad(loss_fn)(params)
        mom = jax.tree_util.tree_map(lambda m, g: 0.9 * m + g, mom, grads)
        params = jax.tree_util.tree_map(lambda p, m: p - 0.01 * m, params, mom)
        return params, mom, loss

    state = [params, jax.tree_util.tree_map(jnp.zeros_like, params)]

    def run():
        state[0], state[1], loss = step(state[0], state[1])
        loss.block_until_ready()

    for _ in range(warmup):
        run()
    return batch / median_time(run, number=1, repeat=repeat, min_time=0)


def _worker(library, name, repeat, threads):
    """Run in a child process: one library only, so neither library's idle worker
    threads (OpenMP, OpenBLAS spin-waits) steal cores from the other's kernels.
    ``library``: ember, torch, ember-compile (ember.compile) or jax (jit)."""
    import json

    if library == "jax":
        print(json.dumps(jax_throughput(name, repeat)))
        return
    T = __import__(library.split("-")[0])
    T.set_num_threads(threads)
    print(json.dumps(throughput(T, name, repeat, compiled=library.endswith("-compile"))))


def _measure(library, name, repeat, threads):
    import json
    import subprocess

    out = subprocess.run(
        [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            library,
            "--models",
            name,
            "--repeat",
            str(repeat),
            "--threads",
            str(threads),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--models", default="mlp,cnn,resnet18,mobilenet,lstm,ncf,charmlp,chargru,chargpt"
    )
    parser.add_argument("--repeat", type=int, default=10, help="timed steps per process (median)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating ember/torch processes per model"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="threads for both libraries (default: ember's)"
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="also ember.compile'd steps (and JAX's jit for the MLP and NCF when installed)",
    )
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.models, args.repeat, args.threads)
        return
    if args.compile:
        _compare_compiled(args)
        return
    import statistics

    import ember

    threads = args.threads or ember.get_num_threads()
    has_torch = try_import("torch") is not None
    rows = []
    for name in args.models.split(","):
        # ember and torch alternate, each in a fresh process; medians over rounds
        te, tt = [], []
        for _ in range(args.rounds):
            te.append(_measure("ember", name, args.repeat, threads))
            if has_torch:
                tt.append(_measure("torch", name, args.repeat, threads))
        e = statistics.median(te)
        t = statistics.median(tt) if tt else None
        rows.append([name, f"{e:.1f}", f"{t:.1f}" if t else "-", f"{e / t:.2f}" if t else "-"])
        print(
            f"{name}: ember {[round(x, 1) for x in te]} torch {[round(x, 1) for x in tt]}",
            flush=True,
        )
    print(
        f"samples/s (training steps), {threads} threads, median of {args.rounds} alternating "
        "processes x "
        f"{args.repeat} steps"
    )
    table(rows, ["model", "ember", "torch", "ember/torch"])


def _compare_compiled(args):
    """ember eager, ember.compile and JAX's jit against PyTorch eager, same run."""
    import statistics

    import ember

    threads = args.threads or ember.get_num_threads()
    has_torch = try_import("torch") is not None
    has_jax = try_import("jax") is not None
    libraries = ["ember", "ember-compile"] + ["torch"] * has_torch + ["jax"] * has_jax
    rows = []
    for name in args.models.split(","):
        runs = {lib: [] for lib in libraries}
        for _ in range(args.rounds):
            for lib in libraries:
                if lib == "jax" and name not in JAX_MODELS:
                    continue
                runs[lib].append(_measure(lib, name, args.repeat, threads))
        med = {lib: statistics.median(v) for lib, v in runs.items() if v}
        t = med.get("torch")

        def ratio(lib, t=t, med=med):  # time relative to PyTorch eager: below 1 is faster
            return f"{t / med[lib]:.2f}" if t and lib in med else "-"

        rows.append(
            [name]
            + [f"{med[lib]:.1f}" if lib in med else "-" for lib in libraries]
            + [ratio("ember"), ratio("ember-compile")]
            + ([ratio("jax")] if has_jax else [])
        )
        print(name, {lib: [round(x, 1) for x in v] for lib, v in runs.items()}, flush=True)
    print(
        f"samples/s (training steps), {threads} threads, median of {args.rounds} rounds x "
        f"{args.repeat} steps; ratios are step times relative to PyTorch eager (below 1: faster)"
    )
    names = {"ember": "ember", "ember-compile": "compiled", "torch": "torch", "jax": "jax jit"}
    header = ["model"] + [names[lib] for lib in libraries] + ["eager/torch", "compiled/torch"]
    table(rows, header + (["jax/torch"] if has_jax else []))


if __name__ == "__main__":
    main()
