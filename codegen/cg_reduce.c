/* cg_reduce.c -- a reduction with a loop of its own (one not fused into a
 * loop, row or online group): over trailing axes, each kept position's
 * block reduced into a register (rows split over the thread pool when
 * there are enough); over leading or middle axes, the result pre-filled
 * and the operand streamed in memory order, each element combined into
 * its kept position -- or, for a sum over leading axes whose rows are
 * short, by periods of rows into partial sums (emit_period_sum). Also the
 * combining rules every reduction shares (cg_reduce_init, cg_combine).
 *
 * Requires: plan and the groups (the operand evaluated where used). */
#include "cg_internal.h"

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

LLVMValueRef cg_reduce_init(Op op, LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind) /* i32: max of nothing is INT32_MIN */
    return LLVMConstInt(t, (unsigned long long)(op == OP_sum ? 0 : op == OP_max ? INT32_MIN : INT32_MAX), 1);
  return LLVMConstReal(t, op == OP_sum ? 0.0 : op == OP_prod ? 1.0 : op == OP_max ? -__builtin_inf() : __builtin_inf());
}

LLVMValueRef cg_combine(Cg *g, Op op, LLVMValueRef acc, LLVMValueRef x) {
  if (LLVMGetTypeKind(LLVMTypeOf(acc)) == LLVMIntegerTypeKind) { /* i32, wrapping */
    if (op == OP_sum)
      return LLVMBuildAdd(g->b, acc, x, "");
    LLVMValueRef a[2] = {acc, x};
    return cg_intrinsic(g, op == OP_max ? "llvm.smax" : "llvm.smin", LLVMTypeOf(acc), a, 2);
  }
  if (op == OP_sum || op == OP_prod) {
    /* Reassociation lets the vectorizer keep several partial sums. */
    LLVMValueRef r = op == OP_sum ? LLVMBuildFAdd(g->b, acc, x, "") : LLVMBuildFMul(g->b, acc, x, "");
    LLVMSetFastMathFlags(r, LLVMFastMathAllowReassoc);
    return r;
  }
  LLVMValueRef a[2] = {acc, x};
  return cg_intrinsic(g, op == OP_max ? "llvm.maximum" : "llvm.minimum", LLVMTypeOf(acc), a, 2);
}

typedef struct Red {
  const Inst *v;    /* the reduction */
  CgAcc acc;        /* the running value (suffix case) */
  LLVMValueRef out; /* result buffer */
} Red;

static void red_accumulate(Body *B, Idx *x, void *ctx) {
  Red *r = ctx;
  x->lin = NULL;
  cg_acc_add(B->g, &r->acc, cg_eval(B, r->v->args[0], x));
}

/* out[kept] = op(out[kept], x[i]) over all of x, out pre-filled. */
static void red_scatter(Body *B, Idx *x, void *ctx) {
  Red *r = ctx;
  Cg *g = B->g;
  const Inst *v = r->v;
  x->lin = NULL;
  LLVMValueRef e = cg_eval(B, v->args[0], x);
  Idx o = {v->type.rank, {0}, NULL};
  int j = 0;
  for (int k = 0; k < v->args[0]->type.rank; k++)
    if (!(v->axes & (1u << k)))
      o.i[j++] = x->i[k];
  LLVMValueRef lin = cg_lin(B, &o, &v->type);
  LLVMValueRef cur = cg_load(B, v->type.dtype, r->out, lin);
  cg_store(B, v->type.dtype, r->out, lin, cg_combine(g, v->op, cur, e));
}

typedef struct Suffix {
  Red *r;
  int from;         /* first reduced axis */
} Suffix;

/* For each kept position: reduce the trailing block into a register. */
static void red_suffix_outer(Body *B, Idx *x, void *ctx) {
  Suffix *s = ctx;
  Red *r = s->r;
  Cg *g = B->g;
  const Inst *v = r->v, *src = v->args[0];
  cg_acc_init(B, &r->acc, v->op, cg_elem_type(g, v->type.dtype));
  Idx o = *x;
  o.rank = v->type.rank;
  o.lin = NULL;
  LLVMValueRef olin = cg_lin(B, &o, &v->type);
  if (cg_flat_ok(B, src)) {
    LLVMValueRef block = cg_numel_span(B, &src->type, s->from, src->type.rank);
    CgLoop L;
    LLVMValueRef j = cg_loop_range(B, i64c(g, 0), block, &L);
    L.short_trip = cg_span_short(B, &src->type, s->from, src->type.rank);
    Idx y = {-1, {0}, cg_add64(g, cg_mul64(g, olin, block), j)};
    cg_acc_add(g, &r->acc, cg_eval(B, src, &y));
    cg_loop_close(B, &L);
  } else {
    cg_loop_nest(B, &src->type, s->from, src->type.rank, x, red_accumulate, r);
  }
  cg_store(B, v->type.dtype, r->out, olin, cg_acc_value(g, &r->acc));
}

