/* cg_groups.c -- loop groups (cg_flat_strategy): consecutive values
 * computed by flat loops over the same number of elements share one loop
 * (see below). cg_memory.c decides memory, the plan's earlier strategies
 * take their kernels, then flat_recognize marks the groups of a block, and
 * cg_group_emit emits a group's loop -- inline or on the thread pool, by
 * blocks of rows when the group sits between a matrix-vector pair
 * (cg_gemvpair.c) -- where its first member stands.
 *
 * Requires: has_buf, and the region, in-place, row and online kernels.
 * Keeps: a member's operands are ready at the group's first member. */
#include <string.h>

#include "cg_internal.h"

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* ---- loop groups ----
 *
 * Consecutive values with memory that are computed by flat loops over the
 * same number of elements (elementwise values, and reductions over all
 * axes of such an operand) share one loop: each member's element is
 * computed once per iteration and later members read it from a register.
 * A member read by nothing outside its group needs no memory at all. So
 * the forward values the adjoint reuses (tanh, sigmoid...) and the loss's
 * sum come out of the same pass as the gradient, as a hand-written loop
 * would have it. A member may not read a reduction of its own group (that
 * is only known after the loop). */

bool cg_flat_member(Body *B, const Inst *i, const Type **space) {
  if (cg_slot(B, i)->by_products || cg_slot(B, i)->inplace_of)
    return false;
  if (ir_ops[i->op].shape == SH_REDUCE) {
    if (i->type.rank != 0 || !cg_flat_ok(B, i->args[0]))
      return false;
    *space = &i->args[0]->type;
    return true;
  }
  if (!ir_op_is(i->op, F_ELEM) || !cg_flat_def_ok(B, i))
    return false;
  *space = &i->type;
  return true;
}


/* Does v (computed in the current iteration) read a reduction of group g? */
bool cg_group_reads_reduction(Body *B, const Inst *v, int g) {
  for (int k = 0; k < v->nargs; k++) {
    const Inst *a = v->args[k];
    Slot *s = cg_slot(B, a);
    if (s->group == g && ir_ops[a->op].shape == SH_REDUCE)
      return true;
    if (!s->has_buf && cg_group_reads_reduction(B, a, g))
      return true;
  }
  return false;
}

/* Is every read of v inside group g (through values computed where used)? */
bool cg_group_only_reads(Body *B, const Inst *v, int g, PtrVec *users) {
  PtrVec *us = &users[v->id];
  for (int k = 0; k < us->len; k++) {
    const Inst *u = us->data[k];
    Slot *s = cg_slot(B, u);
    /* a value yielded by a region (nuses counts yields) escapes the group */
    if (!s->has_buf && u->nuses != users[u->id].len)
      return false;
    if (s->has_buf ? s->group != g : !cg_group_only_reads(B, u, g, users))
      return false;
  }
  return true;
}

/* Is v's value at hand where `head` is emitted? */
static bool ready_before(Body *B, const Inst *v, const Inst *head) {
  if (v->op == OP_param || v->op == OP_arg || v->parent != head->parent)
    return true;
  if (cg_slot(B, v)->has_buf)
    return v->id < head->id;
  for (int k = 0; k < v->nargs; k++)
    if (!ready_before(B, v->args[k], head))
      return false;
  return true;
}

/* Groups never span a region op (each body's are formed with its block).
 * At most MAX_MEMBERS per group (each at most MAX_FUSED operations): one
 * loop body stays small enough for LLVM's per-block passes. */
