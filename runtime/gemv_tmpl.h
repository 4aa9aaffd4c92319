/* gemv_tmpl.h: one instantiation of the matrix-vector products, included by
 * gemm_tmpl.h (which defines F, T, V, VL and the rest; see there) between
 * the GEMM's kernels and its driver, which hands m == 1 and n == 1 to
 * gemv_par. Not a public header.
 *
 * dot and dot_rows: a dot product, and VL of them at once with the same
 * bits (the horizontal sums in one transposing pass; rows shorter than a
 * vector column by column, AVX-512). gemv: a vector times a matrix
 * without packing; gemv_sum_z: its sum of rows under the zero rule;
 * gemv_par: either on the thread pool, split by size only. */

/* A factor that the zero rule lets multiply a whole row (x - x is 0 only
 * for finite x). */
static inline TGT int F(finite_nz)(T x) { return x != 0 && x - x == 0; }

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

#ifdef VCOLS /* (AVX-512) */
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
 * gemv_rows does when it is given `prefetch` 1 or 2, and with 3 (gemv,
 * rows in one long run) each line STREAM_AHEAD_BYTES ahead when the rows
 * are read with masked loads (VCOLS's transpose), which the hardware's
 * prefetchers follow badly: x @ w with 10 columns from cold memory 9.4 ->
 * 2.7 ms (with 4, read whole, 3.5 -> 4.1: not there). */
static inline __attribute__((always_inline)) TGT void F(rows_len)(int len, int64_t rows, const T *x,
                                                                  const T *y, T *out, int prefetch) {
  const int64_t row_bytes = len * (int64_t)sizeof(T);
  int64_t i = 0;
  for (; i + VL <= rows; i += VL) {
    if (prefetch == 1)
      F(prefetch_block)(x, rows, len, 1, i * row_bytes, (i + VL) * row_bytes);
    else if (prefetch == 2)
      F(prefetch_block)(x, rows, len, 2, i * row_bytes / 2, (i + VL) * row_bytes / 2);
    else if (prefetch == 3 && (len & (len - 1))) /* masked loads: the hardware lags */
      for (int64_t b = i * row_bytes; b < (i + VL) * row_bytes; b += 64)
        __builtin_prefetch((const char *)x + b + STREAM_AHEAD_BYTES);
    F(dot_rows_len)(len, x + i * len, y, out + i);
  }
  for (; i < rows; i++)
    out[i] = F(dot)(len, x + i * len, y);
}

/* (one instance per length, so that its loops unroll into registers) */
#if VL == 16
#define SHORT_CASES(CALL)                                                                          \
  case 1: CALL(1); case 2: CALL(2); case 3: CALL(3); case 4: CALL(4); case 5: CALL(5);               \
  case 6: CALL(6); case 7: CALL(7); case 8: CALL(8); case 9: CALL(9); case 10: CALL(10);             \
  case 11: CALL(11); case 12: CALL(12); case 13: CALL(13); case 14: CALL(14); default: CALL(15)
#else /* VL == 8 */
#define SHORT_CASES(CALL)                                                                          \
  case 1: CALL(1); case 2: CALL(2); case 3: CALL(3); case 4: CALL(4); case 5: CALL(5);               \
  case 6: CALL(6); default: CALL(7)
#endif
static TGT void F(rows_short)(int64_t len, int64_t rows, const T *x, const T *y, T *out, int prefetch) {
#define ROWS_LEN(k) F(rows_len)(k, rows, x, y, out, prefetch); return
  switch (len) { SHORT_CASES(ROWS_LEN); }
#undef ROWS_LEN
}

/* gemv_acc of rows shorter than a vector, back to back (short_rows): VL
 * rows at a time, as the d vectors they fill, each times its rows'
 * factors spread over it (VSPREAD), into one accumulator per vector; so
 * element e = k VL + l of the accumulators (lane l of the k-th) sums
 * column e % d of every VL-th row from row e / d. At the end each column
 * adds its elements in the order of e. Stops before VL
 * rows of which a factor is 0, inf or NaN under the zero rule, and before
 * a tail of fewer than VL rows; returns how many rows it added. With
 * `prefetch`, as gemv_rows does in a pair (the second half of the block
 * after next). */
static inline __attribute__((always_inline)) TGT int64_t F(acc_len)(int64_t rows, int d, const T *g,
                                                                    const T *mat, T *acc, int z,
                                                                    int prefetch) {
  V s[VL];
  for (int k = 0; k < d; k++)
    s[k] = VZERO();
  const int64_t half = rows * d * (int64_t)sizeof(T) / 2;
  int64_t p = 0;
  for (; p + VL <= rows; p += VL) {
    V gv = VLOADU(g + p);
    if (z && !VFINITE_NZ(gv))
      break;
    if (prefetch)
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

static TGT int64_t F(acc_short)(int64_t rows, int64_t d, const T *g, const T *mat, T *acc, int z,
                                int prefetch) {
#define ACC_LEN(k) return F(acc_len)(rows, k, g, mat, acc, z, prefetch)
  switch (d) { SHORT_CASES(ACC_LEN); }
#undef ACC_LEN
}
#undef SHORT_CASES
#endif

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
#ifdef VCOLS_LD
  if (p < len) { /* the tail's columns, added in dot's order */
    V col[VL], r = VLOADU(out);
    VCOLS_LD(x + p, ld, (int)(len - p), col);
    for (int c = 0; p < len; p++, c++) {
      V t = col[c] * VSET1(y[p]);
      r = r + t;
    }
    VSTOREU(out, r);
  }
#else
  if (p < len)
    for (int q = 0; q < VL; q++) {
      const T *xq = x + q * ld;
      T r = out[q];
      for (int64_t pp = p; pp < len; pp++)
        r += xq[pp] * y[pp];
      out[q] = r;
    }
#endif
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

/* buf[0..jb) += x0 r0 (buf aligned): the one-row step of gemv, gemv_sum_z
 * and the pair's adjoint. Under the zero rule (z) a factor of 0 adds
 * nothing and an inf or NaN one only r0's nonzero entries. */
static inline TGT void F(add_row)(T *buf, int64_t jb, const T *r0, T x0, int z) {
  if (z && !F(finite_nz)(x0)) {
    if (x0 != 0)
      for (int64_t j = 0; j < jb; j++)
        if (r0[j] != 0)
          buf[j] += x0 * r0[j];
    return;
  }
  V v0 = VSET1(x0);
  int64_t j = 0;
  for (; j + VL <= jb; j += VL)
    VSTOREA(buf + j, VFMA(v0, VLOADU(r0 + j), VLOADA(buf + j)));
  for (; j < jb; j++)
    buf[j] += x0 * r0[j];
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
      for (; p < k; p++)
        F(add_row)(buf, jb, mat + p * ld + j0, x[p * incx], 0);
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
#ifdef VCOLS
      if (pb == k && !acc && incy == 1 && F(short_rows)(k, ld)) { /* the same bits, faster */
        F(rows_short)(k, nn, mat, xp, y, 3);
        j = nn;
      }
#endif
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
#ifdef VCOLS
  if (incx == 1 && F(short_rows)(nn, ld)) { /* x^T g with x of few columns: acc_short */
    _Alignas(64) T b[VL];
    for (int64_t j = 0; j < nn; j++)
      b[j] = acc ? y[j * incy] : 0;
    for (int64_t p = 0; p < k;) {
      p += F(acc_short)(k - p, nn, x + p, mat + p * ld, b, 1, 0);
      /* the step it stopped before (a factor 0, inf or NaN), or the tail */
      for (int64_t stop = F(min64)(k, p + VL); p < stop; p++) {
        T x0 = x[p];
        const T *r0 = mat + p * ld;
        for (int64_t j = 0; j < nn; j++)
          if (F(finite_nz)(x0) || (x0 != 0 && r0[j] != 0))
            b[j] += x0 * r0[j];
      }
    }
    for (int64_t j = 0; j < nn; j++)
      y[j * incy] = b[j];
    return;
  }
#endif
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
        if (F(finite_nz)(x0) && F(finite_nz)(x1) && F(finite_nz)(x2) && F(finite_nz)(x3)) {
          F(add_rows4)(buf, jb, mat + p * ld + j0, ld, x0, x1, x2, x3);
          p += 4;
          continue;
        }
      }
      F(add_row)(buf, jb, mat + p * ld + j0, x[p * incx], 1);
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
