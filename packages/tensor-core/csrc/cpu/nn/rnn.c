/* Fused LSTM and GRU cells, forward and backward (ec_lstm_cell*, ec_gru_cell*). */
#include "nn.h"

#define T float
#define SFX _f32
#define SIGMOID nn_sigmoidf
#define TANH nn_tanhf
#include "rnn.inc"
#undef T
#undef SFX
#undef SIGMOID
#undef TANH

#define T double
#define SFX _f64
#define SIGMOID nn_sigmoid
#define TANH nn_tanh
#include "rnn.inc"
#undef T
#undef SFX
#undef SIGMOID
#undef TANH

#define F32(p) ((float*)(p))
#define F64(p) ((double*)(p))

static int sizes_ok(const char* op, int64_t b, int64_t i, int64_t h) {
    if (b < 0 || i < 0 || h < 0) return ec_fail(EC_ERR_INVALID, "%s: negative size", op);
    return EC_OK;
}

int ec_lstm_cell(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr hy, ec_ptr cy, ec_ptr ws,
                 ec_ptr x, int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr cx, int64_t c_rs,
                 ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh, int64_t whh_rs, ec_ptr b_ih,
                 ec_ptr b_hh) {
    int st = sizes_ok("lstm_cell", b, i, h);
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return lstm_cell_f32(dtype, b, i, h, F32(hy), F32(cy), F32(ws), F32(x), x_rs, F32(hx), h_rs,
                             F32(cx), c_rs, F32(w_ih), wih_rs, F32(w_hh), whh_rs, F32(b_ih),
                             F32(b_hh));
    if (dtype == EC_FLOAT64)
        return lstm_cell_f64(dtype, b, i, h, F64(hy), F64(cy), F64(ws), F64(x), x_rs, F64(hx), h_rs,
                             F64(cx), c_rs, F64(w_ih), wih_rs, F64(w_hh), whh_rs, F64(b_ih),
                             F64(b_hh));
    return ec_fail(EC_ERR_DTYPE, "lstm_cell: no kernel for dtype %d", dtype);
}

int ec_lstm_cell_backward(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr grad_x,
                          ec_ptr grad_hx, ec_ptr grad_cx, ec_ptr grad_w_ih, ec_ptr grad_w_hh,
                          ec_ptr grad_b, ec_ptr dgates, ec_ptr grad_hy, ec_ptr grad_cy,
                          ec_ptr ws, ec_ptr cx, int64_t c_rs, ec_ptr cy, ec_ptr x, int64_t x_rs,
                          ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh,
                          int64_t whh_rs) {
    int st = sizes_ok("lstm_cell backward", b, i, h);
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return lstm_cell_backward_f32(dtype, b, i, h, F32(grad_x), F32(grad_hx), F32(grad_cx),
                                      F32(grad_w_ih), F32(grad_w_hh), F32(grad_b), F32(dgates),
                                      F32(grad_hy), F32(grad_cy), F32(ws), F32(cx), c_rs, F32(cy),
                                      F32(x), x_rs, F32(hx), h_rs, F32(w_ih), wih_rs, F32(w_hh),
                                      whh_rs);
    if (dtype == EC_FLOAT64)
        return lstm_cell_backward_f64(dtype, b, i, h, F64(grad_x), F64(grad_hx), F64(grad_cx),
                                      F64(grad_w_ih), F64(grad_w_hh), F64(grad_b), F64(dgates),
                                      F64(grad_hy), F64(grad_cy), F64(ws), F64(cx), c_rs, F64(cy),
                                      F64(x), x_rs, F64(hx), h_rs, F64(w_ih), wih_rs, F64(w_hh),
                                      whh_rs);
    return ec_fail(EC_ERR_DTYPE, "lstm_cell backward: no kernel for dtype %d", dtype);
}

int ec_gru_cell(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr hy, ec_ptr ws, ec_ptr x,
                int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs, ec_ptr w_hh,
                int64_t whh_rs, ec_ptr b_ih, ec_ptr b_hh) {
    int st = sizes_ok("gru_cell", b, i, h);
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return gru_cell_f32(dtype, b, i, h, F32(hy), F32(ws), F32(x), x_rs, F32(hx), h_rs,
                            F32(w_ih), wih_rs, F32(w_hh), whh_rs, F32(b_ih), F32(b_hh));
    if (dtype == EC_FLOAT64)
        return gru_cell_f64(dtype, b, i, h, F64(hy), F64(ws), F64(x), x_rs, F64(hx), h_rs,
                            F64(w_ih), wih_rs, F64(w_hh), whh_rs, F64(b_ih), F64(b_hh));
    return ec_fail(EC_ERR_DTYPE, "gru_cell: no kernel for dtype %d", dtype);
}

int ec_gru_cell_backward(int dtype, int64_t b, int64_t i, int64_t h, ec_ptr grad_x,
                         ec_ptr grad_hx, ec_ptr grad_w_ih, ec_ptr grad_w_hh, ec_ptr grad_b_ih,
                         ec_ptr grad_b_hh, ec_ptr dgates, ec_ptr grad_hy, ec_ptr ws, ec_ptr x,
                         int64_t x_rs, ec_ptr hx, int64_t h_rs, ec_ptr w_ih, int64_t wih_rs,
                         ec_ptr w_hh, int64_t whh_rs) {
    int st = sizes_ok("gru_cell backward", b, i, h);
    if (st) return st;
    if (dtype == EC_FLOAT32)
        return gru_cell_backward_f32(dtype, b, i, h, F32(grad_x), F32(grad_hx), F32(grad_w_ih),
                                     F32(grad_w_hh), F32(grad_b_ih), F32(grad_b_hh), F32(dgates),
                                     F32(grad_hy), F32(ws), F32(x), x_rs, F32(hx), h_rs, F32(w_ih),
                                     wih_rs, F32(w_hh), whh_rs);
    if (dtype == EC_FLOAT64)
        return gru_cell_backward_f64(dtype, b, i, h, F64(grad_x), F64(grad_hx), F64(grad_w_ih),
                                     F64(grad_w_hh), F64(grad_b_ih), F64(grad_b_hh), F64(dgates),
                                     F64(grad_hy), F64(ws), F64(x), x_rs, F64(hx), h_rs, F64(w_ih),
                                     wih_rs, F64(w_hh), whh_rs);
    return ec_fail(EC_ERR_DTYPE, "gru_cell backward: no kernel for dtype %d", dtype);
}
