/* gemm.c: sg_rt_gemm_f32 / sg_rt_gemm_f64, the matrix products behind
 * matmul and its gradients in generated code.
 *
 * Design (GotoBLAS/BLIS style, row-major):
 *   for each MC-row block of op(A) and each KC-deep slice of k:
 *     pack that mc x kc block of op(A) into MR-row slivers
 *     for each NC-column block of op(B):
 *       pack the kc x nc block of op(B) into NR-column slivers (L2-resident)
 *       for each MR x NR tile: a register-blocked micro-kernel
 * Transposes are absorbed by the packing routines, so all four trans_a /
 * trans_b combinations run the same kernel. Vectors run along n (NR is two
 * SIMD vectors), A values are broadcast. m == 1 and n == 1 go to a
 * matrix-vector loop, tiny products to an unpacked loop, and so does the
 * whole product if the packing buffer cannot be allocated (gemm returns
 * void, so it must not fail). The packing buffer is the calling thread's,
 * kept between calls (workspace.c): a repeated product allocates nothing
 * and takes no page fault.
 *
 * Portability: the library runs on machines other than the build machine, so
 * the kernels are compiled three times (gemm_tmpl.h) -- plain C vectors for
 * any CPU, and with __attribute__((target)) for AVX2+FMA and AVX-512 -- and
 * each call picks one with __builtin_cpu_supports. That is explicit dispatch
 * instead of target_clones: the ISAs need different register tiles (16 vs
 * 32 vector registers), and no ifunc is involved, so static linking and
 * non-glibc systems behave like everything else. The ISA is found once and
 * kept (sg_rt_gemm_isa): testing again on every call (libgcc's init call
 * and three feature tests) was 2-3% of bench W2's profile in cache, where
 * a fused pair makes two calls per block of 64 rows. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"
#include "sgrt.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SG_X86 1
#include <immintrin.h>
#else
#define SG_X86 0
#endif

/* How far ahead of a fused pair's block of rows (gemv_rows) one line is
 * touched, once per block. The first touch of a page sets the L2's stream
 * prefetcher going on that page, so the per-line prefetches of the block
 * after next, which alone keep memory busy only as far as the core's
 * outstanding misses allow, find their lines in L2 or on the way. Six 4 KB
 * pages: bench W2 from cold memory 2.4-2.5 -> 2.0-2.1 ms, 73-75% -> 89% of
 * the bandwidth bound; 8 to 48 KB all helped, 24 KB the most. In cache
 * the same time. */
#define KICK_AHEAD_BYTES (24 << 10)
/* How far ahead gemv's short-row kernel prefetches (gemv_tmpl.h rows_len). */
#define STREAM_AHEAD_BYTES 4096

/* ---- portable: GCC/Clang vector extensions, 16-byte vectors ---- */
typedef float g_v4sf __attribute__((vector_size(16)));
typedef double g_v2df __attribute__((vector_size(16)));

#define G_HELPERS(V, T, VL, SUF)                                               \
  static inline V g_loadu_##SUF(const T *p) {                                  \
    V v;                                                                       \
    memcpy(&v, p, sizeof v);                                                   \
    return v;                                                                  \
  }                                                                            \
  static inline void g_storeu_##SUF(T *p, V v) { memcpy(p, &v, sizeof v); }    \
  static inline V g_set1_##SUF(T x) {                                          \
    V v;                                                                       \
    for (int i = 0; i < VL; i++)                                               \
      v[i] = x;                                                                \
    return v;                                                                  \
  }                                                                            \
  static inline T g_hsum_##SUF(V v) {                                          \
    T s = 0;                                                                   \
    for (int i = 0; i < VL; i++)                                               \
      s += v[i];                                                               \
    return s;                                                                  \
  }
G_HELPERS(g_v4sf, float, 4, s)
G_HELPERS(g_v2df, double, 2, d)

/* VFINITE_NZ(v): whether every lane of v is finite and nonzero (the zero
 * rule's test of a factor, gemv_acc), one compare per vector. */
