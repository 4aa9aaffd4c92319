/* Code for the data operations of language version 2 that can fail while
 * the function runs: integer division (by zero), and later indexing (out
 * of range). A failure calls the runtime to set the message
 * ("f: model.sg:9: ...") and branches to the body's failure exit, which
 * frees the temporaries and returns SG_ERR_INDEX (inside a parallel loop:
 * after it, see record_failure). A body with such an op
 * computes its results aside and copies them out at the very end
 * (cg_func.c), so a failure leaves every output untouched (spec section 9). */
#include <string.h>

#include "cg_internal.h"

static LLVMValueRef i32c(Cg *g, int32_t v) { return LLVMConstInt(g->i32, (unsigned long long)(int64_t)v, 1); }

/* "model.sg:9": the file's last path component and the instruction's line. */
LLVMValueRef cg_where(Body *B, const Inst *at) {
  const char *file = B->g->m->file ? B->g->m->file : "<input>";
  const char *slash = strrchr(file, '/');
  if (slash && slash[1])
    file = slash + 1;
  char buf[600];
  snprintf(buf, sizeof buf, "%.500s:%d", file, at->loc.line);
  return LLVMBuildGlobalStringPtr(B->g->b, buf, "where");
}

/* The runtime call that sets the message ("f: model.sg:9: ...") and the
 * body's failure exit. */
static void report_call(Body *B, const Inst *at, RtFunc rt, LLVMValueRef *args, int nargs) {
  Cg *g = B->g;
  LLVMValueRef all[8];
  all[0] = LLVMBuildGlobalStringPtr(g->b, B->f->name, "fname");
  all[1] = cg_where(B, at);
  for (int k = 0; k < nargs && k < 6; k++)
    all[2 + k] = args[k];
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(g, rt, &fty);
  cg_fail_exit(B, LLVMBuildCall2(g->b, fty, fn, all, (unsigned)(2 + nargs), ""));
}

/* A check inside a parallel loop (cg_parallel.c): its chunk cannot leave
 * the body, so it records which check failed and the runtime call's
 * arguments (i64, at most two), and ends; cg_par_fail_report makes the
 * call afterwards, on the calling thread (sg_last_error is per thread). */
struct ParCheck {
  const Inst *at;
  RtFunc rt;
  int nargs;
};

static void record_failure(Body *B, const Inst *at, RtFunc rt, LLVMValueRef *args,
                           int nargs) {
  Cg *g = B->g;
  Par *p = B->par;
  if (nargs > 2)
    die("a check inside a parallel loop with %d arguments", nargs);
  if (!p->fail_site) {
    p->fail_site = cg_par_partials(B, p, g->i32);
    p->fail_arg0 = cg_par_partials(B, p, g->i64);
    p->fail_arg1 = cg_par_partials(B, p, g->i64);
  }
  p->checks = xrealloc(p->checks, sizeof *p->checks * (size_t)(p->nchecks + 1));
  p->checks[p->nchecks++] = (struct ParCheck){at, rt, nargs};
  LLVMValueRef c = cg_par_chunk_index(B, p);
  LLVMValueRef arrays[3] = {p->fail_site, p->fail_arg0, p->fail_arg1};
  LLVMValueRef vals[3] = {i32c(g, p->nchecks), nargs > 0 ? args[0] : NULL,
                          nargs > 1 ? args[1] : NULL};
  for (int k = 0; k < 1 + nargs; k++) {
    LLVMTypeRef t = k ? g->i64 : g->i32;
    LLVMValueRef at_c = LLVMBuildInBoundsGEP2(g->b, t, cg_outer(B, arrays[k]), &c, 1, "");
    LLVMBuildStore(g->b, vals[k], at_c);
  }
  LLVMBuildRetVoid(g->b);
}

void cg_par_fail_clear(Body *B, Par *p) {
  if (!p->fail_site)
    return;
  Cg *g = B->g;
  LLVMValueRef bytes = LLVMBuildMul(g->b, p->nchunks, LLVMConstInt(g->i64, 4, 0), "");
  LLVMBuildMemSet(g->b, p->fail_site, LLVMConstInt(g->i8, 0, 0), bytes, 4);
}

