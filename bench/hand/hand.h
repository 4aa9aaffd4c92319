/* hand.h: the expert, hand-written gradients that bench/bench_main.c times
 * against sgc's generated code. Each computes exactly what the sgc function
 * of the same name computes (the value and every gradient), on row-major
 * float arrays, takes its scratch memory from the heap on every call (as the
 * generated code does) and returns 0, or -1 if that allocation failed. */
#ifndef BENCH_HAND_H
#define BENCH_HAND_H

#include <stddef.h>
#include <stdint.h>

/* Scratch memory kept between calls (scratch.c): slot `slot` grows to the
 * largest size asked, 64-byte aligned; NULL if it cannot. Each file of
 * baselines has its own slots. */
enum {
  HS_PORTABLE = 0, /* workloads.c: 8 slots */
  HS_X = 8,        /* workloads_avx512.c: 4 */
  HS_RNN = 12,     /* rnn.c: 7 */
  HS_SLOTS = 19
};
void *hand_scratch(int slot, size_t bytes);

/* examples/mlp.sg: mlp_loss_grad. x [n,d], y [n,o] are constants. */
int hand_mlp_loss_grad(int64_t n, int64_t d, int64_t h, int64_t o,
                       const float *w1, const float *b1, const float *w2,
                       const float *b2, const float *x, const float *y,
                       float *loss, float *d_w1, float *d_b1, float *d_w2,
                       float *d_b2);

/* examples/mlp.sg: layer_vjp, out = tanh(x @ w) and the VJP with seed. */
int hand_layer_vjp(int64_t n, int64_t d, int64_t h, const float *x,
                   const float *w, const float *seed, float *out, float *d_x,
                   float *d_w);

/* examples/stable_softmax.sg: xent_grad, w [k,d]; x [d], y [k] constants. */
int hand_xent_grad(int64_t k, int64_t d, const float *w, const float *x,
                   const float *y, float *loss, float *d_w);

/* bench/elementwise.sg: ew_grad, sum(tanh(x)*sigmoid(x) + exp(-x^2)). */
int hand_ew_grad(int64_t n, const float *x, float *out, float *d_x);

/* examples/contrastive_divergence.sg: cd1_loss_grad; v0 [b,nv] constant. */
int hand_cd1_loss_grad(int64_t nv, int64_t nh, int64_t b, const float *w,
                       const float *a, const float *c, const float *v0,
                       float *loss, float *d_w, float *d_a, float *d_c);

/* bench/workloads.sg, W1-W6 (workloads.c). These keep their scratch
 * memory between calls, as an expert would, and run AVX-512 code
 * (workloads_avx512.c) where the CPU has it, unless hand_portable is set:
 * then the portable C, the baseline before issue 30 (the smoke test checks
 * both against sgc). */
extern int hand_portable;
int hand_w1_xent_grad(int64_t n, int64_t d, int64_t k, const float *w, const float *x,
                      const float *y, float *loss, float *d_w);
int hand_w2_logreg_grad(int64_t n, int64_t d, const float *w, const float *x,
                        const float *y, float *loss, float *d_w);
int hand_w3_xent_grad(int64_t n, const float *z, const float *y, float *loss, float *d_z);
int hand_w4_mlp_grad(int64_t n, int64_t d, int64_t h, int64_t c, const float *w1,
                     const float *b1, const float *w2, const float *b2, const float *x,
                     const float *y, float *loss, float *d_w1, float *d_b1, float *d_w2,
                     float *d_b2);
int hand_w5_tiny_grad(int64_t k, int64_t d, const float *w, const float *x, const float *y,
                      float *loss, float *d_w);
int hand_w6_mstep_grad(int64_t n, int64_t k, const double *mu, const double *x,
                       double *loss, double *d_mu);

/* bench/rnn_lm.sg's rnn_lm (rnn.c): emb [v,e], u [e,h], w [h,h], bh [h],
 * vo [h,v], bo [v]; tokens and targets [t,b] are constants. */
int hand_rnn_lm_grad(int64_t v, int64_t e, int64_t h, int64_t t, int64_t b, const float *emb,
                     const float *u, const float *w, const float *bh, const float *vo,
                     const float *bo, const int32_t *tokens, const int32_t *targets, float *loss,
                     float *d_emb, float *d_u, float *d_w, float *d_bh, float *d_vo, float *d_bo);

/* bench/xent_loop.sg's xent_loop: the softmax cross-entropy of each of
 * `rows` rows of z [rows, k] against y, summed (workloads.c). */
int hand_xent_rows_grad(int64_t rows, int64_t k, const float *z, const float *y, float *loss,
                        float *d_z);

/* bench/small.sg (small.c): sum(w * square(take(a, (arange(3) + 1) % 3,
 * axis=1))) for a, w [n, 3]; and sum(square(a @ x)) over a batch of b
 * d x d matrices, d = 2, 3, 4 or 8. */
int hand_take3_grad(int64_t n, const float *a, const float *w, float *loss, float *d_a);
int hand_bmm_grad(int64_t b, int d, const float *a, const float *x, float *loss, float *d_a,
                  float *d_x);

#endif
