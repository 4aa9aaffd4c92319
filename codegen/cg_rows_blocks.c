/* Row groups by blocks of rows (cg_rows.h): a group formed by cg_rows.c
 * emitted as one loop over blocks of ROWS_BLOCK rows, each block's passes
 * a loop over the columns around a loop over the block's rows (lanes over
 * rows), values read by a later pass in a block scratch; the last pass a
 * block behind when R->lag; inline or on the pool in chunks of whole
 * blocks.
 *
 * Requires: cg_rows.c has formed the group (members, passes, kinds).
 * Keeps: each sum takes its blocks in order and each chunk's partials are
 * added in chunk order: the same bits on any number of threads. */
#include <stdlib.h>

#include "cg_rows.h"

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

LLVMValueRef cg_rows_load(Body *B, const Inst *v, Idx *x) {
  Cg *g = B->g;
  LLVMValueRef i, j;
  if (x->rank == 2) {
    i = x->i[0];
    j = x->i[1];
  } else { /* read through a flat index */
    LLVMValueRef k = cg_dim(B, v->type.dim[1]);
    i = LLVMBuildSDiv(g->b, x->lin, k, "");
    j = LLVMBuildSRem(g->b, x->lin, k, "");
  }
  LLVMValueRef at = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, j, i64c(g, ROWS_BLOCK), ""),
                                    LLVMBuildNSWSub(g->b, i, B->rows_i0, ""), "");
  return cg_load(B, v->type.dtype, cg_slot(B, v)->rowbuf, at);
}

/* A pass over a block's rows, as emit_pass runs it: the block's first
 * row, and whether it is the block before the current one (the last pass
 * running a block behind: its scratch is the other half). */
typedef struct PassAt {
  int p;
  LLVMValueRef i0;
  bool behind;
} PassAt;

/* Point the members' block scratch at the current block's half (or the
 * previous block's): with the last pass a block behind, each scratch holds
 * two blocks, the block's parity choosing the half. */
static void use_half(Body *B, Rows *R, bool previous) {
  for (int m = 0; m < R->nmem; m++)
    if (R->half[m][0])
      cg_slot(B, R->mem[m])->rowbuf = R->half[m][previous];
}

/* The loop over the columns and the block's rows of one pass, or of two
 * (the last a block behind) in one loop body. */
static void emit_pass(Body *B, Rows *R, const PassAt *at, int nat, LLVMValueRef cnt, LLVMValueRef k) {
  Cg *g = B->g;
  void *lj, *li;
  LLVMValueRef j = cg_loop_begin(B, k, &lj);
  for (int a = 0; a < nat; a++)
    for (int m = 0; m < R->nmem; m++) {
      Inst *v = R->mem[m];
      Slot *s = cg_slot(B, v);
      if (s->rpass == at[a].p && s->rkind == RK_COLRED)
        LLVMBuildStore(g->b, cg_reduce_init(v->op, cg_elem_type(g, v->type.dtype)), R->acc[m]);
    }
  LLVMValueRef il = cg_loop_begin(B, cnt, &li);
  LLVMValueRef cur_i0 = B->rows_i0;
  for (int a = 0; a < nat; a++) {
    int p = at[a].p;
    if (at[a].behind) {
      use_half(B, R, true);
      B->rows_i0 = at[a].i0;
    }
    LLVMValueRef i = LLVMBuildNSWAdd(g->b, at[a].i0, il, "row");
    for (int m = 0; m < R->nmem; m++) {
      Inst *v = R->mem[m];
      Slot *s = cg_slot(B, v);
      if (s->rpass != p || per_row(s->rkind))
        continue;
      cg_debug_at(g, v);
      Idx x = {2, {i, j}, NULL};
      if (s->rkind == RK_ELEM) {
        LLVMValueRef e = cg_eval_def(B, v, &x);
        if (s->rowbuf_ok) {
          LLVMValueRef at_ = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, j, i64c(g, ROWS_BLOCK), ""), il, "");
          cg_store(B, v->type.dtype, s->rowbuf, at_, e);
        }
        if (s->rows_escapes)
          cg_store(B, v->type.dtype, s->buf, cg_lin(B, &x, &v->type), e);
        s->reg = e;
        continue;
      }
      LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
      LLVMValueRef e = cg_eval(B, v->args[0], &x);
      LLVMValueRef acc = R->acc[m];
      if (s->rkind == RK_ROWRED)
        acc = LLVMBuildInBoundsGEP2(g->b, t, acc, &il, 1, "");
      LLVMBuildStore(g->b, cg_combine(g, v->op, LLVMBuildLoad2(g->b, t, acc, ""), e), acc);
    }
    /* (a pass behind reads the current pass's values from its scratch) */
    for (int m = 0; m < R->nmem; m++)
      cg_slot(B, R->mem[m])->reg = NULL;
    if (at[a].behind) {
      use_half(B, R, false);
      B->rows_i0 = cur_i0;
    }
  }
  cg_loop_end(B, li);
  for (int a = 0; a < nat; a++)
    for (int m = 0; m < R->nmem; m++) {
      Inst *v = R->mem[m];
      Slot *s = cg_slot(B, v);
      if (s->rpass != at[a].p || s->rkind != RK_COLRED)
        continue;
      LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
      LLVMValueRef cur = cg_load(B, v->type.dtype, R->col[m], j);
      cg_store(B, v->type.dtype, R->col[m], j, cg_combine(g, v->op, cur, LLVMBuildLoad2(g->b, t, R->acc[m], "")));
    }
  cg_loop_end(B, lj);
}