static void group_block(Body *B, Inst *first) {
  enum { MAX_MEMBERS = 16 };
  int g = -1, members = 0;
  const Type *space = NULL;
  Slot *head = NULL; /* the current group's first member */
  Inst *head_inst = NULL;
  for (Inst *i = first; i; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (!s->has_buf)
      continue;
    if (s->kernel >= 0) { /* an earlier strategy's (a loop, a row group...) */
      g = -1;
      continue;
    }
    /* a view among the members is made before the group's loop */
    if (s->view && g >= 0 && ready_before(B, i->args[0], head_inst) &&
        ready_before(B, i->args[1], head_inst))
      continue;
    const Type *sp;
    bool member = cg_flat_member(B, i, &sp);
    if (member && g >= 0 && members < MAX_MEMBERS && ir_shape_eq(sp, space) &&
        !cg_group_reads_reduction(B, i, g)) {
      s->group = g;
      head->group_last = i;
      members++;
      continue;
    }
    g = member ? i->id : -1;
    members = 1;
    space = member ? sp : NULL;
    s->group = g;
    head = s;
    head_inst = i;
    s->group_last = i;
  }
}

/* The kernels of the groups marked in a block (Slot.group: the first
 * member's id; group_last), for loop and nest groups alike: a group of
 * one member stays a plain loop (the last strategy's); a member read only
 * inside its group gets no memory. */
void cg_group_kernels(Body *B, Inst *first, const CgStrategy *st) {
  for (Inst *h = first; h; h = h->next) {
    Slot *hs = cg_slot(B, h);
    if (hs->kernel >= 0 || hs->group != h->id)
      continue;
    int count = 0;
    for (Inst *i = h; i != hs->group_last->next; i = i->next)
      count += cg_slot(B, i)->group == h->id;
    if (count < 2) {
      hs->group = -1;
      continue;
    }
    int k = cg_kernel_new(B, st, h);
    for (Inst *i = h; i != hs->group_last->next; i = i->next) {
      Slot *s = cg_slot(B, i);
      if (s->group != h->id)
        continue;
      /* (nuses counts results and yields too: those need memory) */
      if (i->nuses == (int)B->users[i->id].len && cg_group_only_reads(B, i, h->id, B->users))
        s->internal = true;
      cg_kernel_add(B, k, i, ir_ops[i->op].shape == SH_REDUCE,
                    s->internal ? CG_IN_REGISTER : CG_IN_MEMORY);
    }
  }
}

static void flat_recognize(Body *B, Inst *first) {
  group_block(B, first);
  cg_group_kernels(B, first, &cg_flat_strategy);
}

typedef struct Group {
  Inst *first, *end; /* its members are in [first, end) */
  const Type *space;
  LLVMValueRef *fin; /* per reduction of the group: where its value ends up */
} Group;

/* ---- a group's reductions (loop and nest groups alike) ----
 *
 * Each reduction over the whole space keeps a running value in the
 * function that runs the loop; on the pool each chunk leaves its value in
 * a partial, and the partials are combined in chunk order, so the result
 * does not depend on the number of threads. */

static bool group_reduction(Body *B, const Inst *i, int gid) {
  return cg_slot(B, i)->group == gid && ir_ops[i->op].shape == SH_REDUCE;
}

int cg_group_reductions(Body *B, Inst *first, Inst *end, int gid) {
  int n = 0;
  for (Inst *i = first; i != end; i = i->next)
    n += group_reduction(B, i, gid);
  return n;
}

void cg_group_acc_begin(Body *B, Inst *first, Inst *end, int gid, Par *par, CgAcc *acc,
                        LLVMValueRef *part) {
  int r = 0;
  for (Inst *i = first; i != end; i = i->next) {
    if (!group_reduction(B, i, gid))
      continue;
    cg_slot(B, i)->reg = NULL;
    LLVMTypeRef t = cg_elem_type(B->g, i->type.dtype);
    cg_acc_init(B, &acc[r], i->op, t);
    if (par)
      part[r] = cg_par_partials(B, par, t);
    r++;
  }
}

