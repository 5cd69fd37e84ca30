"""Every op on PyTorch's CPU autocast lists (lower_precision_fp, fp32, promote)
that ember has returns the dtype PyTorch's returns inside
``autocast("cpu", dtype=bfloat16)``, for float32 and bfloat16 inputs.

The lists are PyTorch's own: the aten ops registered for its AutocastCPU
dispatch key.  Each one needs a case below (a call that reaches it, through
torch.nn.functional where that is how scripts call it) or a reason why ember
lacks it; a new entry on PyTorch's lists fails test_every_listed_op_is_covered
until it has one of the two."""

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.parity
torch = pytest.importorskip("torch")


def _listed():
    regs = torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU")
    return sorted({r.split("::", 1)[1].split(".", 1)[0] for r in regs})


def _spd(L, m):
    a = m((3, 3), 0)
    return a @ a.mT + 3 * L.eye(3, dtype=a.dtype)


def _lu_parts(L, m):
    LU, piv = L.linalg.lu_factor(_spd(L, m).float())
    return LU.to(m((1,), 0).dtype), piv


# aten name -> fn(lib, F, make): make(shape, seed[, dtype]) is an input of the case's dtype
CASES = {
    # lower_precision_fp
    "addmm": lambda L, F, m: L.addmm(m((2,), 2), m((3, 4), 0), m((4, 2), 1)),
    "addbmm": lambda L, F, m: L.addbmm(m((3, 2), 2), m((2, 3, 4), 0), m((2, 4, 2), 1)),
    "baddbmm": lambda L, F, m: L.baddbmm(m((2, 3, 2), 2), m((2, 3, 4), 0), m((2, 4, 2), 1)),
    "bmm": lambda L, F, m: L.bmm(m((2, 3, 4), 0), m((2, 4, 2), 1)),
    "conv1d": lambda L, F, m: F.conv1d(m((1, 2, 6), 0), m((3, 2, 3), 1), m((3,), 2)),
    "conv2d": lambda L, F, m: F.conv2d(m((1, 2, 5, 5), 0), m((3, 2, 3, 3), 1)),
    "conv3d": lambda L, F, m: F.conv3d(m((1, 2, 4, 4, 4), 0), m((3, 2, 3, 3, 3), 1)),
    "conv_tbc": lambda L, F, m: L.conv_tbc(m((5, 2, 3), 0), m((3, 3, 4), 1), m((4,), 2), 1),
    "conv_transpose1d": lambda L, F, m: F.conv_transpose1d(m((1, 2, 5), 0), m((2, 3, 3), 1)),
    "conv_transpose2d": lambda L, F, m: F.conv_transpose2d(m((1, 2, 4, 4), 0), m((2, 3, 3, 3), 1)),
    "conv_transpose3d": lambda L, F, m: F.conv_transpose3d(
        m((1, 2, 3, 3, 3), 0), m((2, 3, 2, 2, 2), 1)
    ),
    "linalg_vecdot": lambda L, F, m: L.linalg.vecdot(m((3, 4), 0), m((3, 4), 1)),
    "linear": lambda L, F, m: F.linear(m((3, 4), 0), m((5, 4), 1), m((5,), 2)),
    "matmul": lambda L, F, m: L.matmul(m((2, 3, 4), 0), m((4, 2), 1)),
    "mm": lambda L, F, m: L.mm(m((3, 4), 0), m((4, 2), 1)),
    "prelu": lambda L, F, m: F.prelu(m((2, 3), 0), m((1,), 1)),
    "scaled_dot_product_attention": lambda L, F, m: F.scaled_dot_product_attention(
        m((1, 3, 4), 0), m((1, 3, 4), 1), m((1, 3, 4), 2)
    ),
    # fp32
    "adaptive_avg_pool3d": lambda L, F, m: F.adaptive_avg_pool3d(m((1, 1, 4, 4, 4), 0), 2),
    "adaptive_max_pool3d": lambda L, F, m: F.adaptive_max_pool3d(m((1, 1, 4, 4, 4), 0), 2),
    "avg_pool3d": lambda L, F, m: F.avg_pool3d(m((1, 1, 4, 4, 4), 0), 2),
    "binary_cross_entropy": lambda L, F, m: F.binary_cross_entropy(
        m((6,), 0).sigmoid(), m((6,), 1).sigmoid()
    ),
    "binary_cross_entropy_with_logits": lambda L, F, m: F.binary_cross_entropy_with_logits(
        m((6,), 0), m((6,), 1).sigmoid()
    ),
    "cdist": lambda L, F, m: L.cdist(m((3, 4), 0), m((2, 4), 1)),
    "cholesky": lambda L, F, m: L.cholesky(_spd(L, m)),
    "cholesky_inverse": lambda L, F, m: L.cholesky_inverse(L.linalg.cholesky(_spd(L, m).float())),
    "cholesky_solve": lambda L, F, m: L.cholesky_solve(
        m((3, 2), 1), L.linalg.cholesky(_spd(L, m).float())
    ),
    "cosine_embedding_loss": lambda L, F, m: F.cosine_embedding_loss(
        m((3, 4), 0), m((3, 4), 1), L.tensor([1.0, -1.0, 1.0])
    ),
    "cross_entropy_loss": lambda L, F, m: F.cross_entropy(m((4, 5), 0), L.tensor([0, 2, 4, 1])),
    "ctc_loss": lambda L, F, m: F.ctc_loss(
        m((6, 2, 4), 0).log_softmax(2), L.tensor([[1, 2], [3, 1]]), [6, 6], [2, 2]
    ),
    "fractional_max_pool2d": lambda L, F, m: F.fractional_max_pool2d(
        m((1, 2, 6, 6), 0), 2, output_size=3, _random_samples=m((1, 2, 2), 1).abs() / 4
    ),
    "fractional_max_pool3d": lambda L, F, m: F.fractional_max_pool3d(
        m((1, 2, 5, 5, 5), 0), 2, output_size=3, _random_samples=m((1, 2, 3), 1).abs() / 4
    ),
    "geqrf": lambda L, F, m: L.geqrf(m((4, 3), 0))[0],
    "grid_sampler": lambda L, F, m: F.grid_sample(
        m((1, 2, 4, 4), 0), m((1, 3, 3, 2), 1).tanh(), align_corners=False
    ),
    "grid_sampler_2d": lambda L, F, m: F.grid_sample(
        m((1, 2, 4, 4), 0), m((1, 3, 3, 2), 1).tanh(), mode="nearest", align_corners=True
    ),
    "grid_sampler_3d": lambda L, F, m: F.grid_sample(
        m((1, 2, 3, 3, 3), 0), m((1, 2, 2, 2, 3), 1).tanh(), align_corners=False
    ),
    "hinge_embedding_loss": lambda L, F, m: F.hinge_embedding_loss(
        m((6,), 0), L.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    ),
    "huber_loss": lambda L, F, m: F.huber_loss(m((6,), 0), m((6,), 1)),
    "inverse": lambda L, F, m: L.inverse(_spd(L, m)),
    "kl_div": lambda L, F, m: F.kl_div(m((6,), 0), m((6,), 1).abs(), reduction="sum"),
    "l1_loss": lambda L, F, m: F.l1_loss(m((6,), 0), m((6,), 1)),
    "linalg_cholesky": lambda L, F, m: L.linalg.cholesky(_spd(L, m)),
    "linalg_cholesky_ex": lambda L, F, m: L.linalg.cholesky_ex(_spd(L, m))[0],
    "linalg_cond": lambda L, F, m: L.linalg.cond(_spd(L, m)),
    "linalg_eigh": lambda L, F, m: L.linalg.eigh(_spd(L, m))[0],
    "linalg_eigvalsh": lambda L, F, m: L.linalg.eigvalsh(_spd(L, m)),
    "linalg_householder_product": lambda L, F, m: L.linalg.householder_product(
        m((4, 3), 0), m((2,), 1)
    ),
    "linalg_inv": lambda L, F, m: L.linalg.inv(_spd(L, m)),
    "linalg_inv_ex": lambda L, F, m: L.linalg.inv_ex(_spd(L, m))[0],
    "linalg_lstsq": lambda L, F, m: L.linalg.lstsq(_spd(L, m), m((3, 2), 1))[0],
    "linalg_matrix_rank": lambda L, F, m: L.linalg.matrix_rank(_spd(L, m), hermitian=True),
    "linalg_qr": lambda L, F, m: L.linalg.qr(m((4, 3), 0))[0],
    "linalg_solve": lambda L, F, m: L.linalg.solve(_spd(L, m), m((3, 2), 1)),
    "linalg_svd": lambda L, F, m: L.linalg.svd(m((4, 3), 0))[1],
    "linalg_svdvals": lambda L, F, m: L.linalg.svdvals(m((4, 3), 0)),
    "linalg_tensorinv": lambda L, F, m: L.linalg.tensorinv(_spd(L, m).reshape(3, 3), ind=1),
    "linalg_tensorsolve": lambda L, F, m: L.linalg.tensorsolve(_spd(L, m), m((3,), 1)),
    "lu_solve": lambda L, F, m: L.lu_solve(m((3, 2), 1), *_lu_parts(L, m)),
    "_lu_with_info": lambda L, F, m: L.lu(_spd(L, m))[0],
    "margin_ranking_loss": lambda L, F, m: F.margin_ranking_loss(
        m((6,), 0), m((6,), 1), L.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    ),
    "max_pool3d": lambda L, F, m: F.max_pool3d(m((1, 1, 4, 4, 4), 0), 2),
    "max_unpool2d": lambda L, F, m: F.max_unpool2d(
        *F.max_pool2d(m((1, 1, 4, 4), 0), 2, return_indices=True), 2
    ),
    "max_unpool3d": lambda L, F, m: F.max_unpool3d(
        *F.max_pool3d(m((1, 1, 4, 4, 4), 0), 2, return_indices=True), 2
    ),
    "mse_loss": lambda L, F, m: F.mse_loss(m((6,), 0), m((6,), 1)),
    "multi_margin_loss": lambda L, F, m: F.multi_margin_loss(m((3, 4), 0), L.tensor([0, 3, 1])),
    "multilabel_margin_loss": lambda L, F, m: F.multilabel_margin_loss(
        m((2, 4), 0), L.tensor([[3, 0, -1, 1], [1, 2, 3, -1]])
    ),
    "nanquantile": lambda L, F, m: L.nanquantile(m((2, 5), 0), 0.3, dim=1),
    "nll_loss": lambda L, F, m: F.nll_loss(m((4, 5), 0), L.tensor([0, 2, 4, 1])),
    "nll_loss2d": lambda L, F, m: F.nll_loss(m((2, 3, 2, 2), 0), L.tensor([[[0, 2], [1, 0]]] * 2)),
    "orgqr": lambda L, F, m: L.orgqr(m((4, 3), 0), m((2,), 1)),
    "ormqr": lambda L, F, m: L.ormqr(m((4, 3), 0), m((3,), 1), m((4, 2), 2)),
    "pinverse": lambda L, F, m: L.pinverse(m((4, 3), 0)),
    "poisson_nll_loss": lambda L, F, m: F.poisson_nll_loss(m((6,), 0), m((6,), 1).abs()),
    "prod": lambda L, F, m: L.prod(m((6,), 0)),
    "qr": lambda L, F, m: L.qr(m((4, 3), 0))[0],
    "quantile": lambda L, F, m: L.quantile(m((2, 5), 0), 0.3, dim=1),
    "reflection_pad1d": lambda L, F, m: F.pad(m((1, 2, 5), 0), (1, 1), mode="reflect"),
    "reflection_pad2d": lambda L, F, m: F.pad(m((1, 2, 4, 4), 0), (1, 1, 1, 1), mode="reflect"),
    "replication_pad1d": lambda L, F, m: F.pad(m((1, 2, 5), 0), (1, 1), mode="replicate"),
    "replication_pad2d": lambda L, F, m: F.pad(m((1, 2, 4, 4), 0), (1, 1, 1, 1), mode="replicate"),
    "replication_pad3d": lambda L, F, m: F.pad(
        m((1, 1, 3, 3, 3), 0), (1, 1, 1, 1, 1, 1), mode="replicate"
    ),
    "smooth_l1_loss": lambda L, F, m: F.smooth_l1_loss(m((6,), 0), m((6,), 1)),
    "soft_margin_loss": lambda L, F, m: F.soft_margin_loss(
        m((6,), 0), L.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    ),
    "svd": lambda L, F, m: L.svd(m((4, 3), 0))[1],
    "trace": lambda L, F, m: L.trace(m((3, 3), 0)),
    "triangular_solve": lambda L, F, m: L.triangular_solve(m((3, 2), 1), _spd(L, m).triu())[0],
    "triplet_margin_loss": lambda L, F, m: F.triplet_margin_loss(
        m((3, 4), 0), m((3, 4), 1), m((3, 4), 2)
    ),
    # promote
    "cat": lambda L, F, m: L.cat([m((2, 3), 0), m((2, 3), 1, "float32")]),
    "index_copy": lambda L, F, m: m((4, 3), 0).index_copy(
        0, L.tensor([0, 2]), m((2, 3), 1, "float32")
    ),
    "stack": lambda L, F, m: L.stack([m((2, 3), 0), m((2, 3), 1, "float32")]),
}

