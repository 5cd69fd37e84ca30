# A nanoGPT-shaped model: weight tying, fused qkv, SDPA with is_causal, GELU MLP,
# AdamW with param groups (no decay on norms/biases), cosine warmup LR, grad clipping,
# bfloat16 autocast on the CPU, torch.compile, and sampling with top-k + multinomial.
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.set_float32_matmul_precision("high")
text = "hello world, this is a tiny corpus for a tiny gpt. " * 4
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
V, T, C, NH = len(chars), 16, 32, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.mlp = nn.Sequential(
            nn.Linear(C, 4 * C), nn.GELU(approximate="tanh"), nn.Linear(4 * C, C)
        )

    def forward(self, x):
        B, L, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, L, NH, C // NH).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, L, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.ln_f = nn.LayerNorm(C)
        self.head = nn.Linear(C, V, bias=False)
        self.head.weight = self.wte.weight
        self.apply(self._init)
        for pn, p in self.named_parameters():
            if pn.endswith("proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(4))

    def _init(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln_f(x))
        loss = (
            None
            if targets is None
            else F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=-1)
        )
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, n, temperature=1.0, top_k=None):
        for _ in range(n):
            logits, _ = self(idx[:, -T:])
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx


torch.manual_seed(1337)
model = GPT()
n_params = sum(p.numel() for p in model.parameters())
print("CHECK params", n_params)
decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
print("CHECK groups", len(decay), len(no_decay))
opt = torch.optim.AdamW(
    [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
    lr=3e-3,
    betas=(0.9, 0.95),
    fused=False,
)
cmodel = torch.compile(model)


def get_lr(it, warmup=5, max_it=40, lr=3e-3, min_lr=3e-4):
    if it < warmup:
        return lr * (it + 1) / warmup
    ratio = (it - warmup) / (max_it - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


g = torch.Generator().manual_seed(0)
losses = []
for it in range(40):
    ix = torch.randint(len(data) - T - 1, (8,), generator=g)
    x = torch.stack([data[i : i + T] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + T] for i in ix])
    for pg in opt.param_groups:
        pg["lr"] = get_lr(it)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        _, loss = cmodel(x, y)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    losses.append(loss.item())
print("CHECK loss_dtype", loss.dtype)
print("CHECK learned", losses[-1] < losses[0] - 0.5)
print("CHECK lr_end", round(get_lr(39), 6))
out = model.generate(torch.zeros((1, 1), dtype=torch.long), 20, temperature=0.8, top_k=5)
print("CHECK gen_shape", tuple(out.shape), int(out.max()) < V)
print("OK")
