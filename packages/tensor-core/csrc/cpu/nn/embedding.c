/* Embedding lookups and their gradients: row gather, scatter-add backward,
 * max_norm renormalisation and bags (sum / mean / max). */
#include "nn.h"

static inline int64_t load_idx(const void* idx, int i32, int64_t k) {
    return i32 ? (int64_t)((const int32_t*)idx)[k] : ((const int64_t*)idx)[k];
}

static int check_indices(const void* idx, int i32, int64_t n, int64_t num) {
    for (int64_t k = 0; k < n; k++) {
        int64_t v = load_idx(idx, i32, k);
        if (v < 0 || v >= num)
            return ec_fail(EC_ERR_INDEX, "index out of range in self (index %lld, %lld rows)",
                           (long long)v, (long long)num);
    }
    return EC_OK;
}

int ec_embedding(int dtype, int64_t num, int64_t dim, ec_ptr out, ec_ptr weight, int64_t w_rs,
                 ec_ptr idx, int idx_is_i32, int64_t n) {
    if (!ec_valid_dtype(dtype) || num < 0 || dim < 0 || n < 0)
        return ec_fail(EC_ERR_INVALID, "embedding: bad arguments");
    const void* ip = (const void*)idx;
    int st = check_indices(ip, idx_is_i32, n, num);
    if (st) return st;
    size_t isz = (size_t)ec_itemsize[dtype];
    char* o = (char*)out;
    const char* w = (const char*)weight;
    int nt = ec_threads_for(n * dim, EC_GRAIN);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t k = 0; k < n; k++)
        memcpy(o + (size_t)(k * dim) * isz, w + (size_t)(load_idx(ip, idx_is_i32, k) * w_rs) * isz,
               (size_t)dim * isz);
    return EC_OK;
}

/* grad_weight[idx[k]] += grad[k] * scale(k): each thread owns a range of table
 * rows and scans every index, so no two threads write one row. */
#define EMB_BACK(T)                                                                        \
    {                                                                                      \
        T* gw = (T*)grad_weight;                                                           \
        const T* g = (const T*)grad;                                                       \
        int64_t* counts = NULL;                                                            \
        if (scale_by_freq) {                                                               \
            counts = calloc((size_t)(num > 0 ? num : 1), sizeof(int64_t));                 \
            if (!counts) return ec_fail(EC_ERR_NOMEM, "embedding backward: no scratch memory"); \
            for (int64_t k = 0; k < n; k++) counts[load_idx(ip, idx_is_i32, k)]++;         \
        }                                                                                  \
        int nt = ec_threads_for(num * dim + n * dim, EC_GRAIN);                            \
        _Pragma("omp parallel num_threads(nt)")                                            \
        {                                                                                  \
            int t = NN_THREAD_ID(), nth = 1;                                               \
            NN_NUM_THREADS(nth);                                                           \
            int64_t lo = num * t / nth, hi = num * (t + 1) / nth;                          \
            memset(gw + lo * dim, 0, sizeof(T) * (size_t)((hi - lo) * dim));               \
            for (int64_t k = 0; k < n; k++) {                                              \
                int64_t r = load_idx(ip, idx_is_i32, k);                                   \
                if (r < lo || r >= hi || r == padding_idx) continue;                       \
                T sc = counts ? (T)1 / (T)counts[r] : (T)1;                                \
                T* dst = gw + r * dim;                                                     \
                const T* src = g + k * dim;                                                \
                for (int64_t j = 0; j < dim; j++) dst[j] += src[j] * sc;                   \
            }                                                                              \
        }                                                                                  \
        free(counts);                                                                      \
        return EC_OK;                                                                      \
    }

