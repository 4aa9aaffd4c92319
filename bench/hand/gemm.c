/* gemm.c: the expert baselines' f32 GEMM (gemm.h), in AVX-512 intrinsics.
 *
 * The usual design (GotoBLAS/BLIS): op(B) packed into panels of NR = 32
 * columns, each k x 32 and contiguous, so a KC-deep slice of a panel is one
 * contiguous block; op(A) packed per call into slivers of MR = 12 rows, KC
 * deep; a 12 x 32 register tile (24 accumulators, two loads of B and 12
 * broadcasts of A per step). Loops: KC slices of k, MC blocks of rows (A's
 * packed block in L2), NC blocks of columns (B's slice in L2), slivers of
 * A (one in L1 while it meets every panel of the block), panels of B.
 * Unlike the runtime's GEMM, edges are not computed into a scratch tile
 * and copied: the kernel is instantiated for every row count 1-12, and
 * columns past n are masked off in the loads and stores of C (whose rows a
 * tile prefetches as it starts); a transposed B is packed by 16 x 16
 * transposes; a C of at most 16 columns is computed as C^T = op(B)^T
 * op(A)^T, lanes along its long side. The first KC slice stores C (or
 * adds to it when beta is 1), later ones add. bench/gemm/hand_gemm.c
 * times it against the runtime's GEMM on the bench's shapes.
 *
 * hg_pack_b is exposed so that a weight many products share is packed once
 * per call (bench/hand/rnn.c). Without AVX-512 every entry point falls back
 * on sg_rt_gemm_f32, the packed form being op(B) itself. */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <stdlib.h>
#include <string.h>

#include "avx512.h"
#include "gemm.h"
#include "sgrt.h"

enum { MR = 12, NR = 32, KC = 384, MC = 384, NC = 512 };

int64_t hg_packed_size(int64_t k, int64_t n) {
  return hx_avx512() ? (n + NR - 1) / NR * NR * k : k * n;
}

#if HX_X86

/* Buffer `which` of the calling thread, grown to the largest size asked
 * (0: packed A, 1: a block of packed B, 2: a transposed C). */
static float *thread_buffer(int which, int64_t floats) {
  static _Thread_local float *buf[3];
  static _Thread_local int64_t cap[3];
  if (floats > cap[which]) {
    free(buf[which]);
    void *p = NULL;
    if (posix_memalign(&p, 64, (size_t)floats * sizeof(float)) != 0)
      abort(); /* a benchmark: no way to go on */
    buf[which] = p, cap[which] = floats;
  }
  return buf[which];
}

/* The register tile: C[mr x 32] (+)= A sliver (kc x MR, row i at offset i)
 * times B (kc x 32), the columns of C limited by m0 and m1 (the masks of
 * C's two vectors; half: m1 is empty and the second vector not computed). */
HX_INLINE void tile(int mr, int half, int64_t kc, const float *restrict a, const float *restrict b,
                    float *restrict c, int64_t ldc, int beta, __mmask16 m0, __mmask16 m1) {
  __m512 c0[MR], c1[MR];
  for (int i = 0; i < mr; i++) {
    c0[i] = c1[i] = _mm512_setzero_ps();
    _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
  }
  for (int64_t p = 0; p < kc; p++) {
    __m512 b0 = _mm512_load_ps(b), b1 = half ? b0 : _mm512_load_ps(b + 16);
    for (int i = 0; i < mr; i++) {
      __m512 ai = _mm512_set1_ps(a[i]);
      c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
      if (!half)
        c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
    }
    a += MR, b += NR;
  }
  for (int i = 0; i < mr; i++) {
    float *ci = c + i * ldc;
    if (beta)
      c0[i] = _mm512_add_ps(c0[i], _mm512_maskz_loadu_ps(m0, ci));
    _mm512_mask_storeu_ps(ci, m0, c0[i]);
    if (!half) {
      if (beta)
        c1[i] = _mm512_add_ps(c1[i], _mm512_maskz_loadu_ps(m1, ci + 16));
      _mm512_mask_storeu_ps(ci + 16, m1, c1[i]);
    }
  }
}

