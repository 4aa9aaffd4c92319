/* The kernels of a block, in program order (cg_emit_block; the body's
 * frame, which builds the kernel plan first, is cg_body.c), and the last
 * two strategies of the plan's table: views (a pointer, no code) and every
 * value left with memory, one loop nest (or runtime call) of its own.
 *
 * Fusion is by evaluation: a value without memory is computed where it is
 * used, element by element (eval), inside its user's loop. So a chain of
 * elementwise ops becomes one loop with its intermediates in registers, a
 * reduction reads its operand's expression directly, and broadcast and
 * transpose are only index arithmetic. Cheap values (literals, counts,
 * broadcasts, transposes) are recomputed at each use.
 *
 * Loops over values whose expression needs no index remapping run over the
 * flat element range, which is what LLVM's loop vectorizer likes best. */
#include <string.h>

#include <llvm-c/DebugInfo.h> /* LLVMTemporaryMDNode, for loop metadata */

#include "cg_internal.h"

/* ---- small helpers ---- */

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

static LLVMValueRef dimv(Body *B, Dim d) {
  if (d.sym < 0)
    return i64c(B->g, d.size);
  if (!B->symv[d.sym])
    die("symbol %s not bound in @%s", B->g->m->syms[d.sym], B->f->name);
  return cg_outer(B, B->symv[d.sym]);
}

static LLVMValueRef mul64(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  if (LLVMIsAConstantInt(a) && LLVMConstIntGetSExtValue(a) == 1)
    return b;
  if (LLVMIsAConstantInt(b) && LLVMConstIntGetSExtValue(b) == 1)
    return a;
  return LLVMBuildNSWMul(g->b, a, b, "");
}

static LLVMValueRef add64(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  if (LLVMIsAConstantInt(a) && LLVMConstIntGetSExtValue(a) == 0)
    return b;
  return LLVMBuildNSWAdd(g->b, a, b, "");
}

static LLVMValueRef numel(Body *B, const Type *t, int from, int to) {
  LLVMValueRef n = i64c(B->g, 1);
  for (int k = from; k < to; k++)
    n = mul64(B->g, n, dimv(B, t->dim[k]));
  return n;
}

static Slot *slot(Body *B, const Inst *v) {
  return v->op == OP_param ? &B->pslot[v->wrt] : &B->slot[v->id];
}

Slot *cg_slot(Body *B, const Inst *v) { return slot(B, v); }

static LLVMValueRef load_elem(Body *B, const Inst *v, LLVMValueRef buf, LLVMValueRef lin) {
  Cg *g = B->g;
  LLVMTypeRef mt = cg_mem_type(g, v->type.dtype);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(g->b, mt, cg_outer(B, buf), &lin, 1, "");
  LLVMValueRef x = LLVMBuildLoad2(g->b, mt, p, "");
  cg_alias_note(B, x, buf, false);
  return v->type.dtype == DT_BOOL ? LLVMBuildTrunc(g->b, x, g->i1, "") : x;
}

static void store_elem(Body *B, DType dt, LLVMValueRef buf, LLVMValueRef lin, LLVMValueRef x) {
  Cg *g = B->g;
  LLVMTypeRef mt = cg_mem_type(g, dt);
  if (dt == DT_BOOL)
    x = LLVMBuildZExt(g->b, x, g->i8, "");
  LLVMValueRef p = LLVMBuildInBoundsGEP2(g->b, mt, cg_outer(B, buf), &lin, 1, "");
  cg_alias_note(B, LLVMBuildStore(g->b, x, p), buf, true);
}

/* ---- loops ---- */

typedef CgLoop Loop;

/* A loop over [lo, hi); returns its index. Scalars are loops over
 * [0, 1), and a long chain of them (`x ** x ** ...`) would be thousands of
 * one-trip loops for LLVM to simplify one by one: those are a block of
 * straight-line code instead (a block of its own, which cg_split.c can
 * move). */
static LLVMValueRef loop_range(Body *B, LLVMValueRef lo, LLVMValueRef n, Loop *L) {
  Cg *g = B->g;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  L->short_trip = false;
  L->whole = false;
  L->once = LLVMIsAConstantInt(lo) && LLVMConstIntGetSExtValue(lo) == 0 &&
            LLVMIsAConstantInt(n) && LLVMConstIntGetSExtValue(n) == 1;
  if (L->once) {
    L->exit = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "once");
    LLVMBuildBr(g->b, L->exit);
    LLVMPositionBuilderAtEnd(g->b, L->exit);
    return L->iv = lo;
  }
  L->header = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "loop");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "body");
  L->exit = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "done");
  LLVMBuildBr(g->b, L->header);
  LLVMPositionBuilderAtEnd(g->b, L->header);
  L->iv = LLVMBuildPhi(g->b, g->i64, "i");
  LLVMAddIncoming(L->iv, &lo, &pre, 1);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, L->iv, n, ""), body, L->exit);
  LLVMPositionBuilderAtEnd(g->b, body);
  return L->iv;
}

