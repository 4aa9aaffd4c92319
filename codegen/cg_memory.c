/* cg_memory.c -- which values get memory of their own (Slot.has_buf); every
 * other value is computed where it is used, fused into its readers' loops.
 *
 * A value needs memory when it is not elementwise (a reduction, a matrix
 * product, an index op's result), when several readers would each
 * recompute it (unless it is free, F_FREE: a constant, a broadcast, a view),
 * when a reader reads its operand from memory (a matrix product's
 * operands, the source of a transpose or reshape, a random key tensor),
 * when it is broadcast (each copy would recompute it),
 * when it is computed outside a loop or branch and read inside, when it is
 * a result, when a chain fused into one loop would pass MAX_FUSED
 * operations, when it can fail and nothing reads it (DCE keeps it for
 * its checks), and when it is an index that can fail, read in a loop that
 * may have no element. On top of has_buf it marks slices of leading-axis rows of
 * values in memory as views (a pointer, no copy), a sum of two matrix
 * products as computed by the products themselves, and updates in place
 * (cg_inplace_plan).
 *
 * Requires: the function verified. Keeps: every Slot reset, then the
 * flags above; ir_count_uses' counts; Inst.aux back to NULL. */
#include <string.h>

#include "cg_internal.h"

/* Is v, like an index map (F_INDEX), computed where it is read? A gather
 * by known positions is (cg_gather_known). */
static bool index_map(const Inst *v) { return ir_op_is(v->op, F_ELEM | F_INDEX) || cg_gather_known(v); }

/* Can v, evaluated where it is read (no memory of its own), fail? The
 * elementwise ops that can are divisions (idiv, mod), and one by a literal
 * other than 0 cannot; a gather by known positions cannot, but its data
 * can. */
static bool fails_inline(Body *B, const Inst *v) {
  if (v->op == OP_param || cg_slot(B, v)->has_buf || !index_map(v))
    return false;
  if (ir_op_is(v->op, F_ELEM) && ir_op_is(v->op, F_FAILS)) {
    const Inst *d = v->args[1]->op == OP_broadcast ? v->args[1]->args[0] : v->args[1];
    if (!(d->op == OP_const && d->num != 0))
      return true;
  }
  for (int k = 0; k < v->nargs; k++)
    if (fails_inline(B, v->args[k]))
      return true;
  return false;
}

/* An index op reads its index operands inside its loop over its result
 * (an update: over its new data), which has no element where another axis
 * is empty: an index that can fail is computed apart, so that it is
 * checked all the same (spec 6: whether or not a value has elements). */
static void index_apart(Body *B, Inst *i) {
  if (!ir_op_is(i->op, F_AXIS) || !ir_op_is(i->op, F_FAILS))
    return;
  for (int k = i->op == OP_update || i->op == OP_update_add ? 2 : 1; k < i->nargs; k++)
    if (fails_inline(B, i->args[k]))
      cg_slot(B, i->args[k])->has_buf = true;
}

/* Has v memory, or can it have some for free (a reshape of memory)? */
static bool addressable(Body *B, const Inst *v) {
  if (v->op == OP_param || cg_slot(B, v)->has_buf)
    return true;
  return v->op == OP_reshape && addressable(B, v->args[0]);
}

/* Can several readers recompute v for free? A gather by known positions of
 * a parameter is a load as reading memory of its own would be. */
static bool free_to_read(const Inst *v) {
  return ir_op_is(v->op, F_FREE) || (cg_gather_known(v) && v->args[0]->op == OP_param);
}

