/* Loops and branches: real LLVM control flow around the fused loop nests of
 * their bodies (cg_func.c emits each body as a block of its own).
 *
 * Carried values live in buffers, two per value: the current state, which
 * the body's block arguments read, and the next, which its yields fill; the
 * two swap (pointers, not bytes) at the end of each iteration. A yield
 * computed in the body is computed straight into the next buffer, so a
 * loop updating a tensor costs no copy; only yields that are some other
 * value (a captured one, a block argument) are copied. A value that never
 * changes (the body yields its own argument) stays in one buffer. All the
 * buffers are part of the function's one allocation of temporaries, sized
 * at entry: nothing here depends on a trip count, at compile time or in
 * allocations.
 *
 * A loop that AD reverses (it has an `unloop`) records on a tape the state
 * entering each iteration (runtime/tape.c); the unloop walks the tape
 * backwards, reading each iteration's state in place, and carries its
 * accumulators the same double-buffered way. A carried value the body
 * updates by a chain of update ops of its own (`H[t] = h`, cg_tape_links)
 * is not recorded: each update records an undo log in the entry (what it
 * overwrote, cg_update.c), and the unloop rebuilds the value entering each
 * iteration in a buffer of its own, from the loop's final value, undoing
 * the logs last first. An entry holds its 8-byte items first (the logs'
 * starts and positions, then f64 values), then the 4-byte ones, so that
 * each is aligned. A tape that cannot grow makes
 * the function return SG_ERR_ALLOC (the function then computes its results
 * aside, cg_func.c, so that nothing is written).
 *
 * With --ad-memory, the loop keeps snapshots instead (runtime/checkpoint.c
 * decides which), and the unloop becomes a dispatch loop over the actions
 * of the checkpoint schedule: restore or store a snapshot, advance one step
 * (the loop's own body, emitted a second time, on state buffers of the
 * unloop's), or reverse one step (the unloop's body, on that state). The
 * budget is shared equally by the function's reversed loops, nested ones
 * included, so that the whole call stays within it. */
#include <stdio.h>
#include <string.h>

#include "cg_internal.h"

/* The actions of runtime/checkpoint.c's schedule (sgrt.h's SG_RT_CK_*). */
enum { SG_RT_ACT_ADVANCE = 1, SG_RT_ACT_STORE, SG_RT_ACT_RESTORE, SG_RT_ACT_REVERSE };

struct RegionCg {
  int n;               /* state values: carried, accumulators, or results */
  LLVMValueRef *off;   /* their offsets in the temporaries: cur[n], nxt[n] */
  LLVMValueRef *buf;   /* cur then nxt (an if has only cur: its results) */
  LLVMValueRef *pc, *pn; /* allocas: where cur and nxt are this iteration */
  bool *fixed;         /* the body yields the value's own argument */
  Inst **inplace;      /* the yield computed straight into nxt, or NULL */
  bool taped;          /* a loop an unloop reverses */
  LLVMValueRef tape;   /* alloca of sg_rt_tape */
  LLVMTypeRef tape_ty;
  LLVMValueRef lo;     /* for: the first index */
  LLVMValueRef stride; /* taped: bytes per iteration */
  LLVMValueRef *coff;  /* taped: offset of each carried value in an entry */
  bool ckpt;           /* taped, with --ad-memory: snapshots, not a tape */
  LLVMValueRef ck;     /* ckpt: alloca of the runtime's sg_rt_ckpt pointer */
  LLVMValueRef *aoff, *abuf; /* unloop with ckpt: the loop state it advances, cur and nxt */
  int *nlink;          /* taped without ckpt: per carried value, the updates whose undo
                          logs an entry holds instead of it (cg_tape_links), or 0 */
  const Inst ***link;  /* per carried value: those updates, in the order they run */
  LLVMValueRef **loff; /* their logs' offsets in an entry: [k][j] starts and
                          positions, [k][nlink[k] + j] old values */
  LLVMValueRef *woff, *wbuf; /* unloop of such a loop: per carried value, the value it
                                rebuilds (an offset in the temporaries, then a pointer) */
};

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

static int nstate(const Inst *op) {
  switch (op->op) {
  case OP_for: return op->nargs - 2;
  case OP_while: return op->nargs;
  case OP_unloop: return op->nargs - 1;
  default: return op->regions[0].nyields;
  }
}

static const Type *state_type(Inst *op, int k) {
  return op->op == OP_if ? &op->regions[0].yields[k]->type
                         : &op->args[k + (op->op == OP_for ? 2 : op->op == OP_unloop ? 1 : 0)]->type;
}

static Region *body_of(Inst *op) { return &op->regions[op->op == OP_while ? 1 : 0]; }

static Inst *init_of(Inst *op, int k) {
  return op->args[k + (op->op == OP_for ? 2 : op->op == OP_unloop ? 1 : 0)];
}

/* The block argument of region r holding state value k. */
static Inst *param_of(Inst *op, Region *r, int k) {
  if (op->op == OP_for)
    return r->params[1 + k];
  if (op->op == OP_unloop)
    return r->params[1 + ir_num_results(op->args[0]) + k];
  return r->params[k];
}

