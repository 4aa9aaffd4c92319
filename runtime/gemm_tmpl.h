/* gemm_tmpl.h: one instantiation of the blocked matrix multiply, included by
 * gemm.c once per (element type, instruction set). Not a public header.
 * It includes gemv_tmpl.h (matrix-vector products, which the driver uses
 * for m == 1 and n == 1) and pair_tmpl.h (the fused pair's kernels), so
 * all three share one instantiation's names.
 *
 * The including file defines:
 *   T            element type (float or double)
 *   V, VL        SIMD vector type and its number of elements
 *   MR           rows of the register tile; its columns are NR = 2 * VL
 *   KC, NC, MC   cache blocks (see gemm.c); SMALL: up to this m*n*k no
 *                packing; STACKBYTES: packing buffers this small live on
 *                the stack
 *   SFX          suffix making the static function names unique
 *   TGT          function attributes (target ISA) for every function here
 *   VLOADA/VLOADU/VSTOREA/VSTOREU, VSET1, VZERO, VFMA(a, b, c) = a*b + c,
 *   VHSUM (sum of the lanes), VFINITE_NZ (all lanes finite and nonzero)
 *   and, for AVX-512 only, VHSUM_ROWS(_PLUS0), VCOLS, VCOLS_LD,
 *   VSPREAD and VPACK12_ROWS (gemm.c: hsum16_rows_ps, cols16_ps,
 *   transpose16_ps, spread16_ps and pack12_rows_ps, and their f64 forms)
 * and gets SFX-suffixed gemm(...) with sg_rt_gemm_*'s signature. Everything
 * is compiled for the one ISA, so helpers inline into each other. */

#define NR (2 * VL)
#define G_CAT2(a, b) a##_##b
#define G_CAT(a, b) G_CAT2(a, b)
#define F(name) G_CAT(name, SFX)

static inline int64_t F(min64)(int64_t a, int64_t b) { return a < b ? a : b; }

/* Splits len into equal-ish blocks of at most max, each a multiple of unit
 * (except the last): 400 with max 384 gives two blocks of 200, not 384 + 16
 * whose thin second pass would run at a fraction of the speed. */
static inline int64_t F(block)(int64_t len, int64_t max, int64_t unit) {
  int64_t nb = (len + max - 1) / max;
  int64_t b = (len + nb - 1) / nb;
  return (b + unit - 1) / unit * unit;
}

/* dst <- rows [i0, i0+mc) x cols [p0, p0+kc) of op(A), as slivers of MR rows
 * stored column by column (kc x MR each), zero-padded to a multiple of MR so
 * the micro-kernel never needs a row count. */
static TGT void F(pack_a)(int ta, const T *a, int64_t lda, int64_t i0,
                          int64_t p0, int64_t mc, int64_t kc, T *restrict dst) {
  for (int64_t is = 0; is < mc; is += MR, dst += MR * kc) {
    int64_t mr = F(min64)(MR, mc - is);
    if (ta && mr == MR) { /* A is k x m: each column of the sliver is contiguous */
      /* written out, else GCC makes each column a memmove call (6% of
       * bench rnn_lm's time, whose weight gradients are h^T @ g) */
      for (int64_t p = 0; p < kc; p++) {
        const T *src = a + (p0 + p) * lda + i0 + is;
#pragma GCC unroll 16
        for (int ii = 0; ii < MR; ii++)
          dst[p * MR + ii] = src[ii];
      }
    } else if (ta) {
      for (int64_t p = 0; p < kc; p++) {
        const T *src = a + (p0 + p) * lda + i0 + is;
        for (int64_t ii = 0; ii < mr; ii++)
          dst[p * MR + ii] = src[ii];
        for (int64_t ii = mr; ii < MR; ii++)
          dst[p * MR + ii] = 0;
      }
    } else if (mr == MR) {
      const T *src = a + (i0 + is) * lda + p0;
#ifdef VPACK12_ROWS
      _Static_assert(MR == 12, "VPACK12_ROWS packs slivers of 12 rows");
      VPACK12_ROWS(src, lda, kc, dst);
      continue;
#endif
      for (int64_t p = 0; p < kc; p++) {
#pragma GCC unroll 16
        for (int ii = 0; ii < MR; ii++)
          dst[p * MR + ii] = src[ii * lda + p];
      }
    } else {
      for (int64_t p = 0; p < kc; p++) {
        const T *src = a + (i0 + is) * lda + p0 + p;
        for (int64_t ii = 0; ii < mr; ii++)
          dst[p * MR + ii] = src[ii * lda];
        for (int64_t ii = mr; ii < MR; ii++)
          dst[p * MR + ii] = 0;
      }
    }
  }
}

