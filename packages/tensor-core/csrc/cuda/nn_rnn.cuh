/* LSTM and GRU cells on CUDA (ec_lstm_cell*, ec_gru_cell* of rnn.c): the
 * gate GEMMs run on cuBLAS from the launcher (nn_launch.c), and the gate
 * nonlinearities with the state update are one fused kernel each way, a
 * thread per (row, hidden unit), the arithmetic of rnn.inc. */
#ifndef EMBER_CUDA_NN_RNN_CUH
#define EMBER_CUDA_NN_RNN_CUH

template <class T>
static __device__ __forceinline__ T ecu_sigmoid(T x) {
    return (T)1 / ((T)1 + exp(-x));
}

#define ECU_RNN_LOOP(e, n)                                                           \
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < (n);        \
         e += (int64_t)gridDim.x * blockDim.x)

/* out (b, w; row stride ld) = bias1 + bias2 (either may be 0). */
template <class T>
__global__ void ecu_rnn_bias_k(int64_t b, int64_t w, int64_t ld, T* out, const T* b1,
                               const T* b2) {
    ECU_RNN_LOOP(e, b * w) {
        int64_t r = e / w, j = e - r * w;
        out[r * ld + j] = (b1 ? b1[j] : (T)0) + (b2 ? b2[j] : (T)0);
    }
}

/* ws (b, 4h) holds the gate pre-activations; it gets the activated gates. */
template <class T>
__global__ void ecu_lstm_point_k(int64_t b, int64_t h, T* ws, T* hy, T* cy, const T* cx,
                                 int64_t c_rs) {
    ECU_RNN_LOOP(e, b * h) {
        int64_t r = e / h, j = e - r * h;
        T* g = ws + r * 4 * h;
        T i = ecu_sigmoid(g[j]), f = ecu_sigmoid(g[h + j]), c = tanh(g[2 * h + j]);
        T o = ecu_sigmoid(g[3 * h + j]);
        T cn = f * cx[r * c_rs + j] + i * c;
        cy[e] = cn;
        hy[e] = o * tanh(cn);
        g[j] = i, g[h + j] = f, g[2 * h + j] = c, g[3 * h + j] = o;
    }
}

template <class T>
__global__ void ecu_lstm_point_bwd_k(int64_t b, int64_t h, T* dg, T* dcx, const T* ws,
                                     const T* dhy, const T* dcy, const T* cx, int64_t c_rs,
                                     const T* cy) {
    ECU_RNN_LOOP(e, b * h) {
        int64_t r = e / h, j = e - r * h;
        const T* g = ws + r * 4 * h;
        T* d = dg + r * 4 * h;
        T gi = g[j], gf = g[h + j], gg = g[2 * h + j], go = g[3 * h + j];
        T tc = tanh(cy[e]);
        T dh = dhy ? dhy[e] : (T)0;
        T dc = (dcy ? dcy[e] : (T)0) + dh * go * ((T)1 - tc * tc);
        d[j] = dc * gg * gi * ((T)1 - gi);
        d[h + j] = dc * cx[r * c_rs + j] * gf * ((T)1 - gf);
        d[2 * h + j] = dc * gi * ((T)1 - gg * gg);
        d[3 * h + j] = dh * tc * go * ((T)1 - go);
        if (dcx) dcx[e] = dc * gf;
    }
}

/* ws (b, 4h): [r and z pre-activations (input + hidden parts), the input part
 * of n, the hidden part of n]; it gets [r, z, n, hidden part of n]. */
template <class T>
__global__ void ecu_gru_point_k(int64_t b, int64_t h, T* ws, T* hy, const T* hx, int64_t h_rs) {
    ECU_RNN_LOOP(e, b * h) {
        int64_t r = e / h, j = e - r * h;
        T* g = ws + r * 4 * h;
        T rg = ecu_sigmoid(g[j]), z = ecu_sigmoid(g[h + j]);
        T hn = g[3 * h + j];
        T n = tanh(g[2 * h + j] + rg * hn);
        T hv = hx[r * h_rs + j];
        hy[e] = n + z * (hv - n);
        g[j] = rg, g[h + j] = z, g[2 * h + j] = n;
    }
}

template <class T>
__global__ void ecu_gru_point_bwd_k(int64_t b, int64_t h, T* dg, T* ghx, const T* ws,
                                    const T* dhy, const T* hx, int64_t h_rs) {
    ECU_RNN_LOOP(e, b * h) {
        int64_t r = e / h, j = e - r * h;
        const T* g = ws + r * 4 * h;
        T* d = dg + r * 6 * h;
        T rg = g[j], z = g[h + j], n = g[2 * h + j], hn = g[3 * h + j];
        T dv = dhy[e];
        T dn = dv * ((T)1 - z) * ((T)1 - n * n);
        T dz = dv * (hx[r * h_rs + j] - n) * z * ((T)1 - z);
        T dr = dn * hn * rg * ((T)1 - rg);
        d[j] = dr, d[h + j] = dz, d[2 * h + j] = dn;
        d[3 * h + j] = dr, d[4 * h + j] = dz, d[5 * h + j] = dn * rg;
        if (ghx) ghx[e] = dv * z;
    }
}

/* db[j] = sum over rows of d[r, j] (row stride ld), in row order. */
template <class T>
__global__ void ecu_rnn_col_sum_k(int64_t b, int64_t w, int64_t ld, T* db, const T* d) {
    ECU_RNN_LOOP(j, w) {
        T s = 0;
        for (int64_t r = 0; r < b; r++) s += d[r * ld + j];
        db[j] = s;
    }
}

#endif
