/* cg_nest.c -- nest groups (cg_nest_strategy): consecutive values that
 * each need a loop nest of their own over one multi-axis space share one.
 *
 * A value that reads its operands at other positions than its own (a
 * gather, a permuting scatter, a broadcast or transpose among its
 * operands) is not a loop group's member (cg_groups.c: those read at one
 * flat index), and a reduction of such a value over all axes is not
 * either: each was a pass of its own over the space. A loss over a
 * gathered tensor and that gather's adjoint (bench take3: the sum
 * `w * square(take(a, ...))` and the scatter of its gradient) read the
 * same rows twice. Here such values over the same space of rank 2 or
 * more, and the reductions of values over it to a scalar, are computed in
 * one nest, each member's element in a register, later members reading it
 * there; a member read by nothing outside the group gets no memory. The
 * innermost axis runs in the inner loop: with a literal size LLVM unrolls
 * it and vectorizes the rows, as for a fill of its own.
 *
 * Members read each other only at their own position: a member that reads
 * another member through anything but elementwise ops (at a position of
 * its own choosing) is not taken. The nest runs on the pool in chunks of
 * rows (axis 0) outside loop bodies, when a fill would (cg_par_rows_worth);
 * sums are combined in chunk order (cg_groups.c's helpers).
 *
 * Requires: has_buf, and every earlier strategy's kernels (flat loop
 * groups take what they can first). Keeps: a member's operands with
 * memory are computed before the group's first member. */
#include "cg_internal.h"

/* Can i be a nest group's member, and over which space? */
static bool nest_member(Body *B, const Inst *i, const Type **space) {
  Slot *s = cg_slot(B, i);
  if (s->by_products || s->acc_into || s->inplace_of || s->inplace_old || s->view || i->nregions ||
      i->op == OP_reshape || i->op == OP_proj)
    return false;
  if (ir_ops[i->op].shape == SH_REDUCE) {
    if (i->type.rank != 0 || i->args[0]->type.rank < 2)
      return false;
    *space = &i->args[0]->type;
    return true;
  }
  if (!cg_fills(i) || i->type.rank < 2)
    return false;
  *space = &i->type;
  return true;
}

/* Does v's definition read a member of group gid at another position than
 * its own: past an op that does not keep its operand where it stands
 * (`keeps`; here, elementwise ops, and a reduction over the space)?
 * Batch groups (cg_batch.c) ask the same of their batch axis. */
bool cg_reads_member_moved(Body *B, const Inst *v, int gid, bool (*keeps)(const Inst *), bool moved) {
  bool moves = moved || !keeps(v);
  for (int k = 0; k < v->nargs; k++) {
    const Inst *a = v->args[k];
    Slot *s = cg_slot(B, a);
    if (a->op == OP_param || a->op == OP_arg)
      continue;
    if (s->has_buf ? s->group == gid && moves : cg_reads_member_moved(B, a, gid, keeps, moves))
      return true;
  }
  return false;
}

static bool keeps_position(const Inst *v) {
  return ir_op_is(v->op, F_ELEM) || ir_ops[v->op].shape == SH_REDUCE;
}

/* Does v's definition read (through values computed where used) a value
 * the group g stepped over? */
bool cg_reads_skipped(Body *B, const Inst *v, int g) {
  for (int k = 0; k < v->nargs; k++) {
    const Inst *a = v->args[k];
    if (a->op == OP_param || a->op == OP_arg)
      continue;
    if (cg_slot(B, a)->has_buf ? B->stepped_over[a->id] == g : cg_reads_skipped(B, a, g))
      return true;
  }
  return false;
}

/* Groups never span a region op, nor a value another kernel computes. A
 * value left to a loop or call of its own (a scalar, a product) between
 * members is stepped over: it runs where it stands, after the group, so
 * no later member may read it. A loss's scalars stand between its
 * [n, k] values. */
static void group_block(Body *B, Inst *first) {
  enum { MAX_MEMBERS = 16 };
  int g = -1, members = 0;
  const Type *space = NULL;
  Slot *head = NULL;
  for (Inst *i = first; i; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (!s->has_buf)
      continue;
    const Type *sp;
    bool member = s->kernel < 0 && s->group < 0 && nest_member(B, i, &sp);
    if (member && g >= 0 && members < MAX_MEMBERS && ir_shape_eq(sp, space) &&
        !cg_group_reads_reduction(B, i, g) && !cg_reads_member_moved(B, i, g, keeps_position, false) &&
        !cg_reads_skipped(B, i, g)) {
      s->group = g;
      head->group_last = i;
      members++;
      continue;
    }
    if (s->kernel >= 0 || s->group >= 0 || i->nregions) {
      g = -1;
      continue;
    }
    if (!member && g >= 0) {
      B->stepped_over[i->id] = g;
      continue;
    }
    g = member ? i->id : -1;
    members = 1;
    space = member ? sp : NULL;
    if (member) {
      s->group = g;
      head = s;
      s->group_last = i;
    }
  }
}

static void nest_recognize(Body *B, Inst *first) {
  group_block(B, first);
  cg_group_kernels(B, first, &cg_nest_strategy);
}

typedef struct Nest {
  Inst *first, *end; /* members are in [first, end) */
  int gid;
  CgAcc *acc;        /* the running value of each reduction */
  int64_t row;       /* the innermost axis' literal size, when written out; else 0 */
} Nest;

enum { NEST_ROW_MAX = 16 };

/* Every member's element at x; each store to memory is left in `stores`
 * (value, linear index) when it is non-NULL, else made at once. */