static LLVMValueRef loop_open(Body *B, LLVMValueRef n, Loop *L) {
  return loop_range(B, i64c(B->g, 0), n, L);
}

/* Metadata on a loop's latch. Every loop: no runtime unrolling. LLVM's
 * unroller took outer loops of unknown trip count 4 at a time with a
 * remainder, copying their inner loops (each a vector loop, its epilogue
 * and its scalar remainder) five times, for no measurable speed: em_fit's
 * gradient had 88 loops instead of 47 and compiled in 0.64 s instead of
 * 0.41, mostly Loop Strength Reduction at about 2 ms a loop.
 *
 * A flat loop of a loop body over a symbolic size or fewer than SHORT_TRIP
 * elements (an LSTM step's 14; cg_par_worth sends longer literal ones to
 * the thread pool's loop, vectorized the usual way), `short_trip`: the
 * vectorizer is asked to fold the tail into masked vector iterations, or
 * 14 elements would all run in the scalar remainder of a 16-wide vector
 * loop. A folded tail costs long loops 10-45% (a mask per iteration, no
 * interleaving), hence only there. A `whole` loop (the first part of a
 * split one, nest_split) is not interleaved, so that its one 16-wide
 * vector loop runs from 16 iterations on. */
static void loop_hints(Cg *g, LLVMValueRef br, bool short_trip, bool whole) {
  LLVMMetadataRef self = LLVMTemporaryMDNode(g->ctx, NULL, 0);
  LLVMMetadataRef pred[2] = {LLVMMDStringInContext2(g->ctx, "llvm.loop.vectorize.predicate.enable", 36),
                             LLVMValueAsMetadata(LLVMConstInt(g->i1, 1, 0))};
  LLVMMetadataRef ic1[2] = {LLVMMDStringInContext2(g->ctx, "llvm.loop.interleave.count", 26),
                            LLVMValueAsMetadata(LLVMConstInt(g->i32, 1, 0))};
  LLVMMetadataRef norun = LLVMMDStringInContext2(g->ctx, "llvm.loop.unroll.runtime.disable", 32);
  LLVMMetadataRef ops[3] = {self, LLVMMDNodeInContext2(g->ctx, &norun, 1), NULL};
  int nops = 2;
  if (short_trip)
    ops[nops++] = LLVMMDNodeInContext2(g->ctx, pred, 2);
  else if (whole)
    ops[nops++] = LLVMMDNodeInContext2(g->ctx, ic1, 2);
  LLVMMetadataRef loop = LLVMMDNodeInContext2(g->ctx, ops, (unsigned)nops);
  LLVMMetadataReplaceAllUsesWith(self, loop);
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(g->ctx, "llvm.loop", 9), LLVMMetadataAsValue(g->ctx, loop));
}

