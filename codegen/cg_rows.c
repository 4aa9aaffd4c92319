/* Row groups: a chain over an [n, k] space with reductions along its rows
 * -- softmax, log-sum-exp, an EM step's responsibilities -- computed in one
 * loop over blocks of rows, with the lanes over rows.
 *
 * The values of such a chain that get memory (cg_memory.c: a value
 * read twice, a reduction) would each be a loop of its own over [n, k], and
 * the row max or sum (a loop over k per row, k small) does not vectorize
 * when k is 8. Here the members -- elementwise values over [n, k],
 * reductions along axis 1 ([n]), over both axes (a scalar) and along axis 0
 * ([k]), and values over [n] computed from the row reductions (the log of
 * a row sum, and sums of such values) -- are computed for ROWS_BLOCK rows
 * at a time:
 *
 *   for each block of rows i0 ..:
 *     for each pass:                 (a pass ends where a member reads a
 *       for j < k:                    row reduction of the same pass)
 *         for i in the block:        <- this loop vectorizes: lanes are rows
 *           each [n, k] member of the pass at (i, j)
 *       for i in the block:
 *         each [n] member of the pass at i
 *
 * Within a pass a member's element lives in a register (Slot.reg); a member
 * read by a later pass is kept in a block scratch (ROWS_BLOCK x ROWS_KMAX on
 * the stack, laid out j-major so the lanes read it contiguously); a member
 * read outside the group is also stored to its memory. Row reductions
 * accumulate in per-block arrays, each row combined over j = 0, 1, .. in
 * order, exactly as a loop of its own (cg_reduce.c) does; sums over both
 * axes keep one accumulator across the group (reassociated like every sum),
 * column sums one per j and block, added in block order. The group runs
 * on the thread pool (inline for a literal n under two chunks' worth) in
 * chunks of whole blocks that depend on n alone
 * (rows_version), each chunk's sums and column sums kept apart and added
 * in chunk order: results do not depend on the number of threads.
 *
 * On the pool, a last pass with no row reduction runs a block behind, in
 * the same loop as the pass before it (emit_blocks), its scratch then
 * holding two blocks.
 *
 * A block scratch holds at most ROWS_KMAX columns. Rows of ROWS_WIDE or
 * more columns run row by row instead (cg_rows_wide.c), lanes over the
 * columns. With a symbolic k the group is emitted two or three times
 * behind tests of k, the last copy being the members' usual loops
 * (B->rows_fallback); with a literal k one way, or no group when k is
 * neither narrow nor wide. Members therefore keep their memory unless k
 * is a literal (then members read only inside the group, or only within
 * their pass when row by row, get none).
 *
 * A group needs a reduction. One without a row reduction -- column sums
 * (a broadcast parameter's gradient), sums over both axes, perhaps a group
 * of one -- is kept when its values come from vectors alone (it reads no
 * memory of rank 2, directly or through a view, and writes none): it
 * saves the memory of every value the sums read, and its lanes run over
 * rows where a loop over a row's few columns would not vectorize;
 * otherwise it would only trade one loop for another (a column sum of
 * memory has its own loop by periods, cg_reduce.c).
 *
 * Groups form in every block (a function body, a loop's or branch's body)
 * among its own values; values of other blocks are read from memory.
 *
 * Requires: cg_memory.c's has_buf, the region and in-place kernels.
 * Keeps: values are computed before they are read, as in program order. */
#include <string.h>

