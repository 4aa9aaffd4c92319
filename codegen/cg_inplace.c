/* Indexed assignment in place (spec section 6; docs/language.md 2.8).
 *
 * The front end lowers `v[...] = e`, `+=`, `-=` and `*=` to update and
 * update_add (ops.def); the adjoints of slices and gathers are added to
 * other adjoints as v + u with u an unslice chain (zeros off a box) or a
 * scatter_add. Computed as written, each writes a fresh copy of the whole
 * array, so a loop assigning one element per iteration is quadratic.
 *
 * When the old value v is dead after the update -- nothing reads it later,
 * in the forward code or in the gradient (the AD pass has already put the
 * adjoint's reads into this same function) -- the update shares v's memory
 * and writes only the selected positions (cg_update.c), the box the
 * unslices select, or adds e where idx says, in order, repeated positions
 * accumulating: every position outside them equals v's by construction.
 * Reading v at a position and writing it there in the same iteration is
 * safe; reading v anywhere else is not, so every other reader of v must
 * come earlier in the same block and have memory of its own (a slice of v
 * read by e is given some, as it is small), the values computed where the
 * update writes (its scatter, its unslices) must not read v, v may be
 * neither a function result nor yielded (both are read at the end), and
 * the update must not be a function result (results live in the caller's
 * buffers).
 *
 * v + P, P a matrix product read by nothing else, is the GEMM adding P
 * into v's memory (beta = 1); P has no memory of its own.
 *
 * Loop state: a loop body whose yield for a carried value is such an
 * update of that value's own block argument keeps the value in one buffer
 * and updates it in place (cg_region.c treats it like a value that does not
 * change); so does an unloop's accumulator. The decision is final here,
 * before the update's operands lose their memory: an update computed as a
 * whole after all would need them (a scatter has no element-wise form).
 *
 * Requires: plan has set has_buf (cg_func.c), before form_groups. Keeps:
 * Slot.inplace_of set only on updates whose old value qualifies. */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

/* The box of an unslice chain: per axis, the unslice placing along it
 * (NULL: the whole axis); returns the innermost value (the update's data). */
static const Inst *chain(const Inst *u, const Inst *at[IR_MAX_RANK]) {
  for (int a = 0; a < IR_MAX_RANK; a++)
    at[a] = NULL;
  while (u->op == OP_unslice) {
    int k = __builtin_ctz(u->axes);
    if (at[k])
      return NULL;
    at[k] = u;
    u = u->args[0];
  }
  return u;
}

/* v[idx] += e, -= e: add(v, S), add(S, v) or sub(v, S) with S a
 * scatter_add read by nothing else; S's operand position, or -1. */
static int scattered(const Inst *i) {
  for (int k = 1; k >= 0; k--) {
    const Inst *s = i->args[k];
    if (s->op == OP_scatter_add && s->nuses == 1 && s->parent == i->parent &&
        (k == 1 || i->op == OP_add) && i->args[1 - k] != s)
      return k;
  }
  return -1;
}

/* add(v, P) or add(P, v) with P a matrix product read by nothing else,
 * of the sum's shape: P's operand position, or -1. The GEMM adds P into
 * v's memory (beta = 1): a weight's adjoint accumulated over a loop's
 * steps costs no product in memory and no pass adding it (bench rnn_lm:
 * 12% of the gradient's time). */
static int accumulated(const Inst *i) {
  for (int k = 1; k >= 0 && i->op == OP_add; k--) {
    const Inst *p = i->args[k];
    if (ir_ops[p->op].shape == SH_MATMUL && p->nuses == 1 && p->parent == i->parent &&
        i->args[1 - k] != p && ir_shape_eq(&p->type, &i->type))
      return k;
  }
  return -1;
}

/* The old value i updates, or NULL: update(v, ...), update_add(v, ...),
 * add(v, U), add(U, v) or sub(v, U), U an unslice chain or a scatter_add,
 * or add(v, P), add(P, v), P a product (accumulated). */
static Inst *old_value(Inst *i) {
  const Inst *ub[IR_MAX_RANK];
  if (i->op == OP_update || i->op == OP_update_add)
    return i->args[0];
  if ((i->op == OP_add || i->op == OP_sub) && scattered(i) >= 0)
    return i->args[1 - scattered(i)];
  if (accumulated(i) >= 0)
    return i->args[1 - accumulated(i)];
  if (i->op == OP_add || i->op == OP_sub) {
    int k = i->args[1]->op == OP_unslice ? 1 : i->op == OP_add && i->args[0]->op == OP_unslice ? 0 : -1;
    if (k < 0 || !chain(i->args[k], ub))
      return NULL;
    return i->args[1 - k];
  }
  return NULL;
}

static bool is_result(const Function *f, const Inst *v) {
  for (int k = 0; k < f->nresults; k++)
    if (f->results[k] == v)
      return true;
  return false;
}

/* Is u one of the values i computes where it writes (its scatter, the
 * unslices placing its data)? Such a value reads its operands while i
 * writes v's memory: reading v there would see positions already written
 * (a scatter of v itself into v, a shift). */
