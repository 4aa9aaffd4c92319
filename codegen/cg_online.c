/* Online groups: a max over all of an operand x whose value shifts later
 * sums over the same space -- a log-sum-exp, a softmax cross-entropy over
 * one long vector,
 *
 *   m = max(x);  sum(exp(x - m)),  sum(y * (x - m)),  sum(y)
 *
 * -- computed in ONE pass over memory instead of a pass for the max and
 * one for the sums, the way an expert writes it ("online softmax"): the
 * operand is cut into blocks of ONLINE_BLOCK elements that stay in cache;
 * for each block, one loop takes the block's sums with a shift s in place
 * of m (the max of the blocks before it; see blocks) and the block's max
 * bm, then the block's partial sums are rescaled into running totals
 * exactly as the algebra says:
 *
 *   EXP  a sum of terms c * exp(x - m) (c not depending on m):
 *        sum_block(m') = sum_block(s) * exp(s - m')
 *   LIN  a sum of terms c * (x - m):
 *        sum_block(m') = sum_block(s) + (s - m') * sum_block(c)
 *        (sum_block(c) is the summand evaluated with x - m replaced by 1)
 *   PLAIN a sum not depending on m: added as it is.
 *
 * Each (x - s) is computed directly (never sum(y*x) - m*sum(y), which
 * cancels). A block's partial sums accumulate in the element type (several
 * reassociated lanes, as every sum); the running totals are kept in f64, so
 * an f32 sum is a blocked sum of at most ONLINE_BLOCK terms per partial,
 * added in f64. The running max is the max of the block maxima, i.e. the
 * max itself, bit for bit. On the thread pool each chunk (cg_parallel.c:
 * its size depends on n only) runs its blocks this way and leaves its
 * totals relative to its own max; the chunks are merged by the same rule in
 * chunk order, so results do not depend on the number of threads.
 *
 * Values that depend on m and had memory only to serve several readers
 * (exp(x - m) read by the sum and by the gradient) lose it: inside the
 * group they are evaluated with bm, and every reader outside recomputes
 * them from x and the final m (the gradient's pass then reads x instead of
 * a stored exp, and nothing is written). So a softmax cross-entropy's
 * gradient makes two passes (this one; the one writing the gradient).
 *
 * Non-finite inputs: a block whose elements are all -inf is shifted by 0
 * instead of its max (x - bm would be NaN where the plain evaluation gives
 * -inf), rescales skip partial sums that are exactly 0, and when the max
 * is -inf the shifted sums are NaN (as x - m is); NaN and +inf give NaN.
 *
 * A plain sum before the max joins the group too when nothing reads it
 * before the max (sum(y) * logsumexp(z): the lowering puts the max after
 * sum(y)), so the written-out and the logsumexp forms read memory once.
 *
 * By rows: a max along the last axis of an [n, k] operand with a literal k
 * of at least ONLINE_ROW_MIN, and the row sums it shifts, the same way row
 * by row (results stored at the row); the pool splits the rows.
 *
 * Requires: plan has run (has_buf) and the row groups are formed; no loops
 * or branches in the function. Keeps: a member's operands are ready where
 * the group is emitted (at its max). */
#include <string.h>

#include "cg_internal.h"
#include "cg_math.h"

/* (ONLINE_ROW_MIN, cg_internal.h, is two blocks.) */
enum { ONLINE_BLOCK = 4096, ONLINE_CHUNK = 64 * ONLINE_BLOCK, ONLINE_PREFIX = 256, ONLINE_MAX_MEMBERS = 16,
       ONLINE_SLACK = 2 };

/* Member kinds (Slot.okind); the max itself is OK_MAX. */
enum { OK_FAIL = -1, OK_PLAIN, OK_EXP, OK_LIN, OK_MAX };

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* ---- forming ---- */

typedef struct Form {
  Body *B;
  const Inst *m, *x, *head;
  const Inst *const *results;
  int nresults;
  PtrVec *users; /* by id */
  PtrVec drop;   /* values losing their memory if the member is taken */
  int *seen;     /* by id: m->id + 1 once depends() knows the answer, */
  bool *dep;     /* which is this */
  int budget;    /* classify's visits left for this summand */
} Form;

/* Visits of a summand's expression (counting a shared value once per
 * path) before it is given up: keeps classify and the emission's walks
 * linear whatever the sharing. */
enum { CLASSIFY_BUDGET = 256 };

static bool is_result(Form *F, const Inst *v) {
  for (int k = 0; k < F->nresults; k++)
    if (F->results[k] == v)
      return true;
  return false;
}

/* Does v read m? (Values before m cannot: ids are in program order.) */
static bool depends(Form *F, const Inst *v) {
  if (v == F->m)
    return true;
  if (v->op == OP_param || v->id < F->m->id)
    return false;
  if (F->seen[v->id] == F->m->id + 1)
    return F->dep[v->id];
  bool d = false;
  for (int k = 0; k < v->nargs && !d; k++)
    d = depends(F, v->args[k]);
  F->seen[v->id] = F->m->id + 1;
  F->dep[v->id] = d;
  return d;
}

