/* workloads_x.h: the AVX-512 forms of the W1-W6 baselines
 * (workloads_avx512.c), called by workloads.c's hand_w* when
 * hx_avx512() holds. Each returns 1 if it computed the result, 0 if the
 * shape is not one it handles (the caller then runs the portable C). */
#ifndef BENCH_HAND_WORKLOADS_X_H
#define BENCH_HAND_WORKLOADS_X_H

#include <stdint.h>

int hx_w2_logreg(int64_t n, int64_t d, const float *w, const float *x, const float *y,
                 double *loss, double *dw);
int hx_w3_xent(int64_t n, const float *z, const float *y, double *loss, float *dz);
int hx_w5_tiny(int64_t k, int64_t d, const float *w, const float *x, const float *y, float *loss,
               float *dw);
int hx_w6_mstep(int64_t n, int64_t k, const double *mu, const double *x, double *loss,
                double *dmu);

#endif
