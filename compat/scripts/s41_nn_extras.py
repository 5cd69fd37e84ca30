# Less common torch.nn / optim pieces as scripts use them: an adaptive-softmax language
# model step, a GAN discriminator with the legacy (hook-based) spectral_norm, SyncBatchNorm
# conversion, orthogonal RNN weights, Adafactor, fractional max pooling, anti-aliased
# resizing, SDPA backend selection and nn.grad (fixed weights and inputs in every CHECK).
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.utils import parametrizations, remove_spectral_norm, spectral_norm

rng = np.random.RandomState(0)


def fixed(module, scale=0.5):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.uniform(-scale, scale, tuple(p.shape)), dtype=p.dtype))
    return module


def r4(t):
    return round(float(t.detach()) if isinstance(t, torch.Tensor) else float(t), 4)


# ---- adaptive softmax language model: embedding -> GRU -> AdaptiveLogSoftmaxWithLoss
class LM(nn.Module):
    def __init__(self, vocab=60, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.asm = nn.AdaptiveLogSoftmaxWithLoss(dim, vocab, cutoffs=[10, 30], div_value=2.0)

    def forward(self, tokens, targets):
        h, _ = self.rnn(self.emb(tokens))
        return self.asm(h.reshape(-1, h.size(-1)), targets.reshape(-1))


lm = fixed(LM())
print("CHECK asm_repr", repr(lm.asm).replace("\n", "|"))
print("CHECK asm_keys", list(lm.asm.state_dict().keys()))
tokens = torch.tensor(rng.randint(0, 60, (3, 7)))
targets = torch.tensor(rng.randint(0, 60, (3, 7)))
opt = torch.optim.SGD(lm.parameters(), lr=0.5)
for step in range(3):
    out = lm(tokens, targets)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    print("CHECK asm_loss", step, r4(out.loss), type(out).__name__, list(out.output.shape))
with torch.no_grad():
    h, _ = lm.rnn(lm.emb(tokens))
    flat = h.reshape(-1, 16)
    lp = lm.asm.log_prob(flat)
    print("CHECK asm_logprob", list(lp.shape), r4(lp.exp().sum(1).mean()), r4(lp.sum()))
    print("CHECK asm_predict", lm.asm.predict(flat).tolist() == lp.argmax(1).tolist())

# ---- GAN discriminator with the legacy spectral norm
disc = nn.Sequential(
    spectral_norm(fixed(nn.Conv2d(3, 8, 4, 2, 1))),
    nn.LeakyReLU(0.2),
    spectral_norm(fixed(nn.Conv2d(8, 16, 4, 2, 1))),
    nn.LeakyReLU(0.2),
    nn.Flatten(),
    spectral_norm(fixed(nn.Linear(16 * 2 * 2, 1))),
)
print("CHECK sn_keys", list(disc.state_dict().keys()))
with torch.no_grad():  # fixed starting singular vectors
    for m in (disc[0], disc[2], disc[5]):
        m.weight_u.copy_(
            F.normalize(torch.tensor(rng.randn(*m.weight_u.shape), dtype=torch.float32), dim=0)
        )
        m.weight_v.copy_(
            F.normalize(torch.tensor(rng.randn(*m.weight_v.shape), dtype=torch.float32), dim=0)
        )
images = torch.tensor(rng.randn(4, 3, 8, 8), dtype=torch.float32)
d_opt = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
for step in range(3):
    loss = F.binary_cross_entropy_with_logits(disc(images), torch.ones(4, 1))
    d_opt.zero_grad()
    loss.backward()
    d_opt.step()
    print("CHECK sn_loss", step, r4(loss))
for _ in range(30):
    disc(images)
w = disc[2].weight_orig.detach().reshape(16, -1).numpy()
sigma = np.linalg.svd(w, compute_uv=False)[0]
print(
    "CHECK sn_sigma",
    np.allclose(disc[2].weight.detach().reshape(16, -1).numpy(), w / sigma, atol=1e-3),
)
disc.eval()
print("CHECK sn_eval", r4(disc(images).sum()))
sd = disc.state_dict()
print("CHECK sn_meta", sd._metadata["0"].get("spectral_norm"))
remove_spectral_norm(disc[0])
print("CHECK sn_removed", sorted(n for n, _ in disc[0].named_parameters()))

# ---- SyncBatchNorm conversion (one process: plain batch norm)
net = fixed(
    nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.BatchNorm2d(4, affine=False))
)
ref = net[1].weight
sync = nn.SyncBatchNorm.convert_sync_batchnorm(net)
print("CHECK sync_repr", repr(sync).replace("\n", "|"))
print("CHECK sync_shared", sync[1].weight is ref, list(sync.state_dict().keys()))
y = sync(images)
print(
    "CHECK sync_out", r4(y.sum()), r4(sync[1].running_mean.sum()), int(sync[1].num_batches_tracked)
)
try:
    nn.SyncBatchNorm(4)(torch.ones(4))
except ValueError as e:
    print("CHECK sync_err", e)