#define G_FINITE_NZ(V, VL, SUF)                                                \
  static inline int g_finite_nz_##SUF(V v) {                                   \
    int ok = 1;                                                                \
    for (int i = 0; i < VL; i++)                                               \
      ok &= (v[i] != 0) & (v[i] - v[i] == 0);                                  \
    return ok;                                                                 \
  }
G_FINITE_NZ(g_v4sf, 4, s)
G_FINITE_NZ(g_v2df, 2, d)

/* Cache blocks. KC x NC of B should sit in L2 and KC x MR of A in L1; MC
 * only bounds the packing buffer (larger MC means B is packed fewer times).
 * SMALL: products with m*n*k at most this (and B not transposed: the
 * unpacked loop then runs along rows of B) skip packing. */
#define SMALL 1024
#define STACKBYTES 16384

#define TGT
#define VLOADA(p) g_loadu_s(p)
#define VLOADU(p) g_loadu_s(p)
#define VSTOREA(p, v) g_storeu_s(p, v)
#define VSTOREU(p, v) g_storeu_s(p, v)
#define VSET1(x) g_set1_s(x)
#define VZERO() ((g_v4sf){0})
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VHSUM(v) g_hsum_s(v)
#define VFINITE_NZ(v) g_finite_nz_s(v)
#define T float
#define V g_v4sf
#define VL 4
#define MR 6
#define KC 256
#define NC 256
#define MC 1536
#define SFX f32_generic
#include "gemm_tmpl.h"
#undef T
#undef V
#undef VL
#undef SFX
#undef VLOADA
#undef VLOADU
#undef VSTOREA
#undef VSTOREU
#undef VSET1
#undef VZERO
#undef VHSUM
#undef VFINITE_NZ
#undef NC

#define VLOADA(p) g_loadu_d(p)
#define VLOADU(p) g_loadu_d(p)
#define VSTOREA(p, v) g_storeu_d(p, v)
#define VSTOREU(p, v) g_storeu_d(p, v)
#define VSET1(x) g_set1_d(x)
#define VZERO() ((g_v2df){0})
#define VHSUM(v) g_hsum_d(v)
#define VFINITE_NZ(v) g_finite_nz_d(v)
#define T double
#define V g_v2df
#define VL 2
#define NC 128
#define SFX f64_generic
#include "gemm_tmpl.h"
#undef T
#undef V
#undef VL
#undef SFX
#undef VLOADA
#undef VLOADU
#undef VSTOREA
#undef VSTOREU
#undef VSET1
#undef VZERO
#undef VHSUM
#undef VFINITE_NZ
#undef VFMA
#undef TGT
#undef MR
#undef KC
#undef NC
#undef MC

#if SG_X86
/* ---- AVX2 + FMA: 16 ymm registers, 6 x 2 vector tile ---- */
#define TGT __attribute__((target("avx2,fma")))
#define MR 6
#define KC 256
#define MC 1536
#define VLOADA(p) _mm256_load_ps(p)
#define VLOADU(p) _mm256_loadu_ps(p)
#define VSTOREA(p, v) _mm256_store_ps(p, v)
#define VSTOREU(p, v) _mm256_storeu_ps(p, v)
#define VSET1(x) _mm256_set1_ps(x)
#define VZERO() _mm256_setzero_ps()
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VHSUM(v) hsum256_ps(v)
#define VFINITE_NZ(v)                                                           \
  (_mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(v, VZERO(), _CMP_NEQ_OQ),              \
                                    _mm256_cmp_ps(_mm256_sub_ps(v, v), VZERO(), _CMP_EQ_OQ))) == 0xFF)
static TGT inline float hsum256_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#define T float
#define V __m256
#define VL 8
#define NC 256
#define SFX f32_avx2
#include "gemm_tmpl.h"
#undef T
#undef V
#undef VL
#undef NC
#undef SFX
#undef VLOADA
#undef VLOADU
#undef VSTOREA
#undef VSTOREU
#undef VSET1
#undef VZERO
#undef VFMA
#undef VHSUM
#undef VFINITE_NZ