static bool inside_update(const Inst *u, const Inst *i) {
  if (i->op != OP_add && i->op != OP_sub)
    return false;
  if (scattered(i) >= 0)
    return u == i->args[scattered(i)];
  if (accumulated(i) >= 0)
    return u == i->args[accumulated(i)];
  for (int k = 0; k < 2; k++)
    for (const Inst *x = i->args[k]; x->op == OP_unslice; x = x->args[0])
      if (x == u)
        return true;
  return false;
}

/* Can v's memory be handed to i? (other readers checked separately; v
 * may be an earlier update, which gets memory if it is done in place) */
static bool owns_memory(Body *B, const Inst *v, const Inst *i, bool *upd) {
  if (v->op == OP_param) /* the caller's, and immutable */
    return false;
  Slot *s = cg_slot(B, v);
  /* a view (a row slice, cg_memory.c) or a reshape points into another
   * value's memory, maybe a parameter's: writing it would change that */
  if (v->parent != i->parent || !(s->has_buf || (v->op != OP_arg && upd[v->id])) ||
      s->acc_into || s->by_products || s->view || v->op == OP_reshape || v->op == OP_proj ||
      v->nregions)
    return false;
  if (v->op == OP_arg) /* loop state: i must be its yield, once */
    return cg_region_keeps(v, i);
  return true;
}

/* An unslice chain read only by the update: computed inside its box. */
static void unfuse_chain(Body *B, Function *f, Inst *u, const Inst *i) {
  for (; u->op == OP_unslice && u->nuses == 1 && u->parent == i->parent && !is_result(f, u);
       u = u->args[0])
    cg_slot(B, u)->has_buf = false;
}

void cg_inplace_plan(Body *B, int n) {
  Function *f = B->f;
  size_t bytes = sizeof(Inst *) * (size_t)(n + 1);
  Inst **cand = xmalloc(bytes); /* by the old value's id: its update */
  Inst **old = xmalloc(bytes);  /* by the update's id: its old value */
  bool *upd = xmalloc(sizeof(bool) * (size_t)(n + 1));
  memset(cand, 0, bytes);
  memset(old, 0, bytes);
  memset(upd, 0, sizeof(bool) * (size_t)(n + 1));
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    Inst *v = old_value(i);
    if (v && !ir_is_float(v->type.dtype) && v->type.dtype != DT_I32)
      v = NULL;
    if (v && !is_result(f, i) && !is_result(f, v) && owns_memory(B, v, i, upd) && !cand[v->id]) {
      cand[v->id] = i;
      old[i->id] = v;
      upd[i->id] = true;
    }
  }
  /* every other reader of v: earlier in the block, with memory of its own */
  for (Inst *u = f->first; u; u = ir_walk_next(u))
    for (int k = 0; k < u->nargs; k++) {
      Inst *v = u->args[k];
      if (v->op == OP_param || !cand[v->id])
        continue;
      Inst *i = cand[v->id];
      if (u == i) {
        for (int j = 0; j < u->nargs; j++)
          if (j != k && u->args[j] == v)
            cand[v->id] = NULL;
        continue;
      }
      bool ok = u->parent == i->parent && u->id < i->id && !u->nregions && u->op != OP_reshape &&
                u->op != OP_proj && u->op != OP_transpose && u->op != OP_broadcast &&
                !inside_update(u, i);
      if (ok && !cg_slot(B, u)->has_buf)
        ok = u->op == OP_slice || u->op == OP_gather; /* small: give it memory */
      if (!ok)
        cand[v->id] = NULL;
    }
  /* a yield is read at the end of its block, after any update */
  for (Inst *u = f->first; u; u = ir_walk_next(u))
    for (int r = 0; r < u->nregions; r++)
      for (int k = 0; k < u->regions[r].nyields; k++) {
        Inst *y = u->regions[r].yields[k];
        if (y->op != OP_param && cand[y->id])
          cand[y->id] = NULL;
      }
  /* in program order, so that an earlier update in a chain is settled: an
   * old value without memory of its own must be an update done in place */
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    Inst *v = old[i->id];
    upd[i->id] = false;
    if (!v || cand[v->id] != i)
      continue;
    if (!cg_slot(B, v)->has_buf && !(v->op != OP_arg && upd[v->id]))
      continue;
    if ((i->op == OP_add || i->op == OP_sub) && scattered(i) >= 0 &&
        is_result(f, i->args[scattered(i)]))
      continue;
    if (accumulated(i) >= 0 && is_result(f, i->args[accumulated(i)]))
      continue;
    upd[i->id] = true;
    cg_slot(B, i)->inplace_of = v;
    cg_slot(B, v)->inplace_old = true;
    cg_slot(B, i)->has_buf = true;
    /* the placed data is read inside the box only: no memory (an unslice
     * would otherwise fill a whole array) */
    if (i->op == OP_update || i->op == OP_update_add)
      continue;
    if (scattered(i) >= 0) {
      cg_slot(B, i->args[scattered(i)])->has_buf = false; /* added where it lands */
    } else if (accumulated(i) >= 0) { /* computed by the GEMM into v's memory */
      Slot *p = cg_slot(B, i->args[accumulated(i)]);
      p->has_buf = false;
      p->acc_into = i;
    } else
      unfuse_chain(B, f, i->args[i->args[1]->op == OP_unslice ? 1 : 0], i);
  }
  /* the readers that stay: computed before the update, in memory */
  for (Inst *u = f->first; u; u = ir_walk_next(u))
    for (int k = 0; k < u->nargs; k++) {
      Inst *v = u->args[k];
      if (v->op != OP_param && cand[v->id] && upd[cand[v->id]->id] && cand[v->id] != u) {
        Slot *us = cg_slot(B, u);
        us->has_buf = true;
        us->view = false; /* a row slice copied, not a pointer into v */
        /* A product an update was to add up in place, where the update
         * stands, reads v before v's update: it is computed here into its
         * own memory, and the update adds it element by element (an
         * unloop's `d_b += dc @ x^T` beside `dc += ...` in place). */
        if (us->acc_into && cg_slot(B, us->acc_into)->inplace_of)
          us->acc_into = NULL;
      }
    }
  free(cand);
  free(old);
  free(upd);
}