void cg_region_plan(Body *B, Inst *op) {
  RegionCg *R = xmalloc(sizeof *R);
  memset(R, 0, sizeof *R);
  B->rg[op->id] = R;
  R->n = nstate(op);
  int n = R->n;
  R->off = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * n + 1));
  R->buf = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * n + 1));
  R->pc = xmalloc(sizeof(LLVMValueRef) * (size_t)(n + 1));
  R->pn = xmalloc(sizeof(LLVMValueRef) * (size_t)(n + 1));
  R->fixed = xmalloc(sizeof(bool) * (size_t)(n + 1));
  R->inplace = xmalloc(sizeof(Inst *) * (size_t)(n + 1));
  memset(R->fixed, 0, sizeof(bool) * (size_t)(n + 1));
  memset(R->inplace, 0, sizeof(Inst *) * (size_t)(n + 1));
  for (int r = 0; r < op->nregions; r++)
    for (int k = 0; k < op->regions[r].nparams; k++) {
      Inst *p = op->regions[r].params[k];
      /* the index lives in a register; everything else in memory */
      cg_slot(B, p)->has_buf = !(k == 0 && (op->op == OP_for || op->op == OP_unloop));
    }
  if (op->op == OP_unloop) {
    RegionCg *L = B->rg[op->args[0]->id];
    L->taped = true;
    L->ckpt = B->g->ad_memory > 0;
    B->nunloops++;
  }
  if (op->op != OP_if) {
    Region *body = body_of(op);
    for (int k = 0; k < n; k++)
      R->fixed[k] = body->yields[k] == param_of(op, body, k);
  }
}

static bool can_compute_into(Body *B, Inst *y, Region *body, RegionCg *R) {
  Slot *s = cg_slot(B, y);
  if (y->parent != body || !s->has_buf || s->buf || s->internal || s->acc_into ||
      s->by_products || s->view || s->inplace_of || y->nregions || y->op == OP_reshape ||
      y->op == OP_proj || y->op == OP_arg)
    return false;
  for (int k = 0; k < R->n; k++)
    if (R->inplace[k] == y)
      return false;
  return true;
}

/* May state value `arg` of a loop's or unloop's body stay in one buffer,
 * updated in place by `yield` (cg_inplace.c decides on this before it
 * plans the update's operands)? When the body yields it in arg's place. A
 * loop AD reverses records the state entering each iteration on its tape
 * or in its snapshots before the body runs, so it may too; so may an
 * unloop's accumulators (a gather's adjoint adds into a few positions). */
bool cg_region_keeps(const Inst *arg, const Inst *yield) {
  Region *r = yield->parent;
  if (!r || r->owner->op == OP_if || r != body_of(r->owner))
    return false;
  Inst *op = r->owner;
  int hits = 0, at = -1;
  for (int k = 0; k < r->nyields; k++)
    if (r->yields[k] == yield)
      hits++, at = k;
  return hits == 1 && at < nstate(op) && param_of(op, r, at) == arg;
}

/* The yields cg_inplace.c updates in place keep their state in one buffer,
 * like a value that does not change. */
static void inplace_state(Body *B, Inst *op, RegionCg *R) {
  if (op->op == OP_if)
    return;
  Region *body = body_of(op);
  for (int k = 0; k < R->n; k++)
    if (cg_slot(B, body->yields[k])->inplace_of == param_of(op, body, k))
      R->fixed[k] = true;
}

/* Which state values stay in one buffer and which yields are computed
 * straight into the next buffer, once the body's kernels are known. */
static void decide_state(Body *B, Inst *op, RegionCg *R) {
  inplace_state(B, op, R);
  if (op->op == OP_if)
    return;
  Region *body = body_of(op);
  for (int k = 0; k < R->n; k++)
    if (!R->fixed[k] && can_compute_into(B, body->yields[k], body, R))
      R->inplace[k] = body->yields[k];
}

bool cg_region_computes_into(Body *B, const Inst *v) {
  Inst *op = v->parent ? v->parent->owner : NULL;
  RegionCg *R = op ? B->rg[op->id] : NULL;
  for (int k = 0; R && R->inplace && k < R->n; k++)
    if (R->inplace[k] == v)
      return true;
  return false;
}

/* total + t's bytes, rounded up to 64 (the next buffer's start). */
static LLVMValueRef add_buffer(Body *B, LLVMValueRef total, const Type *t) {
  Cg *g = B->g;
  LLVMValueRef bytes = cg_bytes(B, t);
  bytes = LLVMBuildAnd(g->b, LLVMBuildNSWAdd(g->b, bytes, i64c(g, 63), ""), i64c(g, ~(int64_t)63), "");
  return LLVMBuildNSWAdd(g->b, total, bytes, "");
}