#define VLOADA(p) _mm256_load_pd(p)
#define VLOADU(p) _mm256_loadu_pd(p)
#define VSTOREA(p, v) _mm256_store_pd(p, v)
#define VSTOREU(p, v) _mm256_storeu_pd(p, v)
#define VSET1(x) _mm256_set1_pd(x)
#define VZERO() _mm256_setzero_pd()
#define VFMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define VHSUM(v) hsum256_pd(v)
#define VFINITE_NZ(v)                                                           \
  (_mm256_movemask_pd(_mm256_and_pd(_mm256_cmp_pd(v, VZERO(), _CMP_NEQ_OQ),              \
                                    _mm256_cmp_pd(_mm256_sub_pd(v, v), VZERO(), _CMP_EQ_OQ))) == 0xF)
static TGT inline double hsum256_pd(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
#define T double
#define V __m256d
#define VL 4
#define NC 128
#define SFX f64_avx2
#include "gemm_tmpl.h"
#undef T
#undef V
#undef VL
#undef NC
#undef SFX
#undef VLOADA
#undef VLOADU
#undef VSTOREA
#undef VSTOREU
#undef VSET1
#undef VZERO
#undef VFMA
#undef VHSUM
#undef VFINITE_NZ
#undef TGT
#undef MR
#undef KC
#undef MC

/* ---- AVX-512: 32 zmm registers, 12 x 2 vector tile ---- */
#define TGT __attribute__((target("avx512f,avx2,fma")))
#define MR 12
#define MC 1536
#define VLOADA(p) _mm512_load_ps(p)
#define VLOADU(p) _mm512_loadu_ps(p)
#define VSTOREA(p, v) _mm512_store_ps(p, v)
#define VSTOREU(p, v) _mm512_storeu_ps(p, v)
#define VSET1(x) _mm512_set1_ps(x)
#define VZERO() _mm512_setzero_ps()
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VHSUM(v) _mm512_reduce_add_ps(v)
#define VFINITE_NZ(v)                                                           \
  ((_mm512_cmp_ps_mask(v, VZERO(), _CMP_NEQ_OQ) &                                        \
    _mm512_cmp_ps_mask(_mm512_sub_ps(v, v), VZERO(), _CMP_EQ_OQ)) == 0xFFFF)
/* out[q] = _mm512_reduce_add_ps(s[q]) for q < 16, bit for bit: the same
 * halving tree (lane i + lane i+8, then i + i+4, i + i+2, i + i+1), each
 * stage adding two rows' halves in one instruction. After the last stage
 * lane L holds row (0,2,1,3, 8,10,9,11, 4,6,5,7, 12,14,13,15)[L]; that
 * permutation is its own inverse. plus0: add +0 to each sum at the end
 * (turning -0 into +0, nothing else), for dot_rows1. */
static TGT inline void hsum16_rows_ps(const __m512 *s, float *out, int plus0) {
  __m512 u[8], t[4], w[2];
  for (int r = 0; r < 8; r++)
    u[r] = _mm512_add_ps(_mm512_shuffle_f32x4(s[r], s[r + 8], 0x44),
                         _mm512_shuffle_f32x4(s[r], s[r + 8], 0xEE));
  for (int r = 0; r < 4; r++)
    t[r] = _mm512_add_ps(_mm512_shuffle_f32x4(u[r], u[r + 4], 0x88),
                         _mm512_shuffle_f32x4(u[r], u[r + 4], 0xDD));
  for (int r = 0; r < 2; r++)
    w[r] = _mm512_add_ps(_mm512_shuffle_ps(t[r], t[r + 2], 0x44),
                         _mm512_shuffle_ps(t[r], t[r + 2], 0xEE));
  __m512 f = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
  if (plus0)
    f = _mm512_add_ps(f, _mm512_setzero_ps());
  __m512i idx = _mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15);
  _mm512_storeu_ps(out, _mm512_permutexvar_ps(idx, f));
}
/* The first d < 16 columns of 16 rows ld apart: each row's d loaded
 * alone (the rest of its vector zero), then the usual
 * transpose of 16 x 16 (two-lane, four-lane, then two 128-bit-lane
 * shuffle stages), the columns past d not formed. */