/* x - m, the shifted operand (by rows: x - broadcast(reshape(m, [n, 1]))) */
static bool shift_of(const Inst *m, const Inst *v) { return cg_shifting_max(v) == m; }

static bool is_shift(Form *F, const Inst *v) { return shift_of(F->m, v); }

/* Can a value depending on m give up its memory? Its readers must be able
 * to compute it where they are (elementwise values and reductions). */
static bool droppable(Form *F, const Inst *v) {
  Slot *s = cg_slot(F->B, v);
  if (!(ir_ops[v->op].flags & F_ELEM) || is_result(F, v) || s->view || s->rows >= 0 ||
      s->inplace_of || s->inplace_old || s->by_products || s->acc_into)
    return false;
  PtrVec *us = &F->users[v->id];
  for (int k = 0; k < us->len; k++) {
    const Inst *u = us->data[k];
    if (!(ir_ops[u->op].flags & F_ELEM) && ir_ops[u->op].shape != SH_REDUCE)
      return false;
  }
  return true;
}

/* The kind of summand e (OK_FAIL if the rescaling rules do not cover it). */
static int classify(Form *F, const Inst *e) {
  if (!depends(F, e))
    return OK_PLAIN;
  if (--F->budget < 0)
    return OK_FAIL;
  if (e->op != OP_param && cg_slot(F->B, e)->has_buf) {
    if (!droppable(F, e))
      return OK_FAIL;
    vec_push(&F->drop, (void *)e);
  }
  if (is_shift(F, e))
    return OK_LIN;
  int a = e->nargs > 0 ? classify(F, e->args[0]) : OK_FAIL;
  int b = e->nargs > 1 ? classify(F, e->args[1]) : OK_FAIL;
  if (a == OK_FAIL || (e->nargs > 1 && b == OK_FAIL))
    return OK_FAIL;
  switch (e->op) {
  case OP_exp: /* only of x - m itself: exp(2 (x - m)) would rescale by exp(2 (bm - m)) */
    return is_shift(F, e->args[0]) ? OK_EXP : OK_FAIL;
  case OP_neg:
    return a;
  case OP_mul:
    return a == OK_PLAIN ? b : b == OK_PLAIN ? a : OK_FAIL;
  case OP_div:
    return b == OK_PLAIN ? a : OK_FAIL;
  case OP_add:
  case OP_sub:
    return a == b ? a : OK_FAIL;
  default: /* mulz (its zero rule), maximum, ...: not rescalable */
    return OK_FAIL;
  }
}

/* Is v at hand where the group is emitted (its memory, if it keeps any,
 * written before the max)? */
static bool ready(Form *F, const Inst *v) {
  if (v->op == OP_param || v == F->m)
    return true;
  if (cg_slot(F->B, v)->has_buf)
    return v->id < F->head->id;
  for (int k = 0; k < v->nargs; k++)
    if (!ready(F, v->args[k]))
      return false;
  return true;
}

static bool float_type(DType dt) { return dt == DT_F32 || dt == DT_F64; }

/* Is every reader of v after the group's head (where the group, computing
 * v, is emitted)? */
static bool read_after_head(Form *F, const Inst *v) {
  PtrVec *us = &F->users[v->id];
  for (int k = 0; k < us->len; k++)
    if (((const Inst *)us->data[k])->id < F->head->id)
      return false;
  return true;
}

/* Takes the sums that fit: those after max m, and those before it that
 * nothing reads before it (plain ones: sum(y) * logsumexp(z), whose
 * lowering puts the max after sum(y)); returns how many are shifted. */
static int take_members(Form *F, Inst *first) {
  Body *B = F->B;
  int taken = 0, shifted = 0;
  for (Inst *j = first; j && taken < ONLINE_MAX_MEMBERS; j = j->next) {
    Slot *s = cg_slot(B, j);
    if (j == F->head || (j->id < F->head->id && (s->online >= 0 || !read_after_head(F, j))))
      continue;
    if (j->op != OP_sum || j->type.rank != F->m->type.rank || j->axes != F->m->axes || !s->has_buf ||
        s->rows >= 0 || s->acc_into ||
        s->by_products || s->inplace_of || !ir_shape_eq(&j->args[0]->type, &F->x->type))
      continue;
    F->drop.len = 0;
    F->budget = CLASSIFY_BUDGET;
    int kind = classify(F, j->args[0]);
    if (kind == OK_FAIL)
      continue;
    for (int k = 0; k < F->drop.len; k++)
      cg_slot(B, F->drop.data[k])->has_buf = false;
    /* (by rows, elements are evaluated by (row, column): any expression) */
    if ((F->m->type.rank == 0 && !cg_flat_ok(B, j->args[0])) || !ready(F, j->args[0])) {
      for (int k = 0; k < F->drop.len; k++)
        cg_slot(B, F->drop.data[k])->has_buf = true;
      continue;
    }
    s->online = F->head->id;
    s->okind = kind;
    taken++;
    shifted += kind != OK_PLAIN;
  }
  return shifted;
}

