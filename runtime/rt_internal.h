/* rt_internal.h: helpers shared by the runtime's own C files. Not installed
 * and not part of the ABI that generated code uses (that is sgrt.h); the
 * gemm entry points with an explicit instruction set exist so that the unit
 * test and the micro-benchmark can exercise every kernel variant on one
 * machine, whatever the CPU dispatch would pick. */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include <stdint.h>

/* Replaces this thread's message (what sg_last_error returns). */
void sg_rt_set_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The failure-injection hook (sg_rt_fail_alloc_after): counts one request
 * for temporaries, true if it is the one that must fail. */
int sg_rt_injected_failure(void);
/* sg_rt_alloc without the hook: 64-byte aligned, NULL on failure. */
void *sg_rt_alloc_raw(int64_t bytes);

/* The calling thread's cached packing buffer for sg_rt_gemm, grown to at
 * least `bytes` (contents not kept), 64-byte aligned; NULL if that fails.
 * Freed with the rest of the thread's workspace. */
void *sg_rt_pack_buffer(int64_t bytes);

/* A GEMM operand packed once for the rest of a generated call (gemm.c,
 * sg_rt_gemm's `kept`): which call, which memory read how, in which
 * packed form. Two keys are the same operand exactly when every field is
 * equal. */
typedef struct SgKeptKey {
  int64_t call;      /* sg_rt_call_id's number, never 0 */
  const void *p;     /* the operand's memory */
  int64_t ld, rows, cols; /* its leading dimension and op()'s extent */
  int form;          /* gemm.c's tag: element type, kernel set, A or B side, transpose */
} SgKeptKey;
/* The calling thread's block for `key`, at least `bytes`: *fresh is 1 if
 * it must be packed (new, or another operand's block taken over), 0 if it
 * already holds the packed operand. NULL if the operand is larger than
 * the cache keeps or the memory cannot be had (the caller packs as
 * usual). A few such blocks are kept per thread, the least recently used
 * given up first; freed with the rest of the thread's workspace. */
void *sg_rt_ws_kept(const SgKeptKey *key, int64_t bytes, int *fresh);

/* Loop tapes' memory, kept by the thread between calls (runtime/tape.c):
 * take the largest block kept ({NULL, 0} if none) for a tape that starts,
 * keep a tape's block when it ends (the smallest of too many is freed).
 * Freed with the rest of the thread's workspace. */
void *sg_rt_ws_take_tape(int64_t *cap);
void sg_rt_ws_keep_tape(void *p, int64_t cap);

/* Kernel variants of sg_rt_gemm_f32/f64. */
enum { SG_RT_ISA_GENERIC = 0, SG_RT_ISA_AVX2 = 1, SG_RT_ISA_AVX512 = 2 };
/* The variant sg_rt_gemm_* picks on this CPU. */
int sg_rt_gemm_isa(void);
/* Run one variant; returns -1 (and does nothing) if this CPU lacks it. */
int sg_rt_gemm_f32_isa(int isa, int trans_a, int trans_b, int64_t m, int64_t n,
                       int64_t k, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float *c, int64_t ldc, int accumulate, int64_t kept);
int sg_rt_gemm_f64_isa(int isa, int trans_a, int trans_b, int64_t m, int64_t n,
                       int64_t k, const double *a, int64_t lda, const double *b,
                       int64_t ldb, double *c, int64_t ldc, int accumulate, int64_t kept);
/* The same for the fused pair's kernels (sg_rt_gemv_rows_*, _acc_*). */
int sg_rt_gemv_rows_f32_isa(int isa, int64_t rows, int64_t d, const float *mat, int64_t ld,
                            const float *v, float *out, int shared);
int sg_rt_gemv_rows_f64_isa(int isa, int64_t rows, int64_t d, const double *mat, int64_t ld,
                            const double *v, double *out, int shared);
int sg_rt_gemv_acc_f32_isa(int isa, int64_t rows, int64_t d, const float *g, const float *mat,
                           int64_t ld, float *acc, int z);
int sg_rt_gemv_acc_f64_isa(int isa, int64_t rows, int64_t d, const double *g, const double *mat,
                           int64_t ld, double *acc, int z);
/* sg_rt_gemmz for a matrix-vector product that is a sum of rows (m == 1
 * with B not transposed, n == 1 with A transposed: the adjoint of x @ w),
 * in one pass without the finiteness scan; returns -1 (and does nothing)
 * for any other product. */
int sg_rt_gemvz_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                    int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                    int accumulate);
int sg_rt_gemvz_f64(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const double *a,
                    int64_t lda, const double *b, int64_t ldb, double *c, int64_t ldc,
                    int accumulate);

#endif