/* After the loop: the first chunk with a failure, in chunk order, makes its
 * check's runtime call and leaves the body. Each chunk stops at its first
 * failure, so that is the failure the loop meets first running alone. */
void cg_par_fail_report(Body *B, Par *p) {
  if (!p->fail_site)
    return;
  Cg *g = B->g;
  LLVMValueRef c = cg_entry_alloca(B, g->i64);
  LLVMBuildStore(g->b, LLVMConstInt(g->i64, 0, 0), c);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "fail_scan");
  LLVMBasicBlockRef test = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "fail_test");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "fail_next");
  LLVMBasicBlockRef found = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "failed_chunk");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "no_failure");
  LLVMBuildBr(g->b, head);
  LLVMPositionBuilderAtEnd(g->b, head);
  LLVMValueRef ci = LLVMBuildLoad2(g->b, g->i64, c, "");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, ci, p->nchunks, ""), test, done);
  LLVMPositionBuilderAtEnd(g->b, test);
  LLVMValueRef site = LLVMBuildLoad2(
      g->b, g->i32, LLVMBuildInBoundsGEP2(g->b, g->i32, p->fail_site, &ci, 1, ""), "");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, site, i32c(g, 0), ""), found, next);
  LLVMPositionBuilderAtEnd(g->b, next);
  LLVMBuildStore(g->b, LLVMBuildAdd(g->b, ci, LLVMConstInt(g->i64, 1, 0), ""), c);
  LLVMBuildBr(g->b, head);
  LLVMPositionBuilderAtEnd(g->b, found);
  LLVMValueRef a[2];
  LLVMValueRef arrays[2] = {p->fail_arg0, p->fail_arg1};
  for (int k = 0; k < 2; k++)
    a[k] = LLVMBuildLoad2(g->b, g->i64, LLVMBuildInBoundsGEP2(g->b, g->i64, arrays[k], &ci, 1, ""), "");
  LLVMValueRef sw = LLVMBuildSwitch(g->b, site, done, (unsigned)p->nchecks);
  for (int k = 0; k < p->nchecks; k++) {
    LLVMBasicBlockRef call = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "report");
    LLVMAddCase(sw, i32c(g, k + 1), call);
    LLVMPositionBuilderAtEnd(g->b, call);
    report_call(B, p->checks[k].at, p->checks[k].rt, a, p->checks[k].nargs);
  }
  LLVMPositionBuilderAtEnd(g->b, done);
  free(p->checks);
  p->checks = NULL;
  p->nchecks = 0;
}

/* Branch to a failure when `bad` holds. */
void cg_fail_if(Body *B, LLVMValueRef bad, const Inst *at, RtFunc rt, LLVMValueRef *args,
                int nargs) {
  Cg *g = B->g;
  LLVMBasicBlockRef report = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "bad_value");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "checked");
  LLVMValueRef br = LLVMBuildCondBr(g->b, bad, report, ok);
  /* failures are rare: keep the fast path straight */
  unsigned kind = LLVMGetMDKindIDInContext(g->ctx, "prof", 4);
  LLVMMetadataRef md[3] = {LLVMMDStringInContext2(g->ctx, "branch_weights", 14),
                           LLVMValueAsMetadata(i32c(g, 1)),
                           LLVMValueAsMetadata(i32c(g, 1 << 20))};
  LLVMSetMetadata(br, kind, LLVMMetadataAsValue(g->ctx, LLVMMDNodeInContext2(g->ctx, md, 3)));
  LLVMPositionBuilderAtEnd(g->b, report);
  if (B->par)
    record_failure(B, at, rt, args, nargs);
  else
    report_call(B, at, rt, args, nargs);
  LLVMPositionBuilderAtEnd(g->b, ok);
}

/* Floor division and its modulo, from LLVM's truncating sdiv/srem: adjust
 * by one where the remainder is non-zero and has the divisor's opposite
 * sign. b = -1 is taken apart (INT_MIN / -1 overflows sdiv): a // -1 is
 * -a, wrapping, and a % -1 is 0. */