#include "cg_rows.h"

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* What role v could play in a row group, and over which [n, k] space. */
static int kind_of(Body *B, const Inst *v, const Type **space) {
  Slot *s = cg_slot(B, v);
  if (v->op == OP_reshape)
    return s->buf ? RK_NONE : RK_VIEW;
  if (s->view) /* a slice of rows of memory (y[i] in a loop): a pointer */
    return RK_VIEW;
  if (s->by_products || s->acc_into || v->nregions || s->inplace_of || s->inplace_old)
    return RK_NONE; /* in place (cg_inplace.c): the update and its old value keep whole arrays */
  if (ir_ops[v->op].shape == SH_REDUCE) {
    const Type *t = &v->args[0]->type;
    if (t->rank == 1) {
      *space = t;
      return RK_ROWFULL;
    }
    if (t->rank != 2)
      return RK_NONE;
    *space = t;
    return v->axes == 2u ? RK_ROWRED : v->axes == 3u ? RK_FULLRED : v->axes == 1u ? RK_COLRED : RK_NONE;
  }
  if (ir_op_is(v->op, F_ELEM) && (v->type.rank == 2 || v->type.rank == 1)) {
    *space = &v->type;
    return v->type.rank == 2 ? RK_ELEM : RK_ROWELEM;
  }
  return RK_NONE;
}

/* Where a value is read, as the walk from a member's element (i, j) down
 * its operands sees it: `same` -- at (i, j) itself (an [n, k] value of the
 * space); `rowax` -- the axis indexed by the row i, -1 if the index no
 * longer carries i (a member of another row would be read: not yet
 * computed, or computed in another block). */
typedef struct At {
  bool same;
  int rowax;
  bool rows_loop; /* the reader runs in a pass's loop over rows */
} At;

/* a is read at `at`; where are its operand `src` read? */
static At operand_at(const Inst *a, const Inst *src, At at) {
  At r = {at.same && ir_op_is(a->op, F_ELEM), -1, at.rows_loop};
  int ax = at.rowax;
  if (ax < 0)
    return r;
  if (ir_op_is(a->op, F_ELEM)) {
    r.rowax = ax;
  } else if (a->op == OP_broadcast) {
    int s = ax - (a->type.rank - src->type.rank);
    if (s >= 0 && !ir_dim_is(src->type.dim[s], 1))
      r.rowax = s;
  } else if (a->op == OP_transpose) {
    r.rowax = a->perm[ax];
  } else if (a->op == OP_reshape && ax == 0 && src->type.rank > 0 &&
             a->type.dim[0].sym == src->type.dim[0].sym &&
             a->type.dim[0].size == src->type.dim[0].size) {
    r.rowax = 0;
  }
  return r;
}

/* Can a member's element (i, j) read `a`, read at `at`, inside the
 * group's loop? Raises *pass to the first pass in which what it reads is
 * complete. */
static bool read_ok(Body *B, const Inst *a, int gid, At at, int *pass) {
  if (a->op == OP_param)
    return true;
  Slot *s = cg_slot(B, a);
  if (s->rows == gid) {
    switch (s->rkind) {
    case RK_ROWRED: /* in memory once its pass's column loop is over */
    case RK_ROWELEM: /* in memory (or a register) once its pass's row loop is */
      if (at.rowax != 0)
        return false;
      if (*pass < s->rpass + !at.rows_loop) /* a pass's row loop runs after its columns' */
        *pass = s->rpass + !at.rows_loop;
      return true;
    case RK_ELEM:
      if (!at.same)
        return false;
      if (*pass < s->rpass)
        *pass = s->rpass;
      return true;
    case RK_VIEW:
      return read_ok(B, a->args[0], gid, operand_at(a, a->args[0], at), pass);
    default: /* a reduction over rows: known only after the group */
      return false;
    }
  }
  if (s->has_buf) /* computed before the group */
    return true;
  for (int k = 0; k < a->nargs; k++)
    if (!read_ok(B, a->args[k], gid, operand_at(a, a->args[k], at), pass))
      return false;
  return true;
}

/* Does reading `a` at `at` read [n, k] memory at (i, j) (strided)? */
static bool reads_wide(Body *B, const Inst *a, int gid, At at) {
  Slot *s = cg_slot(B, a);
  if (a->op == OP_param || (s->has_buf && s->rows != gid))
    return at.same && a->type.rank == 2;
  if (s->rows == gid && s->rkind != RK_VIEW)
    return false;
  if (s->rows == gid && s->view) /* rows of memory */
    return at.same && a->type.rank == 2;
  if (s->rows == gid) /* a view: its operand's bytes */
    return reads_wide(B, a->args[0], gid, operand_at(a, a->args[0], at));
  for (int k = 0; k < a->nargs; k++)
    if (reads_wide(B, a->args[k], gid, operand_at(a, a->args[k], at)))
      return true;
  return false;
}