void cg_memory_plan(Body *B, int n) {
  Function *f = B->f;
  ir_count_uses(f);
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    Slot *s = cg_slot(B, i);
    memset(s, 0, sizeof *s);
    s->temp = -1;
    s->group = -1;
    s->rows = -1;
    s->online = -1;
    s->kernel = -1;
    if (!index_map(i) || (i->nuses > 1 && !free_to_read(i)))
      s->has_buf = true;
    if (ir_op_is(i->op, F_FAILS) && i->nuses == 0) /* computed for its checks alone */
      s->has_buf = true;
    for (int r = 0; r < i->nregions; r++)
      for (int k = 0; k < i->regions[r].nparams; k++) {
        Slot *p = cg_slot(B, i->regions[r].params[k]);
        memset(p, 0, sizeof *p);
        p->temp = p->group = p->rows = p->online = p->kernel = -1;
      }
  }
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    /* A value computed outside a loop or branch and read inside is kept
     * in memory, not recomputed on every iteration. */
    for (int k = 0; k < i->nargs; k++)
      if (i->args[k]->parent != i->parent && !free_to_read(i->args[k]))
        cg_slot(B, i->args[k])->has_buf = true;
    if (i->nregions)
      cg_region_plan(B, i);
    index_apart(B, i);
    if (ir_ops[i->op].shape == SH_MATMUL) {
      for (int k = 0; k < 2; k++) {
        Inst *x = i->args[k];
        if (cg_swaps_last2(x))
          cg_slot(B, x->args[0])->has_buf = true;
        else
          cg_slot(B, x)->has_buf = true;
      }
    } else if (i->op == OP_transpose || i->op == OP_reshape) {
      cg_slot(B, i->args[0])->has_buf = true;
    } else if (ir_op_is(i->op, F_RANDOM) && i->args[0]->type.rank > 0) {
      /* the runtime reads a key tensor */
      cg_slot(B, i->args[0])->has_buf = true;
    } else if (i->op == OP_broadcast && !ir_op_is(i->args[0]->op, F_FREE)) {
      cg_slot(B, i->args[0])->has_buf = true;
    }
  }
  /* An index read only by gathers by known positions, and by the
   * scatters that permute (their adjoints), is never read at run time:
   * the compiler has read its entries (cg_data.c). It is not computed. */
  int *known_reads = xmalloc(sizeof(int) * (size_t)(n + 1));
  memset(known_reads, 0, sizeof(int) * (size_t)(n + 1));
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    if (cg_gather_known(i) || (i->op == OP_scatter_add && cg_scatter_permutes(i)))
      known_reads[i->args[1]->id]++;
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    if (i->op != OP_param && i->nuses > 0 && known_reads[i->id] == i->nuses && !i->nregions)
      cg_slot(B, i)->has_buf = false;
  free(known_reads);
  for (int k = 0; k < f->nresults; k++)
    cg_slot(B, f->results[k])->has_buf = true;
  /* A slice of leading-axis rows (a row x[t] of a matrix, w[0] of a stack
   * of weights) of a value with memory anyway is a pointer into it: no
   * copy, its start checked once instead of at every element read, and
   * its readers stay flat loops that loop groups can fuse. */
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    if (i->op == OP_slice && i->axes == 1u && addressable(B, i->args[0])) {
      cg_slot(B, i)->has_buf = true;
      cg_slot(B, i)->view = true;
      if (i->args[0]->op == OP_reshape) /* a view too */
        cg_slot(B, i->args[0])->has_buf = true;
    }
  /* A sum of two matrix products (the adjoint of a weight used twice) is
   * computed by the GEMM kernel itself: the second product accumulates into
   * the first's memory, which is the sum's. */
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    Inst *p = i->nargs == 2 ? i->args[0] : NULL, *q = i->nargs == 2 ? i->args[1] : NULL;
    if (i->op == OP_add && p != q && ir_ops[p->op].shape == SH_MATMUL &&
        ir_ops[q->op].shape == SH_MATMUL && p->nuses == 1 && q->nuses == 1 &&
        p->parent == i->parent && q->parent == i->parent) {
      cg_slot(B, i)->has_buf = true;
      cg_slot(B, i)->by_products = true;
      cg_slot(B, p)->acc_into = i;
      cg_slot(B, q)->acc_into = i;
    }
  }
  /* Bound the work fused into one loop: a longer chain is cut into loops of
   * at most MAX_FUSED operations, which keeps register pressure sane and
   * LLVM's per-block passes from going quadratic on huge expressions. */
  enum { MAX_FUSED = 48 };
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    intptr_t size = 1;
    for (int k = 0; k < i->nargs; k++)
      if (i->args[k]->op != OP_param && !cg_slot(B, i->args[k])->has_buf)
        size += (intptr_t)i->args[k]->aux;
    if (size > MAX_FUSED && ir_op_is(i->op, F_ELEM)) {
      cg_slot(B, i)->has_buf = true;
      size = 1;
    }
    i->aux = (void *)size;
  }
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    i->aux = NULL;
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  cg_inplace_plan(B, n);
}