int ec_embedding_backward(int dtype, int64_t num, int64_t dim, ec_ptr grad_weight, ec_ptr grad,
                          ec_ptr idx, int idx_is_i32, int64_t n, int64_t padding_idx,
                          int scale_by_freq) {
    if (num < 0 || dim < 0 || n < 0) return ec_fail(EC_ERR_INVALID, "embedding backward: bad sizes");
    const void* ip = (const void*)idx;
    int st = check_indices(ip, idx_is_i32, n, num);
    if (st) return st;
    if (dtype == EC_FLOAT32) EMB_BACK(float)
    if (dtype == EC_FLOAT64) EMB_BACK(double)
    return ec_fail(EC_ERR_DTYPE, "embedding backward: no kernel for dtype %d", dtype);
}

int ec_embedding_renorm(int dtype, int64_t num, int64_t dim, ec_ptr weight, int64_t w_rs,
                        ec_ptr idx, int idx_is_i32, int64_t n, double max_norm, double norm_type) {
    if (num < 0 || dim < 0 || n < 0) return ec_fail(EC_ERR_INVALID, "embedding_renorm_: bad sizes");
    if (!ec_is_float(dtype)) return ec_fail(EC_ERR_DTYPE, "embedding_renorm_: needs a float dtype");
    const void* ip = (const void*)idx;
    int st = check_indices(ip, idx_is_i32, n, num);
    if (st) return st;
    uint8_t* seen = calloc((size_t)(num > 0 ? num : 1), 1);
    if (!seen) return ec_fail(EC_ERR_NOMEM, "embedding_renorm_: no scratch memory");
    char* w = (char*)weight;
    int isz = ec_itemsize[dtype];
    for (int64_t k = 0; k < n; k++) {
        int64_t r = load_idx(ip, idx_is_i32, k);
        if (seen[r]) continue;
        seen[r] = 1;
        char* row = w + (size_t)(r * w_rs) * (size_t)isz;
        double norm = 0;
        for (int64_t j = 0; j < dim; j++) {
            double v = fabs(nn_load(dtype, row, j));
            if (norm_type == INFINITY) norm = v > norm ? v : norm;
            else if (norm_type == 1) norm += v;
            else if (norm_type == 2) norm += v * v;
            else if (norm_type == 0) norm += v != 0;
            else norm += pow(v, norm_type);
        }
        if (norm_type == 2) norm = sqrt(norm);
        else if (norm_type != 1 && norm_type != 0 && norm_type != INFINITY) norm = pow(norm, 1.0 / norm_type);
        if (norm > max_norm) {
            double scale = max_norm / (norm + 1e-7);
            for (int64_t j = 0; j < dim; j++) nn_store(dtype, row, j, nn_load(dtype, row, j) * scale);
        }
    }
    free(seen);
    return EC_OK;
}

/* ------------------------------------------------------------------- bags */

/* PyTorch's messages (RuntimeError there too). */
static int check_bag_indices(const int64_t* idx, int64_t n, int64_t num) {
    for (int64_t k = 0; k < n; k++)
        if (idx[k] < 0 || idx[k] >= num)
            return ec_fail(EC_ERR_VALUE,
                           "Index %lld of input takes value %lld which is not in the valid range "
                           "[0, %lld)",
                           (long long)k, (long long)idx[k], (long long)num);
    return EC_OK;
}

static int check_offsets(const int64_t* offsets, int64_t bags, int64_t n) {
    if (bags > 0 && offsets[0] != 0)
        return ec_fail(EC_ERR_VALUE,
                       "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                       "start from position 0. However, got %lld",
                       (long long)offsets[0]);
    for (int64_t b = 0; b < bags; b++) {
        int64_t lo = offsets[b], hi = b + 1 < bags ? offsets[b + 1] : n;
        if (lo > n)
            return ec_fail(EC_ERR_VALUE,
                           "offsets[-1] can not be greater than input's length %lld but got "
                           "offsets[-1] of %lld",
                           (long long)n, (long long)lo);
        if (hi < lo)
            return ec_fail(EC_ERR_VALUE,
                           "offsets must be non-decreasing, but offsets[%lld] = %lld > "
                           "offsets[%lld] = %lld",
                           (long long)b, (long long)lo, (long long)(b + 1), (long long)hi);
    }
    return EC_OK;
}