/* A reduction along the trailing axes of an [n, ...] operand (a row max
 * or sum), inline or on the pool (cg_par_rows_worth): chunks of whole
 * rows, each row reduced by one thread in the order of the inline loop, so
 * the bits do not depend on the thread count. W1's three row reductions
 * over [256, 1000] were most of what its gradient ran on one thread of
 * two. */
static void row_reduce_version(Body *B, void *ctx, LLVMValueRef rows, bool on) {
  Suffix *s = ctx;
  const Inst *src = s->r->v->args[0];
  Idx x = {src->type.rank, {0}, NULL};
  if (!on) {
    cg_loop_nest(B, &src->type, 0, s->from, &x, red_suffix_outer, s);
    return;
  }
  Par par;
  cg_par_begin_rows(B, rows, cg_numel_span(B, &src->type, 0, src->type.rank), &par);
  /* the running value is the chunk's own (red_suffix_outer allocates it
   * in the chunk function's entry) */
  Red red = {s->r->v, {0}, s->r->out};
  Suffix mine = {&red, s->from};
  CgLoop L;
  x.i[0] = cg_loop_range(B, par.begin, par.end, &L);
  red_suffix_outer(B, &x, &mine);
  cg_loop_close(B, &L);
  cg_par_end(B, &par);
}

/* A sum over leading axes of an operand read by flat index, into a result
 * of K elements: summed by periods. Streamed in memory order into the
 * result (below), each element of a short row is a load, an add and a
 * store of its own, the loop over the row too short to vectorize: a
 * column sum of [1M, 8] f32 ran 2.3x the time of reading it, of
 * [2.8M, 3] 5.7x. Instead the operand is read in blocks of PERIOD_ROWS
 * rows, each added element by element into PERIOD_ROWS * K partial sums
 * (a loop of whole vectors; the partial sums aligned to a vector, or each
 * vector of them spans two cache lines: f64 k = 8, 4.5 against 3.1 ms),
 * which are added up at the end, column by column in row order. A sum
 * reassociates as every sum does; the order depends on the sizes alone.
 * Column sums of 8M f32 elements: k = 3, 9.2 -> 1.0 ms; k = 8, 4.0 ->
 * 1.2; k = 16, 1.9 -> 1.25; f64 k = 3, 9.5 -> 3.3. Rows longer than one
 * 64-byte vector vectorize in the streamed form, which is then faster
 * (f32 k = 24: 1.4 ms against 1.7 by periods; f64 k = 16, 2.9 against
 * 3.5). */
enum { PERIOD_ROWS = 16, PERIOD_BYTES = 64, PERIOD_KMAX = PERIOD_BYTES / 4 };

static int64_t period_kmax(DType dt) { return PERIOD_BYTES / cg_elem_size(dt); }

/* How many leading axes v sums, if it sums only leading ones (not all). */
static int leading_axes(const Inst *v) {
  int r = v->args[0]->type.rank, p = 0;
  while (p < r && (v->axes & (1u << p)))
    p++;
  return p < r && v->axes == (1u << p) - 1 ? p : 0;
}

bool cg_reduce_by_periods(Body *B, const Inst *v) {
  const Inst *src = v->args[0];
  if (v->op != OP_sum || (v->type.dtype != DT_F32 && v->type.dtype != DT_F64) ||
      !leading_axes(v) || !cg_flat_ok(B, src))
    return false;
  int64_t k = 1; /* the kept elements, if literal (capped) */
  for (int a = 0; a < v->type.rank; a++) {
    if (v->type.dim[a].sym >= 0)
      return true; /* tested when run */
    k = k > PERIOD_KMAX ? k : k * v->type.dim[a].size;
  }
  return k <= period_kmax(v->type.dtype);
}

/* part[t] += src[from + t] for t < count (`whole`: count is a multiple
 * of 16, the loop not interleaved). */
static void add_into_part(Body *B, const Inst *src, LLVMValueRef part, LLVMValueRef from,
                          LLVMValueRef count, bool whole) {
  Cg *g = B->g;
  DType dt = src->type.dtype;
  CgLoop L;
  LLVMValueRef t = cg_loop_range(B, i64c(g, 0), count, &L);
  L.whole = whole;
  Idx y = {-1, {0}, cg_add64(g, from, t)};
  cg_store(B, dt, part, t, cg_combine(g, OP_sum, cg_load(B, dt, part, t), cg_eval(B, src, &y)));
  cg_loop_close(B, &L);
}