static void members_at(Body *B, Nest *n, Idx *x, LLVMValueRef (*stores)[2], int *nstores) {
  Cg *g = B->g;
  int r = 0;
  x->lin = NULL;
  for (Inst *i = n->first; i != n->end; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->group != n->gid)
      continue;
    cg_debug_at(g, i);
    if (ir_ops[i->op].shape == SH_REDUCE) {
      cg_acc_add(g, &n->acc[r++], cg_eval(B, i->args[0], x));
      continue;
    }
    s->reg = cg_eval_def(B, i, x);
    if (s->internal)
      continue;
    LLVMValueRef lin = cg_lin(B, x, &i->type);
    if (stores) {
      stores[*nstores][0] = s->reg;
      stores[*nstores][1] = lin;
      ++*nstores;
    } else {
      cg_store(B, i->type.dtype, s->buf, lin, s->reg);
    }
  }
  for (Inst *i = n->first; i != n->end; i = i->next)
    if (cg_slot(B, i)->group == n->gid && ir_ops[i->op].shape != SH_REDUCE)
      cg_slot(B, i)->reg = NULL;
}

static void nest_element(Body *B, Idx *x, void *ctx) { members_at(B, ctx, x, NULL, NULL); }

/* A row of a short literal innermost axis, written out: every member's
 * elements first, then the row's stores. Stores between the loads let
 * LLVM neither merge a load of one member with the same load of another
 * (a permuting scatter reads its operand where the gather read it) nor
 * group them into whole-row loads; the loop over rows then gathered
 * element by element (bench take3). */
static void nest_row(Body *B, Idx *x, void *ctx) {
  Nest *n = ctx;
  int last = x->rank - 1, nst = 0, per = 0;
  for (Inst *i = n->first; i != n->end; i = i->next)
    per += cg_slot(B, i)->group == n->gid && ir_ops[i->op].shape != SH_REDUCE;
  LLVMValueRef(*stores)[2] = xmalloc(sizeof *stores * (size_t)(per * n->row + 1));
  for (int64_t j = 0; j < n->row; j++) {
    x->i[last] = LLVMConstInt(B->g->i64, (unsigned long long)j, 1);
    members_at(B, n, x, stores, &nst);
  }
  int k = 0;
  for (int64_t j = 0; j < n->row; j++)
    for (Inst *i = n->first; i != n->end; i = i->next)
      if (cg_slot(B, i)->group == n->gid && ir_ops[i->op].shape != SH_REDUCE && !cg_slot(B, i)->internal) {
        cg_store(B, i->type.dtype, cg_slot(B, i)->buf, stores[k][1], stores[k][0]);
        k++;
      }
  free(stores);
}

static void nest_emit(Body *B, CgKernel *k) {
  Inst *first = k->head;
  int gid = first->id;
  Nest n = {first, cg_slot(B, first)->group_last->next, gid, NULL, 0};
  const Type *t;
  nest_member(B, first, &t);
  Dim inner = t->dim[t->rank - 1];
  if (inner.sym < 0 && inner.size <= NEST_ROW_MAX)
    n.row = inner.size;
  int to = n.row ? t->rank - 1 : t->rank; /* the loops' axes: [0, to) */
  CgLoopBody *body = n.row ? nest_row : nest_element;
  for (Inst *i = first; i != n.end; i = i->next)
    if (cg_slot(B, i)->group == gid && ir_ops[i->op].shape != SH_REDUCE)
      cg_check_slice_once(B, i);
  LLVMValueRef *fin = cg_group_fin(B, first, n.end, gid);
  int nred = cg_group_reductions(B, first, n.end, gid);
  LLVMValueRef *part = xmalloc(sizeof(LLVMValueRef) * (size_t)(nred + 1));
  n.acc = xmalloc(sizeof(CgAcc) * (size_t)(nred + 1));
  bool on = cg_par_rows_worth(B, cg_numel(B, t));
  Par par;
  Idx x = {t->rank, {0}, NULL};
  if (on)
    cg_par_begin_rows(B, cg_numel_span(B, t, 0, 1), cg_numel(B, t), &par);
  cg_group_acc_begin(B, first, n.end, gid, on ? &par : NULL, n.acc, part);
  cg_alias_begin(B);
  if (on) {
    CgLoop L;
    x.i[0] = cg_loop_range(B, par.begin, par.end, &L);
    cg_loop_nest(B, t, 1, to, &x, body, &n);
    cg_loop_close(B, &L);
  } else {
    cg_loop_nest(B, t, 0, to, &x, body, &n);
  }
  cg_alias_end(B);
  cg_group_acc_end(B, first, n.end, gid, on ? &par : NULL, n.acc, part, fin);
  if (on) {
    cg_par_end(B, &par);
    cg_group_acc_combine(B, first, n.end, gid, &par, part, fin);
  }
  cg_group_done(B, first, n.end, gid, fin);
  free(part);
  free(n.acc);
}

static const char *const nest_roles[] = {"elem", "sum"};

/* "nest [n, 3], pool: %10 sum mem %15 elem mem" */
static void nest_describe(Body *B, const CgKernel *k, FILE *out) {
  const Type *space;
  nest_member(B, k->head, &space);
  cg_plan_group(B, k, space, cg_par_rows_planned(k->head, space), out);
}

const CgStrategy cg_nest_strategy = {"nest", nest_roles, nest_recognize, NULL, NULL, nest_emit,
                                     nest_describe};