static void loop_close(Body *B, Loop *L) {
  Cg *g = B->g;
  if (L->once) {
    L->exit = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "done");
    LLVMBuildBr(g->b, L->exit);
    LLVMPositionBuilderAtEnd(g->b, L->exit);
    return;
  }
  LLVMValueRef next = LLVMBuildNSWAdd(g->b, L->iv, i64c(g, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMValueRef br = LLVMBuildBr(g->b, L->header);
  loop_hints(g, br, L->short_trip, L->whole);
  LLVMAddIncoming(L->iv, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(g->b, L->exit);
}

/* ---- evaluating one element ---- */


/* With literal sizes after the first, the sum of index times literal
 * stride: LLVM's rewrite of the nested form, (i*3 + j)*3 + k into
 * i*9 + 3j + k, drops its no-wrap flags, and without them the vectorizer
 * gives up a loop with many such addresses (a batch group's). */
static LLVMValueRef lin_of(Body *B, Idx *x, const Type *t) {
  if (x->lin)
    return x->lin;
  bool literal = true;
  for (int k = 1; k < t->rank; k++)
    literal &= t->dim[k].sym < 0;
  LLVMValueRef lin = i64c(B->g, 0);
  if (literal && t->rank > 1) {
    int64_t stride = 1;
    for (int k = t->rank - 1; k >= 0; k--) {
      lin = add64(B->g, mul64(B->g, x->i[k], i64c(B->g, stride)), lin);
      stride *= k > 0 ? t->dim[k].size : 1;
    }
    return x->lin = lin;
  }
  for (int k = 0; k < t->rank; k++)
    lin = add64(B->g, mul64(B->g, lin, dimv(B, t->dim[k])), x->i[k]);
  return x->lin = lin;
}

static LLVMValueRef eval(Body *B, const Inst *v, Idx *x);

/* v computed from its definition (ignoring its own memory). */
static LLVMValueRef eval_def(Body *B, const Inst *v, Idx *x) {
  Cg *g = B->g;
  switch (v->op) {
  case OP_count:
    if (v->type.dtype == DT_I32) /* a size as a value */
      return LLVMBuildTrunc(g->b, numel(B, &v->attr, 0, v->attr.rank), g->i32, "");
    return LLVMBuildSIToFP(g->b, numel(B, &v->attr, 0, v->attr.rank),
                           cg_elem_type(g, v->type.dtype), "");
  case OP_arange: /* i32[n]: its own position */
    return LLVMBuildTrunc(g->b, lin_of(B, x, &v->type), g->i32, "");
  case OP_broadcast: {
    const Type *src = &v->args[0]->type;
    Idx y = {src->rank, {0}, NULL};
    int lead = v->type.rank - src->rank;
    for (int k = 0; k < src->rank; k++)
      y.i[k] = ir_dim_is(src->dim[k], 1) ? i64c(g, 0) : x->i[k + lead];
    if (src->rank == 0)
      y.lin = i64c(g, 0);
    return eval(B, v->args[0], &y);
  }
  case OP_transpose: {
    Idx y = {v->type.rank, {0}, NULL};
    for (int k = 0; k < v->type.rank; k++)
      y.i[v->perm[k]] = x->i[k];
    return eval(B, v->args[0], &y);
  }
  case OP_reshape: /* same bytes, same order: the operand at the same linear index */
  {
    Idx y = {-1, {0}, lin_of(B, x, &v->type)};
    return eval(B, v->args[0], &y);
  }
  case OP_gather:
  case OP_take_along:
  case OP_slice:
  case OP_unslice:
    return cg_index_elem(B, v, x);
  case OP_scatter_add:
    if (cg_scatter_permutes(v))
      return cg_index_elem(B, v, x);
    break;
  default:
    break;
  }
  if (!ir_op_is(v->op, F_ELEM))
    die("%s has no element-wise form", ir_ops[v->op].name);
  LLVMValueRef args[3];
  for (int k = 0; k < v->nargs; k++)
    args[k] = eval(B, v->args[k], x);
  if (v->op == OP_idiv || v->op == OP_mod)
    return cg_int_divide(B, v, args[0], args[1]);
  return cg_elem(g, v, args);
}

static LLVMValueRef eval(Body *B, const Inst *v, Idx *x) {
  Slot *s = slot(B, v);
  if (s->reg) /* a loop index is the body's register: a parallel loop's
               * function reads it from its context */
    return cg_outer(B, s->reg);
  if (s->rowbuf)
    return cg_rows_load(B, v, x);
  if (s->pairbuf)
    return cg_pair_load(B, v, x);
  if (s->batchbuf)
    return cg_batch_load(B, v, x);
  if (s->scalar)
    return cg_outer(B, s->scalar);
  if (s->has_buf)
    return load_elem(B, v, s->buf, v->type.rank == 0 ? i64c(B->g, 0) : lin_of(B, x, &v->type));
  LLVMMetadataRef at = cg_debug_at(B->g, v); /* fused into its user's loop */
  LLVMValueRef r = eval_def(B, v, x);
  cg_debug_restore(B->g, at);
  return r;
}

/* Can v's expression be evaluated from a flat index alone? True when no
 * index is remapped on the way to memory (a broadcast of a scalar is fine). */
static bool flat_def_ok(Body *B, const Inst *v);

static bool flat_ok(Body *B, const Inst *v) {
  return slot(B, v)->has_buf || flat_def_ok(B, v);
}

/* The same for v's definition (its own memory aside). */
static bool flat_def_ok(Body *B, const Inst *v) {
  if (v->op == OP_const || v->op == OP_count || v->op == OP_arange)
    return true;
  if (v->op == OP_broadcast)
    return v->args[0]->type.rank == 0 && flat_ok(B, v->args[0]);
  if (v->op == OP_reshape)
    return flat_ok(B, v->args[0]);
  if (v->op == OP_transpose || !ir_op_is(v->op, F_ELEM))
    return false;
  for (int k = 0; k < v->nargs; k++)
    if (!flat_ok(B, v->args[k]))
      return false;
  return true;
}

/* ---- materializing ---- */

/* Nested loops over `t`'s axes [from, to), filling x->i; `body` runs inside. */
typedef void LoopBody(Body *B, Idx *x, void *ctx);

/* The innermost loop of a nest in a loop body is taken for a short one
 * unless its size is a literal that says otherwise. (A nest has no pool
 * version to send long loops to: an inner axis of hundreds of elements in
 * a loop body runs about 35% slower than it could.) */
static bool nest_short(Body *B, Dim d) {
  return cg_par_short(B) && (d.sym >= 0 || d.size < SHORT_TRIP);
}

/* The same for a loop over axes [from, to) of t at once. */
static bool span_short(Body *B, const Type *t, int from, int to) {
  int64_t n = 1; /* the element count, capped at SHORT_TRIP: literal sizes
                  * may be 2^32 each, and their product overflow */
  for (int k = from; k < to; k++) {
    if (t->dim[k].sym >= 0)
      return cg_par_short(B);
    int64_t s = t->dim[k].size;
    n = s == 0 ? 0 : n == 0 ? 0 : n >= SHORT_TRIP || s >= SHORT_TRIP ? SHORT_TRIP : n * s;
  }
  return cg_par_short(B) && n < SHORT_TRIP;
}

typedef struct Fill {
  const Inst *v;
  LLVMValueRef buf;
  bool by_def; /* compute v (materializing it), or read it (copying it) */
  int row;     /* rows_unswitched: 1 in the copy for a finite nonzero factor,
                * -1 in the other, 0 before */
} Fill;

static void fill_one(Body *B, Idx *x, void *ctx);
static void loop_nest(Body *B, const Type *t, int from, int to, Idx *x, LoopBody *body,
                      void *ctx);

/* The factor of a mul0 that is the same all along the innermost axis (a
 * broadcast of a value whose last axis is 1, or of a scalar), or NULL. */
static const Inst *row_factor(Body *B, const Inst *v) {
  if (v->op != OP_mul0)
    return NULL;
  for (int k = 0; k < 2; k++) {
    const Inst *a = v->args[k];
    const Type *src = a->op == OP_broadcast ? &a->args[0]->type : NULL;
    if (src && !slot(B, a)->has_buf && (src->rank == 0 || ir_dim_is(src->dim[src->rank - 1], 1)))
      return a;
  }
  return NULL;
}

/* The innermost loop of a fill of `a mul0 b` with a the same along it (the
 * outer product g x^T of a matrix-vector product's adjoint), twice: when
 * this row's a is finite and nonzero, the zero rule can only change the
 * sign of a zero product, so the row runs as a * b + 0 (the + 0 turns -0
 * into the rule's +0); else with the rule. The rule's compares and masks
 * per vector took W5's gradient from 115 to 124 ns. */
static bool rows_unswitched(Body *B, const Type *t, int axis, Idx *x, void *ctx) {
  Fill *f = ctx;
  const Inst *a = f->by_def && !f->row ? row_factor(B, f->v) : NULL;
  if (!a)
    return false;
  Cg *g = B->g;
  LLVMBuilderRef b = g->b;
  x->i[axis] = i64c(g, 0);
  x->lin = NULL;
  /* finite and nonzero: 0 < |a| <= the largest finite, one unsigned
   * compare of its bits (LLVM's fabs and fcmp ones became eleven integer
   * instructions) */
  LLVMValueRef av = eval(B, a, x);
  bool f64 = LLVMGetTypeKind(LLVMTypeOf(av)) == LLVMDoubleTypeKind;
  LLVMTypeRef it = f64 ? g->i64 : g->i32;
  unsigned long long sign = f64 ? 0x7fffffffffffffffULL : 0x7fffffffULL;
  unsigned long long maxfin = f64 ? 0x7fefffffffffffffULL : 0x7f7fffffULL;
  LLVMValueRef mag = LLVMBuildAnd(b, LLVMBuildBitCast(b, av, it, ""), LLVMConstInt(it, sign, 0), "");
  LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, LLVMBuildSub(b, mag, LLVMConstInt(it, 1, 0), ""),
                                  LLVMConstInt(it, maxfin, 0), "");
  LLVMBasicBlockRef plain = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "row.plain");
  LLVMBasicBlockRef rule = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "row.rule");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "row.done");
  LLVMBuildCondBr(b, ok, plain, rule);
  LLVMPositionBuilderAtEnd(b, plain);
  f->row = 1;
  loop_nest(B, t, axis, axis + 1, x, fill_one, f);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, rule);
  f->row = -1;
  loop_nest(B, t, axis, axis + 1, x, fill_one, f);
  f->row = 0;
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  return true;
}

