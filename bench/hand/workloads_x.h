/* workloads_x.h: the AVX-512 forms of the W1-W6 baselines
 * (workloads_avx512.c), called by workloads.c's hand_w* when
 * hx_avx512() holds. Each returns 1 if it computed the result, 0 if the
 * shape is not one it handles (the caller then runs the portable C), -1
 * if its scratch memory could not be allocated. */
#ifndef BENCH_HAND_WORKLOADS_X_H
#define BENCH_HAND_WORKLOADS_X_H

#include <stdint.h>

int hx_w1_xent(int64_t n, int64_t d, int64_t k, const float *w, const float *x, const float *y,
               float *loss, float *d_w);
int hx_w4_mlp(int64_t n, int64_t d, int64_t h, int64_t c, const float *w1, const float *b1,
              const float *w2, const float *b2, const float *x, const float *y, float *loss,
              float *d_w1, float *d_b1, float *d_w2, float *d_b2);
int hx_xent_rows(int64_t n, int64_t k, float *z, const float *y, double *loss);
int hx_w2_logreg(int64_t n, int64_t d, const float *w, const float *x, const float *y,
                 double *loss, double *dw);
int hx_w3_xent(int64_t n, const float *z, const float *y, double *loss, float *dz);
int hx_w5_tiny(int64_t k, int64_t d, const float *w, const float *x, const float *y, float *loss,
               float *dw);
int hx_w6_mstep(int64_t n, int64_t k, const double *mu, const double *x, double *loss,
                double *dmu);

#endif