void cg_group_acc_end(Body *B, Inst *first, Inst *end, int gid, Par *par, CgAcc *acc,
                      LLVMValueRef *part, LLVMValueRef *fin) {
  Cg *g = B->g;
  LLVMValueRef c = par ? cg_par_chunk_index(B, par) : NULL;
  int r = 0;
  for (Inst *i = first; i != end; i = i->next) {
    if (!group_reduction(B, i, gid))
      continue;
    LLVMTypeRef t = cg_elem_type(g, i->type.dtype);
    LLVMValueRef at = par ? LLVMBuildInBoundsGEP2(g->b, t, cg_outer(B, part[r]), &c, 1, "") : fin[r];
    LLVMBuildStore(g->b, cg_acc_value(g, &acc[r]), at);
    r++;
  }
}

void cg_group_acc_combine(Body *B, Inst *first, Inst *end, int gid, Par *par, LLVMValueRef *part,
                          LLVMValueRef *fin) {
  Cg *g = B->g;
  int r = 0;
  for (Inst *i = first; i != end; i = i->next) {
    if (!group_reduction(B, i, gid))
      continue;
    LLVMTypeRef t = cg_elem_type(g, i->type.dtype);
    LLVMBuildStore(g->b, cg_reduce_init(i->op, t), fin[r]);
    CgLoop C;
    LLVMValueRef k = cg_loop_range(B, i64c(g, 0), par->nchunks, &C);
    LLVMValueRef x = LLVMBuildLoad2(g->b, t, LLVMBuildInBoundsGEP2(g->b, t, part[r], &k, 1, ""), "");
    LLVMBuildStore(g->b, cg_combine(g, i->op, LLVMBuildLoad2(g->b, t, fin[r], ""), x), fin[r]);
    cg_loop_close(B, &C);
    r++;
  }
}

LLVMValueRef *cg_group_fin(Body *B, Inst *first, Inst *end, int gid) {
  LLVMValueRef *fin = xmalloc(sizeof(LLVMValueRef) * (size_t)(cg_group_reductions(B, first, end, gid) + 1));
  int r = 0;
  for (Inst *i = first; i != end; i = i->next)
    if (group_reduction(B, i, gid))
      fin[r++] = cg_entry_alloca(B, cg_elem_type(B->g, i->type.dtype));
  return fin;
}

void cg_group_done(Body *B, Inst *first, Inst *end, int gid, LLVMValueRef *fin) {
  int r = 0;
  for (Inst *i = first; i != end; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->group != gid)
      continue;
    s->reg = NULL;
    s->computed = true;
    if (ir_ops[i->op].shape == SH_REDUCE) {
      s->scalar = LLVMBuildLoad2(B->g->b, cg_elem_type(B->g, i->type.dtype), fin[r++], "");
      cg_store(B, i->type.dtype, s->buf, i64c(B->g, 0), s->scalar);
    }
  }
  free(fin);
}