#define TILE_CASE(R)                                                                             \
  case R:                                                                                        \
    if (half)                                                                                    \
      tile(R, 1, kc, a, b, c, ldc, beta, m0, 0);                                                 \
    else                                                                                         \
      tile(R, 0, kc, a, b, c, ldc, beta, m0, m1);                                                \
    break;

static HX_TGT void tile_any(int mr, int64_t kc, const float *a, const float *b, float *c,
                            int64_t ldc, int beta, int64_t nr) {
  __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
  __mmask16 m1 = nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
  int half = nr <= 16;
  switch (mr) {
    TILE_CASE(12) TILE_CASE(11) TILE_CASE(10) TILE_CASE(9) TILE_CASE(8) TILE_CASE(7)
    TILE_CASE(6) TILE_CASE(5) TILE_CASE(4) TILE_CASE(3) TILE_CASE(2) TILE_CASE(1)
  }
}

/* Rows [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) as panels of NR
 * columns, panel q at dst + q kc NR, each kc x NR, zero past nc. With
 * p0 = 0, kc = k and all columns this is hg_pack_b's whole packing. */
static HX_TGT void pack_b_block(int tb, const float *b, int64_t ldb, int64_t p0, int64_t kc,
                                int64_t j0, int64_t nc, float *dst) {
  for (int64_t jq = 0; jq < nc; jq += NR, dst += kc * NR) {
    int64_t nr = nc - jq < NR ? nc - jq : NR, j = j0 + jq;
    if (!tb) {
      __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
      __mmask16 m1 = nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
      for (int64_t p = 0; p < kc; p++) {
        const float *src = b + (p0 + p) * ldb + j;
        _mm512_store_ps(dst + p * NR, _mm512_maskz_loadu_ps(m0, src));
        _mm512_store_ps(dst + p * NR + 16, _mm512_maskz_loadu_ps(m1, src + 16));
      }
    } else { /* op(B)[p][j] = B[j][p]: a panel's column jj is a row of B,
              * read 16 floats along p at a time and transposed */
      for (int64_t p = 0; p < kc; p += 16) {
        __mmask16 mp = kc - p >= 16 ? 0xFFFF : (__mmask16)((1u << (kc - p)) - 1);
        for (int h = 0; h < 2; h++) {
          __m512 r[16];
          for (int q = 0; q < 16; q++)
            r[q] = 16 * h + q < nr ? _mm512_maskz_loadu_ps(mp, b + (j + 16 * h + q) * ldb + p0 + p)
                                   : _mm512_setzero_ps();
          hx_transpose16_ps(r);
          for (int q = 0; q < 16 && p + q < kc; q++)
            _mm512_store_ps(dst + (p + q) * NR + 16 * h, r[q]);
        }
      }
    }
  }
}

/* Rows [i0, i0 + mc) x [p0, p0 + kc) of op(A) as slivers of MR rows, each
 * kc x MR (row i of the sliver at offset i of each step). */
static HX_TGT void pack_a(int ta, const float *a, int64_t lda, int64_t i0, int64_t p0, int64_t mc,
                          int64_t kc, float *dst) {
  for (int64_t s = 0; s < mc; s += MR, dst += MR * kc) {
    int64_t mr = mc - s < MR ? mc - s : MR;
    if (ta) { /* op(A)[i][p] = A[p][i]: a step is mr consecutive floats */
      __mmask16 m = (__mmask16)((1u << mr) - 1);
      for (int64_t p = 0; p < kc; p++)
        _mm512_mask_storeu_ps(dst + p * MR, m,
                              _mm512_maskz_loadu_ps(m, a + (p0 + p) * lda + i0 + s));
    } else {
      for (int64_t i = 0; i < mr; i++) {
        const float *src = a + (i0 + s + i) * lda + p0;
        for (int64_t p = 0; p < kc; p++)
          dst[p * MR + i] = src[p];
      }
    }
  }
}

/* Splits len into equal blocks of at most max, multiples of unit: k = 512
 * with KC 384 is two slices of 256, not 384 and a thin 128. */
static int64_t block_len(int64_t len, int64_t max, int64_t unit) {
  int64_t nb = (len + max - 1) / max, b = (len + nb - 1) / nb;
  return (b + unit - 1) / unit * unit;
}

/* The tiles of mc rows of op(A) (packed in pa, kc deep) times nc columns
 * of B, whose panel q is at pb + q pstride. */