LLVMValueRef cg_int_divide(Body *B, const Inst *v, LLVMValueRef a, LLVMValueRef b) {
  Cg *g = B->g;
  LLVMBuilderRef bd = g->b;
  LLVMValueRef zero = i32c(g, 0), one = i32c(g, 1), minus1 = i32c(g, -1);
  if (!(LLVMIsAConstantInt(b) && LLVMConstIntGetSExtValue(b) != 0))
    cg_fail_if(B, LLVMBuildICmp(bd, LLVMIntEQ, b, zero, ""), v, RT_div_zero, NULL, 0);
  LLVMValueRef m1 = LLVMBuildICmp(bd, LLVMIntEQ, b, minus1, "");
  LLVMValueRef safe = LLVMBuildSelect(bd, LLVMBuildOr(bd, m1, LLVMBuildICmp(bd, LLVMIntEQ, b, zero, ""), ""),
                                      one, b, "");
  LLVMValueRef q = LLVMBuildSDiv(bd, a, safe, "");
  LLVMValueRef r = LLVMBuildSRem(bd, a, safe, "");
  LLVMValueRef adjust = LLVMBuildAnd(bd, LLVMBuildICmp(bd, LLVMIntNE, r, zero, ""),
                                     LLVMBuildICmp(bd, LLVMIntSLT, LLVMBuildXor(bd, r, b, ""), zero, ""), "");
  if (v->op == OP_idiv) {
    q = LLVMBuildSub(bd, q, LLVMBuildZExt(bd, adjust, g->i32, ""), "");
    return LLVMBuildSelect(bd, m1, LLVMBuildSub(bd, zero, a, ""), q, "");
  }
  r = LLVMBuildSelect(bd, adjust, LLVMBuildAdd(bd, r, b, ""), r, "");
  return LLVMBuildSelect(bd, m1, zero, r, "");
}

/* ---- indexing ---- */

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* A raw i32 index for an axis of `size`: negative counts from the end;
 * outside the axis after that fails, naming the raw index. */
static LLVMValueRef checked_index(Body *B, const Inst *at, LLVMValueRef raw, LLVMValueRef size) {
  Cg *g = B->g;
  LLVMValueRef r = LLVMBuildSExt(g->b, raw, g->i64, "");
  LLVMValueRef neg = LLVMBuildICmp(g->b, LLVMIntSLT, r, i64c(g, 0), "");
  LLVMValueRef j = LLVMBuildSelect(g->b, neg, LLVMBuildAdd(g->b, r, size, ""), r, "");
  LLVMValueRef args[2] = {r, size};
  cg_fail_if(B, LLVMBuildICmp(g->b, LLVMIntUGE, j, size, ""), at, RT_bad_index, args, 2);
  return j;
}

/* The start of a slice of `len` positions from raw start s of an axis of
 * `size`: s counts from the end when negative; s .. s + len must fit (the
 * message names s when it is not a position of the axis, else the end
 * s + len). A position x[i] is a slice of one. */
static LLVMValueRef slice_start(Body *B, const Inst *at, LLVMValueRef raw, LLVMValueRef size,
                                LLVMValueRef len) {
  Cg *g = B->g;
  LLVMValueRef r = LLVMBuildSExt(g->b, raw, g->i64, "");
  LLVMValueRef neg = LLVMBuildICmp(g->b, LLVMIntSLT, r, i64c(g, 0), "");
  LLVMValueRef s = LLVMBuildSelect(g->b, neg, LLVMBuildAdd(g->b, r, size, ""), r, "");
  /* s itself must be a position of the axis (or its end, for an empty slice) */
  LLVMValueRef empty = LLVMBuildICmp(g->b, LLVMIntEQ, len, i64c(g, 0), "");
  LLVMValueRef bad_start = LLVMBuildSelect(g->b, empty, LLVMBuildICmp(g->b, LLVMIntUGT, s, size, ""),
                                           LLVMBuildICmp(g->b, LLVMIntUGE, s, size, ""), "");
  LLVMValueRef end = LLVMBuildAdd(g->b, s, len, "");
  LLVMValueRef bad_end = LLVMBuildICmp(g->b, LLVMIntSGT, end, size, "");
  LLVMValueRef shown = LLVMBuildSelect(g->b, bad_start, r, end, "");
  LLVMValueRef args[2] = {shown, size};
  cg_fail_if(B, LLVMBuildOr(g->b, bad_start, bad_end, ""), at, RT_bad_index, args, 2);
  return s;
}