/* Can max i head a group: over all of a flat operand, or along the last
 * axis of an [n, k] one whose (literal) rows are long? */
static bool head_ok(Body *B, const Inst *i) {
  Slot *s = cg_slot(B, i);
  if (i->op != OP_max || !float_type(i->type.dtype) || !s->has_buf || s->rows >= 0 || s->online >= 0)
    return false;
  const Type *t = &i->args[0]->type;
  if (i->type.rank == 1) /* rows: a symbolic k may be short (W1's), so only a long literal */
    return t->rank == 2 && i->axes == 2u && t->dim[1].sym < 0 && t->dim[1].size >= ONLINE_ROW_MIN;
  if (i->type.rank != 0 || !cg_flat_ok(B, i->args[0]))
    return false;
  /* a literal size within one block is all in cache anyway */
  bool literal = true;
  int64_t size = 1;
  for (int k = 0; k < t->rank; k++) {
    literal &= t->dim[k].sym < 0;
    size *= t->dim[k].size;
  }
  return !(literal && size <= ONLINE_BLOCK);
}

static void cg_online_form(Body *B, int n) {
  Function *f = B->f;
  PtrVec *users = NULL;
  int *seen = NULL;
  bool *dep = NULL;
  for (Inst *i = f->first; i; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (!head_ok(B, i))
      continue;
    if (!users) {
      seen = xmalloc(sizeof(int) * (size_t)(n + 1));
      dep = xmalloc(sizeof(bool) * (size_t)(n + 1));
      memset(seen, 0, sizeof(int) * (size_t)(n + 1));
      users = xmalloc(sizeof(PtrVec) * (size_t)(n + 1));
      memset(users, 0, sizeof(PtrVec) * (size_t)(n + 1));
      for (Inst *u = f->first; u; u = u->next)
        for (int k = 0; k < u->nargs; k++)
          if (u->args[k]->op != OP_param)
            vec_push(&users[u->args[k]->id], u);
    }
    Form F = {B, i, i->args[0], i, (const Inst *const *)f->results, f->nresults, users, {0}, seen, dep, 0};
    if (take_members(&F, f->first) > 0) {
      s->online = i->id;
      s->okind = OK_MAX;
    } else { /* only plain sums: the loop groups do as well */
      for (Inst *j = f->first; j; j = j->next)
        if (cg_slot(B, j)->online == i->id)
          cg_slot(B, j)->online = -1;
    }
    vec_free(&F.drop);
  }
  if (users) {
    for (int k = 0; k <= n; k++)
      vec_free(&users[k]);
    free(users);
    free(seen);
    free(dep);
  }
}

/* ---- emitting ---- */

typedef struct Online {
  Inst *m;
  LLVMValueRef row; /* by rows: the row being computed (else NULL) */
  Inst *mem[ONLINE_MAX_MEMBERS]; /* the sums */
  int nmem;
  LLVMTypeRef t, d;              /* element type, f64 */
  LLVMValueRef fin_m, fin_v[ONLINE_MAX_MEMBERS]; /* body allocas: the results */
} Online;

/* Running totals: the max so far (element type); per member its sum
 * relative to that max and, for OK_LIN, the sum of its coefficients (f64). */
typedef struct State {
  LLVMValueRef m, v[ONLINE_MAX_MEMBERS], c[ONLINE_MAX_MEMBERS];
} State;

static LLVMValueRef fconst(LLVMTypeRef t, double x) { return LLVMConstReal(t, x); }

static LLVMValueRef load(Cg *g, LLVMTypeRef t, LLVMValueRef p) { return LLVMBuildLoad2(g->b, t, p, ""); }

static LLVMValueRef smin(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, a, b, ""), a, b, "");
}

static LLVMValueRef fcmp(Cg *g, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(g->b, p, a, b, "");
}

static void state_init(Body *B, Online *o, State *st) {
  Cg *g = B->g;
  st->m = cg_entry_alloca(B, o->t);
  LLVMBuildStore(g->b, fconst(o->t, -__builtin_inf()), st->m);
  for (int k = 0; k < o->nmem; k++) {
    st->v[k] = cg_entry_alloca(B, o->d);
    st->c[k] = cg_entry_alloca(B, o->d);
    LLVMBuildStore(g->b, fconst(o->d, 0), st->v[k]);
    LLVMBuildStore(g->b, fconst(o->d, 0), st->c[k]);
  }
}

/* exp(a - b) in f64, exactly 1 when a == b (also -inf == -inf). */
static LLVMValueRef factor(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef e = cg_math_exp(g->mod, g->b, LLVMBuildFSub(g->b, a, b, "rescale"));
  return LLVMBuildSelect(g->b, fcmp(g, LLVMRealOEQ, a, b), fconst(LLVMTypeOf(e), 1), e, "");
}