LLVMValueRef cg_region_reserve(Body *B, Inst *op, LLVMValueRef total) {
  Cg *g = B->g;
  RegionCg *R = B->rg[op->id];
  int nb = op->op == OP_if ? R->n : 2 * R->n;
  for (int k = 0; k < R->n; k++)
    if (R->inplace[k]) /* bound to the next buffer at each iteration; no memory of its own */
      cg_slot(B, R->inplace[k])->buf = LLVMConstNull(g->ptr);
  for (int j = 0; j < nb; j++) {
    R->off[j] = total;
    total = add_buffer(B, total, state_type(op, j % R->n));
  }
  if (R->taped) {
    LLVMTypeRef f[3] = {g->ptr, g->i64, g->i64};
    R->tape_ty = LLVMStructTypeInContext(g->ctx, f, 3, 0);
    R->tape = cg_entry_alloca(B, R->tape_ty);
    LLVMBuildStore(g->b, LLVMConstNull(R->tape_ty), R->tape);
  }
  if (R->ckpt) {
    R->ck = cg_entry_alloca(B, g->ptr);
    LLVMBuildStore(g->b, LLVMConstNull(g->ptr), R->ck);
  }
  if ((op->op == OP_for || op->op == OP_while) && R->taped && !R->ckpt) {
    R->nlink = xmalloc(sizeof(int) * (size_t)(R->n + 1));
    R->link = xmalloc(sizeof(Inst **) * (size_t)(R->n + 1));
    R->loff = xmalloc(sizeof(LLVMValueRef *) * (size_t)(R->n + 1));
    for (int k = 0; k < R->n; k++) {
      R->nlink[k] = cg_tape_links(op, k, NULL);
      R->link[k] = xmalloc(sizeof(Inst *) * (size_t)(R->nlink[k] + 1));
      R->loff[k] = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * R->nlink[k] + 1));
      cg_tape_links(op, k, R->link[k]);
    }
  }
  RegionCg *L = op->op == OP_unloop ? B->rg[op->args[0]->id] : NULL;
  if (L && L->nlink) {
    R->woff = xmalloc(sizeof(LLVMValueRef) * (size_t)(L->n + 1));
    R->wbuf = xmalloc(sizeof(LLVMValueRef) * (size_t)(L->n + 1));
    for (int k = 0; k < L->n; k++) {
      if (!L->nlink[k])
        continue;
      R->woff[k] = total;
      total = add_buffer(B, total, state_type(op->args[0], k));
    }
  }
  if (op->op == OP_unloop && B->rg[op->args[0]->id]->ckpt) {
    int nc = ir_num_results(op->args[0]);
    R->aoff = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * nc + 1));
    R->abuf = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * nc + 1));
    for (int j = 0; j < 2 * nc; j++) {
      R->aoff[j] = total;
      total = add_buffer(B, total, state_type(op->args[0], j % nc));
    }
  }
  return total;
}

void cg_region_bind(Body *B, Inst *op, LLVMValueRef base) {
  Cg *g = B->g;
  RegionCg *R = B->rg[op->id];
  int nb = op->op == OP_if ? R->n : 2 * R->n;
  for (int j = 0; j < nb; j++)
    R->buf[j] = LLVMBuildInBoundsGEP2(g->b, g->i8, base, &R->off[j], 1, "");
  if (R->aoff)
    for (int j = 0; j < 2 * ir_num_results(op->args[0]); j++)
      R->abuf[j] = LLVMBuildInBoundsGEP2(g->b, g->i8, base, &R->aoff[j], 1, "");
  for (int k = 0; R->woff && k < B->rg[op->args[0]->id]->n; k++)
    if (B->rg[op->args[0]->id]->nlink[k])
      R->wbuf[k] = LLVMBuildInBoundsGEP2(g->b, g->i8, base, &R->woff[k], 1, "rebuilt");
}

/* ---- emitting ---- */

/* Initial values into the current buffers; the pointer allocas set. */
static void start_state(Body *B, Inst *op, RegionCg *R) {
  Cg *g = B->g;
  for (int k = 0; k < R->n; k++) {
    cg_copy_value(B, init_of(op, k), R->buf[k]);
    R->pc[k] = cg_entry_alloca(B, g->ptr);
    R->pn[k] = cg_entry_alloca(B, g->ptr);
    LLVMBuildStore(g->b, R->buf[k], R->pc[k]);
    LLVMBuildStore(g->b, R->buf[R->n + k], R->pn[k]);
  }
}

/* Point region r's state arguments at the current buffers and in-place
 * yields at the next ones; returns the current pointers. */
static void bind_state(Body *B, Inst *op, RegionCg *R, Region *r, LLVMValueRef *cur,
                       LLVMValueRef *nxt) {
  Cg *g = B->g;
  for (int k = 0; k < R->n; k++) {
    cur[k] = LLVMBuildLoad2(g->b, g->ptr, R->pc[k], "cur");
    nxt[k] = LLVMBuildLoad2(g->b, g->ptr, R->pn[k], "nxt");
    cg_slot(B, param_of(op, r, k))->buf = cur[k];
    if (R->inplace[k])
      cg_slot(B, R->inplace[k])->buf = nxt[k];
  }
}

/* After the body: the other yields copied into the next buffers, then the
 * buffers swapped (a value that never changes stays where it is). */
static void end_iteration(Body *B, Inst *op, RegionCg *R, Region *body, LLVMValueRef *cur,
                          LLVMValueRef *nxt) {
  Cg *g = B->g;
  (void)op;
  for (int k = 0; k < R->n; k++)
    if (!R->fixed[k] && !R->inplace[k])
      cg_copy_value(B, body->yields[k], nxt[k]);
  for (int k = 0; k < R->n; k++)
    if (!R->fixed[k]) {
      LLVMBuildStore(g->b, nxt[k], R->pc[k]);
      LLVMBuildStore(g->b, cur[k], R->pn[k]);
    }
}

/* The results: the final current buffers. */
static void bind_results(Body *B, Inst *op, RegionCg *R) {
  Cg *g = B->g;
  LLVMValueRef *res = xmalloc(sizeof(LLVMValueRef) * (size_t)(R->n + 1));
  for (int k = 0; k < R->n; k++)
    res[k] = op->op == OP_if ? R->buf[k] : LLVMBuildLoad2(g->b, g->ptr, R->pc[k], "final");
  for (Inst *p = op->next; p && p->op == OP_proj && p->args[0] == op; p = p->next)
    cg_slot(B, p)->buf = res[p->index];
  free(res);
}