LLVMValueRef cg_slice_start(Body *B, const Inst *at, LLVMValueRef raw, LLVMValueRef size,
                            LLVMValueRef len) {
  return slice_start(B, at, raw, size, len);
}

LLVMValueRef cg_checked_index(Body *B, const Inst *at, LLVMValueRef raw, LLVMValueRef size) {
  return checked_index(B, at, raw, size);
}

static LLVMValueRef scalar_of(Body *B, const Inst *v) {
  Idx z = {0, {0}, i64c(B->g, 0)};
  return cg_eval(B, v, &z);
}

void cg_check_slice_once(Body *B, const Inst *v) {
  if (v->op != OP_slice && v->op != OP_unslice)
    return;
  const Inst *data = v->args[0];
  int k = __builtin_ctz(v->axes);
  Dim axis = v->op == OP_slice ? data->type.dim[k] : v->type.dim[k];
  Dim len = v->op == OP_slice ? v->type.dim[k] : data->type.dim[k];
  slice_start(B, v, scalar_of(B, v->args[1]), cg_dim(B, axis), cg_dim(B, len));
}

/* ---- indices known before the program runs ----
 * A short index of literals (`(arange(3) + 1) % 3`, ir_index_table) into an
 * axis of literal size is a table of positions checked here, once: the
 * generated code reads position p from a constant array, which LLVM folds
 * to a constant where it unrolls the loop over p (a gather of 3 columns is
 * 3 moves a row). */
enum { TABLE_MAX = 64 };

/* The positions index ix reads of an axis of `size`, each in [0, size),
 * into t: their count, or -1 when not all are known and inside. */
static int known_positions(const Inst *ix, Dim size, int64_t *t) {
  int n = size.sym < 0 ? ir_index_table(ix, t, TABLE_MAX) : -1;
  for (int p = 0; p < n; p++) {
    if (t[p] < -size.size || t[p] >= size.size)
      return -1;
    t[p] += t[p] < 0 ? size.size : 0;
  }
  return n;
}

/* t[p] (i64) for the i64 position p. */
static LLVMValueRef table_at(Cg *g, const int64_t *t, int n, LLVMValueRef p) {
  if (LLVMIsAConstantInt(p))
    return i64c(g, t[LLVMConstIntGetSExtValue(p)]);
  LLVMValueRef vals[TABLE_MAX];
  for (int k = 0; k < n; k++)
    vals[k] = i64c(g, t[k]);
  LLVMValueRef init = LLVMConstArray(g->i64, vals, (unsigned)n);
  LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), ".positions");
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  LLVMValueRef at[2] = {i64c(g, 0), p};
  LLVMValueRef ptr = LLVMBuildInBoundsGEP2(g->b, LLVMTypeOf(init), gv, at, 2, "");
  return LLVMBuildLoad2(g->b, g->i64, ptr, "position");
}

/* The inverse of v's permutation into inv, or false (cg_scatter_permutes). */
static bool inverse_permutation(const Inst *v, int64_t *inv) {
  if (v->op != OP_scatter_add || v->args[1]->type.rank != 1)
    return false;
  Dim size = v->type.dim[__builtin_ctz(v->axes)];
  int64_t t[TABLE_MAX];
  int n = known_positions(v->args[1], size, t);
  if (n < 0 || n != size.size)
    return false;
  for (int p = 0; p < n; p++)
    inv[p] = -1;
  for (int p = 0; p < n; p++) {
    if (inv[t[p]] >= 0)
      return false;
    inv[t[p]] = p;
  }
  return true;
}

bool cg_scatter_permutes(const Inst *v) {
  int64_t inv[TABLE_MAX];
  return inverse_permutation(v, inv);
}

bool cg_gather_known(const Inst *v) {
  int64_t t[TABLE_MAX];
  return v->op == OP_gather && known_positions(v->args[1], v->args[0]->type.dim[__builtin_ctz(v->axes)], t) >= 0;
}

/* Is reading an element of v a load (v in memory, or a reshape of it)? */
static bool reads_memory(Body *B, const Inst *v) {
  if (v->op == OP_param || cg_slot(B, v)->has_buf)
    return true;
  return v->op == OP_reshape && reads_memory(B, v->args[0]);
}

