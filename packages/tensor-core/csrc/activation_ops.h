/* The activation family's expressions, shared by the CPU kernels
 * (activation.c) and the CUDA ones (cuda/nn_act.cuh): "one op list, two
 * backends".  An includer defines CT (the compute type) and P0/P1 (the op's
 * parameters as CT) where it expands a list; exp must accept CT. */
#ifndef EMBER_ACTIVATION_OPS_H
#define EMBER_ACTIVATION_OPS_H

/* F(KIND, forward expression in x) */
#define ACT_FORWARD_LIST(F)                                  \
    F(HARDSHRINK, (x >= -P0 && x <= P0) ? (CT)0 : x)         \
    F(SOFTSHRINK, x > P0 ? x - P0 : (x < -P0 ? x + P0 : x * (CT)0)) /* NaN stays NaN */

/* B(KIND, gradient expression in g and x) */
#define ACT_BACKWARD_LIST(B)                                               \
    B(HARDSHRINK, (x >= -P0 && x <= P0) ? (CT)0 : g)                       \
    B(SOFTSHRINK, (x >= -P0 && x <= P0) ? (CT)0 : g)                       \
    B(LEAKY_RELU, x > 0 ? g : g * P0)                                      \
    B(ELU, x > 0 ? g * P1 : g * P1 * P0 * exp(x))                          \
    B(CELU, x > 0 ? g : g * exp(x / P0))                                   \
    B(HARDTANH, (x <= P0 || x >= P1) ? (CT)0 : g)                          \
    B(THRESHOLD, x <= P0 ? (CT)0 : g)

#endif