/* dst <- rows [p0, p0+kc) x cols [j0, j0+nc) of op(B), as slivers of NR
 * columns stored row by row (kc x NR each), zero-padded like pack_a. */
static TGT void F(pack_b)(int tb, const T *b, int64_t ldb, int64_t p0,
                          int64_t j0, int64_t kc, int64_t nc, T *restrict dst) {
  for (int64_t js = 0; js < nc; js += NR, dst += NR * kc) {
    int64_t nr = F(min64)(NR, nc - js);
    if (!tb) { /* rows of the sliver are contiguous in B */
      const T *src = b + p0 * ldb + j0 + js;
      for (int64_t p = 0; p < kc; p++, src += ldb) {
        if (nr == NR) { /* two vector moves: a memcpy call cost more than the copy */
          VSTOREA(dst + p * NR, VLOADU(src));
          VSTOREA(dst + p * NR + VL, VLOADU(src + VL));
        } else {
          for (int64_t jj = 0; jj < nr; jj++)
            dst[p * NR + jj] = src[jj];
          for (int64_t jj = nr; jj < NR; jj++)
            dst[p * NR + jj] = 0;
        }
      }
    } else {
      /* B is n x k: a transpose. Go down each source row in short runs so
       * the destination lines being filled stay in L1. */
      const T *src = b + (j0 + js) * ldb + p0;
      for (int64_t pb = 0; pb < kc; pb += 32) {
        int64_t pe = F(min64)(kc, pb + 32);
        for (int64_t jj = 0; jj < nr; jj++)
          for (int64_t p = pb; p < pe; p++)
            dst[p * NR + jj] = src[jj * ldb + p];
        for (int64_t jj = nr; jj < NR; jj++)
          for (int64_t p = pb; p < pe; p++)
            dst[p * NR + jj] = 0;
      }
    }
  }
}

/* The register tile: C[MR x NR] (+)= Apanel * Bpanel over kc steps. The
 * 2*MR accumulators stay in registers; per step it loads two vectors of B
 * and broadcasts MR values of A. */
static TGT void F(kernel)(int64_t kc, const T *restrict a, const T *restrict b,
                          T *restrict c, int64_t ldc, int acc) {
  V c0[MR], c1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++) {
    c0[i] = VZERO();
    c1[i] = VZERO();
  }
  for (int64_t p = 0; p < kc; p++) {
    V b0 = VLOADA(b), b1 = VLOADA(b + VL);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      V ai = VSET1(a[i]);
      c0[i] = VFMA(ai, b0, c0[i]);
      c1[i] = VFMA(ai, b1, c1[i]);
    }
    a += MR;
    b += NR;
  }
  if (acc) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      VSTOREU(c + i * ldc, VLOADU(c + i * ldc) + c0[i]);
      VSTOREU(c + i * ldc + VL, VLOADU(c + i * ldc + VL) + c1[i]);
    }
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      VSTOREU(c + i * ldc, c0[i]);
      VSTOREU(c + i * ldc + VL, c1[i]);
    }
  }
}

/* The left half of kernel's tile, MR x VL, for an edge sliver whose last
 * nr <= VL columns are all that remain: half the work of the full tile,
 * which on narrow matrices (n = 16 with NR = 32) is most of the product. */
static TGT void F(kernel_half)(int64_t kc, const T *restrict a,
                               const T *restrict b, T *restrict c,
                               int64_t ldc) {
  V c0[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++)
    c0[i] = VZERO();
  for (int64_t p = 0; p < kc; p++) {
    V b0 = VLOADA(b);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
      c0[i] = VFMA(VSET1(a[i]), b0, c0[i]);
    a += MR;
    b += NR;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++)
    VSTOREU(c + i * ldc, c0[i]);
}

/* All register tiles of one packed mc x kc block of A times one packed
 * kc x nc block of B. The A sliver (kc x MR) stays in L1 while the loop
 * over j streams the B block from L2. Partial tiles at the right and bottom
 * edges go through a scratch tile so that C is never written out of bounds;
 * so do all tiles when ct is set: then the block is of C^T (see gemm) and
 * the tile is stored transposed, C[j][i]. */