LLVMValueRef cg_index_elem(Body *B, const Inst *v, Idx *x) {
  Cg *g = B->g;
  const Inst *data = v->args[0], *ix = v->args[1];
  int k = __builtin_ctz(v->axes);
  const Type *t = &v->type;
  if (x->rank < t->rank) { /* a flat position: recover the axes */
    LLVMValueRef lin = x->lin;
    for (int a = t->rank - 1; a >= 0; a--) {
      LLVMValueRef d = cg_dim(B, t->dim[a]);
      x->i[a] = a == 0 ? lin : LLVMBuildSRem(g->b, lin, d, "");
      lin = a == 0 ? lin : LLVMBuildSDiv(g->b, lin, d, "");
    }
    x->rank = t->rank;
  }
  Idx y = {data->type.rank, {0}, NULL};
  switch (v->op) {
  case OP_gather: {
    int ri = ix->type.rank;
    Idx w = {ri, {0}, ri == 0 ? i64c(g, 0) : NULL};
    for (int a = 0; a < ri; a++)
      w.i[a] = x->i[k + a];
    int64_t known[TABLE_MAX];
    int n = known_positions(ix, data->type.dim[k], known);
    LLVMValueRef j = n >= 0 ? table_at(g, known, n, x->i[k])
                            : checked_index(B, v, cg_eval(B, ix, &w), cg_dim(B, data->type.dim[k]));
    for (int a = 0; a < data->type.rank; a++)
      y.i[a] = a < k ? x->i[a] : a == k ? j : x->i[a + ri - 1];
    break;
  }
  case OP_scatter_add: { /* by a permutation: the gather by its inverse */
    int64_t inv[TABLE_MAX];
    if (!inverse_permutation(v, inv))
      die("scatter_add has no element-wise form");
    for (int a = 0; a < t->rank; a++)
      y.i[a] = a == k ? table_at(g, inv, (int)t->dim[k].size, x->i[k]) : x->i[a];
    break;
  }
  case OP_take_along: {
    Idx w = *x;
    w.lin = NULL;
    LLVMValueRef j = checked_index(B, v, cg_eval(B, ix, &w), cg_dim(B, data->type.dim[k]));
    for (int a = 0; a < data->type.rank; a++)
      y.i[a] = a == k ? j : x->i[a];
    break;
  }
  case OP_slice: {
    LLVMValueRef s = slice_start(B, v, scalar_of(B, ix), cg_dim(B, data->type.dim[k]),
                                 cg_dim(B, t->dim[k]));
    for (int a = 0; a < data->type.rank; a++)
      y.i[a] = a == k ? LLVMBuildAdd(g->b, s, x->i[a], "") : x->i[a];
    break;
  }
  default: { /* unslice: data placed at s, zeros around */
    LLVMValueRef len = cg_dim(B, data->type.dim[k]);
    LLVMValueRef s = slice_start(B, v, scalar_of(B, ix), cg_dim(B, t->dim[k]), len);
    LLVMValueRef j = LLVMBuildSub(g->b, x->i[k], s, "");
    LLVMValueRef in = LLVMBuildICmp(g->b, LLVMIntULT, j, len, "");
    for (int a = 0; a < data->type.rank; a++)
      y.i[a] = a == k ? j : x->i[a];
    LLVMTypeRef et = cg_elem_type(g, t->dtype);
    LLVMValueRef zero = ir_is_float(t->dtype) ? LLVMConstReal(et, 0) : LLVMConstNull(et);
    if (reads_memory(B, data) && LLVMIsAConstantInt(len) && LLVMConstIntGetSExtValue(len) > 0) {
      /* data in memory and never empty: read a valid position (the
       * first, outside) and select, with no branch to keep the loop
       * from vectorizing (an LSTM's gradient sums dozens of these) */
      y.i[k] = LLVMBuildSelect(g->b, in, j, i64c(g, 0), "");
      return LLVMBuildSelect(g->b, in, cg_eval(B, data, &y), zero, "");
    }
    /* read the data only inside it (it may be empty) */
    LLVMBasicBlockRef from = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef inside = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "inside");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "joined");
    LLVMBuildCondBr(g->b, in, inside, join);
    LLVMPositionBuilderAtEnd(g->b, inside);
    LLVMValueRef val = cg_eval(B, data, &y);
    LLVMBasicBlockRef inside_end = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, join);
    LLVMValueRef phi = LLVMBuildPhi(g->b, et, "");
    LLVMValueRef vals[2] = {zero, val};
    LLVMBasicBlockRef bbs[2] = {from, inside_end};
    LLVMAddIncoming(phi, vals, bbs, 2);
    return phi;
  }
  }
  return cg_eval(B, data, &y);
}

