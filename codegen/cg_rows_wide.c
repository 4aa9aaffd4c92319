/* Row groups row by row (cg_rows.h): the rows of a softmax-like chain
 * over [n, k] that are too wide for a block scratch, lanes over columns.
 *
 * Requires: cg_rows_form has made the group; its members that a later
 * pass reads, or anything outside the group, have memory.
 * Keeps: each row computed by one thread, each sum's partials per chunk
 * of rows added in chunk order: the same bits on any number of threads. */
#include <stdlib.h>

#include "cg_rows.h"

/* A group whose rows are ROWS_WIDE or more long runs row by row, pass by
 * pass as a block does, the lanes over the columns instead: per pass, one
 * loop over the row's columns for its [n, k] members, then its [n]
 * members at the row. A member read by a later pass is read back from its
 * memory (the row is in L1 by then). It is one loop over rows for the
 * whole group, not a loop per member: on the pool, a chunk of rows is one
 * thread's from the first member to the last, so its rows stay in that
 * core's cache. (Bench W1, [256, 1000], as seven loops of their own: on
 * two threads they took about as long as on one.) */
static void emit_wide_row(Body *B, Rows *R, CgAcc *acc, CgAcc *row, LLVMValueRef i, LLVMValueRef k) {
  Cg *g = B->g;
  for (int p = 0; p < R->npass; p++) {
    for (int m = 0; m < R->nmem; m++) {
      Inst *v = R->mem[m];
      Slot *s = cg_slot(B, v);
      if (s->rpass == p && s->rkind == RK_ROWRED)
        cg_acc_init(B, &row[m], v->op, cg_elem_type(g, v->type.dtype));
    }
    void *L;
    LLVMValueRef j = cg_loop_begin(B, k, &L);
    LLVMValueRef lin = cg_add64(g, cg_mul64(g, i, k), j);
    for (int m = 0; m < R->nmem; m++) {
      Inst *v = R->mem[m];
      Slot *s = cg_slot(B, v);
      if (s->rpass != p || per_row(s->rkind))
        continue;
      cg_debug_at(g, v);
      Idx x = {2, {i, j}, lin};
      if (s->rkind == RK_ELEM) {
        s->reg = cg_eval_def(B, v, &x);
        if (s->rows_escapes || s->rowbuf_ok)
          cg_store(B, v->type.dtype, s->buf, lin, s->reg);
      } else {
        cg_acc_add(g, s->rkind == RK_ROWRED ? &row[m] : &acc[m], cg_eval(B, v->args[0], &x));
      }
    }
    for (int m = 0; m < R->nmem; m++)
      cg_slot(B, R->mem[m])->reg = NULL;
    cg_loop_end(B, L);
    for (int m = 0; m < R->nmem; m++) {
      Inst *v = R->mem[m];
      Slot *s = cg_slot(B, v);
      if (s->rpass != p || !(per_row(s->rkind) || s->rkind == RK_ROWRED))
        continue;
      cg_debug_at(g, v);
      Idx x = {1, {i}, i};
      if (s->rkind == RK_ROWRED)
        cg_store(B, v->type.dtype, s->buf, i, cg_acc_value(g, &row[m]));
      else if (s->rkind == RK_ROWELEM)
        cg_store(B, v->type.dtype, s->buf, i, cg_eval_def(B, v, &x));
      else
        cg_acc_add(g, &acc[m], cg_eval(B, v->args[0], &x));
    }
  }
}

/* Can the group run row by row? Not with a column sum: its partials
 * would be k wide per chunk. */
bool rows_wide_ok(Body *B, const Rows *R) {
  for (int m = 0; m < R->nmem; m++)
    if (cg_slot(B, R->mem[m])->rkind == RK_COLRED)
      return false;
  return true;
}

/* The group row by row: on the pool (unless its size is a literal under
 * two chunks' worth, cg_par_rows_worth) in chunks of whole rows that
 * depend on n and k alone, each chunk's sums kept apart and added in chunk
 * order: the same bits on any number of threads. */
void rows_emit_wide(Body *B, Rows *R) {
  Cg *g = B->g;
  LLVMValueRef n = cg_dim(B, R->space->dim[0]);
  bool pool = cg_par_rows_worth(B, cg_numel(B, R->space));
  Par par;
  if (pool)
    cg_par_begin_rows(B, n, cg_numel(B, R->space), &par);
  LLVMValueRef *part = xmalloc(sizeof(LLVMValueRef) * ROWS_MAX_MEMBERS);
  CgAcc *acc = xmalloc(sizeof(CgAcc) * ROWS_MAX_MEMBERS), *row = xmalloc(sizeof(CgAcc) * ROWS_MAX_MEMBERS);
  for (int m = 0; m < R->nmem; m++) {
    Inst *v = R->mem[m];
    Slot *s = cg_slot(B, v);
    part[m] = NULL;
    if (s->rkind == RK_FULLRED || s->rkind == RK_ROWFULL) {
      LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
      part[m] = pool ? cg_par_partials(B, &par, t) : s->buf;
      cg_acc_init(B, &acc[m], v->op, t);
    }
  }
  LLVMValueRef k = cg_dim(B, R->space->dim[1]);
  LLVMValueRef first = pool ? par.begin : LLVMConstInt(g->i64, 0, 0);
  LLVMValueRef count = pool ? LLVMBuildNSWSub(g->b, par.end, par.begin, "") : n;
  cg_alias_begin(B);
  void *L;
  LLVMValueRef il = cg_loop_begin(B, count, &L);
  emit_wide_row(B, R, acc, row, LLVMBuildNSWAdd(g->b, first, il, "row"), k);
  cg_loop_end(B, L);
  cg_alias_end(B);
  LLVMValueRef c = pool ? cg_par_chunk_index(B, &par) : LLVMConstInt(g->i64, 0, 0);
  for (int m = 0; m < R->nmem; m++) {
    if (!part[m])
      continue;
    LLVMTypeRef t = cg_elem_type(g, R->mem[m]->type.dtype);
    LLVMValueRef at = LLVMBuildInBoundsGEP2(g->b, t, cg_outer(B, part[m]), &c, 1, "");
    LLVMBuildStore(g->b, cg_acc_value(g, &acc[m]), at);
  }
  if (pool) {
    cg_par_end(B, &par);
    rows_add_partials(B, R, part, par.nchunks);
  }
  free(part);
  free(acc);
  free(row);
}