/* The loop over the block's rows of one pass's per-row members. */
static void emit_rows_loop(Body *B, Rows *R, int p, LLVMValueRef i0, LLVMValueRef cnt) {
  Cg *g = B->g;
  bool any = false;
  for (int m = 0; m < R->nmem; m++) {
    Slot *s = cg_slot(B, R->mem[m]);
    any |= s->rpass == p && per_row(s->rkind);
  }
  if (!any)
    return;
  void *li;
  LLVMValueRef il = cg_loop_begin(B, cnt, &li);
  LLVMValueRef i = LLVMBuildNSWAdd(g->b, i0, il, "row");
  for (int m = 0; m < R->nmem; m++) {
    Inst *v = R->mem[m];
    Slot *s = cg_slot(B, v);
    if (s->rpass != p || !per_row(s->rkind))
      continue;
    cg_debug_at(g, v);
    Idx x = {1, {i}, i};
    if (s->rkind == RK_ROWELEM) {
      s->reg = cg_eval_def(B, v, &x);
      cg_store(B, v->type.dtype, s->buf, i, s->reg);
      continue;
    }
    LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
    LLVMValueRef e = cg_eval(B, v->args[0], &x);
    LLVMBuildStore(g->b, cg_combine(g, v->op, LLVMBuildLoad2(g->b, t, R->acc[m], ""), e), R->acc[m]);
  }
  for (int m = 0; m < R->nmem; m++)
    cg_slot(B, R->mem[m])->reg = NULL;
  cg_loop_end(B, li);
}

/* The accumulators of pass p's row reductions, one per row of the block:
 * set to the reduction's start before the pass, or (done) stored to the
 * reductions' memory after it. */
static void row_accumulators(Body *B, Rows *R, int p, LLVMValueRef i0, LLVMValueRef cnt,
                             bool done) {
  Cg *g = B->g;
  for (int m = 0; m < R->nmem; m++) {
    Inst *v = R->mem[m];
    Slot *s = cg_slot(B, v);
    if (s->rpass != p || s->rkind != RK_ROWRED)
      continue;
    LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
    void *li;
    LLVMValueRef il = cg_loop_begin(B, cnt, &li);
    LLVMValueRef at = LLVMBuildInBoundsGEP2(g->b, t, R->acc[m], &il, 1, "");
    if (done)
      cg_store(B, v->type.dtype, s->buf, LLVMBuildNSWAdd(g->b, i0, il, ""),
               LLVMBuildLoad2(g->b, t, at, ""));
    else
      LLVMBuildStore(g->b, cg_reduce_init(v->op, t), at);
    cg_loop_end(B, li);
  }
}

/* Runs then_ when cond holds; returns where both ways meet. */
static LLVMBasicBlockRef when(Body *B, LLVMValueRef cond, const char *name) {
  Cg *g = B->g;
  LLVMBasicBlockRef then_ = LLVMAppendBasicBlockInContext(g->ctx, B->fn, name);
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "");
  LLVMBuildCondBr(g->b, cond, then_, join);
  LLVMPositionBuilderAtEnd(g->b, then_);
  return join;
}
static void end_when(Body *B, LLVMBasicBlockRef join) {
  LLVMBuildBr(B->g->b, join);
  LLVMPositionBuilderAtEnd(B->g->b, join);
}

/* Pass p of the block at i0, whole: its row accumulators started, its
 * loop, the accumulators stored, its per-row members. */