/* The innermost loop of a nest that fills memory, over a symbolic size,
 * outside loop bodies (where nest_short folds it whole; on the pool, in
 * each chunk of rows) is split in two: [0, n & -16), vectorized 16 wide,
 * then the rest with the tail folded (one masked iteration for f32) over
 * a trip count of min(left, 16), which the vectorizer can bound: it emits
 * the masked iterations as straight-line code, their masks computed once
 * for all rows (a loop around them cost W5's 10 rows of 20 columns 10 ns
 * of 134). Its rows are often short (the outer product of a
 * matrix-vector product's adjoint, bench W5's 20 columns), and the
 * vectorizer's usual shape, 64 wide, then 8, then scalar, ran them as two
 * 8-wide steps and four scalar ones, each with the zero rule's select
 * (W5: 6 ns of 165). Folding the tail of reductions, or of the whole
 * loop, measured slower (test/codegen/nest_split.sg). */
static bool nest_split(Body *B, const Type *t, int from, int to, LoopBody *body) {
  return body == fill_one && from == to - 1 && t->dim[from].sym >= 0 && !cg_par_short(B);
}

static void loop_nest(Body *B, const Type *t, int from, int to, Idx *x, LoopBody *body,
                      void *ctx) {
  if (from == to) {
    body(B, x, ctx);
    return;
  }
  if (body == fill_one && from == to - 1 && rows_unswitched(B, t, from, x, ctx))
    return;
  Loop L;
  if (nest_split(B, t, from, to, body)) {
    LLVMValueRef n = dimv(B, t->dim[from]);
    LLVMValueRef whole = LLVMBuildAnd(B->g->b, n, i64c(B->g, -16), "whole");
    x->i[from] = loop_open(B, whole, &L);
    L.whole = true;
    body(B, x, ctx);
    loop_close(B, &L);
    /* the rest, fewer than 16, over a trip count the vectorizer can
     * bound by 16: its masked iteration is then straight-line code */
    LLVMBuilderRef b = B->g->b;
    LLVMValueRef left = LLVMBuildNSWSub(b, n, whole, "left"), most = i64c(B->g, 16);
    LLVMValueRef few = LLVMBuildICmp(b, LLVMIntULT, left, most, "");
    LLVMValueRef k = loop_open(B, LLVMBuildSelect(b, few, left, most, ""), &L);
    L.short_trip = true;
    x->i[from] = LLVMBuildNSWAdd(b, whole, k, "");
    body(B, x, ctx);
    loop_close(B, &L);
    return;
  }
  x->i[from] = loop_open(B, dimv(B, t->dim[from]), &L);
  L.short_trip = from == to - 1 && nest_short(B, t->dim[from]);
  loop_nest(B, t, from + 1, to, x, body, ctx);
  loop_close(B, &L);
}

