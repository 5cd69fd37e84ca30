"""The Hogwild logic of examples/hogwild_digits.py with ember_core alone (this
package's tests run without ember_nn and ember_autograd): processes update one
shared softmax-regression model in place, without locks, each on its shard; the
result classifies as well as the same training in one process."""

import os
import sys

import numpy as np

import ember_core as ec
import ember_multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
from conftest import shm_files  # noqa: E402

CLASSES, FEATURES = 4, 8


def _blobs(n, seed):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (CLASSES, FEATURES))
    y = rng.integers(0, CLASSES, n)
    x = centers[y] + rng.normal(0, 1.5, (n, FEATURES))
    return ec.from_numpy(x.astype(np.float32)), ec.from_numpy(y.astype(np.int64))


def _sgd(w, b, x, y, epochs, lr=0.1, batch=16):
    """Softmax regression by minibatch SGD, updating w and b in place."""
    onehot_cols = ec.arange(CLASSES).reshape(1, -1)
    for _ in range(epochs):
        for i in range(0, x.shape[0], batch):
            xb, yb = x[i : i + batch], y[i : i + batch]
            logits = xb @ w + b
            p = (logits - logits.max(1, keepdim=True).values).exp()
            p = p / p.sum(1, keepdim=True)
            err = (p - (yb.reshape(-1, 1) == onehot_cols).to(ec.float32)) / xb.shape[0]
            w.sub_(xb.t() @ err * lr)  # in place: the shared memory itself
            b.sub_(err.sum(0) * lr)


def _worker(rank, n, w, b, x, y, epochs):
    _sgd(w, b, x[rank::n], y[rank::n], epochs)


def _accuracy(w, b, x, y):
    return ((x @ w + b).argmax(1) == y).to(ec.float32).mean().item()


def test_hogwild_matches_single_process_training():
    files = shm_files()
    data, labels = _blobs(800, seed=0)
    x, y, x_test, y_test = data[:600], labels[:600], data[600:], labels[600:]

    w, b = ec.zeros(FEATURES, CLASSES), ec.zeros(CLASSES)
    w.share_memory_()
    b.share_memory_()
    mp.start_processes(_worker, args=(3, w, b, x, y, 6), nprocs=3, start_method="fork")
    hogwild = _accuracy(w, b, x_test, y_test)

    w1, b1 = ec.zeros(FEATURES, CLASSES), ec.zeros(CLASSES)
    _sgd(w1, b1, x, y, 6)
    single = _accuracy(w1, b1, x_test, y_test)

    assert float(w.abs().sum()) > 0  # the children's updates reached the parent's memory
    assert single > 0.9
    assert hogwild >= single - 0.03
    assert shm_files() - files == set()