/* Taped: append the state entering this iteration to the tape. */
static void record(Body *B, Inst *op, RegionCg *R, LLVMValueRef *cur) {
  Cg *g = B->g;
  int nc = R->n;
  LLVMTypeRef fty;
  LLVMValueRef push = cg_rt(g, RT_tape_push, &fty);
  LLVMValueRef args[2] = {R->tape, R->stride};
  LLVMValueRef at = LLVMBuildCall2(g->b, fty, push, args, 2, "slot");
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "tape_nomem");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "recorded");
  LLVMBuildCondBr(g->b, LLVMBuildIsNull(g->b, at, ""), bad, ok);
  LLVMPositionBuilderAtEnd(g->b, bad);
  LLVMValueRef failed = cg_rt(g, RT_tape_failed, &fty);
  LLVMValueRef fargs[3] = {LLVMBuildGlobalStringPtr(g->b, B->f->name, "fname"), cg_where(B, op), R->tape};
  cg_fail_exit(B, LLVMBuildCall2(g->b, fty, failed, fargs, 3, ""));
  LLVMPositionBuilderAtEnd(g->b, ok);
  for (int k = 0; k < nc; k++) {
    for (int j = 0, nl = R->nlink ? R->nlink[k] : 0; j < nl; j++) {
      Slot *s = cg_slot(B, R->link[k][j]);
      s->log = LLVMBuildInBoundsGEP2(g->b, g->i8, at, &R->loff[k][j], 1, "log");
      s->log_old = LLVMBuildInBoundsGEP2(g->b, g->i8, at, &R->loff[k][nl + j], 1, "log_old");
    }
    if (R->nlink && R->nlink[k])
      continue;
    LLVMValueRef dst = LLVMBuildInBoundsGEP2(g->b, g->i8, at, &R->coff[k], 1, "");
    LLVMBuildMemCpy(g->b, dst, 1, cur[k], 1, cg_bytes(B, state_type(op, k)));
  }
}

/* After the body: the logs' places belonged to this iteration. */
static void end_record(Body *B, RegionCg *R) {
  for (int k = 0; R->nlink && k < R->n; k++)
    for (int j = 0; j < R->nlink[k]; j++)
      cg_slot(B, R->link[k][j])->log = NULL;
}

/* Taped: the bytes per iteration, and the tape emptied for this run. */
static void start_tape(Body *B, Inst *op, RegionCg *R) {
  Cg *g = B->g;
  free(R->coff); /* a loop body emitted again (checkpointing) holds this loop */
  R->coff = xmalloc(sizeof(LLVMValueRef) * (size_t)(R->n + 1));
  LLVMValueRef total = i64c(g, 0);
  for (int pass = 0; pass < 2; pass++) /* 8-byte items first, then the others */
    for (int k = 0; k < R->n; k++) {
      int nl = R->nlink ? R->nlink[k] : 0;
      for (int j = 0; j < nl; j++) { /* a log: its starts and positions, its old values */
        const Inst *u = R->link[k][j]->args[1];
        if (!pass) {
          R->loff[k][j] = total;
          total = LLVMBuildNSWAdd(g->b, total, cg_update_log_head(B, R->link[k][j]), "");
        }
        if ((cg_elem_size(u->type.dtype) == 8) != !pass)
          continue;
        R->loff[k][nl + j] = total;
        total = LLVMBuildNSWAdd(g->b, total, cg_bytes(B, &u->type), "");
      }
      if (nl || (cg_elem_size(state_type(op, k)->dtype) == 8) != !pass)
        continue;
      R->coff[k] = total;
      total = LLVMBuildNSWAdd(g->b, total, cg_bytes(B, state_type(op, k)), "");
    }
  /* entries stay 8-byte aligned; one of a loop that carries only empty
   * values still counts (the unloop counts iterations by it) */
  total = LLVMBuildAnd(g->b, LLVMBuildNSWAdd(g->b, total, i64c(g, 7), ""), i64c(g, -8), "");
  R->stride = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, total, i64c(g, 0), ""),
                              i64c(g, R->n ? 8 : 0), total, "stride");
  LLVMValueRef used = LLVMBuildStructGEP2(g->b, R->tape_ty, R->tape, 1, "");
  LLVMBuildStore(g->b, i64c(g, 0), used);
}

/* Continue at `done`, laid out after the body just emitted: blocks are
 * appended as they are made, so `done` (made first) would otherwise sit
 * before the body, and the edge from it to what follows the loop would
 * cross the whole body and keep cg_split.c from cutting the body. */
static void after_body(Cg *g, LLVMBasicBlockRef done) {
  LLVMMoveBasicBlockAfter(done, LLVMGetInsertBlock(g->b));
  LLVMPositionBuilderAtEnd(g->b, done);
}

/* Leave the function with rc unless it is SG_OK (the message is set). */
static void fail_unless_ok(Body *B, LLVMValueRef rc) {
  Cg *g = B->g;
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "ckpt_failed");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "ckpt_ok");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, rc, LLVMConstInt(g->i32, 0, 0), ""), bad, ok);
  LLVMPositionBuilderAtEnd(g->b, bad);
  cg_fail_exit(B, rc);
  LLVMPositionBuilderAtEnd(g->b, ok);
}