# torch.fft (fp32): complex results from the float32 computation
_FFT_CASES = {
    f"fft_{kind}": (lambda L, F, m, _k=kind: getattr(L.fft, _k)(m((4, 6), 0)))
    for kind in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft")
    + ("rfft2", "irfft2", "rfftn", "irfftn", "hfft", "ihfft")
}
CASES.update(_FFT_CASES)
CASES["polar"] = lambda L, F, m: L.polar(m((3,), 0), m((3,), 1))
CASES["linalg_eig"] = lambda L, F, m: L.linalg.eig(m((3, 3), 0))[1]
CASES["linalg_eigvals"] = lambda L, F, m: L.linalg.eigvals(m((3, 3), 0))
CASES["view_as_complex"] = lambda L, F, m: L.view_as_complex(m((3, 2), 0))
CASES["stft"] = lambda L, F, m: L.stft(m((64,), 0), 16, window=m((16,), 1), return_complex=True)

# aten ops on PyTorch's lists that ember has no form of: (a public name a script
# would call, or None for internal ones no script calls; why)
ABSENT = {
    "_addmm_activation": (None, "internal: fused addmm + activation of torch's linear layers"),
    "_convolution": (None, "internal: the deprecated convolution entry point"),
    "_grid_sampler_2d_cpu_fallback": (None, "internal: grid_sample's fallback kernel"),
    "_native_multi_head_attention": (None, "internal: torch's fused MHA fast path"),
    "mkldnn_rnn_layer": (None, "internal: oneDNN's RNN layer"),
    "multilabel_margin_loss_forward": (None, "internal: multilabel_margin_loss's kernel"),
    "fake_quantize_per_tensor_affine": ("fake_quantize_per_tensor_affine", "no quantization"),
}


