/* Indexed assignment: update and update_add (ops.def), which the front
 * end makes of `v[...] = e`, `+=`, `-=` and `*=`, and AD of their
 * adjoints.
 *
 * The selected positions are a box (a start per indexed axis, checked
 * once, as a slice's) and at most one axis given by a tensor of positions
 * (each checked as a gather's). The code is a loop over the new data's
 * positions only, storing each element at its place in v's memory (adding
 * it, for update_add): in place when v is dead afterwards (cg_inplace.c),
 * else after a copy of v. So `J[:, 0] = e` touches a column, and a loop
 * filling a tensor row by row costs a row per iteration.
 *
 * update by a tensor: a position named twice is SG_ERR_INDEX (spec section
 * 6). The positions go to scratch first (after the temporaries: the
 * positions and a table of 4 per position, cg_update_reserve), the runtime
 * looks for a repeat (sg_rt_first_repeat), and the stores read them back.
 * That is before the first store, so an update that fails has written
 * nothing of its own.
 *
 * The tape of a loop AD reverses (cg_region.c) need not copy a carried
 * value whose body yields a chain of updates of its own block argument
 * (`H[t] = h`): each update of the chain writes an undo log instead -- its
 * box starts, its positions and the old values there (Slot.log) -- and
 * the unloop rebuilds the value entering each iteration from the one
 * after it, undoing the chain last update first (cg_update_undo). A loop
 * writing a row per iteration then records a row, not the whole tensor.
 *
 * Requires: plan done (Slot.has_buf, inplace_of). Keeps: the checks of
 * slice and gather for the same positions. */
#include "cg_internal.h"

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* An update by a tensor of positions needs scratch: its tensor. */
static const Inst *tensor_index(const Inst *i) {
  for (int k = 2; k < i->nargs; k++)
    if (i->args[k]->type.rank > 0)
      return i->args[k];
  return NULL;
}

static bool needs_scratch(const Inst *i) { return i->op == OP_update && tensor_index(i); }

LLVMValueRef cg_update_reserve(Body *B, LLVMValueRef total) {
  Cg *g = B->g;
  for (Inst *i = B->f->first; i; i = ir_walk_next(i)) {
    if (!needs_scratch(i))
      continue;
    cg_slot(B, i)->scratch = total; /* an offset until bound */
    LLVMValueRef m = cg_numel(B, &tensor_index(i)->type);
    total = LLVMBuildNSWAdd(g->b, total, LLVMBuildNSWMul(g->b, m, i64c(g, 5 * 8), ""), "");
  }
  return total;
}

void cg_update_bind(Body *B, LLVMValueRef base) {
  for (Inst *i = B->f->first; i; i = ir_walk_next(i))
    if (needs_scratch(i)) {
      Slot *s = cg_slot(B, i);
      s->scratch = LLVMBuildInBoundsGEP2(B->g->b, B->g->i8, base, &s->scratch, 1, "positions");
    }
}

/* One emission of update i into buf. */
typedef struct Upd {
  const Inst *i;
  LLVMValueRef buf;
  const Inst *tensor; /* the tensor index, or NULL */
  int gather;         /* v's axis it gives, or -1 */
  LLVMValueRef start[IR_MAX_RANK]; /* per axis of v: a box's checked start, or NULL */
  LLVMValueRef pos;   /* the tensor's positions (i64) in scratch or the log, or NULL */
} Upd;

/* Position w of the tensor (its own index space): its place along the
 * gather axis, from scratch or the log if there, else read and checked. */
static LLVMValueRef position(Body *B, Upd *U, Idx *w) {
  if (U->pos) {
    LLVMValueRef at = LLVMBuildInBoundsGEP2(B->g->b, B->g->i64, cg_outer(B, U->pos),
                                            (LLVMValueRef[]){cg_lin(B, w, &U->tensor->type)}, 1, "");
    return LLVMBuildLoad2(B->g->b, B->g->i64, at, "position");
  }
  return cg_checked_index(B, U->i, cg_eval(B, U->tensor, w), cg_dim(B, U->i->type.dim[U->gather]));
}