# ---- orthogonal recurrent weights
rnn = fixed(nn.RNN(6, 6, batch_first=True))
parametrizations.orthogonal(rnn, "weight_hh_l0")
Q = rnn.weight_hh_l0
print("CHECK orth", torch.allclose(Q.T @ Q, torch.eye(6), atol=1e-5), list(rnn.state_dict().keys()))
o_opt = torch.optim.SGD(rnn.parameters(), lr=0.1)
seq = torch.tensor(rng.randn(2, 5, 6), dtype=torch.float32)
for step in range(3):
    out, h = rnn(seq)
    loss = out.pow(2).mean()
    o_opt.zero_grad()
    loss.backward()
    o_opt.step()
    print("CHECK orth_loss", step, r4(loss))
Q = rnn.weight_hh_l0
print("CHECK orth_after", torch.allclose(Q.T @ Q, torch.eye(6), atol=1e-5))
tall = parametrizations.orthogonal(fixed(nn.Linear(3, 7)), orthogonal_map="householder")
print("CHECK orth_tall", torch.allclose(tall.weight.T @ tall.weight, torch.eye(3), atol=1e-5))

# ---- Adafactor
model = fixed(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2)))
xs = torch.tensor(rng.randn(32, 8), dtype=torch.float32)
ys = torch.tensor(rng.randn(32, 2), dtype=torch.float32)
a_opt = torch.optim.Adafactor(model.parameters(), lr=0.05, weight_decay=0.01)
for step in range(5):
    loss = F.mse_loss(model(xs), ys)
    a_opt.zero_grad()
    loss.backward()
    a_opt.step()
    print("CHECK adafactor", step, r4(loss))
state = a_opt.state_dict()
print(
    "CHECK adafactor_state",
    sorted(state["state"][0].keys()),
    sorted(state["param_groups"][0].keys()),
)
a2 = torch.optim.Adafactor(model.parameters(), lr=0.05)
a2.load_state_dict(state)
print(
    "CHECK adafactor_load",
    a2.param_groups[0]["weight_decay"],
    float(a2.state_dict()["state"][0]["step"]),
)

# ---- fractional max pooling with fixed samples, anti-aliased resize, conv_tbc, LRN
x = torch.tensor(rng.randn(2, 3, 9, 11), dtype=torch.float32)
samples = torch.tensor(rng.rand(2, 3, 2), dtype=torch.float32)
pool = nn.FractionalMaxPool2d(3, output_size=(4, 5), return_indices=True, _random_samples=samples)
v, idx = pool(x)
print("CHECK frac", list(v.shape), r4(v.sum()), idx[0, 0].tolist())
v3 = F.fractional_max_pool3d(
    x.unsqueeze(2).expand(2, 3, 4, 9, 11),
    2,
    output_ratio=(0.5, 0.5, 0.5),
    _random_samples=torch.tensor(rng.rand(2, 3, 3), dtype=torch.float32),
)
print("CHECK frac3d", list(v3.shape), r4(v3.sum()))
small = F.interpolate(x, size=(4, 5), mode="bilinear", antialias=True)
cubic = F.interpolate(x, scale_factor=0.5, mode="bicubic", antialias=True)
print("CHECK aa", r4(small.sum()), r4(cubic.sum()), list(cubic.shape))
tbc = F.conv_tbc(
    torch.tensor(rng.randn(6, 2, 3), dtype=torch.float32),
    torch.tensor(rng.randn(3, 3, 4), dtype=torch.float32),
    torch.ones(4),
    1,
)
print("CHECK conv_tbc", list(tbc.shape), r4(tbc.sum()))
print("CHECK lrn", r4(nn.CrossMapLRN2d(3, 1e-2)(x).sum()), nn.CrossMapLRN2d(3))

# ---- SDPA backend selection and nn.grad
q = torch.tensor(rng.randn(1, 2, 4, 8), dtype=torch.float32)
with sdpa_kernel(SDPBackend.MATH):
    a = F.scaled_dot_product_attention(q, q, q, is_causal=True)
with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
    b = F.scaled_dot_product_attention(q, q, q, is_causal=True)
print("CHECK sdpa", r4(a.sum()), torch.allclose(a, b, atol=1e-6))
try:
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        F.scaled_dot_product_attention(q, q, q)
except RuntimeError as e:
    print("CHECK sdpa_err", str(e)[:40])
inp = torch.tensor(rng.randn(1, 2, 6, 6), dtype=torch.float32, requires_grad=True)
wt = torch.tensor(rng.randn(3, 2, 3, 3), dtype=torch.float32, requires_grad=True)
out = F.conv2d(inp, wt, stride=2, padding=1)
go = torch.ones_like(out)
gi, gw = torch.autograd.grad(out, (inp, wt), go)
print(
    "CHECK nn_grad",
    torch.allclose(torch.nn.grad.conv2d_input(inp.shape, wt, go, 2, 1), gi, atol=1e-5),
    torch.allclose(torch.nn.grad.conv2d_weight(inp, wt.shape, go, 2, 1), gw, atol=1e-5),
)
print("OK")
