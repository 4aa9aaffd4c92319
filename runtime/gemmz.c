/* Matrix products inside gradients, where a zero must annihilate: the
 * adjoint of a matmul multiplies the incoming adjoint (exactly zero where a
 * select did not pick, or below a stop_gradient) by forward values that may
 * be infinite or NaN there, and 0 * inf must give 0, not NaN (spec section
 * 7; the elementwise ops use `mulz` for the same reason).
 *
 * When both operands are finite the ordinary GEMM is already exact in this
 * sense, and is used. Otherwise a direct loop leaves out every term with a
 * zero factor. Which case holds is found, for a product that overwrites C,
 * from the result: every element of A meets a row of B and every element
 * of B a column of A, and an inf or NaN factor makes its sums inf or NaN
 * whatever it meets (0 * inf is NaN), so C is all finite exactly when A and
 * B are (or a sum overflowed, which the direct loop computes again). So
 * whichever is smaller is scanned: C, after the product, when it has fewer
 * elements than A and B together (a weight's adjoint over a long batch,
 * x^T dz with x [n, d] and dz [n, k]: d * k against n * (d + k); the
 * adjoint of a GMM's one-hot product scanned a 66 MB constant for a
 * [25, 2016] result), else A and B, before. A product that accumulates
 * into C scans the operands, since its old C is gone once the GEMM ran.
 *
 * A matrix-vector product that sums rows of the matrix (the adjoint of x @ w, x^T g) needs
 * no scan: the kernel tests each row's factor as it goes (gemv_tmpl.h's
 * gemv_sum_z), so x is read once instead of twice. */
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "rt_internal.h"
#include "sgrt.h"

/* One pass over the operand, a row at a time: the inner loop ORs together
 * "exponent all ones" (inf or NaN) tests with no early exit, so it
 * vectorizes; the scan costs a fraction of the product it guards. The test
 * reads the 32-bit word that holds the exponent (the high word of a double):
 * baseline x86-64 (SSE2) has no 64-bit lane compare, and with one the loop
 * stayed scalar, at a fifth of the product's time in a batched gradient. */
/* A scan of at least this many elements runs on the thread pool, in
 * chunks of whole rows (W1's adjoint scans 387K floats before its product,
 * serial time on two threads). Whether any chunk found an inf or NaN does
 * not depend on how the chunks were shared. */
enum { SCAN_PAR_LEAST = 1 << 16 };

#define DEFINE_GEMMZ(T, U, EXP, NAME, GEMM, GEMVZ)                                               \
  static bool all_finite_##T(const T *p, int64_t rows, int64_t cols, int64_t ld) {        \
    for (int64_t i = 0; i < rows; i++) {                                                 \
      const T *row = p + i * ld;                                                         \
      uint32_t bad = 0;                                                                  \
      for (int64_t j = 0; j < cols; j++) {                                               \
        U bits;                                                                          \
        memcpy(&bits, &row[j], sizeof bits); /* no type punning through pointers */      \
        uint32_t hi = (uint32_t)(bits >> (8 * sizeof(U) - 32));                          \
        bad |= (uint32_t)((hi & EXP) == EXP);                                            \
      }                                                                                  \
      if (bad)                                                                           \
        return false;                                                                    \
    }                                                                                    \
    return true;                                                                         \
  }                                                                                      \
  typedef struct {                                                                       \
    const T *p;                                                                          \
    int64_t cols, ld;                                                                    \
    atomic_int bad;                                                                      \
  } Scan_##T;                                                                            \
  static void scan_rows_##T(void *ctx, int64_t begin, int64_t end) {                     \
    Scan_##T *s = ctx;                                                                   \
    if (!all_finite_##T(s->p + begin * s->ld, end - begin, s->cols, s->ld))              \
      atomic_store_explicit(&s->bad, 1, memory_order_relaxed);                           \
  }                                                                                      \
  static bool finite_##T(const T *p, int64_t rows, int64_t cols, int64_t ld) {           \
    if (rows < 2 || rows * cols < SCAN_PAR_LEAST)                                        \
      return all_finite_##T(p, rows, cols, ld);                                          \
    Scan_##T s = {p, cols, ld, 0};                                                       \
    int64_t chunk = (SCAN_PAR_LEAST / 2 + cols - 1) / cols;                              \
    sg_rt_parallel_for(rows, chunk, scan_rows_##T, &s);                                  \
    return !atomic_load_explicit(&s.bad, memory_order_relaxed);                          \
  }                                                                                      \
  void NAME(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const T *a,       \
            int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, int accumulate,      \
            int64_t kept) {                                                               \
    if (GEMVZ(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate) == 0)       \
      return;                                                                            \
    if (!accumulate && (double)m * (double)n < (double)k * (double)(m + n)) {            \
      GEMM(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, 0, kept);                  \
      if (finite_##T(c, m, n, ldc))                                                      \
        return;                                                                          \
    } else if (finite_##T(a, trans_a ? k : m, trans_a ? m : k, lda) &&                   \
               finite_##T(b, trans_b ? n : k, trans_b ? k : n, ldb)) {                   \
      GEMM(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate, kept);         \
      return;                                                                            \
    }                                                                                    \
    for (int64_t i = 0; i < m; i++)                                                      \
      for (int64_t j = 0; j < n; j++) {                                                  \
        T s = accumulate ? c[i * ldc + j] : 0;                                           \
        for (int64_t p = 0; p < k; p++) {                                                \
          T x = trans_a ? a[p * lda + i] : a[i * lda + p];                               \
          T y = trans_b ? b[j * ldb + p] : b[p * ldb + j];                               \
          if (x != 0 && y != 0)                                                          \
            s += x * y;                                                                  \
        }                                                                                \
        c[i * ldc + j] = s;                                                              \
      }                                                                                  \
  }

DEFINE_GEMMZ(float, uint32_t, 0x7f800000u, sg_rt_gemmz_f32, sg_rt_gemm_f32, sg_rt_gemvz_f32)
DEFINE_GEMMZ(double, uint64_t, 0x7ff00000u, sg_rt_gemmz_f64, sg_rt_gemm_f64, sg_rt_gemvz_f64)