/* Does a member's operand a come from vectors and scalars alone (no
 * memory of rank 2 or more is read on the way, through any index)? */
static bool from_vectors(Body *B, const Inst *a, int gid) {
  Slot *s = cg_slot(B, a);
  if (s->rows == gid && s->rkind != RK_VIEW)
    return true; /* a member: its own operands are checked as its */
  if (a->op == OP_param || s->has_buf || s->view)
    return a->type.rank <= 1;
  for (int k = 0; k < a->nargs; k++)
    if (!from_vectors(B, a->args[k], gid))
      return false;
  return true;
}

/* Is x computed before the group headed by `head` is emitted (its
 * start)? A parameter, a block argument, a value of an outer block or
 * with memory before the head, or an expression of such values. */
static bool ready_before(Body *B, const Inst *x, const Inst *head) {
  if (x->op == OP_param || x->op == OP_arg || x->op == OP_const || x->parent != head->parent)
    return true;
  Slot *s = cg_slot(B, x);
  if (s->rows == head->id)
    return false;
  if (s->has_buf)
    return x->id < head->id;
  for (int k = 0; k < x->nargs; k++)
    if (!ready_before(B, x->args[k], head))
      return false;
  return true;
}

/* Admit v (of kind `kind`) into group gid if its reads allow it. */
static bool admit(Body *B, Inst *v, int kind, int gid) {
  int pass = 0;
  /* where its operands are read: at (i, j), or (per row) at i */
  At at = per_row(kind) ? (At){false, 0, true} : (At){true, 0, false};
  if (kind == RK_ELEM || kind == RK_ROWELEM) {
    for (int k = 0; k < v->nargs; k++)
      if (!read_ok(B, v->args[k], gid, at, &pass))
        return false;
  } else if (!read_ok(B, v->args[0], gid, at, &pass)) {
    return false;
  }
  Slot *s = cg_slot(B, v);
  s->rows = gid;
  s->rkind = kind;
  s->rpass = pass;
  return true;
}

/* Ends group gid (first member head, last real member last, scan stopped
 * before `stop`): kept if it has a row reduction and another member, or
 * else a column sum or a sum over both axes (such a group may still be
 * dropped by rows_form, below). */
static void close_group(Body *B, Inst *head, Inst *last, Inst *stop) {
  if (!head)
    return;
  int gid = head->id, nrowred = 0, nred = 0, nmem = 0;
  for (Inst *i = head; i != last->next; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->rows != gid)
      continue;
    nrowred += s->rkind == RK_ROWRED;
    nred += s->rkind == RK_COLRED || s->rkind == RK_FULLRED;
    nmem += s->rkind != RK_VIEW;
  }
  bool keep = nrowred ? nmem >= 2 : nred >= 1;
  for (Inst *i = head; i != stop; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->rows != gid)
      continue;
    if (keep && i != last->next && i->id <= last->id) {
      s->rows_last = last;
      continue;
    }
    s->rows = -1;
  }
}

/* Which passes read v, and whether anything outside group gid does. */
static void readers(Body *B, const Inst *v, int gid, PtrVec *users, int *lastpass, bool *esc) {
  PtrVec *us = &users[v->id];
  if (v->nuses != (int)us->len) /* a result */
    *esc = true;
  for (int k = 0; k < us->len && !*esc; k++) {
    const Inst *u = us->data[k];
    Slot *su = cg_slot(B, u);
    if (su->rows == gid && su->rkind != RK_VIEW) {
      if (*lastpass < su->rpass)
        *lastpass = su->rpass;
    } else if (su->has_buf) {
      *esc = true;
    } else {
      readers(B, u, gid, users, lastpass, esc);
    }
  }
}