static void fill_one(Body *B, Idx *x, void *ctx) {
  Fill *f = ctx;
  x->lin = NULL;
  LLVMValueRef e;
  if (f->row > 0) { /* rows_unswitched: a * b + 0, +0 where the rule gives it */
    LLVMBuilderRef b = B->g->b;
    LLVMValueRef p = LLVMBuildFMul(b, eval(B, f->v->args[0], x), eval(B, f->v->args[1], x), "");
    e = LLVMBuildFAdd(b, p, LLVMConstReal(LLVMTypeOf(p), 0.0), "");
  } else {
    e = f->by_def ? eval_def(B, f->v, x) : eval(B, f->v, x);
  }
  store_elem(B, f->v->type.dtype, f->buf, lin_of(B, x, &f->v->type), e);
}

/* A flat loop over [0, n), inline or on the thread pool (on: see
 * cg_par_worth). */
static void fill_version(Body *B, Fill *f, LLVMValueRef n, bool on) {
  const Inst *v = f->v;
  Par par;
  Loop L;
  if (on)
    cg_par_begin(B, n, &par);
  cg_alias_begin(B);
  LLVMValueRef i = on ? loop_range(B, par.begin, par.end, &L) : loop_open(B, n, &L);
  L.short_trip = !on && cg_par_short(B);
  Idx x = {v->type.rank <= 1 ? v->type.rank : -1, {i}, i};
  LLVMValueRef e = eval_def(B, v, &x);
  store_elem(B, v->type.dtype, f->buf, i, e);
  loop_close(B, &L);
  cg_alias_end(B);
  if (on)
    cg_par_end(B, &par);
}

/* A fill that needs its index (a broadcast, a transpose: `z - max(z,
 * axis=1)`) as a loop nest, inline or on the pool (cg_par_rows_worth) in
 * chunks of whole rows (indices of axis 0). */
