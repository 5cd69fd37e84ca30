"""The compile groups of the nn kernels on CUDA (family ECU_FAM_NN,
csrc/cuda/nn_*.cuh, launched by csrc/cuda/nn_launch.c): one group per kernel,
dtype (and, for activations, kind), with a single variant or the strided
32/64-bit pair.  Part of _cuda_kernels' FAMILIES and all_groups() (the
compile test walks them)."""

import re

from ember_core._base.lib import lib

_BASE = ("prelude.cuh", "ember_codes.h", "nn_common.cuh")
_STORE = ("prelude.cuh", "ember_codes.h", "dtype_lists.h", "store.cuh", "nn_common.cuh")
_FLOATS = (lib.EC_FLOAT32, lib.EC_FLOAT64)
_ALL_FLOATS = (lib.EC_FLOAT16, lib.EC_BFLOAT16, lib.EC_FLOAT32, lib.EC_FLOAT64)
_S32, _S64 = lib.ECU_VAR_S32, lib.ECU_VAR_S64


def _single(template, headers, dtypes=_FLOATS):
    """A kernel of one variant: template formatted with {t} (storage type),
    {sfx} (dtype suffix) and {code} (dtype code)."""
    return ("single", template, headers, dtypes)


_NORM = _BASE + ("nn_norm.cuh",)

# op -> how its groups are made
KERNELS = {
    lib.ECU_NN_NLL: _single("ecu_nll_fwd<{t}>", _BASE + ("nn_loss.cuh",)),
    lib.ECU_NN_NLL_BWD: _single("ecu_nll_bwd<{t}>", _BASE + ("nn_loss.cuh",)),
    lib.ECU_NN_CE_ROWS: _single("ecu_ce_rows<{t}>", _BASE + ("nn_loss.cuh",)),
    lib.ECU_NN_CE_REDUCE: _single("ecu_ce_reduce<{t}>", _BASE + ("nn_loss.cuh",)),
    lib.ECU_NN_CE_COEF: _single("ecu_ce_coef<{t}>", _BASE + ("nn_loss.cuh",)),
    lib.ECU_NN_CE_BWD_ROWS: _single("ecu_ce_bwd_rows<{t}>", _BASE + ("nn_loss.cuh",)),
    lib.ECU_NN_MT_SGD: _single("ecu_mt_sgd<{t}>", _BASE + ("nn_optim.cuh",)),
    lib.ECU_NN_MT_ADAM: _single("ecu_mt_adam<{t}>", _BASE + ("nn_optim.cuh",)),
    lib.ECU_NN_MT_UNSCALE: _single(
        "ecu_mt_unscale<ecu_dt_{sfx}, {code}>", _STORE + ("nn_optim.cuh", "nn_amp.cuh"), _ALL_FLOATS
    ),
    # the row gather moves items by size: one kernel per item size
    lib.ECU_NN_EMBEDDING: _single(
        "ecu_embedding_k<{t}>",
        _BASE + ("nn_embed.cuh",),
        (lib.EC_UINT8, lib.EC_INT16, lib.EC_INT32, lib.EC_INT64),
    ),
    lib.ECU_NN_EMBEDDING_BWD: _single("ecu_embedding_bwd_k<{t}>", _BASE + ("nn_embed.cuh",)),
    lib.ECU_NN_EMBEDDING_BAG: _single("ecu_embedding_bag_k<{t}>", _BASE + ("nn_embed.cuh",)),
    lib.ECU_NN_EMBEDDING_BAG_BWD: _single(
        "ecu_embedding_bag_bwd_k<{t}>", _BASE + ("nn_embed.cuh",)
    ),
    lib.ECU_NN_EMBEDDING_BAG_PSW: _single(
        "ecu_embedding_bag_psw_k<{t}>", _BASE + ("nn_embed.cuh",)
    ),
    lib.ECU_NN_EMBEDDING_RENORM: _single("ecu_embedding_renorm_k<{t}>", _BASE + ("nn_embed.cuh",)),
    lib.ECU_NN_ROW_NORM: _single("ecu_row_norm_k<{t}>", _NORM),
    lib.ECU_NN_ROW_NORM_BWD: _single("ecu_row_norm_bwd_k<{t}>", _NORM),
    lib.ECU_NN_ROW_NORM_COLS: _single("ecu_row_norm_cols_k<{t}>", _NORM),
    lib.ECU_NN_BATCH_NORM: _single("ecu_batch_norm_k<{t}>", _NORM),
    lib.ECU_NN_BATCH_NORM_BWD: _single("ecu_batch_norm_bwd_k<{t}>", _NORM),
    lib.ECU_NN_GROUP_NORM: _single("ecu_group_norm_k<{t}>", _NORM),
    lib.ECU_NN_GROUP_NORM_BWD: _single("ecu_group_norm_bwd_k<{t}>", _NORM),
    lib.ECU_NN_GROUP_NORM_WGRAD: _single("ecu_group_norm_wgrad_k<{t}>", _NORM),
}
_SPATIAL = _BASE + ("nn_spatial.cuh",)
for _op, _kernel in (
    (lib.ECU_NN_MAX_POOL, "ecu_max_pool_k"),
    (lib.ECU_NN_AVG_POOL, "ecu_avg_pool_k"),
    (lib.ECU_NN_AVG_POOL_BWD, "ecu_avg_pool_bwd_k"),
    (lib.ECU_NN_ADAPTIVE_POOL, "ecu_adaptive_pool_k"),
    (lib.ECU_NN_ADAPTIVE_AVG_BWD, "ecu_adaptive_avg_bwd_k"),
    (lib.ECU_NN_INDEX_SCATTER_ADD, "ecu_index_scatter_add_k"),
    (lib.ECU_NN_INDEX_GATHER, "ecu_index_gather_k"),
    (lib.ECU_NN_IM2COL, "ecu_im2col_k"),
    (lib.ECU_NN_COL2IM, "ecu_col2im_k"),
    (lib.ECU_NN_FILL_BIAS, "ecu_fill_bias_k"),
    (lib.ECU_NN_BIAS_GRAD, "ecu_bias_grad_k"),
    (lib.ECU_NN_DW_CONV, "ecu_dw_conv_k"),
    (lib.ECU_NN_DW_CONV_BWD_DATA, "ecu_dw_conv_bwd_data_k"),
    (lib.ECU_NN_DW_CONV_BWD_WEIGHT, "ecu_dw_conv_bwd_weight_k"),
):
    KERNELS[_op] = _single(_kernel + "<{t}>", _SPATIAL)
