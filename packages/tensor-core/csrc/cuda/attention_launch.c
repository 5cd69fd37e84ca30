/* CUDA launchers of the fused attention kernels (attention.cuh, Note [Fused
 * attention]; compile groups of family ECU_FAM_NN).  There is no CPU twin:
 * scaled_dot_product_attention takes the math path on the CPU, and
 * ember_core._ops.nn.attention_fused calls these only for CUDA tensors.  geo: N, H,
 * L, S, E, Ev, then the element strides (n, h, row) of q, k and v and (n, h,
 * row, column) of the mask; out, lse, grad_out, delta and the gradients are
 * dense. */
#include "launch.h"

#define ATTN_WARPS 8
#define ATTN_TILE 32
#define ATTN_MAXD 128

typedef struct {
    int64_t N, H, L, S, E, Ev;
    int64_t q[3], k[3], v[3], m[4];
} attn_geo;

static int attn_check(int dtype, const int64_t* geo, int mask_kind, attn_geo* g, const char* op) {
    if (dtype != EC_FLOAT16 && dtype != EC_BFLOAT16 && dtype != EC_FLOAT32)
        return ec_fail(EC_ERR_DTYPE, "%s: no fused CUDA kernel for dtype %d", op, dtype);
    g->N = geo[0], g->H = geo[1], g->L = geo[2], g->S = geo[3], g->E = geo[4], g->Ev = geo[5];
    for (int x = 0; x < 3; x++) {
        g->q[x] = geo[6 + x];
        g->k[x] = geo[9 + x];
        g->v[x] = geo[12 + x];
    }
    for (int x = 0; x < 4; x++) g->m[x] = geo[15 + x];
    if (g->N < 1 || g->H < 1 || g->L < 1 || g->S < 1 || g->E < 1 || g->Ev < 1)
        return ec_fail(EC_ERR_INVALID, "%s: empty or negative sizes", op);
    if (g->E > ATTN_MAXD || g->Ev > ATTN_MAXD)
        return ec_fail(EC_ERR_INVALID, "%s: head dims %lld/%lld over the fused kernel's %d", op,
                       (long long)g->E, (long long)g->Ev, ATTN_MAXD);
    if (mask_kind < 0 || mask_kind > 2)
        return ec_fail(EC_ERR_INVALID, "%s: unknown mask kind %d", op, mask_kind);
    if (g->N * g->H > 0x7fffffffLL || (g->L + ATTN_WARPS - 1) / ATTN_WARPS > 65535 ||
        (g->S + ATTN_WARPS - 1) / ATTN_WARPS > 65535)
        return ec_fail(EC_ERR_INVALID, "%s: too many heads or rows for one launch", op);
    return ecu_ready();
}

static unsigned attn_rows(int64_t rows) { return (unsigned)((rows + ATTN_WARPS - 1) / ATTN_WARPS); }

int ecu_attention_forward(int dtype, const int64_t* geo, double scale, int causal, int mask_kind,
                          ec_ptr q, ec_ptr k, ec_ptr v, ec_ptr mask, ec_ptr out, ec_ptr lse) {
    attn_geo g;
    int st = attn_check(dtype, geo, mask_kind, &g, "scaled_dot_product_attention");
    if (st != EC_OK) return st;
    ecu_CUfunction f;
    if ((st = ecu_get_function(ECU_FAM_NN, ECU_NN_ATTN_FWD, dtype, 0, 0, &f)) != EC_OK) return st;
    float sc = (float)scale;
    void* args[] = {&g, &sc, &causal, &mask_kind, &q, &k, &v, &mask, &out, &lse};
    /* tiles with rows padded by one float (attention.cuh's ecu_attn_stage) */
    unsigned smem =
        (unsigned)((ATTN_TILE * (g.E + g.Ev + 2) + ATTN_WARPS * g.E) * sizeof(float));
    return ecu_launch(f, (unsigned)(g.N * g.H), attn_rows(g.L), 1, ATTN_WARPS * 32, 1, 1, smem,
                      args);
}

int ecu_attention_backward(int dtype, const int64_t* geo, double scale, int causal, int mask_kind,
                           ec_ptr q, ec_ptr k, ec_ptr v, ec_ptr mask, ec_ptr out, ec_ptr lse,
                           ec_ptr grad_out, ec_ptr delta, ec_ptr dq, ec_ptr dk, ec_ptr dv) {
    attn_geo g;
    int st = attn_check(dtype, geo, mask_kind, &g, "scaled_dot_product_attention backward");
    if (st != EC_OK) return st;
    ecu_CUfunction f;
    float sc = (float)scale;
    if ((st = ecu_get_function(ECU_FAM_NN, ECU_NN_ATTN_BWD_DQ, dtype, 0, 0, &f)) != EC_OK)
        return st;
    void* args[] = {&g, &sc, &causal, &mask_kind, &q, &k, &v, &mask, &out, &lse, &grad_out,
                    &delta, &dq};
    unsigned smem = (unsigned)((ATTN_TILE * (g.E + g.Ev + 2) + ATTN_WARPS * (g.E + g.Ev)) *
                               sizeof(float));
    st = ecu_launch(f, (unsigned)(g.N * g.H), attn_rows(g.L), 1, ATTN_WARPS * 32, 1, 1, smem,
                    args);
    if (st != EC_OK) return st;
    /* after the dq kernel on the same stream: it writes delta */
    if ((st = ecu_get_function(ECU_FAM_NN, ECU_NN_ATTN_BWD_DKV, dtype, 0, 0, &f)) != EC_OK)
        return st;
    void* args2[] = {&g, &sc, &causal, &mask_kind, &q, &k, &v, &mask, &lse, &grad_out, &delta,
                     &dk, &dv};
    smem += 2 * ATTN_TILE * sizeof(float);
    return ecu_launch(f, (unsigned)(g.N * g.H), attn_rows(g.S), 1, ATTN_WARPS * 32, 1, 1, smem,
                      args2);
}