/* Is a member of this kind over sp in a group over space? */
static bool fits(int kind, const Type *sp, const Type *space) {
  if (!per_row(kind))
    return ir_shape_eq(sp, space);
  return sp->rank == 1 && sp->dim[0].sym == space->dim[0].sym &&
         sp->dim[0].size == space->dim[0].size;
}

/* The row groups of the block starting at first. */
static void rows_form(Body *B, Inst *first) {
  Inst *head = NULL, *last = NULL;
  const Type *space = NULL;
  int members = 0;
  for (Inst *i = first; i; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (!s->has_buf)
      continue;
    const Type *sp = NULL;
    int kind = kind_of(B, i, &sp);
    /* a slice's pointer is made at the group's start: its position must
     * be known there (not p[max(...)] of a max the group computes) */
    for (int k = 1; head && kind == RK_VIEW && s->view && k < i->nargs; k++)
      if (!ready_before(B, i->args[k], head))
        kind = RK_NONE;
    if (head && kind == RK_VIEW) { /* tentatively: dropped if no member follows */
      s->rows = head->id;
      s->rkind = RK_VIEW;
      continue;
    }
    if (head && kind != RK_NONE && kind != RK_VIEW && members < ROWS_MAX_MEMBERS &&
        fits(kind, sp, space) && admit(B, i, kind, head->id)) {
      last = i;
      members++;
      continue;
    }
    close_group(B, head, last, i);
    head = NULL;
    if (kind != RK_ELEM && kind != RK_ROWRED && kind != RK_COLRED && kind != RK_FULLRED)
      continue;
    Dim k = sp->dim[1];
    if (k.sym < 0 && k.size > ROWS_KMAX && (k.size < ROWS_WIDE || k.size >= ONLINE_ROW_MIN))
      continue; /* (a group reading [n, k] memory is dropped later above ROWS_KMAX_MEM) */
    if (!admit(B, i, kind, i->id))
      continue;
    head = last = i;
    space = sp;
    members = 1;
  }
  close_group(B, head, last, NULL);

  for (Inst *i = first; i; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->rows < 0 || s->rkind != RK_ELEM)
      continue;
    int lastpass = -1;
    bool esc = false;
    readers(B, i, s->rows, B->users, &lastpass, &esc);
    s->rows_escapes = esc;
    s->rowbuf_ok = !esc && lastpass > s->rpass;
  }
  /* The widest k each group takes in a block scratch. With a literal k
   * there is no fallback copy: what only the group reads needs no memory,
   * and a group that fits neither way is dropped. */
  for (Inst *h = first; h; h = h->next) {
    Slot *hs = cg_slot(B, h);
    if (hs->rows != h->id)
      continue;
    Inst *end = hs->rows_last->next;
    bool memory = false; /* reads or writes [n, k] memory */
    for (Inst *i = h; i != end && !memory; i = i->next) {
      Slot *s = cg_slot(B, i);
      if (s->rows != h->id || s->rkind == RK_VIEW)
        continue;
      memory = s->rkind == RK_ELEM && s->rows_escapes;
      At at = per_row(s->rkind) ? (At){false, 0, true} : (At){true, 0, false};
      int nargs = s->rkind == RK_ELEM || s->rkind == RK_ROWELEM ? i->nargs : 1;
      for (int k = 0; k < nargs && !memory; k++)
        memory = reads_wide(B, i->args[k], h->id, at);
    }
    hs->rows_kmax = memory ? ROWS_KMAX_MEM : ROWS_KMAX;
    const Type *sp = NULL;
    kind_of(B, h, &sp);
    Dim kd = sp->dim[1];
    /* A literal k is narrow (a block scratch), wide (row by row: a value
     * read by a later pass is read back from memory; no column sums) or
     * neither. */
    bool narrow = kd.sym < 0 && kd.size <= hs->rows_kmax, wide = kd.sym < 0 && kd.size >= ROWS_WIDE && kd.size < ONLINE_ROW_MIN;
    for (Inst *i = h; i != end && wide; i = i->next)
      wide = cg_slot(B, i)->rows != h->id || cg_slot(B, i)->rkind != RK_COLRED;
    bool drop = kd.sym < 0 && !narrow && !wide;
    /* Without a row reduction the group only saves memory: kept when its
     * values come from vectors alone (a broadcast parameter's gradient,
     * a column sum of values nothing else keeps). */
    bool rowred = false, vectors = !memory;
    for (Inst *i = h; i != end; i = i->next) {
      Slot *s = cg_slot(B, i);
      if (s->rows != h->id || s->rkind == RK_VIEW)
        continue;
      rowred |= s->rkind == RK_ROWRED;
      for (int k = 0; k < i->nargs && vectors; k++)
        vectors = from_vectors(B, i->args[k], h->id);
    }
    drop |= !rowred && !vectors;
    for (Inst *i = h; i != end; i = i->next) {
      Slot *s = cg_slot(B, i);
      if (s->rows != h->id)
        continue;
      if (drop)
        s->rows = -1;
      else if (s->rkind == RK_ELEM && !s->rows_escapes && (narrow || (wide && !s->rowbuf_ok)))
        s->internal = true;
    }
  }
}