static LLVMValueRef fname(Body *B) { return LLVMBuildGlobalStringPtr(B->g->b, B->f->name, "fname"); }

/* Checkpointing: a run of the loop starts (trips: i64, -1 for a while),
 * with this loop's share of the budget. */
static void ckpt_begin(Body *B, Inst *op, RegionCg *R, LLVMValueRef trips) {
  Cg *g = B->g;
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(g, RT_ckpt_begin, &fty);
  LLVMValueRef args[6] = {R->ck, R->stride, i64c(g, (int64_t)(g->ad_memory / B->nunloops)), trips,
                          fname(B), cg_where(B, op)};
  fail_unless_ok(B, LLVMBuildCall2(g->b, fty, fn, args, 6, ""));
}

/* Checkpointing: the state entering this iteration into a snapshot, if the
 * schedule keeps this one. */
static void ckpt_record(Body *B, Inst *op, RegionCg *R, LLVMValueRef *cur) {
  Cg *g = B->g;
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(g, RT_ckpt_fwd, &fty);
  LLVMValueRef at = cg_entry_alloca(B, g->ptr);
  LLVMValueRef args[2] = {LLVMBuildLoad2(g->b, g->ptr, R->ck, "ck"), at};
  fail_unless_ok(B, LLVMBuildCall2(g->b, fty, fn, args, 2, ""));
  LLVMValueRef slot = LLVMBuildLoad2(g->b, g->ptr, at, "snapshot");
  LLVMBasicBlockRef copy = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "snapshot");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "go");
  LLVMBuildCondBr(g->b, LLVMBuildIsNull(g->b, slot, ""), go, copy);
  LLVMPositionBuilderAtEnd(g->b, copy);
  for (int k = 0; k < R->n; k++) {
    LLVMValueRef dst = LLVMBuildInBoundsGEP2(g->b, g->i8, slot, &R->coff[k], 1, "");
    LLVMBuildMemCpy(g->b, dst, 1, cur[k], 1, cg_bytes(B, state_type(op, k)));
  }
  LLVMBuildBr(g->b, go);
  LLVMPositionBuilderAtEnd(g->b, go);
}

/* The header of a counted loop, `for` or `unloop`: blocks NAME, NAME_body
 * and NAME_done, the counter a phi from `start` that runs the body while
 * `pred(counter, bound)`; the builder left at the top of the body.
 * counted_close ends the body with the next count and continues at done. */
typedef struct {
  LLVMValueRef ctr;
  LLVMBasicBlockRef head, done;
} Counted;

static Counted counted_open(Body *B, const char *name, const char *ctr, LLVMValueRef start,
                            LLVMIntPredicate pred, LLVMValueRef bound) {
  Cg *g = B->g;
  char body[32], done[32];
  snprintf(body, sizeof body, "%s_body", name);
  snprintf(done, sizeof done, "%s_done", name);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  Counted c = {NULL, LLVMAppendBasicBlockInContext(g->ctx, B->fn, name), NULL};
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(g->ctx, B->fn, body);
  c.done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, done);
  LLVMBuildBr(g->b, c.head);
  LLVMPositionBuilderAtEnd(g->b, c.head);
  c.ctr = LLVMBuildPhi(g->b, LLVMTypeOf(start), ctr);
  LLVMAddIncoming(c.ctr, &start, &pre, 1);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, pred, c.ctr, bound, ""), run, c.done);
  LLVMPositionBuilderAtEnd(g->b, run);
  return c;
}

static void counted_close(Body *B, Counted *c, LLVMValueRef next) {
  Cg *g = B->g;
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMBuildBr(g->b, c->head);
  LLVMAddIncoming(c->ctr, &next, &latch, 1);
  after_body(g, c->done);
}

static void emit_for(Body *B, Inst *op, RegionCg *R) {
  Cg *g = B->g;
  Region *body = &op->regions[0];
  LLVMValueRef lo = cg_eval_scalar(B, op->args[0]), hi = cg_eval_scalar(B, op->args[1]);
  R->lo = lo;
  start_state(B, op, R);
  if (R->taped)
    start_tape(B, op, R);
  if (R->ckpt) {
    LLVMValueRef n = LLVMBuildSub(g->b, LLVMBuildSExt(g->b, hi, g->i64, ""), LLVMBuildSExt(g->b, lo, g->i64, ""), "");
    ckpt_begin(B, op, R, LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, n, i64c(g, 0), ""), n, i64c(g, 0), "trips"));
  }
  Counted steps = counted_open(B, "for", "i", lo, LLVMIntSLT, hi);
  LLVMValueRef i = steps.ctr;
  LLVMValueRef *cur = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * R->n + 1)), *nxt = cur + R->n;
  bind_state(B, op, R, body, cur, nxt);
  cg_slot(B, body->params[0])->reg = i;
  if (R->ckpt)
    ckpt_record(B, op, R, cur);
  else if (R->taped)
    record(B, op, R, cur);
  cg_emit_block(B, body->first);
  end_record(B, R);
  end_iteration(B, op, R, body, cur, nxt);
  counted_close(B, &steps, LLVMBuildAdd(g->b, i, LLVMConstInt(g->i32, 1, 0), ""));
  bind_results(B, op, R);
  free(cur);
}