#define BAG_FWD(T)                                                                         \
    {                                                                                      \
        T* o = (T*)out;                                                                    \
        const T* w = (const T*)weight;                                                     \
        const T* ps = (const T*)psw;                                                       \
        for (int64_t k = 0; k < n; k++) o2b[k] = -1;                                       \
        int nt = ec_threads_for(n * dim, EC_GRAIN);                                        \
        _Pragma("omp parallel for num_threads(nt) schedule(static)")                       \
        for (int64_t b = 0; b < bags; b++) {                                               \
            int64_t lo = off[b], hi = b + 1 < bags ? off[b + 1] : n, cnt = 0;              \
            T* ob = o + b * dim;                                                           \
            int64_t* mb = mode == 2 ? mi + b * dim : NULL;                                 \
            for (int64_t j = 0; j < dim; j++) ob[j] = 0;                                   \
            if (mb)                                                                        \
                for (int64_t j = 0; j < dim; j++) mb[j] = -1;                              \
            for (int64_t k = lo; k < hi; k++) {                                            \
                int64_t r = ip[k];                                                         \
                o2b[k] = b;                                                                \
                if (r == padding_idx) continue;                                            \
                const T* row = w + r * w_rs;                                               \
                if (mode == 2) {                                                           \
                    for (int64_t j = 0; j < dim; j++)                                      \
                        if (mb[j] < 0 || row[j] > ob[j]) ob[j] = row[j], mb[j] = r;         \
                } else {                                                                   \
                    T sc = ps ? ps[k] : (T)1;                                              \
                    for (int64_t j = 0; j < dim; j++) ob[j] += row[j] * sc;                \
                }                                                                          \
                cnt++;                                                                     \
            }                                                                              \
            bs[b] = cnt;                                                                   \
            if (mode == 1 && cnt > 0) {                                                    \
                T inv = (T)1 / (T)cnt;                                                     \
                for (int64_t j = 0; j < dim; j++) ob[j] *= inv;                            \
            }                                                                              \
        }                                                                                  \
        return EC_OK;                                                                      \
    }

int ec_embedding_bag(int dtype, int64_t num, int64_t dim, int mode, ec_ptr out, ec_ptr offset2bag,
                     ec_ptr bag_size, ec_ptr max_idx, ec_ptr weight, int64_t w_rs, ec_ptr idx,
                     int64_t n, ec_ptr offsets, int64_t bags, ec_ptr psw, int64_t padding_idx) {
    if (num < 0 || dim < 0 || n < 0 || bags < 0 || mode < 0 || mode > 2)
        return ec_fail(EC_ERR_INVALID, "embedding_bag: bad arguments");
    const int64_t* ip = (const int64_t*)idx;
    const int64_t* off = (const int64_t*)offsets;
    int64_t* o2b = (int64_t*)offset2bag;
    int64_t* bs = (int64_t*)bag_size;
    int64_t* mi = (int64_t*)max_idx;
    int st = check_bag_indices(ip, n, num);
    if (st) return st;
    st = check_offsets(off, bags, n);
    if (st) return st;
    if (dtype == EC_FLOAT32) BAG_FWD(float)
    if (dtype == EC_FLOAT64) BAG_FWD(double)
    return ec_fail(EC_ERR_DTYPE, "embedding_bag: no kernel for dtype %d", dtype);
}