static TGT void F(macro)(int64_t mc, int64_t nc, int64_t kc, const T *pa,
                         const T *pb, T *c, int64_t ldc, int acc, int ct) {
  for (int64_t ir = 0; ir < mc; ir += MR) {
    int64_t mr = F(min64)(MR, mc - ir);
    const T *ap = pa + ir * kc;
    for (int64_t jr = 0; jr < nc; jr += NR) {
      int64_t nr = F(min64)(NR, nc - jr);
      const T *bp = pb + jr * kc;
      if (!ct && mr == MR && nr == NR) {
        F(kernel)(kc, ap, bp, c + ir * ldc + jr, ldc, acc);
        continue;
      }
      _Alignas(64) T tile[MR * NR];
      if (nr <= VL)
        F(kernel_half)(kc, ap, bp, tile, NR);
      else
        F(kernel)(kc, ap, bp, tile, NR, 0);
      if (!ct) {
        T *cp = c + ir * ldc + jr;
        for (int64_t i = 0; i < mr; i++)
          for (int64_t j = 0; j < nr; j++)
            cp[i * ldc + j] = acc ? cp[i * ldc + j] + tile[i * NR + j]
                                  : tile[i * NR + j];
      } else {
        T *cp = c + jr * ldc + ir;
        for (int64_t j = 0; j < nr; j++)
          for (int64_t i = 0; i < mr; i++)
            cp[j * ldc + i] = acc ? cp[j * ldc + i] + tile[i * NR + j]
                                  : tile[i * NR + j];
      }
    }
  }
}

#include "gemv_tmpl.h"

/* C (+)= op(A) op(B) row by row through gemv: no packing, no allocation. */
static TGT void F(by_rows)(int ta, int tb, int64_t m, int64_t n, int64_t k,
                           const T *a, int64_t lda, const T *b, int64_t ldb,
                           T *c, int64_t ldc, int acc) {
  for (int64_t i = 0; i < m; i++)
    F(gemv)(n, k, ta ? a + i : a + i * lda, ta ? lda : 1, b, ldb, tb,
            c + i * ldc, 1, acc);
}

static inline int64_t F(roundup)(int64_t x, int64_t unit) {
  return (x + unit - 1) / unit * unit;
}

/* C (+)= op(A) op(B) restricted to rows [r0, r1) and columns [c0, c1) of
 * C, through by_rows (the fallback when no packing buffer is available). */
static TGT void F(by_rows_part)(int ta, int tb, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                int64_t k, const T *a, int64_t lda, const T *b, int64_t ldb,
                                T *c, int64_t ldc, int acc) {
  F(by_rows)(ta, tb, r1 - r0, c1 - c0, k, ta ? a + r0 : a + r0 * lda, lda,
             tb ? b + c0 * ldb : b + c0, ldb, c + r0 * ldc + c0, ldc, acc);
}

/* Operands packed whole beforehand (F(kept)), or NULL: per KC slice of k,
 * every sliver of it, the slice starting at pc * apad (A: rows rounded up
 * to MR) or pc * bpad (B: columns rounded up to NR). */
typedef struct F(Packed) {
  const T *a, *b;
  int64_t apad, bpad;
} F(Packed);

/* The packed product for rows [m0, m1) and columns [n0, n1) of op(A) op(B).
 * With ct, the operands are already swapped (the caller computes
 * C^T = op(B)^T op(A)^T) and C is stored transposed. Each element's sum
 * runs over the same KC slices in the same order, and tiles sit at the
 * same multiples of MR and NR, whatever the part (m0 and n0 are multiples
 * of MR and NR) and whether an operand was packed beforehand (pk):
 * neither changes a bit. */