/* v * f, but 0 stays 0 (an all -inf block's 0 times an overflowed factor) */
static LLVMValueRef scale(Cg *g, LLVMValueRef v, LLVMValueRef f) {
  return LLVMBuildSelect(g->b, fcmp(g, LLVMRealOEQ, v, fconst(LLVMTypeOf(v), 0)), v,
                         LLVMBuildFMul(g->b, v, f, ""), "");
}

/* (a - b) * c, but 0 when a == b, when c == 0 (a sum of no coefficients
 * yet), and when a or b is -inf: only sums over elements that are all -inf
 * are relative to -inf (or to the 0 such a block is shifted by), and their
 * terms c * (-inf) are -inf, +inf or NaN whatever the shift. */
static LLVMValueRef shift(Cg *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = LLVMTypeOf(c);
  LLVMValueRef ninf = fconst(t, -__builtin_inf());
  LLVMValueRef none = LLVMBuildOr(g->b, fcmp(g, LLVMRealOEQ, a, b), fcmp(g, LLVMRealOEQ, c, fconst(t, 0)), "");
  none = LLVMBuildOr(g->b, none, fcmp(g, LLVMRealOEQ, a, ninf), "");
  none = LLVMBuildOr(g->b, none, fcmp(g, LLVMRealOEQ, b, ninf), "");
  return LLVMBuildSelect(g->b, none, fconst(LLVMTypeOf(c), 0),
                         LLVMBuildFMul(g->b, LLVMBuildFSub(g->b, a, b, ""), c, ""), "");
}

static LLVMValueRef to_d(Online *o, Cg *g, LLVMValueRef x) {
  return o->t == o->d ? x : LLVMBuildFPExt(g->b, x, o->d, "");
}

/* Adds partial sums v[], c[] (f64) taken relative to `sh`, from values
 * whose max is bm, into the running totals st. */
static void merge(Body *B, Online *o, State *st, LLVMValueRef bm, LLVMValueRef sh, LLVMValueRef *v,
                  LLVMValueRef *c) {
  Cg *g = B->g;
  LLVMValueRef old = load(g, o->t, st->m);
  LLVMValueRef args[2] = {old, bm};
  LLVMValueRef nm = cg_intrinsic(g, "llvm.maximum", o->t, args, 2);
  LLVMSetValueName2(nm, "online.max", 10);
  LLVMValueRef oldd = to_d(o, g, old), nmd = to_d(o, g, nm), shd = to_d(o, g, sh);
  LLVMValueRef f_old = NULL, f_new = NULL;
  for (int k = 0; k < o->nmem; k++) {
    Slot *s = cg_slot(B, o->mem[k]);
    LLVMValueRef acc = load(g, o->d, st->v[k]), r;
    if (s->okind == OK_EXP) {
      if (!f_old) {
        f_old = factor(g, oldd, nmd);
        f_new = factor(g, shd, nmd);
      }
      r = LLVMBuildFAdd(g->b, scale(g, acc, f_old), scale(g, v[k], f_new), "");
    } else if (s->okind == OK_LIN) {
      LLVMValueRef cs = load(g, o->d, st->c[k]);
      r = LLVMBuildFAdd(g->b, acc, shift(g, cs, oldd, nmd), "");
      r = LLVMBuildFAdd(g->b, r, LLVMBuildFAdd(g->b, v[k], shift(g, c[k], shd, nmd), ""), "");
      LLVMBuildStore(g->b, LLVMBuildFAdd(g->b, cs, c[k], ""), st->c[k]);
    } else {
      r = LLVMBuildFAdd(g->b, acc, v[k], "");
    }
    LLVMBuildStore(g->b, r, st->v[k]);
  }
  LLVMBuildStore(g->b, nm, st->m);
}

/* Every x - m of summand e (reached through values computed where used)
 * reads `to` instead. */
static void set_shifts(Body *B, const Inst *m, const Inst *e, LLVMValueRef to) {
  Slot *s = cg_slot(B, e);
  if (e->op == OP_param || s->has_buf)
    return;
  if (shift_of(m, e)) {
    s->scalar = to;
    return;
  }
  for (int k = 0; k < e->nargs; k++)
    set_shifts(B, m, e->args[k], to);
}

/* Element `lin` of the operand's space: flat, or (row, column). */
static Idx position(Body *B, Online *o, const Inst *v, LLVMValueRef lin) {
  Idx x = {v->type.rank <= 1 ? v->type.rank : -1, {lin}, lin};
  if (o->row) {
    Cg *g = B->g;
    LLVMValueRef k = cg_dim(B, v->type.dim[1]);
    x.rank = 2;
    x.i[0] = o->row;
    x.i[1] = LLVMBuildNSWSub(g->b, lin, LLVMBuildNSWMul(g->b, o->row, k, ""), "");
  }
  return x;
}