static void fill_rows_version(Body *B, Fill *f, LLVMValueRef rows, bool on) {
  const Type *t = &f->v->type;
  Idx x = {t->rank, {0}, NULL};
  Par par;
  if (on)
    cg_par_begin_rows(B, rows, numel(B, t, 0, t->rank), &par);
  cg_alias_begin(B);
  if (on) {
    Loop L;
    x.i[0] = loop_range(B, par.begin, par.end, &L);
    loop_nest(B, t, 1, t->rank, &x, fill_one, f);
    loop_close(B, &L);
  } else {
    loop_nest(B, t, 0, t->rank, &x, fill_one, f);
  }
  cg_alias_end(B);
  if (on)
    cg_par_end(B, &par);
}

/* buf[i] = v[i] for every element, by v's definition. */
static void emit_fill(Body *B, const Inst *v, LLVMValueRef buf) {
  Fill f = {v, buf, true, 0};
  const Type *t = &v->type;
  cg_check_slice_once(B, v);
  if (flat_def_ok(B, v) || t->rank <= 1) {
    LLVMValueRef n = numel(B, t, 0, t->rank);
    fill_version(B, &f, n, cg_par_worth(B, n));
  } else
    fill_rows_version(B, &f, numel(B, t, 0, 1), cg_par_rows_worth(B, numel(B, t, 0, t->rank)));
}

static LLVMValueRef entry_alloca(Body *B, LLVMTypeRef t) { return cg_alloca_at(B->g, B->entry, t, "acc"); }

/* ---- for cg_data.c ---- */

LLVMValueRef cg_eval(Body *B, const Inst *v, Idx *x) { return eval(B, v, x); }
bool cg_flat_ok(Body *B, const Inst *v) { return flat_ok(B, v); }
bool cg_flat_def_ok(Body *B, const Inst *v) { return flat_def_ok(B, v); }
LLVMValueRef cg_loop_range(Body *B, LLVMValueRef lo, LLVMValueRef hi, CgLoop *L) { return loop_range(B, lo, hi, L); }
void cg_loop_close(Body *B, CgLoop *L) { loop_close(B, L); }
LLVMValueRef cg_eval_def(Body *B, const Inst *v, Idx *x) { return eval_def(B, v, x); }
LLVMValueRef cg_dim(Body *B, Dim d) { return dimv(B, d); }
LLVMValueRef cg_mul64(Cg *g, LLVMValueRef a, LLVMValueRef b) { return mul64(g, a, b); }
LLVMValueRef cg_add64(Cg *g, LLVMValueRef a, LLVMValueRef b) { return add64(g, a, b); }
LLVMValueRef cg_numel(Body *B, const Type *t) { return numel(B, t, 0, t->rank); }
LLVMValueRef cg_numel_span(Body *B, const Type *t, int from, int to) { return numel(B, t, from, to); }
bool cg_span_short(Body *B, const Type *t, int from, int to) { return span_short(B, t, from, to); }
void cg_loop_nest(Body *B, const Type *t, int from, int to, Idx *x, CgLoopBody *body, void *ctx) {
  loop_nest(B, t, from, to, x, body, ctx);
}
LLVMValueRef cg_lin(Body *B, Idx *x, const Type *t) { return lin_of(B, x, t); }
LLVMValueRef cg_load(Body *B, DType dt, LLVMValueRef buf, LLVMValueRef lin) {
  Inst tmp = {.type = ir_scalar(dt)};
  return load_elem(B, &tmp, buf, lin);
}
void cg_store(Body *B, DType dt, LLVMValueRef buf, LLVMValueRef lin, LLVMValueRef x) {
  store_elem(B, dt, buf, lin, x);
}
void cg_loop_all(Body *B, const Type *t, Idx *x, CgLoopBody *body, void *ctx) {
  x->rank = t->rank;
  x->lin = NULL;
  loop_nest(B, t, 0, t->rank, x, body, ctx);
}
LLVMValueRef cg_loop_begin(Body *B, LLVMValueRef n, void **loop) {
  Loop *L = xmalloc(sizeof *L);
  *loop = L;
  return loop_open(B, n, L);
}
void cg_loop_end(Body *B, void *loop) {
  loop_close(B, loop);
  free(loop);
}

/* A slice view's pointer, once per emission of its block (a loop group
 * makes the views among its members before its loop). */
void cg_emit_view(Body *B, Inst *v) {
  Slot *s = slot(B, v);
  if (s->computed)
    return;
  s->buf = cg_slice_view(B, v, slot(B, v->args[0])->buf);
  s->computed = true;
}

LLVMValueRef cg_entry_alloca(Body *B, LLVMTypeRef t) { return entry_alloca(B, t); }

/* Aligned to a whole AVX-512 vector: a strategy's block scratch is read
 * and written a vector at a time, and at the allocas' default alignment
 * (the element's) every such access split across two cache lines (bench
 * W6: a row group's row max went from 28% to 17% of the gradient's time). */