static TGT void F(blocked_part)(int ta, int tb, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                                int64_t k, const T *a, int64_t lda, const T *b, int64_t ldb,
                                T *c, int64_t ldc, int acc, int ct, const F(Packed) *pk) {
  int64_t mcb = F(block)(m1 - m0, MC, MR), kcb = F(block)(k, KC, 1),
          ncb = F(block)(n1 - n0, NC, NR);
  /* One buffer for both packed blocks; the A part is rounded to whole cache
   * lines so that the B part stays 64-byte aligned for VLOADA. Small
   * products pack on the stack; larger ones in the thread's cached packing
   * buffer (workspace.c), so repeated products allocate nothing. */
  size_t abytes = pk->a ? 0 : ((size_t)(mcb * kcb) * sizeof(T) + 63) & ~(size_t)63;
  size_t bbytes = pk->b ? 0 : (size_t)(ncb * kcb) * sizeof(T);
  _Alignas(64) T stackbuf[STACKBYTES / sizeof(T)];
  void *buf = stackbuf;
  if (abytes + bbytes > sizeof stackbuf &&
      !(buf = sg_rt_pack_buffer((int64_t)(abytes + bbytes)))) {
    if (ct) /* undo the swap: by_rows wants the original operands */
      F(by_rows_part)(!tb, !ta, n0, n1, m0, m1, k, b, ldb, a, lda, c, ldc, acc);
    else
      F(by_rows_part)(ta, tb, m0, m1, n0, n1, k, a, lda, b, ldb, c, ldc, acc);
    return;
  }
  T *pa = buf, *pb = (T *)((char *)buf + abytes);
  for (int64_t ic = m0; ic < m1; ic += mcb) {
    int64_t mc = F(min64)(mcb, m1 - ic);
    for (int64_t pc = 0; pc < k; pc += kcb) {
      int64_t kc = F(min64)(kcb, k - pc);
      /* The first pass over k stores (C is not read unless acc: it may
       * hold garbage); later passes add. */
      int beta = acc || pc > 0;
      const T *ap = pk->a ? pk->a + pc * pk->apad + ic * kc : pa;
      if (!pk->a)
        F(pack_a)(ta, a, lda, ic, pc, mc, kc, pa);
      for (int64_t jc = n0; jc < n1; jc += ncb) {
        int64_t nc = F(min64)(ncb, n1 - jc);
        const T *bp = pk->b ? pk->b + pc * pk->bpad + jc * kc : pb;
        if (!pk->b)
          F(pack_b)(tb, b, ldb, pc, jc, kc, nc, pb);
        F(macro)(mc, nc, kc, ap, bp, c + (ct ? jc * ldc + ic : ic * ldc + jc),
                 ldc, beta, ct);
      }
    }
  }
}

/* op(A) (side 0: len rows) or op(B) (side 1: len columns) packed whole as
 * F(Packed) describes, kept by the thread for the rest of the generated
 * call `call` (sg_rt_ws_kept): a loop's weights are packed at its first
 * step only. The packed form depends on the element type, the tile and
 * KC, so kernel sets that share them share it. NULL: pack as usual. */
static TGT const T *F(kept)(int64_t call, int side, int tr, const T *x, int64_t ld, int64_t len,
                            int64_t k, int64_t *pad) {
  int64_t kcb = F(block)(k, KC, 1);
  *pad = F(roundup)(len, side ? NR : MR);
  SgKeptKey key = {call, x, ld, len, k,
                   side | tr << 1 | (sizeof(T) == 8) << 2 | MR << 3 | NR << 8 | KC << 16};
  int fresh;
  T *dst = sg_rt_ws_kept(&key, *pad * k * (int64_t)sizeof(T), &fresh);
  for (int64_t pc = 0; dst && fresh && pc < k; pc += kcb) {
    int64_t kc = F(min64)(kcb, k - pc);
    if (side)
      F(pack_b)(tr, x, ld, pc, 0, kc, len, dst + pc * *pad);
    else
      F(pack_a)(tr, x, ld, 0, pc, len, kc, dst + pc * *pad);
  }
  return dst;
}

/* A product split into parts for the thread pool: along m (in units of
 * MR rows) or n (NR columns), whichever has more register tiles. */
typedef struct F(Split) {
  int ta, tb, acc, ct, along_m;
  int64_t m, n, k, lda, ldb, ldc, units, parts;
  const T *a, *b;
  T *c;
  F(Packed) pk;
} F(Split);

static void F(run_parts)(void *ctx, int64_t begin, int64_t end) {
  const F(Split) *s = ctx;
  for (int64_t p = begin; p < end; p++) {
    int64_t u0 = p * s->units / s->parts, u1 = (p + 1) * s->units / s->parts;
    int64_t m0 = 0, m1 = s->m, n0 = 0, n1 = s->n;
    if (s->along_m)
      m0 = u0 * MR, m1 = F(min64)(u1 * MR, s->m);
    else
      n0 = u0 * NR, n1 = F(min64)(u1 * NR, s->n);
    F(blocked_part)(s->ta, s->tb, m0, m1, n0, n1, s->k, s->a, s->lda, s->b, s->ldb, s->c,
                    s->ldc, s->acc, s->ct, &s->pk);
  }
}

/* The packed product, split into parts of about PART_WORK multiply-adds
 * each (at most MAX_PARTS, and at most one per thread) that the pool runs
 * in parallel. Every part packs the whole of the other operand again (B
 * when split along m), so parts beyond the threads that run them only cost:
 * 32 parts of 256x1000x512 on one thread ran at 130 GFLOP/s, one part at
 * 200. The count may follow the thread count because splitting never
 * changes a bit (blocked_part above). An operand kept for the call
 * (kept_side 0: A, 1: B, -1: none) is packed whole first, once per call,
 * and every part reads it. */
