"""ember.distributions and its samplers vs PyTorch (and NumPy's Generator where it
has the sampler) in one run: medians and ratios (torch time / ember time, so > 1
means ember is faster).

  - bulk samplers: _standard_gamma, poisson, binomial on 1M float32 parameters;
  - per-call overhead of what RL/VAE loops do every step on small tensors:
    construct a distribution, log_prob, rsample, Categorical.sample,
    kl_divergence(Normal, Normal), MixtureSameFamily.log_prob.
"""

import sys

import numpy as np

_HERE = __file__.rsplit("/", 1)[0]
sys.path.insert(0, _HERE)
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember  # noqa: E402

torch = try_import("torch")


def case(name, ember_fn, torch_fn=None, numpy_fn=None):
    te = median_time(ember_fn, repeat=5, min_time=0.1)
    tt = median_time(torch_fn, repeat=5, min_time=0.1) if torch_fn else None
    tn = median_time(numpy_fn, repeat=5, min_time=0.1) if numpy_fn else None
    return [
        name,
        fmt_time(te),
        fmt_time(tt),
        fmt_time(tn),
        f"{tt / te:.2f}" if tt else "-",
        f"{tn / te:.2f}" if tn else "-",
    ]


def _both(build):
    """build(T) for ember and (when installed) torch."""
    return build(ember), (build(torch) if torch else None)


def main():
    rows = []
    n = 1 << 20
    rng = np.random.default_rng(0)

    def sampler(op, *values):
        def build(T):
            args = [T.full((n,), v) for v in values]
            return lambda: getattr(T, op)(*args)

        return build

    for label, build, fn in [
        (
            "_standard_gamma a=2.5",
            sampler("_standard_gamma", 2.5),
            lambda: rng.standard_gamma(2.5, n),
        ),
        (
            "_standard_gamma a=0.3",
            sampler("_standard_gamma", 0.3),
            lambda: rng.standard_gamma(0.3, n),
        ),
        ("poisson rate=4", sampler("poisson", 4.0), lambda: rng.poisson(4.0, n)),
        ("poisson rate=50", sampler("poisson", 50.0), lambda: rng.poisson(50.0, n)),
        ("binomial n=20 p=0.3", sampler("binomial", 20.0, 0.3), lambda: rng.binomial(20, 0.3, n)),
        (
            "binomial n=500 p=0.4",
            sampler("binomial", 500.0, 0.4),
            lambda: rng.binomial(500, 0.4, n),
        ),
    ]:
        e, t = _both(build)
        rows.append(case(f"{label} (1M)", e, t, fn))

    def small(T):
        loc, scale = T.zeros(64, 8), T.ones(64, 8)
        x = T.full((64, 8), 0.3)
        logits = T.linspace(-1, 1, 640).reshape(64, 10)
        d = T.distributions.Normal(loc, scale)
        gmm = T.distributions.MixtureSameFamily(
            T.distributions.Categorical(logits=T.zeros(5)),
            T.distributions.Normal(T.linspace(-2, 2, 5), T.ones(5)),
        )
        pts = T.linspace(-3, 3, 256)
        return {
            "Normal(loc, scale) 64x8": lambda: T.distributions.Normal(loc, scale),
            "Normal.log_prob 64x8": lambda: d.log_prob(x),
            "Normal.rsample 64x8": lambda: d.rsample(),
            "Categorical(logits).sample 64x10": lambda: T.distributions.Categorical(
                logits=logits
            ).sample(),
            "Categorical.log_prob+entropy 64x10": lambda: (
                T.distributions.Categorical(logits=logits).log_prob(T.zeros(64, dtype=T.long)),
                T.distributions.Categorical(logits=logits).entropy(),
            ),
            "kl(Normal, Normal) 64x8": lambda: T.distributions.kl_divergence(d, d),
            "MixtureSameFamily.log_prob 256 pts": lambda: gmm.log_prob(pts),
        }

    es = small(ember)
    ts = small(torch) if torch else {}
    for k, fe in es.items():
        rows.append(case(k, fe, ts.get(k)))
    table(rows, ["case", "ember", "torch", "numpy", "torch/ember", "numpy/ember"])


if __name__ == "__main__":
    main()