static TGT inline __attribute__((always_inline)) void transpose16_regs_ps(__m512 *r, int d, __m512 *c) {
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
    __m512d e = _mm512_castps_pd(t[4 * i + 1]), f = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(e, f));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(e, f));
  }
  for (int h = 0; h < 2; h++)
    for (int j = 0; j < 4; j++) {
      t[8 * h + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0x88);
      t[8 * h + 4 + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; j++) {
    if (j < d)
      c[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    if (8 + j < d)
      c[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}
static TGT inline __attribute__((always_inline)) void transpose16_ps(const float *x, int64_t ld, int d,
                                                                     __m512 *c) {
  __m512 r[16];
  __mmask16 m = (__mmask16)((1u << d) - 1);
  for (int q = 0; q < 16; q++)
    r[q] = _mm512_maskz_loadu_ps(m, x + q * ld);
  transpose16_regs_ps(r, d, c);
}
/* pack_a's sliver of MR = 12 rows of A read along its rows (lda apart),
 * kc columns: 16 columns at a time transposed in registers, each column
 * stored as the sliver's 12 values. GCC's loop gathered the column one
 * element at a time: 10% of bench rnn_lm's time, whose products have 32
 * rows and a long k. */
static TGT inline void pack12_rows_ps(const float *src, int64_t lda, int64_t kc, float *dst) {
  for (int64_t p = 0; p < kc; p += 16) {
    int d = kc - p < 16 ? (int)(kc - p) : 16;
    __mmask16 m = (__mmask16)((1u << d) - 1);
    __m512 r[16], c[16];
    for (int q = 0; q < 12; q++)
      r[q] = _mm512_maskz_loadu_ps(m, src + q * lda + p);
    for (int q = 12; q < 16; q++)
      r[q] = _mm512_setzero_ps();
    transpose16_regs_ps(r, d, c);
    for (int j = 0; j < d; j++)
      _mm512_mask_storeu_ps(dst + (p + j) * 12, 0x0FFF, c[j]);
  }
}

/* The columns of 16 rows of d < 16 floats each, back to back (the rows
 * fill d vectors): v[p] lane q <- row q's element p. For d = 2, 4 or 8
 * each stage splits every two neighbouring vectors of a group (rows in
 * order, some of the columns) into their even and their odd elements: the
 * even parts form a group of half as many vectors holding the even
 * columns, the odd parts one holding the odd columns; after log2(d)
 * stages every group is one vector, one column, and they come out in
 * column order. Other widths go through transpose16_ps: for d = 3 to 15
 * 1.1-2.9x faster than gathering each column (x @ w from cold memory). */
static TGT inline __attribute__((always_inline)) void cols16_ps(const float *x, int d, __m512 *v) {
  if (d & (d - 1)) {
    transpose16_ps(x, d, d, v);
    return;
  }
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i even = _mm512_add_epi32(lane, lane);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  __m512 n[8];
  for (int k = 0; k < d; k++)
    v[k] = _mm512_loadu_ps(x + 16 * k);
  for (int g = d; g > 1; g /= 2) {
    for (int i = 0; i < d / 2; i++) {
      n[i] = _mm512_permutex2var_ps(v[2 * i], even, v[2 * i + 1]);
      n[d / 2 + i] = _mm512_permutex2var_ps(v[2 * i], odd, v[2 * i + 1]);
    }
    for (int k = 0; k < d; k++)
      v[k] = n[k];
  }
}
/* The factors g[0..16) of 16 rows of d < 16 floats each, spread over the
 * d vectors those rows fill: vector k lane l <- g[(16 k + l) / d] (the
 * division as a multiply and shift, exact for these sizes). */
static TGT inline __attribute__((always_inline)) __m512 spread16_ps(__m512 g, int d, int k) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512i e = _mm512_add_epi32(_mm512_set1_epi32(16 * k), lane);
  __m512i row = _mm512_srli_epi32(_mm512_mullo_epi32(e, _mm512_set1_epi32(65536 / d + 1)), 16);
  return _mm512_permutexvar_ps(row, g);
}
#define VHSUM_ROWS(s, out) hsum16_rows_ps(s, out, 0)
#define VHSUM_ROWS_PLUS0(s, out) hsum16_rows_ps(s, out, 1)
#define VCOLS(x, d, v) cols16_ps(x, d, v)
#define VCOLS_LD(x, ld, d, v) transpose16_ps(x, ld, d, v)
#define VPACK12_ROWS(src, lda, kc, dst) pack12_rows_ps(src, lda, kc, dst)
#define VSPREAD(g, d, k) spread16_ps(g, d, k)
#define T float
#define V __m512
#define VL 16
#define KC 384
#define NC 480
#define SFX f32_avx512
#include "gemm_tmpl.h"
#undef VHSUM_ROWS
#undef VHSUM_ROWS_PLUS0
#undef VCOLS
#undef VCOLS_LD
#undef VPACK12_ROWS
#undef VSPREAD
#undef T
#undef V
#undef VL
#undef KC
#undef NC
#undef SFX
#undef VLOADA
#undef VLOADU
#undef VSTOREA
#undef VSTOREU
#undef VSET1
#undef VZERO
#undef VFMA
#undef VHSUM
#undef VFINITE_NZ

#define VLOADA(p) _mm512_load_pd(p)
#define VLOADU(p) _mm512_loadu_pd(p)
#define VSTOREA(p, v) _mm512_store_pd(p, v)
#define VSTOREU(p, v) _mm512_storeu_pd(p, v)
#define VSET1(x) _mm512_set1_pd(x)
#define VZERO() _mm512_setzero_pd()
#define VFMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define VHSUM(v) _mm512_reduce_add_pd(v)
#define VFINITE_NZ(v)                                                           \
  ((_mm512_cmp_pd_mask(v, VZERO(), _CMP_NEQ_OQ) &                                        \
    _mm512_cmp_pd_mask(_mm512_sub_pd(v, v), VZERO(), _CMP_EQ_OQ)) == 0xFF)
/* out[q] = _mm512_reduce_add_pd(s[q]) for q < 8, bit for bit: the same
 * halving tree (lane i + lane i+4, then i + i+2, then i + i+1), each stage
 * adding two rows' halves in one instruction, as hsum16_rows_ps does.
 * After the last stage lane L holds row (0,1,4,5,2,3,6,7)[L], a
 * permutation that is its own inverse. */
static TGT inline void hsum8_rows_pd(const __m512d *s, double *out, int plus0) {
  __m512d u[4], t[2];
  for (int r = 0; r < 4; r++)
    u[r] = _mm512_add_pd(_mm512_shuffle_f64x2(s[r], s[r + 4], 0x44),
                         _mm512_shuffle_f64x2(s[r], s[r + 4], 0xEE));
  for (int r = 0; r < 2; r++)
    t[r] = _mm512_add_pd(_mm512_shuffle_f64x2(u[r], u[r + 2], 0x88),
                         _mm512_shuffle_f64x2(u[r], u[r + 2], 0xDD));
  __m512d f = _mm512_add_pd(_mm512_shuffle_pd(t[0], t[1], 0x00), _mm512_shuffle_pd(t[0], t[1], 0xFF));
  if (plus0)
    f = _mm512_add_pd(f, _mm512_setzero_pd());
  __m512i idx = _mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7);
  _mm512_storeu_pd(out, _mm512_permutexvar_pd(idx, f));
}
/* transpose16_ps's f64 form: the first d < 8 columns of 8 rows ld apart. */
static TGT inline __attribute__((always_inline)) void transpose8_regs_pd(const __m512d *r, int d, __m512d *c) {
  __m512d t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; h++) {
    u[4 * h] = _mm512_shuffle_f64x2(t[4 * h], t[4 * h + 2], 0x88);
    u[4 * h + 1] = _mm512_shuffle_f64x2(t[4 * h + 1], t[4 * h + 3], 0x88);
    u[4 * h + 2] = _mm512_shuffle_f64x2(t[4 * h], t[4 * h + 2], 0xdd);
    u[4 * h + 3] = _mm512_shuffle_f64x2(t[4 * h + 1], t[4 * h + 3], 0xdd);
  }
  for (int j = 0; j < 4; j++) {
    if (j < d)
      c[j] = _mm512_shuffle_f64x2(u[j], u[4 + j], 0x88);
    if (4 + j < d)
      c[4 + j] = _mm512_shuffle_f64x2(u[j], u[4 + j], 0xdd);
  }
}
static TGT inline __attribute__((always_inline)) void transpose8_pd(const double *x, int64_t ld, int d,
                                                                    __m512d *c) {
  __m512d r[8];
  __mmask8 m = (__mmask8)((1u << d) - 1);
  for (int q = 0; q < 8; q++)
    r[q] = _mm512_maskz_loadu_pd(m, x + q * ld);
  transpose8_regs_pd(r, d, c);
}
/* pack12_rows_ps's f64 form: rows 0-7 and 8-11 transposed apart, 8
 * columns at a time. */