typedef struct Box {
  LLVMValueRef lo[IR_MAX_RANK], len[IR_MAX_RANK];
} Box;

static void box_loop(Body *B, const Inst *i, LLVMValueRef buf, const Box *bx, int a, Idx *x) {
  const Type *t = &i->type;
  if (a == t->rank) {
    x->rank = t->rank;
    x->lin = cg_lin(B, x, t);
    LLVMValueRef val = cg_eval_def(B, i, x);
    cg_store(B, t->dtype, buf, x->lin, val);
    return;
  }
  void *L;
  LLVMValueRef j = cg_loop_begin(B, bx->len[a], &L);
  x->i[a] = LLVMBuildNSWAdd(B->g->b, bx->lo[a], j, "inplace_pos");
  box_loop(B, i, buf, bx, a + 1, x);
  cg_loop_end(B, L);
}

/* Does in-place update i have the GEMM add its product (acc_into), or
 * was the product left to be computed first (it reads a value updated in
 * place before i)? */
static bool adds_product(Body *B, const Inst *i) {
  return accumulated(i) >= 0 && cg_slot(B, i->args[accumulated(i)])->acc_into == i;
}

bool cg_inplace_emit(Body *B, Inst *i) {
  Slot *s = cg_slot(B, i);
  if (!s->inplace_of)
    return false;
  Slot *vs = cg_slot(B, s->inplace_of);
  s->buf = vs->buf;
  s->computed = true;
  if (i->op == OP_update || i->op == OP_update_add) {
    cg_emit_update(B, i, s->buf, true);
    return true;
  }
  if (scattered(i) >= 0) {
    cg_scatter_into(B, i->args[scattered(i)], s->buf, i->op == OP_sub);
    return true;
  }
  if (adds_product(B, i)) {
    cg_emit_matmul(B, i->args[accumulated(i)], s->buf, true);
    return true;
  }
  const Inst *at[IR_MAX_RANK];
  chain(i->args[i->args[1]->op == OP_unslice ? 1 : 0], at);
  Box bx;
  for (int a = 0; a < i->type.rank; a++) {
    LLVMValueRef size = cg_dim(B, i->type.dim[a]);
    if (!at[a]) {
      bx.lo[a] = LLVMConstInt(B->g->i64, 0, 0);
      bx.len[a] = size;
      continue;
    }
    /* the start, checked as the unslice itself would check it, before a
     * single byte is written */
    LLVMValueRef len = cg_dim(B, at[a]->args[0]->type.dim[a]);
    bx.lo[a] = cg_slice_start(B, at[a], cg_eval_scalar(B, at[a]->args[1]), size, len);
    bx.len[a] = len;
  }
  Idx x = {0, {0}, NULL};
  box_loop(B, i, s->buf, &bx, 0, &x);
  return true;
}

/* ---- the strategy ---- */

static void inplace_recognize(Body *B, Inst *first) {
  for (Inst *i = first; i; i = i->next)
    if (cg_slot(B, i)->inplace_of && cg_slot(B, i)->kernel < 0)
      cg_kernel_add(B, cg_kernel_new(B, &cg_inplace_strategy, i), i, 0, CG_IN_MEMORY);
}

static void inplace_emit(Body *B, CgKernel *k) { cg_inplace_emit(B, k->head); }

static void inplace_describe(Body *B, const CgKernel *k, FILE *out) {
  const Inst *i = k->head;
  fprintf(out, "update of %%%d in place", cg_slot(B, i)->inplace_of->id);
  if (adds_product(B, i)) {
    const Inst *p = i->args[accumulated(i)];
    fprintf(out, ", %s %%%d adding into it", p->op == OP_matmulz ? "gemmz" : "gemm", p->id);
  }
}

const CgStrategy cg_inplace_strategy = {"inplace", NULL, inplace_recognize, NULL, NULL,
                                        inplace_emit, inplace_describe};