static void emit_whole_pass(Body *B, Rows *R, int p, LLVMValueRef i0, LLVMValueRef cnt, LLVMValueRef k) {
  row_accumulators(B, R, p, i0, cnt, false);
  emit_pass(B, R, &(PassAt){p, i0, false}, 1, cnt, k);
  row_accumulators(B, R, p, i0, cnt, true);
  emit_rows_loop(B, R, p, i0, cnt);
}

/* The rows of the block at i0: min(ROWS_BLOCK, hi - i0). */
static LLVMValueRef block_rows(Body *B, LLVMValueRef i0, LLVMValueRef hi, const char *name) {
  Cg *g = B->g;
  LLVMValueRef left = LLVMBuildNSWSub(g->b, hi, i0, "");
  LLVMValueRef full = LLVMBuildICmp(g->b, LLVMIntSGT, left, i64c(g, ROWS_BLOCK), "");
  return LLVMBuildSelect(g->b, full, i64c(g, ROWS_BLOCK), left, name);
}

/* The group's loop over blocks of rows [lo, hi). With R->lag the last
 * pass L runs a block behind, in the same loop body as pass L - 1 of the
 * block after (when that block is whole), and once more after the last
 * block:
 *
 *   for b = 0 .. nblocks:                 (one past the last block)
 *     passes 0 .. L - 2 of block b        (b < nblocks)
 *     if b > 0 and block b is whole:
 *       pass L - 1 of b and pass L of b - 1, one loop
 *     else:
 *       pass L of b - 1 (b > 0); pass L - 1 of b (b < nblocks)
 *
 * so that the last pass's long-latency work (the EM step's division per
 * element, which alone keeps the divider busy) overlaps the previous
 * pass's (bench W6: its exp). Every sum still takes its blocks in order;
 * within a block a column sum is reassociated as every sum is (the
 * vectorizer's choice, which differs in the fused loop), so its bits may
 * differ from the group's without the lag, but not with the number of
 * threads. */
static void emit_blocks(Body *B, Rows *R, LLVMValueRef lo, LLVMValueRef hi) {
  Cg *g = B->g;
  void *L;
  LLVMValueRef len = LLVMBuildNSWSub(g->b, hi, lo, "");
  LLVMValueRef nblocks = LLVMBuildSDiv(g->b, LLVMBuildNSWAdd(g->b, len, i64c(g, ROWS_BLOCK - 1), ""),
                                       i64c(g, ROWS_BLOCK), "blocks");
  LLVMValueRef b = cg_loop_begin(B, R->lag ? LLVMBuildNSWAdd(g->b, nblocks, i64c(g, 1), "") : nblocks, &L);
  bool from0 = LLVMIsAConstantInt(lo) && LLVMConstIntGetSExtValue(lo) == 0;
  LLVMValueRef i0 = LLVMBuildNSWMul(g->b, b, i64c(g, ROWS_BLOCK), from0 ? "i0" : "");
  if (!from0)
    i0 = LLVMBuildNSWAdd(g->b, lo, i0, "i0");
  LLVMValueRef cnt = block_rows(B, i0, hi, "rows");
  LLVMValueRef k = cg_dim(B, R->space->dim[1]);
  B->rows_i0 = i0;
  if (!R->lag) {
    for (int p = 0; p < R->npass; p++)
      emit_whole_pass(B, R, p, i0, cnt, k);
  } else {
    int last = R->npass - 1;
    LLVMValueRef whole_block = i64c(g, ROWS_BLOCK * ROWS_KMAX);
    LLVMValueRef odd = LLVMBuildAnd(g->b, b, i64c(g, 1), "");
    LLVMValueRef cur = LLVMBuildNSWMul(g->b, odd, whole_block, "");
    LLVMValueRef prev = LLVMBuildNSWSub(g->b, whole_block, cur, "");
    for (int m = 0; m < R->nmem; m++) {
      if (!R->base[m])
        continue;
      LLVMTypeRef t = cg_mem_type(g, R->mem[m]->type.dtype);
      R->half[m][0] = LLVMBuildInBoundsGEP2(g->b, t, R->base[m], &cur, 1, "");
      R->half[m][1] = LLVMBuildInBoundsGEP2(g->b, t, R->base[m], &prev, 1, "");
    }
    use_half(B, R, false);
    LLVMValueRef i0_behind = LLVMBuildNSWSub(g->b, i0, i64c(g, ROWS_BLOCK), "i0.behind");
    LLVMValueRef have = LLVMBuildICmp(g->b, LLVMIntSLT, b, nblocks, "");
    LLVMValueRef behind = LLVMBuildICmp(g->b, LLVMIntSGT, b, i64c(g, 0), "");
    LLVMBasicBlockRef join = when(B, have, "rows.block");
    for (int p = 0; p < last - 1; p++)
      emit_whole_pass(B, R, p, i0, cnt, k);
    row_accumulators(B, R, last - 1, i0, cnt, false);
    end_when(B, join);
    LLVMValueRef both = LLVMBuildAnd(g->b, LLVMBuildAnd(g->b, have, behind, ""),
                                     LLVMBuildICmp(g->b, LLVMIntEQ, cnt, i64c(g, ROWS_BLOCK), ""), "");
    LLVMBasicBlockRef fused = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "rows.behind");
    LLVMBasicBlockRef apart = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "rows.apart");
    LLVMBasicBlockRef joined = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "");
    LLVMBuildCondBr(g->b, both, fused, apart);
    LLVMPositionBuilderAtEnd(g->b, fused);
    emit_pass(B, R, (PassAt[]){{last - 1, i0, false}, {last, i0_behind, true}}, 2, cnt, k);
    LLVMBuildBr(g->b, joined);
    LLVMPositionBuilderAtEnd(g->b, apart);
    join = when(B, behind, "rows.behind.alone");
    emit_pass(B, R, &(PassAt){last, i0_behind, true}, 1, block_rows(B, i0_behind, hi, "rows.behind"), k);
    end_when(B, join);
    join = when(B, have, "rows.block.alone");
    emit_pass(B, R, &(PassAt){last - 1, i0, false}, 1, cnt, k);
    end_when(B, join);
    LLVMBuildBr(g->b, joined);
    LLVMPositionBuilderAtEnd(g->b, joined);
    join = when(B, have, "rows.block.end");
    row_accumulators(B, R, last - 1, i0, cnt, true);
    emit_rows_loop(B, R, last - 1, i0, cnt);
    end_when(B, join);
  }
  cg_loop_end(B, L);
  B->rows_i0 = NULL;
}