/* ---- emitting ---- */

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
  LLVMValueRef left = LLVMBuildNSWSub(g->b, hi, i0, "");
  LLVMValueRef full = LLVMBuildICmp(g->b, LLVMIntSGT, left, i64c(g, ROWS_BLOCK), "");
  LLVMValueRef cnt = LLVMBuildSelect(g->b, full, i64c(g, ROWS_BLOCK), left, "rows");
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
    LLVMValueRef left_behind = LLVMBuildNSWSub(g->b, hi, i0_behind, "");
    LLVMValueRef cnt_behind = LLVMBuildSelect(
        g->b, LLVMBuildICmp(g->b, LLVMIntSGT, left_behind, i64c(g, ROWS_BLOCK), ""),
        i64c(g, ROWS_BLOCK), left_behind, "rows.behind");
    emit_pass(B, R, &(PassAt){last, i0_behind, true}, 1, cnt_behind, k);
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

/* On the pool (bench W6: 1M rows): chunks of whole blocks, at least
 * ROWS_PAR_LEAST rows, at most ROWS_PAR_CHUNKS of them, so that a column
 * sum's partials (ROWS_KMAX per chunk) stay small on the stack. */
enum { ROWS_PAR_LEAST = 2048, ROWS_PAR_CHUNKS = 64 };

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

/* A literal n under two chunks' worth runs inline; any other, the pool's
 * version (a single chunk runs directly on the calling thread), in a loop
 * body too: one copy of the group's code, not two -- a group is large
 * code, and a second copy cost examples/v2/bow_classifier.sg 20% of its
 * compile time. */
static bool rows_pooled(const Type *space) {
  Dim n = space->dim[0];
  return n.sym >= 0 || n.size >= 2 * ROWS_PAR_LEAST;
}

/* Whether the group's last pass runs a block behind (emit_blocks): it
 * needs two passes or more, a last pass with no reduction along rows
 * and nothing per row (those are read by the block's later members, and
 * a block behind there are none), and n big enough for the pool's version
 * (a small group does not pay for the second copy of its last two passes). */
static int last_pass(Body *B, const Inst *head) {
  int last = 0;
  for (const Inst *i = head; i != cg_slot(B, head)->rows_last->next; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->rows == head->id && s->rkind != RK_VIEW && last < s->rpass)
      last = s->rpass;
  }
  return last;
}

static bool lag_ok(Body *B, const Inst *head, const Type *space) {
  Slot *hs = cg_slot(B, head);
  int last = last_pass(B, head);
  if (last < 1 || !rows_pooled(space))
    return false;
  for (const Inst *i = head; i != hs->rows_last->next; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->rows == head->id && s->rpass == last && (s->rkind == RK_ROWRED || per_row(s->rkind)))
      return false;
  }
  return true;
}