static void emit_while(Body *B, Inst *op, RegionCg *R) {
  Cg *g = B->g;
  Region *cond = &op->regions[0], *body = &op->regions[1];
  start_state(B, op, R);
  if (R->taped)
    start_tape(B, op, R);
  if (R->ckpt)
    ckpt_begin(B, op, R, i64c(g, -1));
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "while");
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "while_body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "while_done");
  LLVMBuildBr(g->b, head);
  LLVMPositionBuilderAtEnd(g->b, head);
  LLVMValueRef *cur = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * R->n + 1)), *nxt = cur + R->n;
  bind_state(B, op, R, cond, cur, nxt);
  cg_emit_block(B, cond->first);
  LLVMValueRef c = cg_eval_scalar(B, cond->yields[0]);
  LLVMBuildCondBr(g->b, c, run, done);
  LLVMPositionBuilderAtEnd(g->b, run);
  for (int k = 0; k < R->n; k++) {
    cg_slot(B, param_of(op, body, k))->buf = cur[k];
    if (R->inplace[k])
      cg_slot(B, R->inplace[k])->buf = nxt[k];
  }
  if (R->ckpt)
    ckpt_record(B, op, R, cur);
  else if (R->taped)
    record(B, op, R, cur);
  cg_emit_block(B, body->first);
  end_record(B, R);
  end_iteration(B, op, R, body, cur, nxt);
  LLVMBuildBr(g->b, head);
  after_body(g, done);
  bind_results(B, op, R);
  free(cur);
}

static void emit_if(Body *B, Inst *op, RegionCg *R) {
  Cg *g = B->g;
  LLVMValueRef c = cg_eval_scalar(B, op->args[0]);
  LLVMBasicBlockRef br[2] = {LLVMAppendBasicBlockInContext(g->ctx, B->fn, "then"),
                             LLVMAppendBasicBlockInContext(g->ctx, B->fn, "else")};
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "if_done");
  LLVMBuildCondBr(g->b, c, br[0], br[1]);
  for (int r = 0; r < 2; r++) {
    if (r)
      LLVMMoveBasicBlockAfter(br[r], LLVMGetInsertBlock(g->b));
    LLVMPositionBuilderAtEnd(g->b, br[r]);
    Region *b = &op->regions[r];
    cg_emit_block(B, b->first);
    for (int k = 0; k < R->n; k++)
      cg_copy_value(B, b->yields[k], R->buf[k]);
    LLVMBuildBr(g->b, done);
  }
  after_body(g, done);
  bind_results(B, op, R);
}

/* Iterations last first: t = count-1 .. 0, each reading its entry of the
 * loop's tape in place. */
static void emit_unloop(Body *B, Inst *op, RegionCg *R) {
  Cg *g = B->g;
  Inst *loop = op->args[0];
  RegionCg *L = B->rg[loop->id];
  Region *body = &op->regions[0];
  int nc = ir_num_results(loop);
  start_state(B, op, R);
  for (int k = 0; R->wbuf && k < nc; k++) /* the loop's final value, rebuilt backwards */
    if (L->nlink[k])
      LLVMBuildMemCpy(g->b, R->wbuf[k], 1, LLVMBuildLoad2(g->b, g->ptr, L->pc[k], "final"), 1,
                      cg_bytes(B, state_type(loop, k)));
  LLVMValueRef data = LLVMBuildLoad2(g->b, g->ptr, LLVMBuildStructGEP2(g->b, L->tape_ty, L->tape, 0, ""), "tape");
  LLVMValueRef used = LLVMBuildLoad2(g->b, g->i64, LLVMBuildStructGEP2(g->b, L->tape_ty, L->tape, 1, ""), "");
  LLVMValueRef stride = L->stride;
  /* a loop carrying nothing records no bytes: count its iterations as 0 */
  LLVMValueRef safe = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, stride, i64c(g, 0), ""),
                                      i64c(g, 1), stride, "");
  LLVMValueRef count = LLVMBuildSDiv(g->b, used, safe, "iterations");
  Counted steps = counted_open(B, "unloop", "j", count, LLVMIntSGT, i64c(g, 0));
  LLVMValueRef t = LLVMBuildNSWSub(g->b, steps.ctr, i64c(g, 1), "t");
  LLVMValueRef entry = LLVMBuildInBoundsGEP2(g->b, g->i8, data,
                                             (LLVMValueRef[]){LLVMBuildNSWMul(g->b, t, stride, "")}, 1, "");
  for (int k = 0; k < nc; k++) {
    LLVMValueRef state = R->wbuf && L->nlink[k] ? R->wbuf[k] : NULL;
    /* a value the loop updated by a chain: its logs undone, last first */
    for (int l = L->nlink ? L->nlink[k] - 1 : -1; l >= 0; l--)
      cg_update_undo(B, L->link[k][l], LLVMBuildInBoundsGEP2(g->b, g->i8, entry, &L->loff[k][l], 1, ""),
                     LLVMBuildInBoundsGEP2(g->b, g->i8, entry, &L->loff[k][L->nlink[k] + l], 1, ""),
                     state);
    cg_slot(B, body->params[1 + k])->buf =
        state ? state : LLVMBuildInBoundsGEP2(g->b, g->i8, entry, &L->coff[k], 1, "");
  }
  LLVMValueRef t32 = LLVMBuildTrunc(g->b, t, g->i32, "");
  cg_slot(B, body->params[0])->reg = loop->op == OP_for ? LLVMBuildAdd(g->b, L->lo, t32, "") : t32;
  LLVMValueRef *cur = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * R->n + 1)), *nxt = cur + R->n;
  bind_state(B, op, R, body, cur, nxt);
  cg_emit_block(B, body->first);
  end_iteration(B, op, R, body, cur, nxt);
  counted_close(B, &steps, t);
  bind_results(B, op, R);
  free(cur);
}