#define BAG_BACK(T)                                                                        \
    {                                                                                      \
        T* gw = (T*)grad_weight;                                                           \
        T* gp = (T*)grad_psw;                                                              \
        const T* g = (const T*)grad;                                                       \
        const T* w = (const T*)weight;                                                     \
        const T* ps = (const T*)psw;                                                       \
        int64_t* counts = NULL;                                                            \
        if (scale_by_freq && mode != 2) {                                                  \
            counts = calloc((size_t)(num > 0 ? num : 1), sizeof(int64_t));                 \
            if (!counts) return ec_fail(EC_ERR_NOMEM, "embedding_bag backward: no scratch memory"); \
            for (int64_t k = 0; k < n; k++) counts[ip[k]]++;                               \
        }                                                                                  \
        int nt = ec_threads_for(num * dim + n * dim, EC_GRAIN);                            \
        _Pragma("omp parallel num_threads(nt)")                                            \
        {                                                                                  \
            int t = NN_THREAD_ID(), nth = 1;                                               \
            NN_NUM_THREADS(nth);                                                           \
            int64_t lo = num * t / nth, hi = num * (t + 1) / nth;                          \
            memset(gw + lo * dim, 0, sizeof(T) * (size_t)((hi - lo) * dim));               \
            if (mode == 2) {                                                               \
                for (int64_t b = 0; b < bags; b++)                                         \
                    for (int64_t j = 0; j < dim; j++) {                                    \
                        int64_t r = mi[b * dim + j];                                       \
                        if (r >= lo && r < hi) gw[r * dim + j] += g[b * dim + j];          \
                    }                                                                      \
            } else {                                                                       \
                for (int64_t k = 0; k < n; k++) {                                          \
                    int64_t r = ip[k], b = o2b[k];                                         \
                    if (r < lo || r >= hi || r == padding_idx || b < 0) continue;          \
                    T sc = mode == 1 ? (T)1 / (T)bs[b] : (ps ? ps[k] : (T)1);              \
                    if (counts) sc /= (T)counts[r];                                        \
                    T* dst = gw + r * dim;                                                 \
                    const T* src = g + b * dim;                                            \
                    for (int64_t j = 0; j < dim; j++) dst[j] += src[j] * sc;               \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        if (gp)                                                                            \
            for (int64_t k = 0; k < n; k++) {                                              \
                int64_t r = ip[k], b = o2b[k];                                             \
                double acc = 0;                                                            \
                if (b >= 0 && r != padding_idx)                                            \
                    for (int64_t j = 0; j < dim; j++)                                      \
                        acc += (double)g[b * dim + j] * (double)w[r * w_rs + j];           \
                gp[k] = (T)acc;                                                            \
            }                                                                              \
        free(counts);                                                                      \
        return EC_OK;                                                                      \
    }

int ec_embedding_bag_backward(int dtype, int64_t num, int64_t dim, int mode, ec_ptr grad_weight,
                              ec_ptr grad_psw, ec_ptr grad, ec_ptr weight, int64_t w_rs,
                              ec_ptr idx, int64_t n, ec_ptr offset2bag, ec_ptr bag_size,
                              ec_ptr max_idx, int64_t bags, ec_ptr psw, int64_t padding_idx,
                              int scale_by_freq) {
    if (num < 0 || dim < 0 || n < 0 || bags < 0 || mode < 0 || mode > 2)
        return ec_fail(EC_ERR_INVALID, "embedding_bag backward: bad arguments");
    const int64_t* ip = (const int64_t*)idx;
    const int64_t* o2b = (const int64_t*)offset2bag;
    const int64_t* bs = (const int64_t*)bag_size;
    const int64_t* mi = (const int64_t*)max_idx;
    int st = check_indices(ip, 0, n, num);
    if (st) return st;
    for (int64_t k = 0; k < n; k++)
        if (o2b[k] >= bags)
            return ec_fail(EC_ERR_INDEX, "embedding_bag backward: offset2bag out of range");
    if (mode == 2)
        for (int64_t k = 0; k < bags * dim; k++)
            if (mi[k] >= num)
                return ec_fail(EC_ERR_INDEX, "embedding_bag backward: max index out of range");
    if (dtype == EC_FLOAT32) BAG_BACK(float)
    if (dtype == EC_FLOAT64) BAG_BACK(double)
    return ec_fail(EC_ERR_DTYPE, "embedding_bag backward: no kernel for dtype %d", dtype);
}