static void emit_group_rows(Body *B, Rows *R) {
  rows_version(B, R, cg_dim(B, R->space->dim[0]), rows_pooled(R->space));
}

static void cg_rows_emit(Body *B, Inst *head) {
  Cg *g = B->g;
  int gid = head->id;
  Inst *end = cg_slot(B, head)->rows_last->next;
  const Type *space = NULL;
  kind_of(B, head, &space);
  Rows R = {0};
  R.mem = xmalloc(sizeof(Inst *) * ROWS_MAX_MEMBERS);
  R.acc = xmalloc(sizeof(LLVMValueRef) * ROWS_MAX_MEMBERS);
  R.col = xmalloc(sizeof(LLVMValueRef) * ROWS_MAX_MEMBERS);
  R.base = xmalloc(sizeof(LLVMValueRef) * ROWS_MAX_MEMBERS);
  R.half = xmalloc(sizeof(*R.half) * ROWS_MAX_MEMBERS);
  R.lag = lag_ok(B, head, space);
  R.space = space;
  for (Inst *i = head; i != end; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->rows != gid)
      continue;
    if (s->rkind == RK_VIEW) { /* the same bytes as its operand, or a slice's */
      if (s->view)
        cg_emit_view(B, i);
      else if (!s->buf)
        s->buf = cg_slot(B, i->args[0])->buf;
      continue;
    }
    R.mem[R.nmem++] = i;
    if (R.npass < s->rpass + 1)
      R.npass = s->rpass + 1;
  }
  LLVMValueRef k = cg_dim(B, space->dim[1]);
  if (LLVMIsAConstantInt(k)) {
    if (LLVMConstIntGetSExtValue(k) >= ROWS_WIDE)
      rows_emit_wide(B, &R);
    else
      emit_group_rows(B, &R);
  } else {
    /* test, the group, [test, row by row,] the members' own loops, join:
     * in layout order, a single-entry single-exit run of blocks
     * (cg_split.c) */
    LLVMBasicBlockRef ends[3];
    int nends = 0;
    LLVMValueRef narrow =
        LLVMBuildICmp(g->b, LLVMIntSLE, k, i64c(g, cg_slot(B, head)->rows_kmax), "narrow");
    LLVMBasicBlockRef test = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef rows = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "rows");
    LLVMPositionBuilderAtEnd(g->b, rows);
    emit_group_rows(B, &R);
    ends[nends++] = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef other = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "rows_each");
    LLVMPositionBuilderAtEnd(g->b, test);
    LLVMBuildCondBr(g->b, narrow, rows, other);
    LLVMPositionBuilderAtEnd(g->b, other);
    if (rows_wide_ok(B, &R)) {
      LLVMValueRef wide = LLVMBuildICmp(g->b, LLVMIntSGE, k, i64c(g, ROWS_WIDE), "wide");
      LLVMBasicBlockRef by_row = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "rows_wide");
      other = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "rows_own");
      LLVMBuildCondBr(g->b, wide, by_row, other);
      LLVMPositionBuilderAtEnd(g->b, by_row);
      rows_emit_wide(B, &R);
      ends[nends++] = LLVMGetInsertBlock(g->b);
      LLVMMoveBasicBlockAfter(other, ends[nends - 1]);
      LLVMPositionBuilderAtEnd(g->b, other);
    }
    B->rows_fallback = true;
    for (int m = 0; m < R.nmem; m++)
      cg_emit_alone(B, R.mem[m]);
    B->rows_fallback = false;
    ends[nends++] = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "rows_joined");
    for (int e = 0; e < nends; e++) {
      LLVMPositionBuilderAtEnd(g->b, ends[e]);
      LLVMBuildBr(g->b, join);
    }
    LLVMPositionBuilderAtEnd(g->b, join);
  }
  for (int m = 0; m < R.nmem; m++)
    cg_slot(B, R.mem[m])->computed = true;
  free(R.mem);
  free(R.acc);
  free(R.col);
  free(R.base);
  free(R.half);
}