/* Every value of region r (nested regions too) computed afresh when it is
 * emitted a second time. */
static void reset_block(Body *B, Region *r) {
  for (Inst *i = r->first; i; i = ir_walk_next(i)) {
    bool in = false;
    for (const Region *p = i->parent; p && !in; p = p->owner->parent)
      in = p == r;
    if (!in)
      break;
    cg_slot(B, i)->computed = false;
  }
}

/* One snapshot copied between the current state of A and `slot`. */
static void ckpt_copy(Body *B, Inst *loop, RegionCg *L, RegionCg *A, LLVMValueRef slot, bool store) {
  Cg *g = B->g;
  for (int k = 0; k < L->n; k++) {
    LLVMValueRef at = LLVMBuildInBoundsGEP2(g->b, g->i8, slot, &L->coff[k], 1, "");
    LLVMValueRef cur = LLVMBuildLoad2(g->b, g->ptr, A->pc[k], "cur");
    LLVMValueRef bytes = cg_bytes(B, state_type(loop, k));
    if (store)
      LLVMBuildMemCpy(g->b, at, 1, cur, 1, bytes);
    else
      LLVMBuildMemCpy(g->b, cur, 1, at, 1, bytes);
  }
}

/* The unloop of a checkpointed loop: the runtime's schedule says what to do
 * next, until every iteration is reversed. */
static void emit_unloop_ckpt(Body *B, Inst *op, RegionCg *R) {
  Cg *g = B->g;
  Inst *loop = op->args[0];
  RegionCg *L = B->rg[loop->id];
  Region *body = &op->regions[0], *lbody = body_of(loop);
  int nc = L->n;
  start_state(B, op, R);
  LLVMTypeRef fty;
  LLVMValueRef rev = cg_rt(g, RT_ckpt_reverse, &fty);
  LLVMValueRef ck = LLVMBuildLoad2(g->b, g->ptr, L->ck, "ck");
  LLVMValueRef rargs[3] = {ck, fname(B), cg_where(B, loop)};
  fail_unless_ok(B, LLVMBuildCall2(g->b, fty, rev, rargs, 3, ""));
  /* the state the schedule advances: A, double-buffered like the loop's */
  RegionCg A = *L;
  A.pc = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * nc + 1));
  A.pn = A.pc + nc;
  for (int k = 0; k < nc; k++) {
    A.pc[k] = cg_entry_alloca(B, g->ptr);
    A.pn[k] = cg_entry_alloca(B, g->ptr);
    LLVMBuildStore(g->b, R->abuf[k], A.pc[k]);
    LLVMBuildStore(g->b, R->abuf[nc + k], A.pn[k]);
  }
  LLVMValueRef posp = cg_entry_alloca(B, g->i64), slotp = cg_entry_alloca(B, g->ptr);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "schedule");
  LLVMBasicBlockRef blk[4];
  static const char *const names[4] = {"advance", "store", "restore", "reverse"};
  for (int k = 0; k < 4; k++)
    blk[k] = LLVMAppendBasicBlockInContext(g->ctx, B->fn, names[k]);
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "unloop_done");
  LLVMBuildBr(g->b, head);
  LLVMPositionBuilderAtEnd(g->b, head);
  LLVMTypeRef nty;
  LLVMValueRef next = cg_rt(g, RT_ckpt_next, &nty);
  LLVMValueRef nargs[3] = {LLVMBuildLoad2(g->b, g->ptr, L->ck, "ck"), posp, slotp};
  LLVMValueRef act = LLVMBuildCall2(g->b, nty, next, nargs, 3, "action");
  LLVMValueRef sw = LLVMBuildSwitch(g->b, act, done, 4);
  static const int codes[4] = {SG_RT_ACT_ADVANCE, SG_RT_ACT_STORE, SG_RT_ACT_RESTORE, SG_RT_ACT_REVERSE};
  for (int k = 0; k < 4; k++)
    LLVMAddCase(sw, LLVMConstInt(g->i32, (unsigned long long)codes[k], 0), blk[k]);
  LLVMValueRef *cur = xmalloc(sizeof(LLVMValueRef) * (size_t)(2 * (nc + R->n) + 1)), *nxt = cur + nc;

  /* advance: the loop's body once, on A */
  LLVMPositionBuilderAtEnd(g->b, blk[0]);
  LLVMValueRef pos = LLVMBuildTrunc(g->b, LLVMBuildLoad2(g->b, g->i64, posp, "pos"), g->i32, "");
  if (loop->op == OP_for)
    cg_slot(B, lbody->params[0])->reg = LLVMBuildAdd(g->b, L->lo, pos, "");
  bind_state(B, loop, &A, lbody, cur, nxt);
  reset_block(B, lbody);
  cg_emit_block(B, lbody->first);
  end_iteration(B, loop, &A, lbody, cur, nxt);
  LLVMBuildBr(g->b, head);

  for (int k = 1; k <= 2; k++) { /* store, restore */
    LLVMPositionBuilderAtEnd(g->b, blk[k]);
    ckpt_copy(B, loop, L, &A, LLVMBuildLoad2(g->b, g->ptr, slotp, "snapshot"), k == 1);
    LLVMBuildBr(g->b, head);
  }

  /* reverse: the unloop's body on the state A holds */
  LLVMPositionBuilderAtEnd(g->b, blk[3]);
  pos = LLVMBuildTrunc(g->b, LLVMBuildLoad2(g->b, g->i64, posp, "pos"), g->i32, "");
  for (int k = 0; k < nc; k++)
    cg_slot(B, body->params[1 + k])->buf = LLVMBuildLoad2(g->b, g->ptr, A.pc[k], "state");
  cg_slot(B, body->params[0])->reg = loop->op == OP_for ? LLVMBuildAdd(g->b, L->lo, pos, "") : pos;
  LLVMValueRef *rcur = cur + 2 * nc, *rnxt = rcur + R->n;
  bind_state(B, op, R, body, rcur, rnxt);
  cg_emit_block(B, body->first);
  end_iteration(B, op, R, body, rcur, rnxt);
  LLVMBuildBr(g->b, head);

  after_body(g, done);
  bind_results(B, op, R);
  free(cur);
  free(A.pc);
}