/* The max of x over [i0, i0 + len). */
static LLVMValueRef block_max(Body *B, Online *o, LLVMValueRef i0, LLVMValueRef len) {
  Cg *g = B->g;
  const Inst *x = o->m->args[0];
  CgAcc bm;
  cg_acc_init(B, &bm, OP_max, o->t);
  void *L;
  LLVMValueRef j = cg_loop_begin(B, len, &L);
  Idx ix = position(B, o, x, LLVMBuildNSWAdd(g->b, i0, j, ""));
  cg_acc_add(g, &bm, cg_eval(B, x, &ix));
  cg_loop_end(B, L);
  LLVMValueRef bmv = cg_acc_value(g, &bm);
  LLVMSetValueName2(bmv, "bmax", 4);
  return bmv;
}

/* The PLAIN member summing LIN member k's coefficients, or -1: k's summand
 * is a * (x - m) (or (x - m) * a) and that member's is a itself -- a
 * softmax cross-entropy's sum(y * (x - m)) beside its sum(y). The block
 * loop then keeps one accumulator for both (the same values, added in the
 * same order: the same bits), one add and one register fewer. */
static int coef_member(Body *B, Online *o, int k) {
  const Inst *e = o->mem[k]->args[0];
  if (cg_slot(B, o->mem[k])->okind != OK_LIN || e->op != OP_mul)
    return -1;
  const Inst *a = shift_of(o->m, e->args[1])   ? e->args[0]
                  : shift_of(o->m, e->args[0]) ? e->args[1]
                                               : NULL;
  for (int j = 0; a && j < o->nmem; j++)
    if (cg_slot(B, o->mem[j])->okind == OK_PLAIN && o->mem[j]->args[0] == a)
      return j;
  return -1;
}

/* acc[k] (and cacc[k]) = the block's sums, shifted by sh: one loop over
 * [i0, i0 + len), which with bm also takes the block's max. */
static void block_sums(Body *B, Online *o, LLVMValueRef i0, LLVMValueRef len, LLVMValueRef sh,
                       LLVMValueRef *acc, LLVMValueRef *cacc, CgAcc *bm) {
  Cg *g = B->g;
  const Inst *x = o->m->args[0];
  Slot *ms = cg_slot(B, o->m);
  for (int k = 0; k < o->nmem; k++) {
    LLVMBuildStore(g->b, fconst(o->t, 0), acc[k]);
    LLVMBuildStore(g->b, fconst(o->t, 0), cacc[k]);
  }
  LLVMValueRef saved = ms->scalar;
  ms->scalar = sh;
  void *L;
  LLVMValueRef j = cg_loop_begin(B, len, &L);
  if (bm) {
    Idx ix = position(B, o, x, LLVMBuildNSWAdd(g->b, i0, j, ""));
    cg_acc_add(g, bm, cg_eval(B, x, &ix));
  }
  for (int k = 0; k < o->nmem; k++) {
    const Inst *e = o->mem[k]->args[0];
    Idx y = position(B, o, e, LLVMBuildNSWAdd(g->b, i0, j, ""));
    LLVMBuildStore(g->b, cg_combine(g, OP_sum, load(g, o->t, acc[k]), cg_eval(B, e, &y)), acc[k]);
    if (cg_slot(B, o->mem[k])->okind == OK_LIN && coef_member(B, o, k) < 0) {
      /* its coefficients: x - m read as 1 */
      set_shifts(B, o->m, e, fconst(o->t, 1));
      Idx z = y;
      LLVMBuildStore(g->b, cg_combine(g, OP_sum, load(g, o->t, cacc[k]), cg_eval(B, e, &z)), cacc[k]);
      set_shifts(B, o->m, e, NULL);
    }
  }
  cg_loop_end(B, L);
  ms->scalar = saved;
  for (int k = 0; k < o->nmem; k++) {
    int plain = coef_member(B, o, k);
    if (plain >= 0)
      LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, o->t, acc[plain], "coefs"), cacc[k]);
  }
}

/* A block shifts by its max, except an all -inf one (by 0). */
static LLVMValueRef shift_of_max(Cg *g, Online *o, LLVMValueRef m) {
  return LLVMBuildSelect(g->b, fcmp(g, LLVMRealOEQ, m, fconst(o->t, -__builtin_inf())),
                         fconst(o->t, 0), m, "shift");
}

static void sums_allocas(Body *B, Online *o, LLVMValueRef *acc, LLVMValueRef *cacc) {
  for (int k = 0; k < o->nmem; k++) {
    acc[k] = cg_entry_alloca(B, o->t);
    cacc[k] = cg_entry_alloca(B, o->t);
  }
}

static void load_sums(Cg *g, Online *o, LLVMValueRef *acc, LLVMValueRef *cacc, LLVMValueRef *v,
                      LLVMValueRef *c) {
  for (int k = 0; k < o->nmem; k++) {
    v[k] = to_d(o, g, load(g, o->t, acc[k]));
    c[k] = to_d(o, g, load(g, o->t, cacc[k]));
  }
}

/* The whole range [0, len) as one block: its max, then its sums shifted
 * by it, stored as the results. */
