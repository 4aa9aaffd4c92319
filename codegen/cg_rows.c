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
 * (cg_rows_blocks.c), each chunk's sums and column sums kept apart and added
 * in chunk order: results do not depend on the number of threads.
 *
 * On the pool, a last pass with no row reduction runs a block behind, in
 * the same loop as the pass before it, its scratch then holding two
 * blocks. This file forms the groups and plans them; cg_rows_blocks.c
 * emits a group's blocks, cg_rows_wide.c its rows one by one.
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

/* A literal n under two chunks' worth runs inline; any other, the pool's
 * version (a single chunk runs directly on the calling thread), in a loop
 * body too: one copy of the group's code, not two -- a group is large
 * code, and a second copy cost examples/v2/bow_classifier.sg 20% of its
 * compile time. */
static bool rows_pooled(const Type *space) {
  Dim n = space->dim[0];
  return n.sym >= 0 || n.size >= 2 * ROWS_PAR_LEAST;
}

/* The group's last pass. */
static int last_pass(Body *B, const Inst *head) {
  int last = 0;
  for (const Inst *i = head; i != cg_slot(B, head)->rows_last->next; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->rows == head->id && s->rkind != RK_VIEW && last < s->rpass)
      last = s->rpass;
  }
  return last;
}

/* Whether the group's last pass runs a block behind (cg_rows_blocks.c
 * emit_blocks): it needs two passes or more, a last pass with no reduction
 * along rows and nothing per row (those are read by the block's later
 * members, and a block behind there are none), and n big enough for the
 * pool's version (a small group does not pay for the second copy of its
 * last two passes). */
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

static void emit_group_rows(Body *B, Rows *R) { rows_emit_blocks(B, R, rows_pooled(R->space)); }

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