/* ---- the strategy ---- */

static const Type *space_of(Body *B, const Inst *head) {
  const Type *space = NULL;
  kind_of(B, head, &space);
  return space;
}

static void rows_recognize(Body *B, Inst *first) {
  rows_form(B, first);
  for (Inst *h = first; h; h = h->next) {
    Slot *hs = cg_slot(B, h);
    if (hs->rows != h->id)
      continue;
    int k = cg_kernel_new(B, &cg_rows_strategy, h);
    for (Inst *i = h; i != hs->rows_last->next; i = i->next) {
      Slot *s = cg_slot(B, i);
      if (s->rows != h->id)
        continue;
      /* Where the group keeps it (its blocks, when it has them): with
       * a symbolic k the fallback's loops give every member memory, but
       * the group stores an elementwise member there only if it is read
       * outside; row by row, one read by a later pass is stored too. */
      Dim kd = space_of(B, h)->dim[1];
      bool wide_only = kd.sym < 0 && kd.size >= ROWS_WIDE;
      CgLives lives = s->rkind != RK_ELEM || s->rows_escapes ? CG_IN_MEMORY
                      : !s->rowbuf_ok                        ? CG_IN_REGISTER
                      : wide_only                            ? CG_IN_MEMORY
                                                             : CG_IN_SCRATCH;
      cg_kernel_add(B, k, i, s->rkind, lives);
      B->member[i->id].pass = s->rpass;
    }
  }
}

static void rows_emit(Body *B, CgKernel *k) { cg_rows_emit(B, k->head); }

static const char *const rows_roles[] = {
    [RK_NONE] = "?", [RK_ELEM] = "elem", [RK_ROWRED] = "rowred", [RK_FULLRED] = "sum",
    [RK_COLRED] = "colred", [RK_ROWELEM] = "perrow", [RK_ROWFULL] = "sum", [RK_VIEW] = "view"};

/* "rows [n, k] blocks, pool | by row | blocks of 64 rows, pool, if <= 12
 * columns, else by row if >= 128, else own loops: %3 rowred/0 mem ..." */
static void rows_describe(Body *B, const CgKernel *k, FILE *out) {
  const Type *space = NULL;
  kind_of(B, k->head, &space);
  Slot *hs = cg_slot(B, k->head);
  const char *blocks = rows_pooled(space) ? ", pool" : "";
  const char *by_row = cg_par_rows_planned(k->head, space) ? ", pool" : "";
  fputs("rows", out);
  cg_plan_shape(B, space, out);
  Dim kd = space->dim[1];
  char behind[48] = "";
  if (lag_ok(B, k->head, space))
    snprintf(behind, sizeof behind, ", pass %d a block behind", last_pass(B, k->head));
  if (kd.sym >= 0)
    fprintf(out, " blocks of %d rows%s%s if <= %d columns, else by row%s if >= %d, else own loops",
            ROWS_BLOCK, behind, blocks, hs->rows_kmax, by_row, ROWS_WIDE);
  else if (kd.size >= ROWS_WIDE)
    fprintf(out, " by row%s", by_row);
  else
    fprintf(out, " blocks%s%s", behind, blocks);
  fputc(':', out);
  int id = (int)(k - B->kernels);
  for (Inst *i = k->head; i != k->last->next; i = i->next)
    if (cg_slot(B, i)->kernel == id) {
      const CgMember *m = &B->member[i->id];
      fprintf(out, " %%%d %s/%d %s", i->id, rows_roles[m->role], m->pass,
              m->lives == CG_IN_REGISTER ? "reg" : m->lives == CG_IN_SCRATCH ? "scratch" : "mem");
    }
}

const CgStrategy cg_rows_strategy = {"rows", rows_roles, rows_recognize, NULL, NULL, rows_emit,
                                     rows_describe};