/* A group's loop, inline or on the pool (on: see cg_par_worth). */
static void group_version(Body *B, Group *gr, LLVMValueRef n, bool on) {
  Cg *g = B->g;
  int gid = gr->first->id;
  const Type *space = gr->space;
  CgPair *pair = cg_pair_of(B, gr->first);
  Par par;
  if (on && pair)
    cg_par_begin_chunks(B, n, cg_pair_max_chunks(B, pair), &par);
  else if (on)
    cg_par_begin(B, n, &par);
  int nred = cg_group_reductions(B, gr->first, gr->end, gid);
  LLVMValueRef *part = xmalloc(sizeof(LLVMValueRef) * (size_t)(nred + 1));
  CgAcc *acc = xmalloc(sizeof(CgAcc) * (size_t)(nred + 1));
  cg_group_acc_begin(B, gr->first, gr->end, gid, on ? &par : NULL, acc, part);
  CgLoop L, blocks;
  LLVMValueRef iv, i0 = NULL, rows = NULL, chunk = NULL;
  int r = 0;
  if (pair) { /* blocks of rows: the forward product, the members, the adjoint */
    LLVMValueRef lo = on ? par.begin : i64c(g, 0), hi = on ? par.end : n;
    chunk = on ? cg_par_chunk_index(B, &par) : NULL;
    cg_pair_chunk_begin(B, pair, chunk);
    LLVMValueRef rb = cg_pair_block_rows(B, pair), len = LLVMBuildNSWSub(g->b, hi, lo, "");
    LLVMValueRef nb = LLVMBuildSDiv(g->b, cg_add64(g, len, LLVMBuildNSWSub(g->b, rb, i64c(g, 1), "")), rb, "");
    i0 = cg_add64(g, lo, cg_mul64(g, cg_loop_range(B, i64c(g, 0), nb, &blocks), rb));
    LLVMValueRef left = LLVMBuildNSWSub(g->b, hi, i0, "");
    rows = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, left, rb, ""), left, rb, "");
    cg_pair_forward(B, pair, i0, rows);
  }
  cg_alias_begin(B);
  if (pair)
    iv = cg_loop_range(B, i0, cg_add64(g, i0, rows), &L);
  else
    iv = on ? cg_loop_range(B, par.begin, par.end, &L) : cg_loop_range(B, i64c(g, 0), n, &L);
  L.short_trip = !on && !pair && cg_par_short(B);
  for (Inst *i = gr->first; i != gr->end; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->group != gid)
      continue;
    Idx x = {space->rank <= 1 ? space->rank : -1, {iv}, iv};
    cg_debug_at(g, i);
    if (ir_ops[i->op].shape == SH_REDUCE) {
      cg_acc_add(g, &acc[r++], cg_eval(B, i->args[0], &x));
      continue;
    }
    s->reg = cg_eval_def(B, i, &x);
    if (s->pairbuf)
      cg_pair_store(B, i, iv, s->reg);
    else if (!s->internal)
      cg_store(B, i->type.dtype, s->buf, iv, s->reg);
  }
  cg_loop_close(B, &L);
  cg_alias_end(B);
  if (pair) {
    cg_pair_adjoint(B, pair, i0, rows, chunk);
    cg_loop_close(B, &blocks);
    cg_pair_group_end(B, pair);
  }
  for (Inst *i = gr->first; i != gr->end; i = i->next)
    if (cg_slot(B, i)->group == gid)
      cg_slot(B, i)->reg = NULL;
  if (pair && !on)
    cg_pair_set_chunks(B, pair, i64c(g, 1));
  cg_group_acc_end(B, gr->first, gr->end, gid, on ? &par : NULL, acc, part, gr->fin);
  if (on) {
    cg_par_end(B, &par);
    if (pair)
      cg_pair_set_chunks(B, pair, par.nchunks);
    cg_group_acc_combine(B, gr->first, gr->end, gid, &par, part, gr->fin);
  }
  free(part);
  free(acc);
}

/* One loop computing every member of the group that starts at `first`. */
void cg_group_emit(Body *B, Inst *first) {
  int gid = first->id;
  Group gr = {first, cg_slot(B, first)->group_last->next, NULL, NULL};
  cg_flat_member(B, first, &gr.space);
  gr.fin = cg_group_fin(B, first, gr.end, gid);
  for (Inst *i = first; i != gr.end; i = i->next)
    if (cg_slot(B, i)->view)
      cg_emit_view(B, i);
  LLVMValueRef n = cg_numel(B, gr.space);
  group_version(B, &gr, n, cg_par_worth(B, n));
  cg_group_done(B, first, gr.end, gid, gr.fin);
}

static void flat_emit(Body *B, CgKernel *k) { cg_group_emit(B, k->head); }

static const char *const flat_roles[] = {"elem", "sum"};

/* "flat [n], pool: %3 elem mem %4 sum reg ...; sums in chunk order" */
static void flat_describe(Body *B, const CgKernel *k, FILE *out) {
  const Type *space;
  cg_flat_member(B, k->head, &space);
  cg_plan_group(B, k, space, cg_par_planned(k->head, space), out);
}

const CgStrategy cg_flat_strategy = {"flat", flat_roles, flat_recognize, NULL, NULL, flat_emit,
                                     flat_describe};