_RESAMPLE = ("prelude.cuh", "ember_codes.h", "index_map.h", "nn_resample.cuh")
KERNELS[lib.ECU_NN_INDEX_MAP] = _single("ecu_index_map_k", _RESAMPLE, (lib.EC_INT64,))
KERNELS[lib.ECU_NN_MAP_GATHER] = _single(
    "ecu_map_gather_k<{t}>", _RESAMPLE, (lib.EC_UINT8, lib.EC_INT16, lib.EC_INT32, lib.EC_INT64)
)
KERNELS[lib.ECU_NN_MAP_SCATTER_ADD] = _single("ecu_map_scatter_add_k<{t}>", _RESAMPLE)
KERNELS[lib.ECU_NN_UPSAMPLE_LINEAR] = _single("ecu_upsample_linear_k<{t}, false>", _RESAMPLE)
KERNELS[lib.ECU_NN_UPSAMPLE_LINEAR_BWD] = _single("ecu_upsample_linear_k<{t}, true>", _RESAMPLE)
_RNN = ("prelude.cuh", "ember_codes.h", "nn_rnn.cuh")
for _op, _kernel in (
    (lib.ECU_NN_RNN_BIAS, "ecu_rnn_bias_k"),
    (lib.ECU_NN_RNN_COL_SUM, "ecu_rnn_col_sum_k"),
    (lib.ECU_NN_LSTM_POINT, "ecu_lstm_point_k"),
    (lib.ECU_NN_LSTM_POINT_BWD, "ecu_lstm_point_bwd_k"),
    (lib.ECU_NN_GRU_POINT, "ecu_gru_point_k"),
    (lib.ECU_NN_GRU_POINT_BWD, "ecu_gru_point_bwd_k"),
):
    KERNELS[_op] = _single(_kernel + "<{t}>", _RNN)
KERNELS[lib.ECU_NN_UPSAMPLE_BICUBIC] = _single("ecu_upsample_bicubic_k<{t}, false>", _RESAMPLE)
KERNELS[lib.ECU_NN_UPSAMPLE_BICUBIC_BWD] = _single("ecu_upsample_bicubic_k<{t}, true>", _RESAMPLE)