static void one_block(Body *B, Online *o, LLVMValueRef len) {
  Cg *g = B->g;
  LLVMValueRef acc[ONLINE_MAX_MEMBERS], cacc[ONLINE_MAX_MEMBERS], v[ONLINE_MAX_MEMBERS], c[ONLINE_MAX_MEMBERS];
  sums_allocas(B, o, acc, cacc);
  LLVMValueRef bm = block_max(B, o, i64c(g, 0), len);
  block_sums(B, o, i64c(g, 0), len, shift_of_max(g, o, bm), acc, cacc, NULL);
  load_sums(g, o, acc, cacc, v, c);
  LLVMBuildStore(g->b, bm, o->fin_m);
  for (int k = 0; k < o->nmem; k++)
    LLVMBuildStore(g->b, v[k], o->fin_v[k]);
}

static void store_state(Cg *g, Online *o, State *st, LLVMValueRef m, LLVMValueRef *v, LLVMValueRef *c,
                        LLVMValueRef at) {
  LLVMValueRef p = at ? LLVMBuildInBoundsGEP2(g->b, o->t, m, &at, 1, "") : m;
  LLVMBuildStore(g->b, load(g, o->t, st->m), p);
  for (int k = 0; k < o->nmem; k++) {
    p = at ? LLVMBuildInBoundsGEP2(g->b, o->d, v[k], &at, 1, "") : v[k];
    LLVMBuildStore(g->b, load(g, o->d, st->v[k]), p);
    if (c) {
      p = LLVMBuildInBoundsGEP2(g->b, o->d, c[k], &at, 1, "");
      LLVMBuildStore(g->b, load(g, o->d, st->c[k]), p);
    }
  }
}

/* The blocks of [lo, hi) in order, merged into st, in ONE loop per block:
 * its sums shifted by the running max of the blocks before it (the first
 * block's by the max of its first ONLINE_PREFIX elements, from a loop of
 * their own), its max taken alongside. Two loops per block (the max
 * alone, then the sums from cache) left memory streaming one array at a
 * time, and idle while the sums computed: W3's pass ran at half the
 * bandwidth. The first block's whole max did the same to the first block
 * of every chunk (a quarter of the data with 16K-element chunks: W3's
 * pass 1.1x slower than with the prefix). The shift only has to keep the
 * terms finite and accurate: a block whose max exceeds it by more than
 * ONLINE_SLACK (growing data; an inf too, which then gives NaN as before;
 * a NaN compares false, and its sums are NaN whatever the shift) is
 * summed again from cache, shifted by its own max; each such block raises
 * the running max by more than the slack, so there are at most
 * (max - the prefix's max) / ONLINE_SLACK of them per chunk. Within the
 * slack, a term's exp(x - shift) is at most e^2 and its argument's
 * rounding error at most 2 ulp of 1 larger than with the block's max. */
static void blocks(Body *B, Online *o, State *st, LLVMValueRef lo, LLVMValueRef hi) {
  Cg *g = B->g;
  LLVMValueRef bl = i64c(g, ONLINE_BLOCK);
  LLVMValueRef len = LLVMBuildNSWSub(g->b, hi, lo, "");
  LLVMValueRef nb = LLVMBuildSDiv(g->b, LLVMBuildNSWAdd(g->b, len, i64c(g, ONLINE_BLOCK - 1), ""), bl, "");
  LLVMValueRef acc[ONLINE_MAX_MEMBERS], cacc[ONLINE_MAX_MEMBERS], v[ONLINE_MAX_MEMBERS], c[ONLINE_MAX_MEMBERS];
  sums_allocas(B, o, acc, cacc);
  LLVMValueRef prev = cg_entry_alloca(B, o->t);  /* the max so far */
  LLVMBuildStore(g->b, block_max(B, o, lo, smin(g, len, i64c(g, ONLINE_PREFIX))), prev);
  void *L;
  LLVMValueRef b = cg_loop_begin(B, nb, &L);
  LLVMValueRef i0 = LLVMBuildNSWAdd(g->b, lo, LLVMBuildNSWMul(g->b, b, bl, ""), "");
  LLVMValueRef blen = smin(g, LLVMBuildNSWSub(g->b, hi, i0, ""), bl);
  LLVMValueRef sofar = load(g, o->t, prev);
  LLVMSetValueName2(sofar, "sofar", 5);
  LLVMValueRef sh = shift_of_max(g, o, sofar);
  CgAcc bm;
  cg_acc_init(B, &bm, OP_max, o->t);
  block_sums(B, o, i0, blen, sh, acc, cacc, &bm);
  LLVMValueRef bmv = cg_acc_value(g, &bm);
  LLVMSetValueName2(bmv, "bmax", 4);
  LLVMBasicBlockRef redo = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "redo");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "merge");
  LLVMValueRef over = fcmp(g, LLVMRealOGT, bmv, LLVMBuildFAdd(g->b, sh, fconst(o->t, ONLINE_SLACK), ""));
  LLVMBuildCondBr(g->b, over, redo, join);
  LLVMPositionBuilderAtEnd(g->b, redo);
  block_sums(B, o, i0, blen, bmv, acc, cacc, NULL);
  LLVMBuildBr(g->b, join);
  LLVMPositionBuilderAtEnd(g->b, join);
  load_sums(g, o, acc, cacc, v, c);
  merge(B, o, st, bmv, LLVMBuildSelect(g->b, over, bmv, sh, "used.shift"), v, c);
  LLVMBuildStore(g->b, load(g, o->t, st->m), prev);
  cg_loop_end(B, L);
}