def test_every_listed_op_is_covered():
    listed = set(_listed())
    assert "margin_ranking_loss" in listed and "mm" in listed and "cat" in listed
    assert not set(CASES) & set(ABSENT)
    uncovered = sorted(listed - set(CASES) - set(ABSENT))
    assert not uncovered, f"on PyTorch's CPU autocast lists, without a case here: {uncovered}"
    stale = sorted((set(CASES) | set(ABSENT)) - listed)
    assert not stale, f"no longer on PyTorch's lists: {stale}"


def test_the_absent_ops_are_absent():
    for path, _ in ABSENT.values():
        if path is None:
            continue
        holder = ember
        *parents, leaf = path.split(".")
        for p in parents:
            holder = getattr(holder, p, None)
        assert holder is None or not hasattr(holder, leaf), f"ember has {path} now: add a case"


def _make(lib, in_dtype):
    def make(shape, seed, dtype=None):
        a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        return lib.tensor(a).to(getattr(lib, dtype or in_dtype))

    return make


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_dtype_under_bfloat16_autocast_matches_torch(name, in_dtype):
    fn = CASES[name]
    dtypes = []
    for lib in (ember, torch):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            r = fn(lib, lib.nn.functional, _make(lib, in_dtype))
        dtypes.append(str(r.dtype).rsplit(".", 1)[-1])
    assert dtypes[0] == dtypes[1], f"{name}: ember {dtypes[0]}, PyTorch {dtypes[1]}"