LLVMValueRef cg_slice_view(Body *B, const Inst *v, LLVMValueRef mem) {
  Cg *g = B->g;
  const Inst *data = v->args[0];
  LLVMValueRef s = slice_start(B, v, scalar_of(B, v->args[1]), cg_dim(B, data->type.dim[0]),
                               cg_dim(B, v->type.dim[0]));
  LLVMValueRef off = s;
  for (int a = 1; a < data->type.rank; a++)
    off = LLVMBuildNSWMul(g->b, off, cg_dim(B, data->type.dim[a]), "");
  return LLVMBuildInBoundsGEP2(g->b, cg_mem_type(g, v->type.dtype), mem, &off, 1, "rows");
}

typedef struct Scatter {
  const Inst *v;
  LLVMValueRef out;
  bool sub; /* subtract instead of add (v[idx] -= e in place) */
} Scatter;

/* out[position of g's element p] += g[p] */
static void scatter_one(Body *B, Idx *p, void *ctx) {
  Scatter *sc = ctx;
  const Inst *v = sc->v, *src = v->args[0], *ix = v->args[1];
  Cg *g = B->g;
  int k = __builtin_ctz(v->axes);
  const Type *t = &v->type;
  p->lin = NULL;
  Idx o = {t->rank, {0}, NULL};
  if (v->op == OP_scatter_add) {
    int ri = ix->type.rank;
    Idx w = {ri, {0}, ri == 0 ? i64c(g, 0) : NULL};
    for (int a = 0; a < ri; a++)
      w.i[a] = p->i[k + a];
    LLVMValueRef j = checked_index(B, v, cg_eval(B, ix, &w), cg_dim(B, t->dim[k]));
    for (int a = 0; a < t->rank; a++)
      o.i[a] = a < k ? p->i[a] : a == k ? j : p->i[a + ri - 1];
  } else {
    Idx w = *p;
    LLVMValueRef j = checked_index(B, v, cg_eval(B, ix, &w), cg_dim(B, t->dim[k]));
    for (int a = 0; a < t->rank; a++)
      o.i[a] = a == k ? j : p->i[a];
  }
  LLVMValueRef e = cg_eval(B, src, p);
  LLVMValueRef lin = cg_lin(B, &o, t);
  LLVMValueRef cur = cg_load(B, t->dtype, sc->out, lin);
  LLVMValueRef sum = ir_is_float(t->dtype)
                         ? (sc->sub ? LLVMBuildFSub(g->b, cur, e, "") : LLVMBuildFAdd(g->b, cur, e, ""))
                         : (sc->sub ? LLVMBuildSub(g->b, cur, e, "") : LLVMBuildAdd(g->b, cur, e, ""));
  cg_store(B, t->dtype, sc->out, lin, sum);
}

void cg_emit_scatter(Body *B, const Inst *v, LLVMValueRef out) {
  Cg *g = B->g;
  void *loop;
  LLVMValueRef i = cg_loop_begin(B, cg_numel(B, &v->type), &loop);
  LLVMTypeRef et = cg_elem_type(g, v->type.dtype);
  cg_store(B, v->type.dtype, out, i, ir_is_float(v->type.dtype) ? LLVMConstReal(et, 0) : LLVMConstNull(et));
  cg_loop_end(B, loop);
  cg_scatter_into(B, v, out, false);
}

void cg_scatter_into(Body *B, const Inst *v, LLVMValueRef out, bool sub) {
  Cg *g = B->g;
  Scatter sc = {v, out, sub};
  Idx p = {0, {0}, NULL};
  if (v->args[0]->type.rank == 0)
    p.lin = i64c(g, 0);
  cg_loop_all(B, &v->args[0]->type, &p, scatter_one, &sc);
}