/* The group's pass: inline, or on the pool with one set of totals per
 * chunk merged in chunk order. The chunks are ONLINE_CHUNK elements, not
 * the pool's 16K: each starts its running max afresh from a guess (the
 * prefix's max, then the max of few blocks), and its first blocks are the
 * ones summed again when a block's max passes the guess by the slack. With
 * N(0, 25) logits that was 28% of the blocks in 16K-element chunks and is
 * 2.5% in these (W3's forward 0.81x the time; N(0, 1): 0.2% and 0%). */
static void online_version(Body *B, Online *o, LLVMValueRef n, bool on) {
  Cg *g = B->g;
  if (!on) { /* a call within one block (a 10-element softmax): no merging */
    one_block(B, o, n);
    return;
  }
  Par par;
  cg_par_begin_blocks(B, n, ONLINE_CHUNK, CG_PAR_MAX_CHUNKS, ONLINE_BLOCK, &par);
  LLVMValueRef pm = cg_par_partials(B, &par, o->t), pv[ONLINE_MAX_MEMBERS], pc[ONLINE_MAX_MEMBERS];
  for (int k = 0; k < o->nmem; k++) {
    pv[k] = cg_par_partials(B, &par, o->d);
    pc[k] = cg_par_partials(B, &par, o->d);
  }
  State st;
  state_init(B, o, &st);
  blocks(B, o, &st, par.begin, par.end);
  LLVMValueRef cpv[ONLINE_MAX_MEMBERS], cpc[ONLINE_MAX_MEMBERS];
  for (int k = 0; k < o->nmem; k++) {
    cpv[k] = cg_outer(B, pv[k]);
    cpc[k] = cg_outer(B, pc[k]);
  }
  store_state(g, o, &st, cg_outer(B, pm), cpv, cpc, cg_par_chunk_index(B, &par));
  cg_par_end(B, &par);
  State all;
  state_init(B, o, &all);
  void *L;
  LLVMValueRef c = cg_loop_begin(B, par.nchunks, &L);
  LLVMValueRef cm = load(g, o->t, LLVMBuildInBoundsGEP2(g->b, o->t, pm, &c, 1, ""));
  LLVMValueRef v[ONLINE_MAX_MEMBERS], cs[ONLINE_MAX_MEMBERS];
  for (int k = 0; k < o->nmem; k++) {
    v[k] = load(g, o->d, LLVMBuildInBoundsGEP2(g->b, o->d, pv[k], &c, 1, ""));
    cs[k] = load(g, o->d, LLVMBuildInBoundsGEP2(g->b, o->d, pc[k], &c, 1, ""));
  }
  merge(B, o, &all, cm, cm, v, cs);
  cg_loop_end(B, L);
  store_state(g, o, &all, o->fin_m, o->fin_v, NULL, NULL);
}

/* The results at position `at` (0, or the row) from totals m, v[] (f64),
 * over `count` elements; returns them in r[] (element type). */
static void results(Body *B, Online *o, LLVMValueRef m, LLVMValueRef *v, LLVMValueRef count,
                    LLVMValueRef at, LLVMValueRef *r) {
  Cg *g = B->g;
  cg_store(B, o->m->type.dtype, cg_slot(B, o->m)->buf, at, m);
  /* the max is -inf: every x - m is NaN (or there is no element) */
  LLVMValueRef nan_shift = LLVMBuildAnd(g->b, fcmp(g, LLVMRealOEQ, m, fconst(o->t, -__builtin_inf())),
                                        LLVMBuildICmp(g->b, LLVMIntSGT, count, i64c(g, 0), ""), "");
  for (int k = 0; k < o->nmem; k++) {
    Slot *s = cg_slot(B, o->mem[k]);
    r[k] = v[k];
    if (o->t != o->d)
      r[k] = LLVMBuildFPTrunc(g->b, r[k], o->t, "");
    if (s->okind != OK_PLAIN)
      r[k] = LLVMBuildSelect(g->b, nan_shift, fconst(o->t, __builtin_nan("")), r[k], "");
    cg_store(B, o->mem[k]->type.dtype, s->buf, at, r[k]);
  }
}

/* By rows: each row of [lo, hi) block after block, its results stored;
 * on the pool, chunks of rows (rows are independent: no partials). */