/* The place in v of the new data's element p. */
static void target(Body *B, Upd *U, Idx *p, Idx *t) {
  const Type *vt = &U->i->type;
  int ri = U->tensor ? U->tensor->type.rank : 0;
  t->rank = vt->rank;
  t->lin = NULL;
  for (int k = 0, j = 0; k < vt->rank; k++) {
    if (k == U->gather) {
      Idx w = {ri, {0}, NULL};
      for (int a = 0; a < ri; a++)
        w.i[a] = p->i[j + a];
      t->i[k] = position(B, U, &w);
      j += ri;
    } else {
      t->i[k] = U->start[k] ? LLVMBuildNSWAdd(B->g->b, U->start[k], p->i[j], "update_pos") : p->i[j];
      j++;
    }
  }
}

static void store_one(Body *B, Idx *p, void *ctx) {
  Upd *U = ctx;
  Cg *g = B->g;
  const Inst *i = U->i;
  DType dt = i->type.dtype;
  p->lin = NULL;
  LLVMValueRef e = cg_eval(B, i->args[1], p);
  Idx t;
  target(B, U, p, &t);
  LLVMValueRef lin = cg_lin(B, &t, &i->type);
  if (i->op == OP_update_add) {
    LLVMValueRef cur = cg_load(B, dt, U->buf, lin);
    e = ir_is_float(dt) ? LLVMBuildFAdd(g->b, cur, e, "update_add") : LLVMBuildAdd(g->b, cur, e, "update_add");
  }
  cg_store(B, dt, U->buf, lin, e);
}

/* ---- the undo log of a loop's chain of updates ---- */

int cg_tape_links(const Inst *loop, int k, const Inst **links) {
  const Region *body = &loop->regions[loop->op == OP_while ? 1 : 0];
  const Inst *arg = body->params[(loop->op == OP_for) + k], *x = body->yields[k];
  int n = 0;
  for (; (x->op == OP_update || x->op == OP_update_add) && x->parent == body; x = x->args[0])
    n++;
  if (x != arg)
    return 0;
  x = body->yields[k];
  for (int j = n - 1; j >= 0; j--, x = x->args[0])
    if (links)
      links[j] = x;
  return n;
}

/* A log: the box starts (i64) and the positions (i64) at Slot.log, the
 * old values at Slot.log_old. */
static int nbox(const Inst *i) { return __builtin_popcount(i->axes) - (tensor_index(i) != NULL); }

static LLVMValueRef positions_at(Body *B, const Inst *i, LLVMValueRef log) {
  return LLVMBuildInBoundsGEP2(B->g->b, B->g->i64, log, (LLVMValueRef[]){i64c(B->g, nbox(i))}, 1, "");
}

LLVMValueRef cg_update_log_head(Body *B, const Inst *i) {
  Cg *g = B->g;
  LLVMValueRef n = i64c(g, 8 * nbox(i));
  if (tensor_index(i))
    n = LLVMBuildNSWAdd(g->b, n, LLVMBuildNSWMul(g->b, cg_numel(B, &tensor_index(i)->type), i64c(g, 8), ""), "");
  return n;
}

/* log: the old value at the place of element p. */
typedef struct Log {
  Upd *U;
  LLVMValueRef old;
  bool undo; /* write it back instead */
} Log;

static void log_one(Body *B, Idx *p, void *ctx) {
  Log *L = ctx;
  Upd *U = L->U;
  DType dt = U->i->type.dtype;
  p->lin = NULL;
  Idx t;
  target(B, U, p, &t);
  LLVMValueRef at = cg_lin(B, &t, &U->i->type), here = cg_lin(B, p, &U->i->args[1]->type);
  if (L->undo)
    cg_store(B, dt, U->buf, at, cg_load(B, dt, L->old, here));
  else
    cg_store(B, dt, L->old, here, cg_load(B, dt, U->buf, at));
}

/* The tensor's positions (i64), checked, into scratch. */
static void position_one(Body *B, Idx *w, void *ctx) {
  Upd *U = ctx;
  w->lin = NULL;
  LLVMValueRef j = cg_checked_index(B, U->i, cg_eval(B, U->tensor, w),
                                    cg_dim(B, U->i->type.dim[U->gather]));
  LLVMValueRef at = LLVMBuildInBoundsGEP2(B->g->b, B->g->i64, cg_outer(B, U->pos),
                                          (LLVMValueRef[]){cg_lin(B, w, &U->tensor->type)}, 1, "");
  LLVMBuildStore(B->g->b, j, at);
}