static TGT inline void pack12_rows_pd(const double *src, int64_t lda, int64_t kc, double *dst) {
  for (int64_t p = 0; p < kc; p += 8) {
    int d = kc - p < 8 ? (int)(kc - p) : 8;
    __mmask8 m = (__mmask8)((1u << d) - 1);
    __m512d r[8], lo[8], hi[8];
    for (int q = 0; q < 8; q++)
      r[q] = _mm512_maskz_loadu_pd(m, src + q * lda + p);
    transpose8_regs_pd(r, d, lo);
    for (int q = 0; q < 4; q++)
      r[q] = _mm512_maskz_loadu_pd(m, src + (8 + q) * lda + p);
    for (int q = 4; q < 8; q++)
      r[q] = _mm512_setzero_pd();
    transpose8_regs_pd(r, d, hi);
    for (int j = 0; j < d; j++) {
      _mm512_storeu_pd(dst + (p + j) * 12, lo[j]);
      _mm512_mask_storeu_pd(dst + (p + j) * 12 + 8, 0x0F, hi[j]);
    }
  }
}
/* cols16_ps's f64 form (8 rows of d < 8): permutes for 2 and 4 columns. */
static TGT inline __attribute__((always_inline)) void cols8_pd(const double *x, int d, __m512d *v) {
  if (d & (d - 1)) {
    transpose8_pd(x, d, d, v);
    return;
  }
  const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
  __m512d n[4];
  for (int k = 0; k < d; k++)
    v[k] = _mm512_loadu_pd(x + 8 * k);
  for (int g = d; g > 1; g /= 2) {
    for (int i = 0; i < d / 2; i++) {
      n[i] = _mm512_permutex2var_pd(v[2 * i], even, v[2 * i + 1]);
      n[d / 2 + i] = _mm512_permutex2var_pd(v[2 * i], odd, v[2 * i + 1]);
    }
    for (int k = 0; k < d; k++)
      v[k] = n[k];
  }
}
/* spread16_ps's f64 form: vector k lane l <- g[(8 k + l) / d]. */
static TGT inline __attribute__((always_inline)) __m512d spread8_pd(__m512d g, int d, int k) {
  __m512i row = _mm512_setr_epi64((8 * k) / d, (8 * k + 1) / d, (8 * k + 2) / d, (8 * k + 3) / d,
                                  (8 * k + 4) / d, (8 * k + 5) / d, (8 * k + 6) / d, (8 * k + 7) / d);
  return _mm512_permutexvar_pd(row, g);
}
#define VHSUM_ROWS(s, out) hsum8_rows_pd(s, out, 0)
#define VHSUM_ROWS_PLUS0(s, out) hsum8_rows_pd(s, out, 1)
#define VCOLS(x, d, v) cols8_pd(x, d, v)
#define VCOLS_LD(x, ld, d, v) transpose8_pd(x, ld, d, v)
#define VPACK12_ROWS(src, lda, kc, dst) pack12_rows_pd(src, lda, kc, dst)
#define VSPREAD(g, d, k) spread8_pd(g, d, k)
#define T double
#define V __m512d
#define VL 8
#define KC 256
#define NC 240
#define SFX f64_avx512
#include "gemm_tmpl.h"
#undef VHSUM_ROWS
#undef VHSUM_ROWS_PLUS0
#undef VCOLS
#undef VCOLS_LD
#undef VPACK12_ROWS
#undef VSPREAD
#undef T
#undef V
#undef VL
#undef KC
#undef NC
#undef SFX
#undef VLOADA
#undef VLOADU
#undef VSTOREA
#undef VSTOREU
#undef VSET1
#undef VZERO
#undef VFMA
#undef VHSUM
#undef VFINITE_NZ
#undef TGT
#undef MR
#undef MC
#endif /* SG_X86 */