LLVMValueRef cg_block_alloca(Body *B, LLVMTypeRef elem, int64_t n) {
  LLVMValueRef a = entry_alloca(B, LLVMArrayType2(elem, (uint64_t)n));
  LLVMSetAlignment(a, 64);
  return a;
}

void cg_fail_exit(Body *B, LLVMValueRef code) {
  Cg *g = B->g;
  cg_region_finish(B);
  cg_release_temps(B);
  LLVMBuildRet(g->b, code);
}

LLVMValueRef cg_bytes(Body *B, const Type *t) {
  return mul64(B->g, numel(B, t, 0, t->rank), i64c(B->g, cg_elem_size(t->dtype)));
}

LLVMValueRef cg_eval_scalar(Body *B, const Inst *v) {
  Idx x = {0, {0}, i64c(B->g, 0)};
  return eval(B, v, &x);
}

void cg_fill_nest(Body *B, const Inst *v, LLVMValueRef dst) {
  Fill fl = {v, dst, false, 0};
  Idx x = {v->type.rank, {0}, NULL};
  loop_nest(B, &v->type, 0, v->type.rank, &x, fill_one, &fl);
}

void cg_copy_value(Body *B, const Inst *v, LLVMValueRef dst) {
  if (v->type.rank <= 1 || flat_ok(B, v)) {
    Loop L;
    cg_alias_begin(B);
    LLVMValueRef i = loop_open(B, numel(B, &v->type, 0, v->type.rank), &L);
    L.short_trip = span_short(B, &v->type, 0, v->type.rank);
    Idx y = {v->type.rank <= 1 ? v->type.rank : -1, {i}, i};
    store_elem(B, v->type.dtype, dst, i, eval(B, v, &y));
    loop_close(B, &L);
    cg_alias_end(B);
    return;
  }
  cg_fill_nest(B, v, dst);
}

/* Once v is computed, a scalar goes into a register (Slot.scalar); a
 * group's are set by emit_group. */
static void load_scalar(Body *B, Inst *v) {
  Slot *s = slot(B, v);
  /* Not with loops or branches: their bodies can be emitted twice
   * (the reverse loop, --ad-memory's steps), where a register of the
   * first emission does not reach. */
  if (B->has_regions)
    return;
  if (v->type.rank == 0 && s->has_buf && s->buf && s->computed && s->group < 0 && !s->scalar &&
      !s->acc_into && !v->nregions && v->op != OP_proj)
    s->scalar = load_elem(B, v, s->buf, i64c(B->g, 0));
}

/* The kernels of one block, each where its head stands (cg_plan.c). */
void cg_emit_block(Body *B, Inst *first) {
  Region *r = first ? first->parent : NULL;
  for (int k = 0; r && k < r->nparams; k++) /* a loop's index and carried vars */
    cg_debug_value(B, r->params[k]);
  for (Inst *i = first; i; i = i->next) {
    CgKernel *k = cg_kernel_of(B, i);
    if (k && k->head == i) {
      cg_debug_at(B->g, i);
      k->st->emit(B, k);
    }
    load_scalar(B, i);
    cg_debug_value(B, i);
  }
}

/* Is i computed element by element from its definition (a fill: the
 * ops that are not a call, a scatter, a reduction, a scan...)? */
bool cg_fills(const Inst *i) {
  return ir_ops[i->op].shape != SH_MATMUL && i->op != OP_update && i->op != OP_update_add &&
         !(i->op == OP_scatter_add && !cg_scatter_permutes(i)) && i->op != OP_scatter_along &&
         ir_ops[i->op].shape != SH_REDUCE && ir_ops[i->op].shape != SH_ARG &&
         !ir_op_is(i->op, F_RANDOM) && i->op != OP_concat &&
         !(ir_ops[i->op].shape == SH_SAME && ir_op_is(i->op, F_AXIS)) /* scans */;
}

void cg_emit_alone(Body *B, Inst *i) {
  Slot *s = slot(B, i);
  cg_debug_at(B->g, i);
  s->computed = true;
  if (s->acc_into) { /* the first product writes the sum, the second adds to it */
    Slot *sum = slot(B, s->acc_into);
    cg_emit_matmul(B, i, sum->buf, sum->computed);
    sum->computed = true;
    return;
  }
  if (s->by_products)
    return;
  if (cg_fills(i))
    emit_fill(B, i, s->buf);
  else if (ir_ops[i->op].shape == SH_MATMUL)
    cg_emit_matmul(B, i, s->buf, false);
  else if (i->op == OP_update || i->op == OP_update_add)
    cg_emit_update(B, i, s->buf, false);
  else if (i->op == OP_scatter_add || i->op == OP_scatter_along)
    cg_emit_scatter(B, i, s->buf);
  else if (ir_ops[i->op].shape == SH_REDUCE)
    cg_emit_reduce(B, i, s->buf);
  else if (ir_ops[i->op].shape == SH_ARG)
    cg_emit_argreduce(B, i, s->buf);
  else if (ir_op_is(i->op, F_RANDOM))
    cg_emit_random(B, i, s->buf);
  else if (i->op == OP_concat)
    cg_emit_concat(B, i, s->buf);
  else
    cg_emit_scan(B, i, s->buf);
}