void cg_region_emit(Body *B, Inst *op) {
  RegionCg *R = B->rg[op->id];
  bool loop = op->op != OP_if;
  B->region_depth++;
  B->loop_depth += loop;
  switch (op->op) {
  case OP_for: emit_for(B, op, R); break;
  case OP_while: emit_while(B, op, R); break;
  case OP_if: emit_if(B, op, R); break;
  case OP_unloop:
    if (B->rg[op->args[0]->id]->ckpt)
      emit_unloop_ckpt(B, op, R);
    else
      emit_unloop(B, op, R);
    break;
  default: die("%s is not a region op", ir_ops[op->op].name);
  }
  B->region_depth--;
  B->loop_depth -= loop;
}

static void free_tapes(Body *B) {
  Cg *g = B->g;
  for (Inst *i = B->f->first; i; i = ir_walk_next(i)) {
    RegionCg *R = i->nregions ? B->rg[i->id] : NULL;
    if (R && R->taped) {
      LLVMTypeRef fty;
      LLVMValueRef fn = cg_rt(g, RT_tape_free, &fty);
      LLVMBuildCall2(g->b, fty, fn, &R->tape, 1, "");
    }
    if (R && R->ckpt) {
      LLVMTypeRef fty;
      LLVMValueRef fn = cg_rt(g, RT_ckpt_free, &fty);
      LLVMBuildCall2(g->b, fty, fn, &R->ck, 1, "");
    }
  }
}

void cg_region_finish(Body *B) { free_tapes(B); }

void cg_region_free(Body *B) {
  for (Inst *i = B->f->first; i; i = ir_walk_next(i)) {
    RegionCg *R = i->nregions ? B->rg[i->id] : NULL;
    if (R) {
      free(R->off);
      free(R->buf);
      free(R->pc);
      free(R->pn);
      free(R->fixed);
      free(R->inplace);
      free(R->coff);
      free(R->aoff);
      free(R->abuf);
      for (int k = 0; R->nlink && k < R->n; k++) {
        free(R->link[k]);
        free(R->loff[k]);
      }
      free(R->nlink);
      free(R->link);
      free(R->loff);
      free(R->woff);
      free(R->wbuf);
      free(R);
    }
  }
}

/* ---- the strategy ---- */

static void region_recognize(Body *B, Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    if (!i->nregions)
      continue;
    cg_kernel_add(B, cg_kernel_new(B, &cg_region_strategy, i), i, 0, CG_IN_MEMORY);
    decide_state(B, i, B->rg[i->id]);
    /* a yield no longer updated in place is computed as a whole */
    for (int r = 0; r < i->nregions; r++)
      for (int k = 0; k < i->regions[r].nyields; k++) {
        CgKernel *yk = cg_kernel_of(B, i->regions[r].yields[k]);
        if (yk && yk->st == &cg_inplace_strategy && !cg_slot(B, yk->head)->inplace_of)
          yk->st = &cg_own_strategy;
      }
  }
}

static LLVMValueRef region_reserve(Body *B, CgKernel *k, LLVMValueRef total) {
  return cg_region_reserve(B, k->head, total);
}

static void region_bind(Body *B, CgKernel *k, LLVMValueRef base) { cg_region_bind(B, k->head, base); }

static void region_emit(Body *B, CgKernel *k) { cg_region_emit(B, k->head); }

/* "for: 2 state (1 in one buffer, 1 computed in place), taped" */
static void region_describe(Body *B, const CgKernel *k, FILE *out) {
  Inst *op = k->head;
  RegionCg *R = B->rg[op->id];
  int fixed = 0, into = 0;
  for (int j = 0; j < R->n; j++) {
    fixed += op->op != OP_if && R->fixed[j];
    into += R->inplace[j] != NULL;
  }
  fprintf(out, "%s: %d %s", ir_ops[op->op].name, R->n,
          op->op != OP_if ? "state" : R->n == 1 ? "result" : "results");
  if (fixed || into)
    fprintf(out, " (%d in one buffer, %d computed in place)", fixed, into);
  if (R->ckpt)
    fputs(", snapshots", out);
  else if (R->taped)
    fputs(", taped", out);
}

const CgStrategy cg_region_strategy = {"region", NULL, region_recognize, region_reserve,
                                       region_bind, region_emit, region_describe};
