/* gemm_tmpl.h: one instantiation of the blocked matrix multiply, included by
 * gemm.c once per (element type, instruction set). Not a public header.
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
 *   VHSUM (sum of the lanes)
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
    if (ta) { /* A is k x m: each column of the sliver is contiguous */
      for (int64_t p = 0; p < kc; p++) {
        const T *src = a + (p0 + p) * lda + i0 + is;
        for (int64_t ii = 0; ii < mr; ii++)
          dst[p * MR + ii] = src[ii];
        for (int64_t ii = mr; ii < MR; ii++)
          dst[p * MR + ii] = 0;
      }
    } else if (mr == MR) {
      const T *src = a + (i0 + is) * lda + p0;
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
        if (nr == NR) {
          memcpy(dst + p * NR, src, NR * sizeof(T));
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

/* The vector part of dot: lanes of partial sums; *pend: where the scalar
 * tail starts. */
static inline TGT V F(dot_vec)(int64_t len, const T *x, const T *y, int64_t *pend) {
  V s0 = VZERO(), s1 = VZERO(), s2 = VZERO(), s3 = VZERO();
  int64_t p = 0;
  for (; p + 4 * VL <= len; p += 4 * VL) {
    s0 = VFMA(VLOADU(x + p), VLOADU(y + p), s0);
    s1 = VFMA(VLOADU(x + p + VL), VLOADU(y + p + VL), s1);
    s2 = VFMA(VLOADU(x + p + 2 * VL), VLOADU(y + p + 2 * VL), s2);
    s3 = VFMA(VLOADU(x + p + 3 * VL), VLOADU(y + p + 3 * VL), s3);
  }
  for (; p + VL <= len; p += VL)
    s0 = VFMA(VLOADU(x + p), VLOADU(y + p), s0);
  *pend = p;
  return (s0 + s1) + (s2 + s3);
}

static TGT T F(dot)(int64_t len, const T *x, const T *y) {
  int64_t p;
  T r = VHSUM(F(dot_vec)(len, x, y, &p));
  for (; p < len; p++)
    r += x[p] * y[p];
  return r;
}

/* Prefetches bytes [lo, hi) of the block of `rows` rows that comes
 * `ahead` blocks after the one at mat (blocks of the same size follow in
 * the caller's order). */
static inline void F(prefetch_block)(const T *mat, int64_t rows, int64_t ld, int ahead, int64_t lo,
                                     int64_t hi) {
  const char *block = (const char *)(mat + ahead * rows * ld);
  for (int64_t b = lo & ~(int64_t)63; b < hi; b += 64)
    __builtin_prefetch(block + b);
}

/* Prefetches `lines` cache lines from p on: with a constant count, as the
 * callers of rows back to back give it, a straight run of prefetches at
 * constant offsets instead of prefetch_block's loop, whose address
 * arithmetic took a tenth of bench W2's time in cache. */
static inline void F(prefetch_lines)(const char *p, int lines) {
  for (int l = 0; l < lines; l++)
    __builtin_prefetch(p + 64 * l);
}

#ifdef VHSUM_ROWS
/* dot_rows of rows of exactly one vector (x @ w with 16 columns): dot_vec's
 * sum (s0 + 0) + (0 + 0) without its loops. Lane by lane that is x*y + 0
 * (fma(x, y, +0) rounds as the product does), and a +0 added to each
 * lane before the tree or to its sum after gives the same bits (only the
 * sign of a zero sum could differ): one multiply per row, not an FMA and
 * an add. Small enough to inline where
 * it is called once per 16 rows (dot_rows's set-up for the general case
 * was a tenth of its time there). */
static inline TGT void F(dot_rows1)(const T *x, int64_t ld, V yv, T *out) {
  V s[VL];
#pragma GCC unroll 16
  for (int q = 0; q < VL; q++)
    s[q] = VLOADU(x + q * ld) * yv;
  VHSUM_ROWS_PLUS0(s, out);
}

/* Rows shorter than a vector, back to back (x @ w with that few
 * columns): VL rows fill len vectors, whose columns VCOLS takes out. */
static inline TGT int F(short_rows)(int64_t len, int64_t ld) {
  return ld == len && len >= 1 && len < VL;
}

/* dot_rows of such rows: dot's sum for each row, which for a row shorter
 * than a vector is ((0 + x0 y0) + x1 y1) + ..., each product rounded
 * before it is added, computed for VL rows at once column by column.
 * Before, each row took dot's scalar loop and the transposing tree ran on
 * zeros: bench x @ w with 4 columns ran at a tenth of memory's speed. */
static inline __attribute__((always_inline)) TGT void F(dot_rows_len)(int len, const T *x, const T *y,
                                                                      T *out) {
  V col[VL];
  VCOLS(x, len, col);
  V r = VZERO();
  for (int p = 0; p < len; p++) {
    V t = col[p] * VSET1(y[p]);
    r = r + t;
  }
  VSTOREU(out, r);
}

/* out[i] = dot of row i with y for the rows [0, rows) of such rows, VL at
 * a time, a tail through dot (as gemv's would be); prefetching as
 * gemv_rows does when it is given `prefetch`. */
static inline __attribute__((always_inline)) TGT void F(rows_len)(int len, int64_t rows, const T *x,
                                                                  const T *y, T *out, int prefetch) {
  const int64_t row_bytes = len * (int64_t)sizeof(T);
  int64_t i = 0;
  for (; i + VL <= rows; i += VL) {
    if (prefetch == 1)
      F(prefetch_block)(x, rows, len, 1, i * row_bytes, (i + VL) * row_bytes);
    else if (prefetch == 2)
      F(prefetch_block)(x, rows, len, 2, i * row_bytes / 2, (i + VL) * row_bytes / 2);
    F(dot_rows_len)(len, x + i * len, y, out + i);
  }
  for (; i < rows; i++)
    out[i] = F(dot)(len, x + i * len, y);
}

/* (one instance per length, so that its loops unroll into registers) */
#define SHORT_CASES(CALL)                                                                          \
  case 1: CALL(1); case 2: CALL(2); case 3: CALL(3); case 4: CALL(4); case 5: CALL(5);               \
  case 6: CALL(6); case 7: CALL(7); case 8: CALL(8); case 9: CALL(9); case 10: CALL(10);             \
  case 11: CALL(11); case 12: CALL(12); case 13: CALL(13); case 14: CALL(14); default: CALL(15)
static TGT void F(rows_short)(int64_t len, int64_t rows, const T *x, const T *y, T *out, int prefetch) {
#define ROWS_LEN(k) F(rows_len)(k, rows, x, y, out, prefetch); return
  switch (len) { SHORT_CASES(ROWS_LEN); }
#undef ROWS_LEN
}

/* dot of VL rows (row q at x + q * ld) with y: the horizontal sums of the
 * VL partial vectors in one transposing pass (VHSUM_ROWS, the same tree of
 * additions as VHSUM, so each result has dot's bits) instead of VL
 * separate reductions -- most of the time of a short row (x @ w with
 * 16 columns) went into its reduction. */
static inline TGT void F(dot_rows)(int64_t len, const T *x, int64_t ld, const T *y, T *out) {
  V s[VL];
  int64_t p = 0;
  if (len == VL) {
    F(dot_rows1)(x, ld, VLOADU(y), out);
    return;
  }
#pragma GCC unroll 16
  for (int q = 0; q < VL; q++)
    s[q] = F(dot_vec)(len, x + q * ld, y, &p);
  VHSUM_ROWS(s, out);
  if (p < len)
    for (int q = 0; q < VL; q++) {
      const T *xq = x + q * ld;
      T r = out[q];
      for (int64_t pp = p; pp < len; pp++)
        r += xq[pp] * y[pp];
      out[q] = r;
    }
}
#endif

/* buf[0..jb) += x0 r0 + x1 r1 + x2 r2 + x3 r3, r0 the first of four rows
 * ld apart (buf aligned): the four-row step of gemv and gemv_sum_z, in one
 * order so that both give the same bits. */
static inline TGT void F(add_rows4)(T *buf, int64_t jb, const T *r0, int64_t ld, T x0, T x1,
                                    T x2, T x3) {
  V v0 = VSET1(x0), v1 = VSET1(x1), v2 = VSET1(x2), v3 = VSET1(x3);
  const T *r1 = r0 + ld, *r2 = r1 + ld, *r3 = r2 + ld;
  int64_t j = 0;
  for (; j + VL <= jb; j += VL) {
    V s = VLOADA(buf + j);
    s = VFMA(v0, VLOADU(r0 + j), s);
    s = VFMA(v1, VLOADU(r1 + j), s);
    s = VFMA(v2, VLOADU(r2 + j), s);
    s = VFMA(v3, VLOADU(r3 + j), s);
    VSTOREA(buf + j, s);
  }
  for (; j < jb; j++)
    buf[j] += x0 * r0[j] + x1 * r1[j] + x2 * r2[j] + x3 * r3[j];
}

/* One vector times a matrix, without packing:
 *   y[j*incy] = (acc ? y[j*incy] : 0) + sum_p x[p*incx] * M(p, j),  j < nn,
 * where M(p, j) = mat[p*ld + j] (tmat == 0) or mat[j*ld + p] (tmat != 0).
 * This is the fast path for m == 1 and n == 1 (matrix-vector products), the
 * path for tiny products where packing costs more than it saves, and the
 * fallback (row by row) when the packing buffers cannot be allocated. */
static TGT void F(gemv)(int64_t nn, int64_t k, const T *x, int64_t incx,
                        const T *mat, int64_t ld, int tmat, T *y,
                        int64_t incy, int acc) {
  if (!tmat) {
    /* y is a sum of rows of M: accumulate a chunk of it in an aligned
     * local buffer (y may be strided), four rows of M per pass. */
    enum { JB = 2048 / sizeof(T) };
    _Alignas(64) T buf[JB];
    for (int64_t j0 = 0; j0 < nn; j0 += JB) {
      int64_t jb = F(min64)(JB, nn - j0);
      for (int64_t j = 0; j < jb; j++)
        buf[j] = acc ? y[(j0 + j) * incy] : 0;
      int64_t p = 0;
      for (; p + 4 <= k; p += 4) {
        F(add_rows4)(buf, jb, mat + p * ld + j0, ld, x[p * incx], x[(p + 1) * incx],
                     x[(p + 2) * incx], x[(p + 3) * incx]);
      }
      for (; p < k; p++) {
        T x0 = x[p * incx];
        V v0 = VSET1(x0);
        const T *r0 = mat + p * ld + j0;
        int64_t j = 0;
        for (; j + VL <= jb; j += VL)
          VSTOREA(buf + j, VFMA(v0, VLOADU(r0 + j), VLOADA(buf + j)));
        for (; j < jb; j++)
          buf[j] += x0 * r0[j];
      }
      for (int64_t j = 0; j < jb; j++)
        y[(j0 + j) * incy] = buf[j];
    }
  } else {
    /* y[j] is a dot product with row j of mat; a strided x is first copied
     * into a contiguous chunk so every dot runs on unit strides. */
    enum { PB = 4096 / sizeof(T) };
    _Alignas(64) T xb[PB];
    for (int64_t p0 = 0; p0 < k; p0 += PB) {
      int64_t pb = F(min64)(PB, k - p0);
      const T *xp = x + p0 * incx;
      if (incx != 1) {
        for (int64_t p = 0; p < pb; p++)
          xb[p] = xp[p * incx];
        xp = xb;
      }
      int64_t j = 0;
#ifdef VHSUM_ROWS
      if (pb == k && !acc && incy == 1 && F(short_rows)(k, ld)) { /* the same bits, faster */
        F(rows_short)(k, nn, mat, xp, y, 0);
        j = nn;
      }
      for (; j + VL <= nn; j += VL) {
        _Alignas(64) T r[VL];
        F(dot_rows)(pb, mat + j * ld + p0, ld, xp, r);
        for (int q = 0; q < VL; q++) {
          T *yj = y + (j + q) * incy;
          *yj = (p0 == 0 && !acc) ? r[q] : *yj + r[q];
        }
      }
#endif
      for (; j < nn; j++) {
        T s = F(dot)(pb, mat + j * ld + p0, xp);
        T *yj = y + j * incy;
        *yj = (p0 == 0 && !acc) ? s : *yj + s;
      }
    }
  }
}

/* gemv's sum of rows (tmat == 0) under the zero rule of sg_rt_gemmz (a
 * term with a zero factor is zero, even against inf or NaN), without
 * scanning the matrix first: a row whose factor is 0 is skipped, a row
 * whose factor is inf or NaN adds only its nonzero entries, and every
 * other row is gemv's own FMA -- four rows at a time when all four factors
 * are finite and nonzero, in gemv's order. So the adjoint of x @ w reads x
 * once, not twice (the finiteness scan, then the product). */
static TGT void F(gemv_sum_z)(int64_t nn, int64_t k, const T *x, int64_t incx, const T *mat,
                              int64_t ld, T *y, int64_t incy, int acc) {
  enum { JB = 2048 / sizeof(T) };
  _Alignas(64) T buf[JB];
  for (int64_t j0 = 0; j0 < nn; j0 += JB) {
    int64_t jb = F(min64)(JB, nn - j0);
    for (int64_t j = 0; j < jb; j++)
      buf[j] = acc ? y[(j0 + j) * incy] : 0;
    int64_t p = 0;
    while (p < k) {
      if (p + 4 <= k) {
        T x0 = x[p * incx], x1 = x[(p + 1) * incx], x2 = x[(p + 2) * incx],
          x3 = x[(p + 3) * incx];
        /* finite and nonzero: x - x is 0 only for finite x */
        if (x0 != 0 && x1 != 0 && x2 != 0 && x3 != 0 && x0 - x0 == 0 && x1 - x1 == 0 &&
            x2 - x2 == 0 && x3 - x3 == 0) {
          F(add_rows4)(buf, jb, mat + p * ld + j0, ld, x0, x1, x2, x3);
          p += 4;
          continue;
        }
      }
      T x0 = x[p * incx];
      const T *r0 = mat + p * ld + j0;
      if (x0 != 0 && x0 - x0 == 0) {
        V v0 = VSET1(x0);
        int64_t j = 0;
        for (; j + VL <= jb; j += VL)
          VSTOREA(buf + j, VFMA(v0, VLOADU(r0 + j), VLOADA(buf + j)));
        for (; j < jb; j++)
          buf[j] += x0 * r0[j];
      } else if (x0 != 0) { /* inf or NaN: only the nonzero entries count */
        for (int64_t j = 0; j < jb; j++)
          if (r0[j] != 0)
            buf[j] += x0 * r0[j];
      }
      p++;
    }
    for (int64_t j = 0; j < jb; j++)
      y[(j0 + j) * incy] = buf[j];
  }
}

/* A large matrix-vector product on the thread pool. The split depends on
 * the sizes only, so the bits do not depend on the thread count:
 *   - y[j] = dot(row j, x) (tmat): slices of rows, each element computed
 *     exactly as unsplit;
 *   - y = sum of rows (not tmat), many columns: slices of whole JB-column
 *     blocks (gemv's own blocks), again exactly as unsplit;
 *   - y = sum of rows, few columns and many rows (the adjoint of x @ w):
 *     each part sums a fixed range of rows into its own partial, and the
 *     partials are added in order. */
typedef struct F(Gv) {
  int64_t nn, k, incx, ld, incy, step;
  const T *x, *mat;
  T *y, *part;
  int tmat, acc, z; /* z: the zero rule (tmat == 0 only), gemv_sum_z */
} F(Gv);

static TGT void F(gemv_any)(int z, int64_t nn, int64_t k, const T *x, int64_t incx,
                            const T *mat, int64_t ld, int tmat, T *y, int64_t incy, int acc) {
  if (z)
    F(gemv_sum_z)(nn, k, x, incx, mat, ld, y, incy, acc);
  else
    F(gemv)(nn, k, x, incx, mat, ld, tmat, y, incy, acc);
}

static void F(gv_slice)(void *ctx, int64_t begin, int64_t end) {
  const F(Gv) *g = ctx;
  const T *mat = g->tmat ? g->mat + begin * g->ld : g->mat + begin;
  F(gemv_any)(g->z, end - begin, g->k, g->x, g->incx, mat, g->ld, g->tmat,
              g->y + begin * g->incy, g->incy, g->acc);
}

static void F(gv_rows)(void *ctx, int64_t begin, int64_t end) {
  const F(Gv) *g = ctx;
  F(gemv_any)(g->z, g->nn, end - begin, g->x + begin * g->incx, g->incx,
              g->mat + begin * g->ld, g->ld, 0, g->part + begin / g->step * g->nn, 1, 0);
}

enum { F(GV_WORK) = 1 << 16, F(GV_PARTS) = 32, F(GV_NARROW) = 256, F(GV_JB) = 2048 / sizeof(T) };

static TGT void F(gemv_par)(int64_t nn, int64_t k, const T *x, int64_t incx, const T *mat,
                            int64_t ld, int tmat, T *y, int64_t incy, int acc, int z) {
  F(Gv) g = {nn, k, incx, ld, incy, 0, x, mat, y, NULL, tmat, acc, z};
  if ((double)nn * (double)k < 4.0 * F(GV_WORK)) {
    F(gemv_any)(z, nn, k, x, incx, mat, ld, tmat, y, incy, acc);
  } else if (tmat) {
    g.step = F(GV_WORK) / k + 1;
    sg_rt_parallel_for(nn, g.step, F(gv_slice), &g);
  } else if (nn >= 2 * F(GV_JB)) {
    g.step = F(GV_JB) * (F(GV_WORK) / (F(GV_JB) * k) + 1);
    sg_rt_parallel_for(nn, g.step, F(gv_slice), &g);
  } else if (nn <= F(GV_NARROW) && k >= 2 * F(GV_WORK) / nn) {
    _Alignas(64) T part[F(GV_PARTS) * F(GV_NARROW)];
    g.step = (k + F(GV_PARTS) - 1) / F(GV_PARTS);
    if (g.step < F(GV_WORK) / nn)
      g.step = F(GV_WORK) / nn;
    g.part = part;
    sg_rt_parallel_for(k, g.step, F(gv_rows), &g);
    int64_t parts = (k + g.step - 1) / g.step;
    for (int64_t j = 0; j < nn; j++) {
      T s = acc ? y[j * incy] : 0;
      for (int64_t q = 0; q < parts; q++)
        s += part[q * nn + j];
      y[j * incy] = s;
    }
  } else {
    F(gemv_any)(z, nn, k, x, incx, mat, ld, tmat, y, incy, acc);
  }
}

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

/* The packed product for rows [m0, m1) and columns [n0, n1) of op(A) op(B).
 * With ct, the operands are already swapped (the caller computes
 * C^T = op(B)^T op(A)^T) and C is stored transposed. Each element's sum
 * runs over the same KC slices in the same order, and tiles sit at the
 * same multiples of MR and NR, whatever the part (m0 and n0 are multiples
 * of MR and NR): splitting the product never changes a bit. */
static TGT void F(blocked_part)(int ta, int tb, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                                int64_t k, const T *a, int64_t lda, const T *b, int64_t ldb,
                                T *c, int64_t ldc, int acc, int ct) {
  int64_t mcb = F(block)(m1 - m0, MC, MR), kcb = F(block)(k, KC, 1),
          ncb = F(block)(n1 - n0, NC, NR);
  /* One buffer for both packed blocks; the A part is rounded to whole cache
   * lines so that the B part stays 64-byte aligned for VLOADA. Small
   * products pack on the stack; larger ones in the thread's cached packing
   * buffer (workspace.c), so repeated products allocate nothing. */
  size_t abytes = ((size_t)(mcb * kcb) * sizeof(T) + 63) & ~(size_t)63;
  size_t bbytes = (size_t)(ncb * kcb) * sizeof(T);
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
      F(pack_a)(ta, a, lda, ic, pc, mc, kc, pa);
      for (int64_t jc = n0; jc < n1; jc += ncb) {
        int64_t nc = F(min64)(ncb, n1 - jc);
        F(pack_b)(tb, b, ldb, pc, jc, kc, nc, pb);
        F(macro)(mc, nc, kc, pa, pb, c + (ct ? jc * ldc + ic : ic * ldc + jc),
                 ldc, beta, ct);
      }
    }
  }
}

