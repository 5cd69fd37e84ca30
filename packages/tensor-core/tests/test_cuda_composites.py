"""The composite ops of the tensor core (written with other ops, or in NumPy on
the values for the integer and set ones) on CUDA against the CPU: the
statistics, distances and norms, calculus, the *_copy and *_scatter forms of
the views, broadcasting, the complex API on real tensors, the predicates, the
margin and ranking losses, unpooling and fractional pooling, the legacy LU
functions, window functions and the other creation composites -- float32 and
float64.  Their results must come back on the inputs' device.
"""

import zlib

import numpy as np
import pytest
from cuda_helpers import Spec, maker, run_table, values

import ember_core as ec

SELFTEST_OK = True
pytestmark = pytest.mark.cuda

TOL = {ec.float32: (1e-4, 1e-4), ec.float64: (1e-9, 1e-9)}


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _on(make_args):
    """A make(device) for creation ops: the arguments with ``device=device``."""

    def make(device):
        args, kwargs = make_args()
        return args, {**kwargs, "device": device}

    return make


def composite_cases(dtype, rng):
    def S(*shape, low=-1.0, high=1.0, layout="contiguous"):
        return Spec(values(shape, dtype, rng, low, high), dtype, layout)

    def I(vals):  # noqa: E743 - an index spec
        return Spec(np.asarray(vals, dtype=np.int64), ec.int64)

    def signs(n):
        return Spec(np.where(rng.random(n) > 0.5, 1.0, -1.0), dtype)

    m = S(3, 4)
    mt = S(4, 3, layout="transposed")
    spd = np.eye(4) * 4 + rng.uniform(-0.5, 0.5, (4, 4))
    spd = Spec(spd @ spd.T, dtype)
    return [
        # -------------------------------------------------------- statistics
        (
            "quantile",
            lambda x, q: (
                ec.quantile(x, 0.3),
                ec.quantile(x, q, dim=1, keepdim=True, interpolation="midpoint"),
                x.quantile(0.9, 0, interpolation="nearest"),
            ),
            maker(m, S(3, low=0.0, high=1.0)),
            "quantile",
        ),
        (
            "nanquantile",
            lambda x: ec.nanquantile(x.masked_fill(x > 0.5, float("nan")), 0.4, dim=1),
            maker(mt),
            "nanquantile",
        ),
        (
            "histogramdd",
            lambda x: ec.histogramdd(x, bins=[3, 4], range=[-1.0, 1.0, -1.0, 1.0]),
            maker(S(40, 2)),
            "histogramdd",
        ),
        # ------------------------------------------------- distances and norms
        (
            "distances",
            lambda a, b: (
                ec.dist(a, b, 3),
                ec.pdist(a),
                ec.pairwise_distance(a, b),
                ec.cosine_similarity(a, b),
                ec.cdist(a, b, p=1.0),
            ),
            maker(m, S(3, 4)),
            "dist",
        ),
        (
            "renorm",
            lambda x: (x.renorm(2, 0, 0.5), x.clone().renorm_(1, 1, 0.7)),
            maker(S(3, 4, 2)),
            "renorm",
        ),
        ("frobenius_norm", lambda x: ec.frobenius_norm(x), maker(mt), "frobenius_norm"),
        ("nuclear_norm", lambda x: ec.nuclear_norm(x), maker(m), "_linalg_svd"),
        # ---------------------------------------------------------- calculus
        (
            "gradient",
            lambda x, h: (
                ec.gradient(x),
                ec.gradient(x, spacing=(2.0,), dim=1, edge_order=2),
                ec.gradient(x, spacing=(h,), dim=1),
            ),
            maker(S(4, 5), Spec(np.cumsum(rng.uniform(0.5, 1.5, 5)), dtype)),
            "gradient",
        ),
        # -------------------------------------------- views made copies, scatters
        (
            "*_copy",
            lambda x: (
                ec.as_strided_copy(x, (2, 2), (1, 2)),
                ec.diagonal_copy(x, 1),
                ec.expand_copy(x[:1], (3, 4)),
                x.narrow_copy(1, 1, 2),
                ec.permute_copy(x, (1, 0)),
                ec.select_copy(x, 0, 1),
                ec.slice_copy(x, 1, 0, 4, 2),
                ec.split_copy(x, 2, 1),
                ec.split_with_sizes_copy(x, [1, 2]),
                ec.squeeze_copy(x[:1]),
                ec.transpose_copy(x, 0, 1),
                ec.unbind_copy(x, 1),
                ec.unfold_copy(x, 1, 2, 1),
                ec.unsqueeze_copy(x, 0),
                ec.view_copy(x.contiguous(), (-1,)),
            ),
            maker(m),
            "view_copy",
        ),
        (
            "*_copy of a transposed tensor",
            lambda x: (ec.unbind_copy(x), ec.slice_copy(x, 0, 1, 3), x.narrow_copy(0, 1, 2)),
            maker(mt),
            "slice_copy",
        ),
        (
            "*_scatter",
            lambda x, col, row, d, blk: (
                ec.slice_scatter(x, col, 1, 0, 4, 2),
                ec.select_scatter(x, row, 0, 1),
                ec.diagonal_scatter(x, d),
                ec.as_strided_scatter(x, blk, (2, 2), (1, 2)),
            ),
            maker(m, S(3, 2), S(4), S(3), S(2, 2)),
            "slice_scatter",
        ),
        (
            "broadcast_tensors meshgrid",
            lambda a, b, u, v: (
                ec.broadcast_tensors(a, b),
                ec.meshgrid(u, v, indexing="ij"),
                ec.meshgrid([u, v], indexing="xy"),
            ),
            maker(S(3, 1), S(1, 4), S(3), S(5)),
            "broadcast_tensors",
        ),
        (
            "sum_to_size",
            lambda x: (x.sum_to_size(1, 4), x.sum_to_size((3, 1))),
            maker(m),
            "sum_to_size",
        ),
        # --------------------------------------- complex API on real tensors
        (
            "conj, real, adjoint",
            lambda x: (
                ec.adjoint(x),
                ec.conj(x),
                ec.resolve_conj(x),
                ec.resolve_neg(x),
                ec.real(x),
                x.real,
                ec.is_conj(x),
                ec.is_neg(x),
            ),
            maker(mt),
            "adjoint",
        ),
        # ---------------------------------------------------------- predicates
        (
            "predicates",
            lambda x, y: (
                ec.is_floating_point(x),
                ec.is_complex(x),
                ec.is_signed(x),
                ec.get_device(x) == x.get_device(),
                ec.isclose(x, y, rtol=0.5),
                ec.allclose(x, x.clone()),
                ec.equal(x, y),
            ),
            maker(m, S(3, 4)),
            "isclose",
        ),
        # ------------------------------------------------- index composites
        (
            "nonzero_static",
            lambda x: (
                ec.nonzero_static(x > 0, size=4),
                ec.nonzero_static(x > 0, size=20, fill_value=-7),
            ),
            maker(m),
            "nonzero_static",
        ),
        # ------------------------------------------------ margins and ranking
        (
            "margin losses",
            lambda a, b, t, y: (
                ec.margin_ranking_loss(a, b, t, 0.1, "mean"),
                ec.hinge_embedding_loss(a, t, 0.5, "sum"),
                ec.soft_margin_loss(a, t, "none"),
                ec.cosine_embedding_loss(a.reshape(2, 3), b.reshape(2, 3), t[:2], 0.2, "mean"),
                ec.triplet_margin_loss(a.reshape(2, 3), b.reshape(2, 3), -a.reshape(2, 3)),
                ec.poisson_nll_loss(a, b.abs(), True, True, 1e-8, "mean"),
                ec.multi_margin_loss(a.reshape(2, 3), y, 2, 0.5, None, "sum"),
            ),
            maker(S(6), S(6), signs(6), I([0, 2])),
            "margin_ranking_loss",
        ),
        (
            "multilabel_margin_loss",
            lambda x, y: ec.multilabel_margin_loss(x, y, "sum"),
            maker(S(2, 3), I([[2, 0, -1], [1, -1, 0]])),
            "multilabel_margin_loss",
        ),
        # ----------------------------------------------- unpooling, fractional
        (
            "max_unpool",
            lambda x, y, z: (
                ec.max_unpool1d(*ec.max_pool1d(x, 2, return_indices=True), 2),
                ec.max_unpool2d(*ec.max_pool2d(y, 2, return_indices=True), 2, output_size=(5, 5)),
                ec.max_unpool3d(*ec.max_pool3d(z, 2, return_indices=True), 2),
            ),
            maker(S(1, 2, 8, low=-9, high=9), S(1, 2, 5, 5, low=-9, high=9), S(1, 1, 4, 4, 4)),
            "max_unpool2d",
        ),
        (
            "fractional_max_pool",
            lambda x, u2, y, u3: (
                ec.fractional_max_pool2d(x, 2, output_size=3, _random_samples=u2),
                ec.fractional_max_pool2d_with_indices(
                    x, 2, output_ratio=(0.5, 0.5), _random_samples=u2
                ),
                ec.fractional_max_pool3d(y, 2, output_size=2, _random_samples=u3),
                ec.fractional_max_pool3d_with_indices(y, 2, output_size=2, _random_samples=u3),
            ),
            maker(
                S(1, 2, 7, 7, low=-9, high=9),
                S(1, 2, 2, low=0.0, high=1.0),
                S(1, 2, 5, 5, 5, low=-9, high=9),
                S(1, 2, 3, low=0.0, high=1.0),
            ),
            "fractional_max_pool2d",
        ),
        # ------------------------------------------------------ products, nn
        (
            "bilinear chain_matmul",
            lambda a, b, w, c: (
                ec.bilinear(a, b, w),
                ec.chain_matmul(a.mT, a, c),
                ec.linalg.vecdot(a, b),
            ),
            maker(S(2, 3), S(2, 3), S(4, 3, 3), S(3, 2)),
            "bilinear",
        ),
        (
            "channel_shuffle conv_tbc",
            lambda x, t, w, b: (ec.channel_shuffle(x, 2), ec.conv_tbc(t, w, b, 1)),
            maker(S(2, 4, 3), S(5, 2, 3), S(3, 3, 4), S(4)),
            "conv_tbc",
        ),
        # ------------------------------------------------- legacy LU, QR
        (
            "lu lu_solve lu_unpack",
            lambda a, b: (
                ec.lu(a),
                ec.lu_solve(b, *ec.lu(a)),
                ec.lu_unpack(*ec.linalg.lu_factor(a)),
                a.lu(get_infos=True),
            ),
            maker(spd, S(4, 2)),
            "lu",
        ),
        (
            "linalg composites",
            lambda a, b, t: (
                ec.linalg.inv_ex(a),
                ec.linalg.cholesky_ex(a),
                ec.linalg.householder_product(t, t[0]),
                ec.linalg.tensorinv(a.reshape(4, 2, 2), ind=1),
                ec.linalg.tensorsolve(a, b[:, 0]),
            ),
            maker(spd, S(4, 2), S(4, 3)),
            "linalg_inv_ex",
        ),
        (
            "orgqr ormqr",
            lambda a, tau, c: (ec.orgqr(a, tau), ec.ormqr(a, tau, c, transpose=True)),
            maker(S(4, 3), S(3), S(4, 2)),
            "orgqr",
        ),
        # --------------------------------------------------------- creation
        (
            "windows",
            lambda **kw: (
                ec.hann_window(8, **kw),
                ec.hamming_window(7, False, **kw),
                ec.blackman_window(6, **kw),
                ec.bartlett_window(9, False, **kw),
                ec.kaiser_window(5, beta=4.0, **kw),
            ),
            _on(lambda: ((), {"dtype": dtype})),
            "hann_window",
        ),
        (
            "range empty_permuted",
            lambda **kw: (
                ec.range(1, 3, 0.5, **kw),
                ec.empty_permuted((2, 3, 4), (2, 0, 1), **kw).fill_(1.0).stride(),
            ),
            _on(lambda: ((), {"dtype": dtype})),
            "range",
        ),
        (
            "asarray fill",
            lambda x: (
                ec.asarray(x),
                ec.asarray(x, dtype=ec.float64, copy=True),
                ec.asarray([1.0, 2.0], device=x.device),
                ec.fill(x, 2.5),
            ),
            maker(m),
            "asarray",
        ),
    ]


@pytest.mark.filterwarnings("ignore:torch.range is deprecated:UserWarning")
@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated:UserWarning")
@pytest.mark.parametrize("dtype", [ec.float32, ec.float64], ids=str)
def test_composite_ops(dtype):
    cases = composite_cases(dtype, _rng("composites", dtype))
    run_table(f"composite ops on CUDA ({dtype})", cases, dtype, tol=TOL)