static void rows_version(Body *B, Online *o, bool on) {
  Cg *g = B->g;
  const Type *t = &o->m->args[0]->type;
  Par par;
  LLVMValueRef n = cg_dim(B, t->dim[0]);
  if (on)
    cg_par_begin_blocks(B, n, 2, 256, 1, &par);
  LLVMValueRef lo = on ? par.begin : i64c(g, 0), hi = on ? par.end : n;
  LLVMValueRef k = cg_dim(B, t->dim[1]);
  void *L;
  LLVMValueRef r = LLVMBuildNSWAdd(g->b, lo, cg_loop_begin(B, LLVMBuildNSWSub(g->b, hi, lo, ""), &L), "row");
  o->row = r;
  State st;
  state_init(B, o, &st);
  LLVMValueRef base = LLVMBuildNSWMul(g->b, r, k, "");
  blocks(B, o, &st, base, LLVMBuildNSWAdd(g->b, base, k, ""));
  LLVMValueRef v[ONLINE_MAX_MEMBERS], out[ONLINE_MAX_MEMBERS];
  for (int m = 0; m < o->nmem; m++)
    v[m] = load(g, o->d, st.v[m]);
  results(B, o, load(g, o->t, st.m), v, k, r, out);
  cg_loop_end(B, L);
  o->row = NULL;
  if (on)
    cg_par_end(B, &par);
}

static void cg_online_emit(Body *B, Inst *head, Inst *first) {
  Cg *g = B->g;
  Online o = {.m = head, .d = g->f64};
  o.t = cg_elem_type(g, head->type.dtype);
  for (Inst *j = first; j; j = j->next) /* (plain sums may come before the max) */
    if (cg_slot(B, j)->online == head->id && j != head)
      o.mem[o.nmem++] = j;
  LLVMValueRef n = cg_numel(B, &head->args[0]->type);
  Slot *ms = cg_slot(B, head);
  ms->computed = true;
  for (int k = 0; k < o.nmem; k++)
    cg_slot(B, o.mem[k])->computed = true;
  if (head->type.rank == 1) {
    rows_version(B, &o, cg_par_worth(B, n));
    return;
  }
  o.fin_m = cg_entry_alloca(B, o.t);
  for (int k = 0; k < o.nmem; k++)
    o.fin_v[k] = cg_entry_alloca(B, o.d);
  /* Within one block: the block inline. Beyond: the pool's version (under
   * two chunks it runs on the calling thread, directly), rather than a
   * third copy of the code for the sizes in between. */
  if (LLVMIsAConstantInt(n)) {
    online_version(B, &o, n, LLVMConstIntGetSExtValue(n) > ONLINE_BLOCK);
  } else {
    LLVMBasicBlockRef test = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef one = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "one_block");
    LLVMPositionBuilderAtEnd(g->b, one);
    online_version(B, &o, n, false);
    LLVMBasicBlockRef one_end = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef many = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "blocks");
    LLVMPositionBuilderAtEnd(g->b, many);
    online_version(B, &o, n, true);
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "online_done");
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, one_end);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, test);
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLE, n, i64c(g, ONLINE_BLOCK), ""), one, many);
    LLVMPositionBuilderAtEnd(g->b, join);
  }
  LLVMValueRef m = load(g, o.t, o.fin_m), v[ONLINE_MAX_MEMBERS], r[ONLINE_MAX_MEMBERS];
  for (int k = 0; k < o.nmem; k++)
    v[k] = load(g, o.d, o.fin_v[k]);
  results(B, &o, m, v, n, i64c(g, 0), r);
  ms->scalar = m;
  for (int k = 0; k < o.nmem; k++)
    cg_slot(B, o.mem[k])->scalar = r[k];
}

/* ---- the strategy ---- */

static void online_recognize(Body *B, Inst *first) {
  if (first != B->f->first || B->has_regions)
    return;
  cg_online_form(B, B->n);
  for (Inst *h = first; h; h = h->next) {
    Slot *hs = cg_slot(B, h);
    if (hs->online != h->id || hs->okind != OK_MAX)
      continue;
    int k = cg_kernel_new(B, &cg_online_strategy, h);
    for (Inst *i = first; i; i = i->next)
      if (cg_slot(B, i)->online == h->id)
        cg_kernel_add(B, k, i, cg_slot(B, i)->okind, CG_IN_MEMORY);
  }
}

static void online_emit(Body *B, CgKernel *k) { cg_online_emit(B, k->head, k->first); }

static const char *const online_roles[] = {[OK_PLAIN] = "plain", [OK_EXP] = "exp", [OK_LIN] = "lin",
                                           [OK_MAX] = "max"};

/* "online [n] blocks of 4096, pool: %3 max mem %7 exp mem ...; totals in
 * f64, chunks merged in order" */
static void online_describe(Body *B, const CgKernel *k, FILE *out) {
  const Inst *m = k->head;
  fputs("online", out);
  cg_plan_shape(B, &m->args[0]->type, out);
  fprintf(out, m->type.rank == 1 ? " rows in blocks of %d" : " blocks of %d", ONLINE_BLOCK);
  fputc(':', out);
  cg_plan_members(B, k, out);
  fputs("; rescaled into f64 totals", out);
}

const CgStrategy cg_online_strategy = {"online", online_roles, online_recognize, NULL, NULL,
                                       online_emit, online_describe};
