/* pair_tmpl.h: one instantiation of the fused matrix-vector pair's kernels
 * (codegen/cg_gemvpair.c: sg_rt_gemv_rows_*, sg_rt_gemv_acc_*), included by
 * gemm_tmpl.h after gemv_tmpl.h, whose dot products it reuses. Not a public
 * header. */

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
  __builtin_prefetch((const char *)mat + KICK_AHEAD_BYTES);
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
    for (; i + STEP <= rows; i += STEP) {
      F(prefetch_lines)(later + i * (int64_t)(VL * sizeof(T)) / 2, STEP * VL * sizeof(T) / 128);
      F(dot_rows1)(mat + i * VL, VL, vv, out + i);
    }
    if (i < rows)
      F(gemv)(rows - i, d, v, 1, mat + i * VL, VL, 1, out + i, 1, 0);
    return;
  }
#endif
#ifdef VCOLS
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
    if (n == STEP && STEP % VL == 0 && d == VL) {
      for (int h = 0; h < STEP; h += VL)
        F(dot_rows1)(mat + (i + h) * ld, ld, VLOADU(v), out + i + h);
      continue;
    }
    if (n == STEP && STEP % VL == 0 && d <= 4096 / (int64_t)sizeof(T)) {
      for (int h = 0; h < STEP; h += VL)
        F(dot_rows)(d, mat + (i + h) * ld, ld, v, out + i + h);
      continue;
    }
#endif
    F(gemv)(n, d, v, 1, mat + i * ld, ld, 1, out + i, 1, 0);
  }
}

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

/* acc[0..d) += sum of the rows weighted by g (four accumulators, row p
 * into p % 4, added at the end: four independent chains instead of one),
 * under the zero rule when z: a row whose g is 0 adds nothing, one whose g
 * is inf or NaN only its nonzero entries. It prefetches the second half of
 * the block after next (gemv_rows, shared). */
static TGT void F(gemv_acc)(int64_t rows, int64_t d, const T *g, const T *mat, int64_t ld,
                            T *acc, int z) {
#ifdef VCOLS
  if (F(short_rows)(d, ld)) { /* the general loop below takes what is left */
    int64_t done = F(acc_short)(rows, d, g, mat, acc, z, 1);
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
      F(add_row)(b, VL, r, gp, z);
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
      F(add_row)(b, jb, r, gp, z);
    }
    for (int64_t j = 0; j < jb; j++)
      acc[j0 + j] += (buf[0][j] + buf[1][j]) + (buf[2][j] + buf[3][j]);
  }
}