/* update: no position named twice. */
static void check_distinct(Body *B, Upd *U, LLVMValueRef scratch) {
  Cg *g = B->g;
  LLVMValueRef m = cg_numel(B, &U->tensor->type);
  LLVMValueRef table = LLVMBuildInBoundsGEP2(g->b, g->i64, cg_outer(B, scratch), &m, 1, "table");
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(g, RT_first_repeat, &fty);
  LLVMValueRef args[3] = {cg_outer(B, U->pos), m, table};
  LLVMValueRef rep = LLVMBuildCall2(g->b, fty, fn, args, 3, "repeat");
  LLVMValueRef report[2] = {rep, cg_dim(B, U->i->type.dim[U->gather])};
  cg_fail_if(B, LLVMBuildICmp(g->b, LLVMIntSGE, rep, i64c(g, 0), ""), U->i, RT_repeated_index,
             report, 2);
}

void cg_emit_update(Body *B, const Inst *i, LLVMValueRef buf, bool in_place) {
  Cg *g = B->g;
  const Inst *v = i->args[0], *u = i->args[1];
  LLVMValueRef log = cg_slot(B, i)->log;
  if (!in_place)
    cg_copy_value(B, v, buf);
  Upd U = {i, buf, tensor_index(i), -1, {0}, NULL};
  for (int k = 0, j = 0, a = 2, b = 0; k < i->type.rank; k++) {
    if (!(i->axes & (1u << k))) {
      j++;
      continue;
    }
    const Inst *ix = i->args[a++];
    if (ix->type.rank > 0) {
      U.gather = k;
      j += ix->type.rank;
      continue;
    }
    U.start[k] = cg_slice_start(B, i, cg_eval_scalar(B, ix), cg_dim(B, i->type.dim[k]),
                                cg_dim(B, u->type.dim[j++]));
    if (log)
      LLVMBuildStore(g->b, U.start[k], LLVMBuildInBoundsGEP2(g->b, g->i64, log, (LLVMValueRef[]){i64c(g, b++)}, 1, ""));
  }
  if (U.tensor && (log || needs_scratch(i))) {
    U.pos = log ? positions_at(B, i, log) : cg_slot(B, i)->scratch;
    Idx w = {0, {0}, NULL};
    if (U.tensor->type.rank == 0)
      w.lin = i64c(g, 0);
    cg_loop_all(B, &U.tensor->type, &w, position_one, &U);
    if (needs_scratch(i))
      check_distinct(B, &U, cg_slot(B, i)->scratch);
  }
  Idx p = {0, {0}, NULL};
  if (log) { /* every old value before the first store (update_add may repeat) */
    Log L = {&U, cg_slot(B, i)->log_old, false};
    cg_loop_all(B, &u->type, &p, log_one, &L);
  }
  cg_loop_all(B, &u->type, &p, store_one, &U);
}

void cg_update_undo(Body *B, const Inst *i, LLVMValueRef log, LLVMValueRef old, LLVMValueRef buf) {
  Cg *g = B->g;
  Upd U = {i, buf, tensor_index(i), -1, {0}, NULL};
  for (int k = 0, a = 2, b = 0; k < i->type.rank; k++) {
    if (!(i->axes & (1u << k)))
      continue;
    if (i->args[a++]->type.rank > 0) {
      U.gather = k;
      continue;
    }
    LLVMValueRef at = LLVMBuildInBoundsGEP2(g->b, g->i64, log, (LLVMValueRef[]){i64c(g, b++)}, 1, "");
    U.start[k] = LLVMBuildLoad2(g->b, g->i64, at, "start");
  }
  if (U.tensor)
    U.pos = positions_at(B, i, log);
  Log L = {&U, old, true};
  Idx p = {0, {0}, NULL};
  cg_loop_all(B, &i->args[1]->type, &p, log_one, &L);
}
