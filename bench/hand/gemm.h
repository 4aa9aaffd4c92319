/* gemm.h: the expert baselines' own single-threaded f32 GEMM (gemm.c), with
 * the packing of the right operand exposed, so that a weight used by many
 * products in one call (an RNN's, 32 steps) is packed once per call, and
 * with C += op(A) op(B) (beta = 1) for gradients accumulated through the
 * product. Row-major, as sg_rt_gemm_f32:
 *   op(A) is m x k: A is m x k (lda >= k), or k x m when ta (lda >= m);
 *   op(B) is k x n: B is k x n (ldb >= n), or n x k when tb (ldb >= k);
 *   C is m x n, ldc >= n.
 * On a CPU without AVX-512 every entry point calls sg_rt_gemm_f32 (the
 * packed form is then a plain copy of op(B)), so the baselines build and
 * run anywhere. */
#ifndef BENCH_HAND_GEMM_H
#define BENCH_HAND_GEMM_H

#include <stdint.h>

/* Floats of a packed op(B) of k x n. */
int64_t hg_packed_size(int64_t k, int64_t n);
/* dst (hg_packed_size floats, 64-byte aligned) <- op(B), k x n. */
void hg_pack_b(int tb, int64_t k, int64_t n, const float *b, int64_t ldb, float *dst);
/* C (+)= op(A) B for B packed by hg_pack_b (k x n); beta 0 or 1. */
void hg_gemm_packed(int ta, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *packed_b, float *c, int64_t ldc, int beta);
/* C (+)= op(A) op(B), packing op(B) into a buffer kept per thread. */
void hg_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
             const float *b, int64_t ldb, float *c, int64_t ldc, int beta);

#endif