/* A product split into parts for the thread pool: along m (in units of
 * MR rows) or n (NR columns), whichever has more register tiles. */
typedef struct F(Split) {
  int ta, tb, acc, ct, along_m;
  int64_t m, n, k, lda, ldb, ldc, units, parts;
  const T *a, *b;
  T *c;
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
                    s->ldc, s->acc, s->ct);
  }
}

/* The packed product, split into parts of about PART_WORK multiply-adds
 * each (at most MAX_PARTS, and at most one per thread) that the pool runs
 * in parallel. Every part packs the whole of the other operand again (B
 * when split along m), so parts beyond the threads that run them only cost:
 * 32 parts of 256x1000x512 on one thread ran at 130 GFLOP/s, one part at
 * 200. The count may follow the thread count because splitting never
 * changes a bit (blocked_part above). */
enum { F(PART_WORK) = 1 << 21, F(MAX_PARTS) = 32 };
static TGT void F(blocked)(int ta, int tb, int64_t m, int64_t n, int64_t k,
                           const T *a, int64_t lda, const T *b, int64_t ldb,
                           T *c, int64_t ldc, int acc, int ct) {
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
    F(blocked_part)(ta, tb, 0, m, 0, n, k, a, lda, b, ldb, c, ldc, acc, ct);
    return;
  }
  F(Split) s = {ta, tb, acc, ct, along_m, m, n, k, lda, ldb, ldc, units, parts, a, b, c};
  sg_rt_parallel_for(parts, 1, F(run_parts), &s);
}