static int cpu_has(int isa) {
  if (isa == SG_RT_ISA_GENERIC)
    return 1;
#if SG_X86
  /* A no-op after libgcc's startup constructor; needed only if we are
   * called from another constructor before it ran. */
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    return 0;
  if (isa == SG_RT_ISA_AVX2)
    return 1;
  if (isa == SG_RT_ISA_AVX512)
    return __builtin_cpu_supports("avx512f");
#endif
  return 0;
}

int sg_rt_gemm_isa(void) {
  static atomic_int found = -1; /* every thread finds the same */
  int isa = atomic_load_explicit(&found, memory_order_relaxed);
  if (isa < 0) {
    isa = cpu_has(SG_RT_ISA_AVX512) ? SG_RT_ISA_AVX512
          : cpu_has(SG_RT_ISA_AVX2) ? SG_RT_ISA_AVX2
                                    : SG_RT_ISA_GENERIC;
    atomic_store_explicit(&found, isa, memory_order_relaxed);
  }
  return isa;
}

/* The entry points below: CALL(T_isa) for the kernels of `isa`, T the
 * element type's suffix (f32 or f64). */
#if SG_X86
#define DISPATCH(isa, T, CALL)                                                                   \
  switch (isa) {                                                                                 \
  case SG_RT_ISA_AVX512:                                                                         \
    CALL(T##_avx512);                                                                            \
    break;                                                                                       \
  case SG_RT_ISA_AVX2:                                                                           \
    CALL(T##_avx2);                                                                              \
    break;                                                                                       \
  default:                                                                                       \
    CALL(T##_generic);                                                                           \
  }
#else
#define DISPATCH(isa, T, CALL) CALL(T##_generic);
#endif
#define GEMM_CALL(S) gemm_##S(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate, kept)
#define GEMVZ_CALL(S) done = gemvz_##S(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate)
#define ROWS_CALL(S) gemv_rows_##S(rows, d, mat, ld, v, out, shared)
#define ACC_CALL(S) gemv_acc_##S(rows, d, g, mat, ld, acc, z)

int sg_rt_gemm_f32_isa(int isa, int trans_a, int trans_b, int64_t m, int64_t n,
                       int64_t k, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float *c, int64_t ldc, int accumulate, int64_t kept) {
  if (!cpu_has(isa))
    return -1;
  DISPATCH(isa, f32, GEMM_CALL)
  return 0;
}

int sg_rt_gemm_f64_isa(int isa, int trans_a, int trans_b, int64_t m, int64_t n,
                       int64_t k, const double *a, int64_t lda,
                       const double *b, int64_t ldb, double *c, int64_t ldc,
                       int accumulate, int64_t kept) {
  if (!cpu_has(isa))
    return -1;
  DISPATCH(isa, f64, GEMM_CALL)
  return 0;
}

void sg_rt_gemm_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                    const float *a, int64_t lda, const float *b, int64_t ldb,
                    float *c, int64_t ldc, int accumulate, int64_t kept) {
  DISPATCH(sg_rt_gemm_isa(), f32, GEMM_CALL)
}

void sg_rt_gemm_f64(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                    const double *a, int64_t lda, const double *b, int64_t ldb,
                    double *c, int64_t ldc, int accumulate, int64_t kept) {
  DISPATCH(sg_rt_gemm_isa(), f64, GEMM_CALL)
}

/* sg_rt_gemmz's matrix-vector sums of rows (gemm_tmpl.h's gemvz). */
int sg_rt_gemvz_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                    int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                    int accumulate) {
  int done;
  DISPATCH(sg_rt_gemm_isa(), f32, GEMVZ_CALL)
  return done;
}

int sg_rt_gemvz_f64(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const double *a,
                    int64_t lda, const double *b, int64_t ldb, double *c, int64_t ldc,
                    int accumulate) {
  int done;
  DISPATCH(sg_rt_gemm_isa(), f64, GEMVZ_CALL)
  return done;
}

/* A row block of a fused matrix-vector pair (pair_tmpl.h's gemv_rows and
 * gemv_acc; codegen/cg_gemvpair.c calls them once per block of rows). */
void sg_rt_gemv_rows_f32(int64_t rows, int64_t d, const float *mat, int64_t ld, const float *v,
                         float *out, int shared) {
  DISPATCH(sg_rt_gemm_isa(), f32, ROWS_CALL)
}

void sg_rt_gemv_rows_f64(int64_t rows, int64_t d, const double *mat, int64_t ld,
                         const double *v, double *out, int shared) {
  DISPATCH(sg_rt_gemm_isa(), f64, ROWS_CALL)
}

void sg_rt_gemv_acc_f32(int64_t rows, int64_t d, const float *g, const float *mat, int64_t ld,
                        float *acc, int z) {
  DISPATCH(sg_rt_gemm_isa(), f32, ACC_CALL)
}

void sg_rt_gemv_acc_f64(int64_t rows, int64_t d, const double *g, const double *mat, int64_t ld,
                        double *acc, int z) {
  DISPATCH(sg_rt_gemm_isa(), f64, ACC_CALL)
}

/* The same kernels of one variant (for the tests): -1 if this CPU lacks it. */
#define VARIANT_OF(NAME, SUF, CALL, ...)                                                         \
  int NAME(int isa, __VA_ARGS__) {                                                               \
    if (!cpu_has(isa))                                                                           \
      return -1;                                                                                 \
    DISPATCH(isa, SUF, CALL)                                                                     \
    return 0;                                                                                    \
  }
VARIANT_OF(sg_rt_gemv_rows_f32_isa, f32, ROWS_CALL, int64_t rows, int64_t d, const float *mat,
           int64_t ld, const float *v, float *out, int shared)
VARIANT_OF(sg_rt_gemv_rows_f64_isa, f64, ROWS_CALL, int64_t rows, int64_t d, const double *mat,
           int64_t ld, const double *v, double *out, int shared)
VARIANT_OF(sg_rt_gemv_acc_f32_isa, f32, ACC_CALL, int64_t rows, int64_t d, const float *g,
           const float *mat, int64_t ld, float *acc, int z)
VARIANT_OF(sg_rt_gemv_acc_f64_isa, f64, ACC_CALL, int64_t rows, int64_t d, const double *g,
           const double *mat, int64_t ld, double *acc, int z)
