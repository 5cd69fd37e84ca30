# torch.distributions in the three places scripts use it most: REINFORCE with a
# Categorical policy (exact policy gradient over a tiny bandit and a 4-state corridor),
# a VAE step (Normal rsample + kl_divergence), and a Gaussian-mixture likelihood fitted
# with MixtureSameFamily. Only program-determined values are CHECKed: sampling is used
# for shapes and supports, never for printed numbers.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (
    Bernoulli,
    Beta,
    Categorical,
    Dirichlet,
    Gamma,
    Independent,
    MixtureSameFamily,
    MultivariateNormal,
    Normal,
    kl_divergence,
)


def r(x, n=5):
    if isinstance(x, torch.Tensor):
        x = x.tolist()
    if isinstance(x, list):
        return [r(v, n) for v in x]
    return round(float(x), n)


def _err(fn):
    try:
        fn()
    except Exception as e:
        return e
    return None


def tour(name, fn):
    try:
        print("CHECK", name, *fn())
    except Exception as e:  # a gap in one idiom must not hide the rest
        print("CHECK", name, "ERROR", type(e).__name__)


# ---------------------------------------------------------------- REINFORCE: bandit
rewards = torch.tensor([0.1, 1.0, 0.3, -0.5])
logits = torch.zeros(4, requires_grad=True)
opt = torch.optim.SGD([logits], lr=0.5)
for step in range(30):
    policy = Categorical(logits=logits)
    actions = policy.enumerate_support()  # every action, weighted by its probability
    # exact REINFORCE estimator: E_a[R(a) * grad log pi(a)]
    loss = -(policy.probs.detach() * rewards * policy.log_prob(actions)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
policy = Categorical(logits=logits)
print("CHECK bandit_probs", r(policy.probs, 4))
print("CHECK bandit_entropy", r(policy.entropy(), 4), r(policy.mode.item()))
a = policy.sample((5,))
print("CHECK bandit_sample", tuple(a.shape), a.dtype, bool(((a >= 0) & (a < 4)).all()))

# ------------------------------------------------- REINFORCE: 4-state corridor MDP
# states 0..3, actions 0 = left, 1 = right; reaching state 3 pays 1 and ends.
torch.manual_seed(0)
policy_net = nn.Linear(4, 2)
with torch.no_grad():
    policy_net.weight.copy_(torch.linspace(-0.2, 0.2, 8).reshape(2, 4))
    policy_net.bias.zero_()
opt = torch.optim.Adam(policy_net.parameters(), lr=0.1)
gamma = 0.9


def step(s, act):
    s2 = max(0, s - 1) if act == 0 else s + 1
    return s2, (1.0 if s2 == 3 else 0.0), s2 == 3


for episode in range(20):
    s, log_probs, rews = 0, [], []
    for t in range(8):
        dist = Categorical(logits=policy_net(F.one_hot(torch.tensor(s), 4).float()))
        act = dist.probs.argmax()  # greedy rollout keeps the program deterministic
        log_probs.append(dist.log_prob(act))
        s, rew, done = step(s, int(act))
        rews.append(rew)
        if done:
            break
    ret, returns = 0.0, []
    for rew in reversed(rews):
        ret = rew + gamma * ret
        returns.insert(0, ret)
    returns = torch.tensor(returns)
    loss = -(torch.stack(log_probs) * returns).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    right = Categorical(logits=policy_net(torch.eye(4))).probs[:, 1]
print("CHECK corridor_p_right", r(right, 3), len(rews))

# ------------------------------------------------------------------ VAE step
enc = nn.Linear(6, 4)
dec = nn.Linear(2, 6)
with torch.no_grad():
    enc.weight.copy_(torch.linspace(-0.5, 0.5, 24).reshape(4, 6))
    enc.bias.fill_(0.1)
    dec.weight.copy_(torch.linspace(0.3, -0.3, 12).reshape(6, 2))
    dec.bias.zero_()
x = torch.linspace(0.0, 1.0, 18).reshape(3, 6)
eps = torch.tensor([[0.5, -1.0], [0.0, 0.3], [1.2, -0.4]])  # fixed noise
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
for it in range(3):
    h = enc(x)
    mu, logvar = h[:, :2], h[:, 2:]
    q = Normal(mu, torch.exp(0.5 * logvar))
    z = q.loc + q.scale * eps  # what rsample computes, with fixed noise
    z_r = q.rsample()
    recon = torch.sigmoid(dec(z))
    rec = F.binary_cross_entropy(recon, x, reduction="sum")
    kl = kl_divergence(q, Normal(torch.zeros_like(mu), torch.ones_like(mu))).sum()
    kl_closed = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    loss = rec + kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("CHECK vae", it, r(rec, 4), r(kl, 5), r(kl - kl_closed, 6))
print("CHECK vae_rsample", tuple(z_r.shape), z_r.requires_grad, q.has_rsample)
print("CHECK vae_logprob", r(q.log_prob(z).sum(), 4), tuple(q.batch_shape), tuple(q.event_shape))
grad_norm = sum(p.grad.norm() ** 2 for p in enc.parameters()) ** 0.5
print("CHECK vae_grad", r(grad_norm, 4))

# ----------------------------------------------------------- Gaussian mixture
data = torch.tensor([[-2.1, 0.3], [-1.9, 0.1], [2.0, 1.1], [2.2, 0.9], [0.1, -1.0], [-2.0, 0.2]])
mix_logits = torch.zeros(3, requires_grad=True)
locs = torch.tensor([[-1.0, 0.0], [1.0, 1.0], [0.0, -0.5]], requires_grad=True)
log_scales = torch.zeros(3, 2, requires_grad=True)
opt = torch.optim.Adam([mix_logits, locs, log_scales], lr=0.05)
for it in range(40):
    gmm = MixtureSameFamily(
        Categorical(logits=mix_logits), Independent(Normal(locs, log_scales.exp()), 1)
    )
    nll = -gmm.log_prob(data).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if it in (0, 39):
        print("CHECK gmm_nll", it, r(nll, 4))
print("CHECK gmm_weights", r(torch.softmax(mix_logits, 0), 3))
print("CHECK gmm_locs", r(locs, 3))
print("CHECK gmm_mean", r(gmm.mean, 4), r(gmm.variance, 4))
print(
    "CHECK gmm_shapes",
    tuple(gmm.batch_shape),
    tuple(gmm.event_shape),
    tuple(gmm.sample((7,)).shape),
)

# ------------------------------------------------------------------- tour
tour(
    "normal_cdf_icdf",
    lambda: r([Normal(0.0, 1.0).cdf(torch.tensor(1.0)), Normal(1.0, 2.0).icdf(torch.tensor(0.3))]),
)
tour(
    "bernoulli",
    lambda: r(
        [Bernoulli(logits=torch.tensor(0.3)).log_prob(torch.tensor(1.0)), Bernoulli(0.3).entropy()]
    ),
)
tour(
    "beta_gamma",
    lambda: r(
        [Beta(2.0, 3.0).log_prob(torch.tensor(0.4)), Gamma(2.0, 0.5).entropy(), Beta(2.0, 3.0).mean]
    ),
)
tour(
    "dirichlet",
    lambda: [r(Dirichlet(torch.tensor([1.0, 2.0, 3.0])).log_prob(torch.tensor([0.2, 0.3, 0.5])))],
)
tour(
    "mvn",
    lambda: r(
        [
            MultivariateNormal(torch.zeros(2), torch.tensor([[1.0, 0.5], [0.5, 2.0]])).log_prob(
                torch.ones(2)
            ),
            MultivariateNormal(torch.zeros(2), scale_tril=torch.eye(2)).entropy(),
        ]
    ),
)
tour(
    "kl_cat",
    lambda: [
        r(
            kl_divergence(
                Categorical(torch.tensor([0.2, 0.8])), Categorical(torch.tensor([0.5, 0.5]))
            )
        )
    ],
)
tour(
    "expand",
    lambda: (
        tuple(Normal(0.0, 1.0).expand((3, 2)).batch_shape),
        tuple(Normal(torch.zeros(2), 1.0).sample((4,)).shape),
    ),
)
tour(
    "gamma_rsample_grad",
    lambda: (Gamma(torch.tensor([2.0], requires_grad=True), 1.0).rsample().requires_grad,),
)
tour(
    "support",
    lambda: (
        str(Normal(0.0, 1.0).support),
        str(Categorical(torch.ones(3)).support),
        str(Beta(1.0, 1.0).support),
    ),
)

tour(
    "validate",
    lambda: (
        type(_err(lambda: Normal(0.0, -1.0))).__name__,
        type(
            _err(lambda: Categorical(torch.tensor([0.5, 0.5])).log_prob(torch.tensor(3)))
        ).__name__,
    ),
)
print("CHECK math", round(math.log(2 * math.pi) / 2, 6))
print("OK")