/* ---- the strategies of the values no group took ---- */

/* Views: a slice of leading-axis rows of memory (a pointer into it) and a
 * reshape of memory (the same pointer): no code. */
static void view_recognize(Body *B, Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    Slot *s = slot(B, i);
    if (s->kernel < 0 && s->has_buf && (s->view || i->op == OP_reshape))
      cg_kernel_add(B, cg_kernel_new(B, &cg_view_strategy, i), i, 0, CG_IN_MEMORY);
  }
}

static void view_emit(Body *B, CgKernel *k) {
  Inst *i = k->head;
  if (i->op == OP_reshape) /* (set again when a loop body is emitted again) */
    slot(B, i)->buf = slot(B, i->args[0])->buf;
  else
    cg_emit_view(B, i);
}

static void view_describe(Body *B, const CgKernel *k, FILE *out) {
  (void)B;
  fputs("view of ", out);
  cg_plan_value(k->head->args[0], out);
}

const CgStrategy cg_view_strategy = {"view", NULL, view_recognize, NULL, NULL, view_emit, view_describe};

/* Every value left with memory, by the loop nest or call of its op. */
static void own_recognize(Body *B, Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    Slot *s = slot(B, i);
    if (s->kernel < 0 && s->has_buf && i->op != OP_proj)
      cg_kernel_add(B, cg_kernel_new(B, &cg_own_strategy, i), i, 0, CG_IN_MEMORY);
  }
}

static void own_emit(Body *B, CgKernel *k) { cg_emit_alone(B, k->head); }

/* A flat loop goes to the pool in loop bodies too (cg_par_worth), a
 * nest of loops only outside them (cg_par_rows_worth). */
static const char *pool_note(const Inst *v, const Type *t, bool flat) {
  return (flat || !v->parent) && cg_par_planned(v, t) ? ", pool" : "";
}

static void own_describe(Body *B, const CgKernel *k, FILE *out) {
  const Inst *i = k->head;
  Slot *s = slot(B, i);
  if (s->by_products) {
    fprintf(out, "products: %%%d + %%%d", i->args[0]->id, i->args[1]->id);
  } else if (ir_ops[i->op].shape == SH_MATMUL) {
    fputs(i->op == OP_matmulz ? "gemmz" : "gemm", out);
    cg_plan_shape(B, &i->type, out);
    if (s->acc_into) { /* the first product writes the sum, the second adds to it */
      const Inst *other = s->acc_into->args[s->acc_into->args[0] == i];
      fprintf(out, " %s %%%d", other->id < i->id ? "adding into" : "into", s->acc_into->id);
    }
    if (cg_gemm_keeps(i))
      fputs(", right operand packed once per call", out);
  } else if ((i->op == OP_scatter_add && !cg_scatter_permutes(i)) || i->op == OP_scatter_along) {
    fputs("scatter", out);
    cg_plan_shape(B, &i->type, out);
  } else if (ir_ops[i->op].shape == SH_REDUCE) {
    bool flat = i->type.rank == 0 && flat_ok(B, i->args[0]);
    fputs(flat ? "flat" : "reduce", out);
    cg_plan_shape(B, &i->args[0]->type, out);
    fputs(pool_note(i, &i->args[0]->type, false), out);
    if (cg_reduce_by_periods(B, i))
      fputs(ir_static_numel(&i->type) >= 0 ? ", by periods of 16 rows"
                                            : ", by periods of 16 rows if its rows fit a vector",
            out);
  } else if (ir_ops[i->op].shape == SH_ARG) {
    fputs("arg", out);
    cg_plan_shape(B, &i->args[0]->type, out);
  } else if (ir_op_is(i->op, F_RANDOM)) {
    fputs("random", out);
    cg_plan_shape(B, &i->type, out);
  } else {
    bool flat = flat_def_ok(B, i) || i->type.rank <= 1;
    fputs(flat ? "flat" : "nest", out);
    cg_plan_shape(B, &i->type, out);
    fputs(pool_note(i, &i->type, flat), out);
  }
  if (s->in_frame)
    fputs(", frame", out);
}

const CgStrategy cg_own_strategy = {"own", NULL, own_recognize, NULL, NULL, own_emit, own_describe};