static TGT void F(gemm)(int ta, int tb, int64_t m, int64_t n, int64_t k,
                        const T *a, int64_t lda, const T *b, int64_t ldb,
                        T *c, int64_t ldc, int acc) {
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
  if (9 * tiles > 10 * tiles_t)
    F(blocked)(!tb, !ta, n, m, k, b, ldb, a, lda, c, ldc, acc, 1);
  else
    F(blocked)(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, acc, 0);
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

/* The two halves of a row block of a fused matrix-vector pair
 * (codegen/cg_gemvpair.c). gemv_rows: the forward product of rows
 * [0, rows) of mat with v, each element exactly as gemv computes it, while
 * a later block's rows are prefetched: between two blocks the caller
 * computes on what is in cache, and memory would otherwise idle. Alone
 * (shared 0), it prefetches the next block. When gemv_acc follows on the
 * same rows (shared 1), each of the two prefetches half of the block after
 * next, spread over its own steps: memory is asked for rows through more
 * of the block's time, and early enough. With the 4 KB blocks of a large
 * M (cg_gemvpair.c) this was the fastest variant in every set measured
 * (bench W2 from cold memory, all interleaved in one process: 2.97-3.02
 * against 3.48-3.53 ns a row before); with 8 KB blocks alone it was
 * faster in some stretches and slower in others. Either way one line
 * KICK_AHEAD_BYTES further on is touched first, for the hardware's
 * prefetcher (gemm.c). */
static TGT void F(gemv_rows)(int64_t rows, int64_t d, const T *mat, int64_t ld, const T *v,
                             T *out, int shared) {
  enum { STEP = 16 };
  if (d <= 0) { /* a sum of nothing, as gemm gives it */
    memset(out, 0, (size_t)(rows > 0 ? rows : 0) * sizeof(T));
    return;
  }
  const int64_t row_bytes = ld * (int64_t)sizeof(T);
#ifdef VHSUM_ROWS
  /* Rows of exactly one vector, back to back (x @ w with 16 columns), with
   * gemv_acc to follow: the loop below with its tests hoisted, the rows and
   * the lines to prefetch at constant offsets. 10-15% off bench W2 in cache,
   * the same bits; from memory the same time. (Alone, the forward product
   * keeps the loop below: this one's sixteen prefetches at the start of
   * each step made it slower from memory.) */
  if (shared && d == VL && ld == VL && STEP == VL) {
    const char *later = (const char *)(mat + 2 * rows * VL);
    const V vv = VLOADU(v);
    int64_t i = 0;
    __builtin_prefetch((const char *)mat + KICK_AHEAD_BYTES);
    for (; i + STEP <= rows; i += STEP) {
      F(prefetch_lines)(later + i * (int64_t)(VL * sizeof(T)) / 2, STEP * VL * sizeof(T) / 128);
      F(dot_rows1)(mat + i * VL, VL, vv, out + i);
    }
    if (i < rows)
      F(gemv)(rows - i, d, v, 1, mat + i * VL, VL, 1, out + i, 1, 0);
    return;
  }
#endif
  __builtin_prefetch((const char *)mat + KICK_AHEAD_BYTES);
#ifdef VHSUM_ROWS
  if (F(short_rows)(d, ld)) {
    F(rows_short)(d, rows, mat, v, out, shared ? 2 : 1);
    return;
  }
#endif
  for (int64_t i = 0; i < rows; i += STEP) {
    int64_t n = F(min64)(STEP, rows - i);
    if (shared)
      F(prefetch_block)(mat, rows, ld, 2, i * row_bytes / 2, (i + n) * row_bytes / 2);
    else
      F(prefetch_block)(mat, rows, ld, 1, i * row_bytes, (i + n) * row_bytes);
#ifdef VHSUM_ROWS
    /* gemv's own step for a whole step of rows with d within its one chunk
     * of x, without gemv's set-up: that was most of a 16-column row's time
     * (bench W2) */
    if (n == VL && STEP == VL && d == VL) {
      F(dot_rows1)(mat + i * ld, ld, VLOADU(v), out + i);
      continue;
    }
    if (n == VL && STEP == VL && d <= 4096 / (int64_t)sizeof(T)) {
      F(dot_rows)(d, mat + i * ld, ld, v, out + i);
      continue;
    }
#endif
    F(gemv)(n, d, v, 1, mat + i * ld, ld, 1, out + i, 1, 0);
  }
}

/* acc[0..d) += sum of the rows weighted by g (four accumulators, row p
 * into p % 4, added at the end: four independent chains instead of one),
 * under the zero rule when z: a row whose g is 0 adds nothing, one whose g
 * is inf or NaN only its nonzero entries. It prefetches the second half of
 * the block after next (gemv_rows, shared). */
static inline TGT int F(finite_nz)(T x) { return x != 0 && x - x == 0; }

#ifdef VHSUM_ROWS
/* gemv_acc of rows shorter than a vector, back to back (short_rows): VL
 * rows at a time, as the d vectors they fill, each times its rows'
 * factors spread over it (VSPREAD), into one accumulator per vector; so
 * element e = k VL + l of the accumulators (lane l of the k-th) sums
 * column e % d of every VL-th row from row e / d. At the end each column
 * adds its elements in the order of e. Stops before VL
 * rows of which a factor is 0, inf or NaN under the zero rule, and before
 * a tail of fewer than VL rows; returns how many rows it added. */
static inline __attribute__((always_inline)) TGT int64_t F(acc_len)(int64_t rows, int d, const T *g,
                                                                    const T *mat, T *acc, int z) {
  V s[VL];
  for (int k = 0; k < d; k++)
    s[k] = VZERO();
  const int64_t half = rows * d * (int64_t)sizeof(T) / 2;
  int64_t p = 0;
  for (; p + VL <= rows; p += VL) {
    V gv = VLOADU(g + p);
    if (z && !VFINITE_NZ(gv))
      break;
    F(prefetch_block)(mat, rows, d, 2, half + p * d * (int64_t)sizeof(T) / 2,
                      half + (p + VL) * d * (int64_t)sizeof(T) / 2);
    const T *r = mat + p * d;
    for (int k = 0; k < d; k++)
      s[k] = VFMA(VSPREAD(gv, d, k), VLOADU(r + k * VL), s[k]);
  }
  _Alignas(64) T b[VL * VL];
  for (int k = 0; k < d; k++)
    VSTOREA(b + k * VL, s[k]);
  for (int64_t j = 0; j < d; j++) {
    T t = 0;
    for (int64_t e = j; e < VL * d; e += d)
      t += b[e];
    acc[j] += t;
  }
  return p;
}

static TGT int64_t F(acc_short)(int64_t rows, int64_t d, const T *g, const T *mat, T *acc, int z) {
#define ACC_LEN(k) return F(acc_len)(rows, k, g, mat, acc, z)
  switch (d) { SHORT_CASES(ACC_LEN); }
#undef ACC_LEN
}
#undef SHORT_CASES
#endif

/* Row p of gemv_acc's general loop (below) on its columns [0, CV VL) at r,
 * into the accumulators s[p % 4], held in registers here: a zero-rule row
 * (g 0, inf or NaN) goes through the general loop's own scalar code. */
static inline __attribute__((always_inline)) TGT void F(acc_row)(int cv, V *s, T gp, const T *r, int z) {
  if (!z || F(finite_nz)(gp)) {
    V gv = VSET1(gp);
    for (int c = 0; c < cv; c++)
      s[c] = VFMA(gv, VLOADU(r + c * VL), s[c]);
  } else if (gp != 0) {
    _Alignas(64) T b[4 * VL];
    for (int c = 0; c < cv; c++)
      VSTOREA(b + c * VL, s[c]);
    for (int j = 0; j < cv * VL; j++)
      if (r[j] != 0)
        b[j] += gp * r[j];
    for (int c = 0; c < cv; c++)
      s[c] = VLOADA(b + c * VL);
  }
}

/* The general loop for columns [0, CV VL) of the rows at mat (CV <= 4
 * vectors) with its four accumulators per column in registers instead of
 * memory: the same operations in the same order (its vector part's: the
 * columns past the last whole vector stay with it), so the same bits, at
 * one load per multiply-add instead of two and a store (bench
 * logistic regression with 64 columns: gemv_acc was half the gradient). */
static inline __attribute__((always_inline)) TGT void F(acc_cols)(int cv, int64_t rows, const T *g,
                                                                  const T *mat, int64_t ld, T *acc,
                                                                  int z, int prefetch) {
  const int64_t row_bytes = ld * (int64_t)sizeof(T), half = rows * row_bytes / 2;
  V s[4][4];
  for (int q = 0; q < 4; q++)
    for (int c = 0; c < cv; c++)
      s[q][c] = VZERO();
  for (int64_t p = 0; p < rows; p++) {
    if (prefetch)
      F(prefetch_block)(mat, rows, ld, 2, half + p * row_bytes / 2, half + (p + 1) * row_bytes / 2);
    switch (p & 3) { /* constant indices keep s in registers */
    case 0: F(acc_row)(cv, s[0], g[p], mat + p * ld, z); break;
    case 1: F(acc_row)(cv, s[1], g[p], mat + p * ld, z); break;
    case 2: F(acc_row)(cv, s[2], g[p], mat + p * ld, z); break;
    default: F(acc_row)(cv, s[3], g[p], mat + p * ld, z); break;
    }
  }
  for (int c = 0; c < cv; c++)
    VSTOREU(acc + c * VL, VLOADU(acc + c * VL) + ((s[0][c] + s[1][c]) + (s[2][c] + s[3][c])));
}

static TGT void F(acc_wide)(int64_t rows, int64_t d, const T *g, const T *mat, int64_t ld, T *acc,
                            int z) {
  for (int64_t j0 = 0; j0 < d; j0 += 4 * VL) {
    int prefetch = j0 == 0;
    switch ((d - j0) / VL) {
    case 1: F(acc_cols)(1, rows, g, mat + j0, ld, acc + j0, z, prefetch); break;
    case 2: F(acc_cols)(2, rows, g, mat + j0, ld, acc + j0, z, prefetch); break;
    case 3: F(acc_cols)(3, rows, g, mat + j0, ld, acc + j0, z, prefetch); break;
    default: F(acc_cols)(4, rows, g, mat + j0, ld, acc + j0, z, prefetch); break;
    }
  }
}

static TGT void F(gemv_acc)(int64_t rows, int64_t d, const T *g, const T *mat, int64_t ld,
                            T *acc, int z) {
#ifdef VHSUM_ROWS
  if (F(short_rows)(d, ld)) { /* the general loop below takes what is left */
    int64_t done = F(acc_short)(rows, d, g, mat, acc, z);
    mat += done * ld, g += done, rows -= done;
  }
#endif
  const int64_t row_bytes = ld * (int64_t)sizeof(T), half = rows * row_bytes / 2;
  if (d == VL) { /* one vector per row: the four accumulators in registers */
    V s[4] = {VZERO(), VZERO(), VZERO(), VZERO()};
    int64_t p = 0;
    /* 16 rows a step, their factors checked at once without a branch per
     * factor (the checks were half the time of W2's 16-column rows) */
    for (; p + 16 <= rows; p += 16) {
      if (z) {
        int ok = 1;
        for (int q = 0; q < 16; q += VL)
          ok &= VFINITE_NZ(VLOADU(g + p + q));
        if (!ok)
          break;
      }
      const T *r = mat + p * ld;
      if (ld == VL) { /* rows back to back: constant offsets (gemv_rows) */
        F(prefetch_lines)((const char *)(mat + 2 * rows * VL) + half + p * (int64_t)(VL * sizeof(T)) / 2,
                          16 * VL * sizeof(T) / 128);
#pragma GCC unroll 16
        for (int q = 0; q < 16; q++)
          s[q & 3] = VFMA(VSET1(g[p + q]), VLOADU(r + q * VL), s[q & 3]);
        continue;
      }
      F(prefetch_block)(mat, rows, ld, 2, half + p * row_bytes / 2, half + (p + 16) * row_bytes / 2);
#pragma GCC unroll 16
      for (int q = 0; q < 16; q++)
        s[q & 3] = VFMA(VSET1(g[p + q]), VLOADU(r + q * ld), s[q & 3]);
    }
    for (; p + 4 <= rows; p += 4) {
      T g0 = g[p], g1 = g[p + 1], g2 = g[p + 2], g3 = g[p + 3];
      if (z && !(F(finite_nz)(g0) && F(finite_nz)(g1) && F(finite_nz)(g2) && F(finite_nz)(g3)))
        break;
      const T *r = mat + p * ld;
      s[0] = VFMA(VSET1(g0), VLOADU(r), s[0]);
      s[1] = VFMA(VSET1(g1), VLOADU(r + ld), s[1]);
      s[2] = VFMA(VSET1(g2), VLOADU(r + 2 * ld), s[2]);
      s[3] = VFMA(VSET1(g3), VLOADU(r + 3 * ld), s[3]);
    }
    if (p == rows) {
      _Alignas(64) T b[VL];
      VSTOREA(b, (s[0] + s[1]) + (s[2] + s[3]));
      for (int j = 0; j < VL; j++)
        acc[j] += b[j];
      return;
    }
    /* a zero, inf or NaN factor (or a tail): the general loop takes over
     * from row p, its accumulators starting from these */
    _Alignas(64) T buf[4][VL];
    for (int q = 0; q < 4; q++)
      VSTOREA(buf[q], s[q]);
    for (; p < rows; p++) {
      T gp = g[p];
      const T *r = mat + p * ld;
      T *b = buf[p & 3];
      if (!z || F(finite_nz)(gp))
        VSTOREA(b, VFMA(VSET1(gp), VLOADU(r), VLOADA(b)));
      else if (gp != 0)
        for (int j = 0; j < VL; j++)
          if (r[j] != 0)
            b[j] += gp * r[j];
    }
    for (int j = 0; j < VL; j++)
      acc[j] += (buf[0][j] + buf[1][j]) + (buf[2][j] + buf[3][j]);
    return;
  }
  int prefetched = 0;
  if (d > VL) { /* the vectors' columns in registers, the rest below */
    int64_t wide = d / VL * VL;
    F(acc_wide)(rows, wide, g, mat, ld, acc, z);
    if (wide == d)
      return;
    mat += wide, acc += wide, d -= wide, prefetched = 1;
  }
  enum { JB = 512 / sizeof(T) };
  _Alignas(64) T buf[4][JB];
  for (int64_t j0 = 0; j0 < d; j0 += JB) {
    int64_t jb = F(min64)(JB, d - j0);
    for (int q = 0; q < 4; q++)
      memset(buf[q], 0, (size_t)jb * sizeof(T));
    for (int64_t p = 0; p < rows; p++) {
      T gp = g[p];
      const T *r = mat + p * ld + j0;
      T *b = buf[p & 3];
      if (j0 == 0 && !prefetched)
        F(prefetch_block)(mat, rows, ld, 2, half + p * row_bytes / 2, half + (p + 1) * row_bytes / 2);
      if (!z || F(finite_nz)(gp)) {
        V v0 = VSET1(gp);
        int64_t j = 0;
        for (; j + VL <= jb; j += VL)
          VSTOREA(b + j, VFMA(v0, VLOADU(r + j), VLOADA(b + j)));
        for (; j < jb; j++)
          b[j] += gp * r[j];
      } else if (gp != 0) {
        for (int64_t j = 0; j < jb; j++)
          if (r[j] != 0)
            b[j] += gp * r[j];
      }
    }
    for (int64_t j = 0; j < jb; j++)
      acc[j0 + j] += (buf[0][j] + buf[1][j]) + (buf[2][j] + buf[3][j]);
  }
}

#undef NR
#undef G_CAT2
#undef G_CAT
#undef F