static HX_TGT void block(int64_t mc, int64_t nc, int64_t kc, const float *pa, const float *pb,
                         int64_t pstride, float *c, int64_t ldc, int beta) {
  for (int64_t s = 0; s < mc; s += MR) {
    int mr = (int)(mc - s < MR ? mc - s : MR);
    for (int64_t jq = 0; jq < nc; jq += NR)
      tile_any(mr, kc, pa + s * kc, pb + jq / NR * pstride, c + s * ldc + jq, ldc, beta, nc - jq);
  }
}

/* C (+)= op(A) op(B), op(B) packed whole (pb: hg_pack_b) or, when pb is
 * NULL, packed a KC x NC block at a time from b (into a thread buffer, while
 * it is in cache). */
static HX_TGT void gemm_x(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a,
                          int64_t lda, const float *b, int64_t ldb, const float *pb, float *c,
                          int64_t ldc, int beta) {
  if (k == 0) { /* a sum of nothing */
    for (int64_t i = 0; i < m && !beta; i++)
      memset(c + i * ldc, 0, (size_t)n * sizeof(float));
    return;
  }
  if (!pb && n <= 16 && m >= 32) {
    /* A few columns: a tile would use n of its 32 lanes. C^T = op(B)^T
     * op(A)^T has the long side along the lanes; computed into a thread
     * buffer, then added or stored into C transposed. */
    float *ct = thread_buffer(2, n * m);
    gemm_x(!tb, !ta, n, m, k, b, ldb, a, lda, NULL, ct, m, 0);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        c[i * ldc + j] = beta ? c[i * ldc + j] + ct[j * m + i] : ct[j * m + i];
    return;
  }
  int64_t kcb = block_len(k, KC, 1), mcb = block_len(m, MC, MR), ncb = block_len(n, NC, NR);
  float *pa = thread_buffer(0, mcb * kcb);
  float *pbb = pb ? NULL : thread_buffer(1, kcb * ncb);
  for (int64_t i0 = 0; i0 < m; i0 += mcb) {
    int64_t mc = m - i0 < mcb ? m - i0 : mcb;
    for (int64_t p0 = 0; p0 < k; p0 += kcb) {
      int64_t kc = k - p0 < kcb ? k - p0 : kcb;
      pack_a(ta, a, lda, i0, p0, mc, kc, pa);
      for (int64_t j0 = 0; j0 < n; j0 += ncb) {
        int64_t nc = n - j0 < ncb ? n - j0 : ncb;
        if (pb) {
          block(mc, nc, kc, pa, pb + j0 * k + p0 * NR, k * NR, c + i0 * ldc + j0, ldc,
                beta || p0 > 0);
        } else {
          pack_b_block(tb, b, ldb, p0, kc, j0, nc, pbb);
          block(mc, nc, kc, pa, pbb, kc * NR, c + i0 * ldc + j0, ldc, beta || p0 > 0);
        }
      }
    }
  }
}

#endif /* HX_X86 */

void hg_pack_b(int tb, int64_t k, int64_t n, const float *b, int64_t ldb, float *dst) {
#if HX_X86
  if (hx_avx512()) {
    pack_b_block(tb, b, ldb, 0, k, 0, n, dst);
    return;
  }
#endif
  for (int64_t p = 0; p < k; p++) /* op(B) itself, row-major k x n */
    for (int64_t j = 0; j < n; j++)
      dst[p * n + j] = tb ? b[j * ldb + p] : b[p * ldb + j];
}

void hg_gemm_packed(int ta, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *packed_b, float *c, int64_t ldc, int beta) {
#if HX_X86
  if (hx_avx512()) {
    gemm_x(ta, 0, m, n, k, a, lda, NULL, 0, packed_b, c, ldc, beta);
    return;
  }
#endif
  sg_rt_gemm_f32(ta, 0, m, n, k, a, lda, packed_b, n, c, ldc, beta, 0);
}

void hg_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
             const float *b, int64_t ldb, float *c, int64_t ldc, int beta) {
#if HX_X86
  if (hx_avx512()) {
    gemm_x(ta, tb, m, n, k, a, lda, b, ldb, NULL, c, ldc, beta);
    return;
  }
#endif
  sg_rt_gemm_f32(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, beta, 0);
}