enum { F(PART_WORK) = 1 << 21, F(MAX_PARTS) = 32 };
static TGT void F(blocked)(int ta, int tb, int64_t m, int64_t n, int64_t k,
                           const T *a, int64_t lda, const T *b, int64_t ldb,
                           T *c, int64_t ldc, int acc, int ct, int64_t call, int kept_side) {
  F(Packed) pk = {0};
  if (call && kept_side == 0)
    pk.a = F(kept)(call, 0, ta, a, lda, m, k, &pk.apad);
  else if (call && kept_side == 1)
    pk.b = F(kept)(call, 1, tb, b, ldb, n, k, &pk.bpad);
  int64_t um = (m + MR - 1) / MR, un = (n + NR - 1) / NR;
  double work = (double)m * (double)n * (double)k;
  int along_m = um >= un;
  int64_t units = along_m ? um : un;
  int64_t parts = work < 2.0 * F(PART_WORK) ? 1 : (int64_t)(work / F(PART_WORK));
  if (parts > F(MAX_PARTS))
    parts = F(MAX_PARTS);
  if (parts > units)
    parts = units;
  if (parts > sg_rt_num_threads())
    parts = sg_rt_num_threads();
  if (parts <= 1) {
    F(blocked_part)(ta, tb, 0, m, 0, n, k, a, lda, b, ldb, c, ldc, acc, ct, &pk);
    return;
  }
  F(Split) s = {ta, tb, acc, ct, along_m, m, n, k, lda, ldb, ldc, units, parts, a, b, c, pk};
  sg_rt_parallel_for(parts, 1, F(run_parts), &s);
}

static TGT void F(gemm)(int ta, int tb, int64_t m, int64_t n, int64_t k,
                        const T *a, int64_t lda, const T *b, int64_t ldb,
                        T *c, int64_t ldc, int acc, int64_t kept) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    if (!acc)
      for (int64_t i = 0; i < m; i++)
        memset(c + i * ldc, 0, (size_t)n * sizeof(T));
    return;
  }
  if (m == 1) { /* row vector times matrix */
    F(gemv_par)(n, k, a, ta ? lda : 1, b, ldb, tb, c, 1, acc, 0);
    return;
  }
  if (n == 1) { /* matrix times column vector: C^T = op(B)^T op(A)^T */
    F(gemv_par)(m, k, b, tb ? 1 : ldb, a, lda, !ta, c, ldc, acc, 0);
    return;
  }
  if (!tb && m <= SMALL && n <= SMALL && k <= SMALL && m * n * k <= SMALL) {
    F(by_rows)(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, acc);
    return;
  }
  /* Register tiles are MR x NR with NR > MR, so a narrow C (n = 10, say)
   * wastes most of each tile. Computing C^T = op(B)^T op(A)^T puts n on the
   * MR side instead. Swap when that fills the tiles better, by more than
   * the ~10% that storing every tile transposed costs. */
  int64_t tiles = F(roundup)(m, MR) * F(roundup)(n, NR);
  int64_t tiles_t = F(roundup)(n, MR) * F(roundup)(m, NR);
  if (9 * tiles > 10 * tiles_t) /* B, if kept, is now the left operand */
    F(blocked)(!tb, !ta, n, m, k, b, ldb, a, lda, c, ldc, acc, 1, kept, 0);
  else
    F(blocked)(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, acc, 0, kept, 1);
}

/* sg_rt_gemmz's matrix-vector products that are sums of rows, under the
 * zero rule and without its scan; returns 0 if done, -1 if not that case. */
static TGT int F(gemvz)(int ta, int tb, int64_t m, int64_t n, int64_t k, const T *a,
                        int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, int acc) {
  if (m <= 0 || n <= 0 || k <= 0)
    return -1;
  if (m == 1 && !tb) {
    F(gemv_par)(n, k, a, ta ? lda : 1, b, ldb, 0, c, 1, acc, 1);
    return 0;
  }
  if (n == 1 && ta) {
    F(gemv_par)(m, k, b, tb ? 1 : ldb, a, lda, 0, c, ldc, acc, 1);
    return 0;
  }
  return -1;
}

#include "pair_tmpl.h"

#undef NR
#undef G_CAT2
#undef G_CAT
#undef F