/* The scratch and accumulators of a run of the group (in the function
 * running it: the body, or a chunk's on the pool), sums and column sums
 * started; `cols` says where column sums go (NULL: their memory). */
static void start_run(Body *B, Rows *R, LLVMValueRef cols_at) {
  Cg *g = B->g;
  LLVMValueRef k = cg_dim(B, R->space->dim[1]);
  for (int m = 0; m < R->nmem; m++) {
    Inst *v = R->mem[m];
    Slot *s = cg_slot(B, v);
    LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
    R->acc[m] = NULL;
    R->base[m] = R->half[m][0] = R->half[m][1] = NULL;
    if (s->rkind == RK_ELEM && s->rowbuf_ok)
      s->rowbuf = R->base[m] = cg_block_alloca(B, cg_mem_type(g, v->type.dtype),
                                               (int64_t)ROWS_BLOCK * ROWS_KMAX * (R->lag ? 2 : 1));
    else if (s->rkind == RK_ROWRED)
      R->acc[m] = cg_block_alloca(B, t, ROWS_BLOCK);
    else if (s->rkind == RK_FULLRED || s->rkind == RK_ROWFULL) {
      R->acc[m] = cg_entry_alloca(B, t);
      LLVMBuildStore(g->b, cg_reduce_init(v->op, t), R->acc[m]);
    } else if (s->rkind == RK_COLRED) {
      R->acc[m] = cg_entry_alloca(B, t);
      R->col[m] = cols_at ? cg_block_alloca(B, cg_mem_type(g, v->type.dtype), ROWS_KMAX) : s->buf;
      void *L;
      LLVMValueRef j = cg_loop_begin(B, k, &L);
      cg_store(B, v->type.dtype, R->col[m], j, cg_reduce_init(v->op, t));
      cg_loop_end(B, L);
    }
  }
}

static void end_run(Body *B, Rows *R) {
  for (int m = 0; m < R->nmem; m++)
    cg_slot(B, R->mem[m])->rowbuf = NULL;
}

/* In the body after a run on the pool: each sum's (and column sum's)
 * partials added in chunk order into its memory. */