static void emit_period_sum(Body *B, const Inst *v, LLVMValueRef out, LLVMValueRef rows,
                            LLVMValueRef k) {
  Cg *g = B->g;
  const Inst *src = v->args[0];
  DType dt = v->type.dtype;
  LLVMTypeRef et = cg_elem_type(g, dt);
  LLVMValueRef part = cg_entry_alloca(B, LLVMArrayType(et, PERIOD_ROWS * PERIOD_KMAX));
  LLVMSetAlignment(part, PERIOD_BYTES); /* whole vectors, none across two lines */
  LLVMValueRef period = cg_mul64(g, k, i64c(g, PERIOD_ROWS)), zero = cg_reduce_init(OP_sum, et);
  CgLoop L;
  LLVMValueRef t = cg_loop_range(B, i64c(g, 0), period, &L);
  cg_store(B, dt, part, t, zero);
  cg_loop_close(B, &L);
  /* whole blocks: a period is a multiple of 16 elements, one vector loop
   * without a remainder when not interleaved (CgLoop.whole) */
  LLVMValueRef blocks = LLVMBuildSDiv(g->b, rows, i64c(g, PERIOD_ROWS), "blocks");
  CgLoop LB;
  LLVMValueRef base = cg_mul64(g, cg_loop_range(B, i64c(g, 0), blocks, &LB), period);
  add_into_part(B, src, part, base, period, true);
  cg_loop_close(B, &LB);
  /* the rows after the last whole block */
  LLVMValueRef done = cg_mul64(g, blocks, period);
  add_into_part(B, src, part, done, LLVMBuildNSWSub(g->b, cg_mul64(g, rows, k), done, ""), false);
  /* each kept element: its partial sums in row order */
  LLVMValueRef j = cg_loop_range(B, i64c(g, 0), k, &L);
  LLVMValueRef sum = cg_load(B, dt, part, j);
  for (int q = 1; q < PERIOD_ROWS; q++)
    sum = cg_combine(g, OP_sum, sum,
                     cg_load(B, dt, part, cg_add64(g, cg_mul64(g, k, i64c(g, q)), j)));
  cg_store(B, dt, out, j, sum);
  cg_loop_close(B, &L);
}

/* Streaming over the operand in memory order, accumulating into the
 * (pre-filled) result; the innermost loop then runs along contiguous
 * memory in both. */
static void emit_streamed_sum(Body *B, const Inst *v, LLVMValueRef out) {
  Cg *g = B->g;
  const Inst *src = v->args[0];
  Red red = {v, {0}, out};
  Idx x = {src->type.rank, {0}, NULL};
  CgLoop L;
  LLVMValueRef i = cg_loop_range(B, i64c(g, 0), cg_numel_span(B, &v->type, 0, v->type.rank), &L);
  L.short_trip = cg_span_short(B, &v->type, 0, v->type.rank);
  cg_store(B, v->type.dtype, out, i, cg_reduce_init(v->op, cg_elem_type(g, v->type.dtype)));
  cg_loop_close(B, &L);
  cg_loop_nest(B, &src->type, 0, src->type.rank, &x, red_scatter, &red);
}

void cg_emit_reduce(Body *B, const Inst *v, LLVMValueRef out) {
  const Inst *src = v->args[0];
  int r = src->type.rank, from = r;
  while (from > 0 && (v->axes & (1u << (from - 1))))
    from--;
  bool suffix = v->axes == ((1u << r) - 1) - ((1u << from) - 1);
  Red red = {v, {0}, out};
  Idx x = {r, {0}, NULL};
  if (suffix) {
    Suffix s = {&red, from};
    if (from == 1) {
      bool pool = cg_par_rows_worth(B, cg_numel_span(B, &src->type, 0, r));
      row_reduce_version(B, &s, cg_numel_span(B, &src->type, 0, 1), pool);
    } else {
      cg_loop_nest(B, &src->type, 0, from, &x, red_suffix_outer, &s);
    }
    return;
  }
  /* Reducing leading or middle axes */
  if (!cg_reduce_by_periods(B, v)) {
    emit_streamed_sum(B, v, out);
    return;
  }
  Cg *g = B->g;
  LLVMValueRef k = cg_numel_span(B, &v->type, 0, v->type.rank);
  LLVMValueRef rows = cg_numel_span(B, &src->type, 0, leading_axes(v));
  if (LLVMIsConstant(k)) {
    emit_period_sum(B, v, out, rows, k);
    return;
  }
  LLVMBasicBlockRef short_rows = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "short_rows");
  LLVMBasicBlockRef long_rows = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "long_rows");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "summed");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLE, k, i64c(g, period_kmax(v->type.dtype)), ""),
                  short_rows, long_rows);
  LLVMPositionBuilderAtEnd(g->b, short_rows);
  emit_period_sum(B, v, out, rows, k);
  LLVMBuildBr(g->b, join);
  LLVMPositionBuilderAtEnd(g->b, long_rows);
  emit_streamed_sum(B, v, out);
  LLVMBuildBr(g->b, join);
  LLVMPositionBuilderAtEnd(g->b, join);
}