_SAMPLE = _BASE + ("nn_sample.cuh",)
for _op, _kernel in (
    (lib.ECU_NN_GRID_SAMPLE_2D, "ecu_grid_sample_2d_k<{t}, false>"),
    (lib.ECU_NN_GRID_SAMPLE_2D_BWD, "ecu_grid_sample_2d_k<{t}, true>"),
    (lib.ECU_NN_GRID_SAMPLE_3D, "ecu_grid_sample_3d_k<{t}, false>"),
    (lib.ECU_NN_GRID_SAMPLE_3D_BWD, "ecu_grid_sample_3d_k<{t}, true>"),
    (lib.ECU_NN_CTC, "ecu_ctc_fwd_k<{t}>"),
    (lib.ECU_NN_CTC_BWD, "ecu_ctc_bwd_k<{t}>"),
):
    KERNELS[_op] = _single(_kernel, _SAMPLE)

_ATTENTION = _BASE + ("attention.cuh",)
_ATTN_DTYPES = (lib.EC_FLOAT16, lib.EC_BFLOAT16, lib.EC_FLOAT32)
for _op, _kernel in (
    (lib.ECU_NN_ATTN_FWD, "ecu_attn_fwd_k<{code}>"),
    (lib.ECU_NN_ATTN_BWD_DQ, "ecu_attn_bwd_dq_k<{code}>"),
    (lib.ECU_NN_ATTN_BWD_DKV, "ecu_attn_bwd_dkv_k<{code}>"),
):
    KERNELS[_op] = _single(_kernel, _ATTENTION, _ATTN_DTYPES)

_ACT_HEADERS = _BASE + ("activation_ops.h", "nn_act.cuh")


def _activation_kinds(list_name):
    """The EC_ACT_* kinds a list of activation_ops.h has (the embedded copy)."""
    from ember_core._cuda.kernels import _header_text

    text = _header_text("activation_ops.h")
    start = text.index(f"#define {list_name}(")
    body = text[start : text.index("\n\n", start)] if "\n\n" in text[start:] else text[start:]
    return tuple(getattr(lib, f"EC_ACT_{k}") for k in re.findall(r"^\s*[FB]\((\w+),", body, re.M))


def nn_group(op, dtype, dtype2):
    """The group of nn kernel `op` for `dtype` (and dtype2: an activation's kind)."""
    from ember_core._cuda.kernels import DTYPES, Group

    _, sfx, storage = DTYPES[dtype][:3] if dtype in DTYPES else (None, None, None)
    if op in (lib.ECU_NN_ACT_FWD, lib.ECU_NN_ACT_BWD):
        bwd = op == lib.ECU_NN_ACT_BWD
        kinds = _activation_kinds("ACT_BACKWARD_LIST" if bwd else "ACT_FORWARD_LIST")
        if dtype not in _FLOATS or dtype2 not in kinds:
            raise RuntimeError(f"no CUDA activation kernel {op} kind {dtype2} dtype {dtype}")
        b = "true" if bwd else "false"
        kernels = tuple(
            (v, f"ecu_act_k<{dtype2}, {storage}, {b}, {i32}>")
            for v, i32 in ((_S32, "true"), (_S64, "false"))
        )
        source = "".join(f'#include "{h}"\n' for h in _ACT_HEADERS)
        return Group(f"NN_ACT_{int(bwd)}_{dtype2}_{sfx}", source, _ACT_HEADERS, kernels)
    entry = KERNELS.get(op)
    if entry is None or dtype not in entry[3]:
        raise RuntimeError(f"no CUDA nn kernel {op} for dtype code {dtype}")
    _, template, headers, _ = entry
    name = template.format(t=storage, sfx=sfx, code=dtype)
    source = "".join(f'#include "{h}"\n' for h in headers)
    return Group(f"NN_{op}_{sfx}", source, headers, ((0, name),))


def nn_groups():
    """Every nn group (for the compile test)."""
    out = [nn_group(op, dt, 0) for op, entry in sorted(KERNELS.items()) for dt in entry[3]]
    for op, list_name in (
        (lib.ECU_NN_ACT_FWD, "ACT_FORWARD_LIST"),
        (lib.ECU_NN_ACT_BWD, "ACT_BACKWARD_LIST"),
    ):
        out += [nn_group(op, dt, k) for k in _activation_kinds(list_name) for dt in _FLOATS]
    return out