void rows_add_partials(Body *B, Rows *R, LLVMValueRef *part, LLVMValueRef nchunks) {
  Cg *g = B->g;
  LLVMValueRef k = cg_dim(B, R->space->dim[1]);
  for (int m = 0; m < R->nmem; m++) {
    Inst *v = R->mem[m];
    Slot *s = cg_slot(B, v);
    LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
    if (s->rkind != RK_FULLRED && s->rkind != RK_ROWFULL && s->rkind != RK_COLRED)
      continue;
    bool cols = s->rkind == RK_COLRED;
    void *Lj = NULL, *Lc;
    LLVMValueRef j = cols ? cg_loop_begin(B, k, &Lj) : i64c(g, 0);
    LLVMValueRef acc = cg_entry_alloca(B, t);
    LLVMBuildStore(g->b, cg_reduce_init(v->op, t), acc);
    LLVMValueRef ci = cg_loop_begin(B, nchunks, &Lc);
    LLVMValueRef idx = cols ? LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, ci, i64c(g, ROWS_KMAX), ""), j, "") : ci;
    LLVMValueRef x = LLVMBuildLoad2(g->b, t, LLVMBuildInBoundsGEP2(g->b, t, part[m], &idx, 1, ""), "");
    LLVMBuildStore(g->b, cg_combine(g, v->op, LLVMBuildLoad2(g->b, t, acc, ""), x), acc);
    cg_loop_end(B, Lc);
    cg_store(B, v->type.dtype, s->buf, j, LLVMBuildLoad2(g->b, t, acc, ""));
    if (cols)
      cg_loop_end(B, Lj);
  }
}

/* The group: inline over all rows, or on the pool, each chunk's sums and
 * column sums left in partials that are combined in chunk order: the same
 * bits on any number of threads. */
static void rows_version(Body *B, void *ctx, LLVMValueRef n, bool on) {
  Rows *R = ctx;
  Cg *g = B->g;
  if (!on) {
    start_run(B, R, NULL);
    emit_blocks(B, R, i64c(g, 0), n);
    end_run(B, R);
    for (int m = 0; m < R->nmem; m++) {
      Inst *v = R->mem[m];
      Slot *s = cg_slot(B, v);
      if (s->rkind == RK_FULLRED || s->rkind == RK_ROWFULL)
        cg_store(B, v->type.dtype, s->buf, i64c(g, 0),
                 LLVMBuildLoad2(g->b, cg_elem_type(g, v->type.dtype), R->acc[m], ""));
    }
    return;
  }
  Par par;
  cg_par_begin_blocks(B, n, ROWS_PAR_LEAST, ROWS_PAR_CHUNKS, ROWS_BLOCK, &par);
  LLVMValueRef *part = xmalloc(sizeof(LLVMValueRef) * ROWS_MAX_MEMBERS);
  for (int m = 0; m < R->nmem; m++) {
    Inst *v = R->mem[m];
    Slot *s = cg_slot(B, v);
    LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
    part[m] = NULL;
    if (s->rkind == RK_FULLRED || s->rkind == RK_ROWFULL)
      part[m] = cg_par_partials_n(B, &par, t, ROWS_PAR_CHUNKS);
    else if (s->rkind == RK_COLRED)
      part[m] = cg_par_partials_n(B, &par, t, (int64_t)ROWS_PAR_CHUNKS * ROWS_KMAX);
  }
  start_run(B, R, i64c(g, 0));
  emit_blocks(B, R, par.begin, par.end);
  end_run(B, R);
  LLVMValueRef c = cg_par_chunk_index(B, &par);
  LLVMValueRef k = cg_dim(B, R->space->dim[1]);
  for (int m = 0; m < R->nmem; m++) {
    Inst *v = R->mem[m];
    Slot *s = cg_slot(B, v);
    LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
    if (s->rkind == RK_FULLRED || s->rkind == RK_ROWFULL) {
      LLVMValueRef at = LLVMBuildInBoundsGEP2(g->b, t, cg_outer(B, part[m]), &c, 1, "");
      LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, t, R->acc[m], ""), at);
    } else if (s->rkind == RK_COLRED) {
      void *L;
      LLVMValueRef j = cg_loop_begin(B, k, &L);
      LLVMValueRef idx = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, c, i64c(g, ROWS_KMAX), ""), j, "");
      LLVMValueRef at = LLVMBuildInBoundsGEP2(g->b, t, cg_outer(B, part[m]), &idx, 1, "");
      LLVMBuildStore(g->b, cg_load(B, v->type.dtype, R->col[m], j), at);
      cg_loop_end(B, L);
    }
  }
  cg_par_end(B, &par);
  rows_add_partials(B, R, part, par.nchunks);
  free(part);
}

/* The group's blocks, on the pool or (pooled false) inline. */
void rows_emit_blocks(Body *B, Rows *R, bool pooled) {
  rows_version(B, R, cg_dim(B, R->space->dim[0]), pooled);
}
