/* Parallel loops: a large flat loop of a function body is moved into a
 * function of its own,
 *
 *   void f.body.par(ctx *c, i64 begin, i64 end)   -- the loop over [begin, end)
 *
 * and the body calls sg_rt_parallel_for(n, chunk, f.body.par, c), which runs
 * it on the runtime's thread pool. The chunk depends on n only (never on
 * the thread count), so a reduction that keeps one partial per chunk and
 * combines the partials in chunk order gives the same bits on any number of
 * threads.
 *
 * The loop is generated as usual (cg_func.c), with the builder in the new
 * function; every value of the enclosing body it uses (buffer pointers,
 * symbolic sizes) passes through cg_outer, which loads it from the context
 * at the new function's entry the first time. When the loop is done,
 * cg_par_end stores those values into the context (a stack array of the
 * body) and emits the call.
 *
 * A chunk cannot leave the body early: a check that fails inside it (an
 * index out of range) records the failure and ends the chunk, and the body
 * reports the first failed chunk's after the loop (cg_data.c), which is
 * the failure the loop would have met first running alone.
 *
 * A loop under two chunks would run as one chunk anyway: with a literal
 * size it stays inline; with a symbolic one the body calls the loop's
 * function directly when it is one chunk (cg_par_end), so that small
 * calls pay a call, not the pool. There is no inline copy beside it: one
 * version of each loop keeps compile time down (cg_par_worth). */
#include <stdio.h>
#include <string.h>

#include "cg_internal.h"

/* Elements per chunk at least (chunks at most: CG_PAR_MAX_CHUNKS). */
enum { PAR_CHUNK = 1 << 14 };

/* Elements per chunk at least for loops over whole rows (row reductions,
 * fills that need the index: cg_par_begin_rows). Their results never
 * depend on the chunks (each row is one thread's, in order), so they can
 * be finer: a call runs several such loops in a row, and each ends with
 * one thread idle for up to a chunk (bench W1: seven over [256, 1000]
 * between its two products; 16K-element chunks left a worker idle 6% of
 * the call on two threads). */
enum { PAR_ROWS_CHUNK = 1 << 12 };

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

static LLVMValueRef parent_fn(LLVMValueRef v) {
  if (LLVMIsAArgument(v))
    return LLVMGetParamParent(v);
  if (LLVMIsAInstruction(v))
    return LLVMGetBasicBlockParent(LLVMGetInstructionParent(v));
  return NULL;
}

/* v's next slot of the loop's context, loaded at its function's entry. */
static LLVMValueRef capture(Body *B, Par *p, LLVMValueRef v) {
  if (p->ncap == p->capcap) {
    p->capcap = p->capcap ? 2 * p->capcap : 8;
    p->outer = xrealloc(p->outer, sizeof(LLVMValueRef) * (size_t)p->capcap);
    p->inner = xrealloc(p->inner, sizeof(LLVMValueRef) * (size_t)p->capcap);
  }
  Cg *g = B->g;
  LLVMBuilderRef lb = LLVMCreateBuilderInContext(g->ctx);
  LLVMPositionBuilderAtEnd(lb, p->loads);
  LLVMValueRef at = i64c(g, 8 * p->ncap);
  LLVMValueRef ptr = LLVMBuildInBoundsGEP2(lb, g->i8, LLVMGetParam(p->fn, 0), &at, 1, "");
  LLVMValueRef x = LLVMBuildLoad2(lb, LLVMTypeOf(v), ptr, "cap");
  LLVMDisposeBuilder(lb);
  p->outer[p->ncap] = v;
  p->inner[p->ncap] = x;
  p->ncap++;
  return x;
}

LLVMValueRef cg_outer(Body *B, LLVMValueRef v) {
  Par *p = B->par;
  if (!p || !v || LLVMIsAConstant(v) || parent_fn(v) == p->fn)
    return v;
  for (int k = 0; k < p->ncap; k++)
    if (p->outer[k] == v)
      return p->inner[k];
  return capture(B, p, v);
}

LLVMValueRef cg_alloca_at(Cg *g, LLVMBasicBlockRef entry, LLVMTypeRef t, const char *name) {
  LLVMBuilderRef ab = LLVMCreateBuilderInContext(g->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first)
    LLVMPositionBuilderBefore(ab, first);
  else
    LLVMPositionBuilderAtEnd(ab, entry);
  LLVMValueRef a = LLVMBuildAlloca(ab, t, name);
  LLVMDisposeBuilder(ab);
  return a;
}

LLVMValueRef cg_par_partials(Body *B, Par *p, LLVMTypeRef elem) {
  return cg_alloca_at(B->g, p->saved_entry, LLVMArrayType2(elem, CG_PAR_MAX_CHUNKS), "partials");
}

LLVMValueRef cg_par_partials_n(Body *B, Par *p, LLVMTypeRef elem, int64_t count) {
  return cg_alloca_at(B->g, p->saved_entry, LLVMArrayType2(elem, (uint64_t)count), "partials");
}

bool cg_par_short(Body *B) { return B->region_depth > 0 && !B->par; }

bool cg_par_worth(Body *B, LLVMValueRef n) {
  if (B->par)
    return false; /* already inside a parallel loop */
  /* A symbolic size gets one version of the loop, not an inline one and a
   * pool one behind a test of the size: two copies of every loop (each a
   * vector loop, its epilogue and its scalar remainder) doubled what LLVM
   * compiled (examples/lstm.sg: 21,000 instructions, 1.7 s). Outside loop
   * bodies it is the pool's, whose one-chunk calls are a direct call
   * (cg_par_end); in a loop body, the inline one with its tail folded
   * (cg_par_short): an LSTM step's loops are 14 elements long. */
  if (!LLVMIsAConstantInt(n))
    return !cg_par_short(B);
  int64_t least = cg_par_short(B) ? SHORT_TRIP : 2 * PAR_CHUNK;
  return LLVMConstIntGetSExtValue(n) >= least;
}

static void par_begin(Body *B, LLVMValueRef n, int64_t least, LLVMValueRef most, int64_t align, Par *p);

bool cg_par_planned(const Inst *at, const Type *t) {
  int64_t n = ir_static_numel(t);
  if (at->parent) /* in a loop or branch body: cg_par_short */
    return n >= SHORT_TRIP;
  return n < 0 || n >= 2 * PAR_CHUNK;
}

bool cg_par_rows_planned(const Inst *at, const Type *t) {
  int64_t n = ir_static_numel(t);
  return !at->parent && (n < 0 || n >= 2 * PAR_CHUNK);
}

bool cg_par_rows_worth(Body *B, LLVMValueRef total) {
  if (B->par || cg_par_short(B))
    return false;
  return !LLVMIsAConstantInt(total) || LLVMConstIntGetSExtValue(total) >= 2 * PAR_CHUNK;
}

/* A flat loop's function may stream its stores (cg_stream.c): it is
 * marked, and slot 0 of its context is n, even a literal one -- unless n
 * is a literal too small for any element type. */
static void mark_flat(Body *B, Par *p) {
  if (LLVMIsAConstantInt(p->n) && LLVMConstIntGetSExtValue(p->n) < CG_STREAM_MIN / 8)
    return;
  const char *kind = CG_STREAM_ATTR;
  LLVMAddAttributeAtIndex(p->fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(B->g->ctx, kind, (unsigned)strlen(kind), "", 0));
  capture(B, p, p->n);
}

void cg_par_begin(Body *B, LLVMValueRef n, Par *p) {
  par_begin(B, n, PAR_CHUNK, i64c(B->g, CG_PAR_MAX_CHUNKS), 1, p);
  mark_flat(B, p);
}

void cg_par_begin_chunks(Body *B, LLVMValueRef n, LLVMValueRef maxchunks, Par *p) {
  par_begin(B, n, PAR_CHUNK, maxchunks, 1, p);
  mark_flat(B, p);
}

void cg_par_begin_blocks(Body *B, LLVMValueRef n, int64_t least, int64_t most, int64_t align, Par *p) {
  par_begin(B, n, least, i64c(B->g, most), align, p);
}

void cg_par_begin_rows(Body *B, LLVMValueRef rows, LLVMValueRef total, Par *p) {
  Cg *g = B->g;
  LLVMValueRef most = LLVMBuildSDiv(g->b, total, i64c(g, PAR_ROWS_CHUNK), "");
  most = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, most, i64c(g, 1), ""), i64c(g, 1), most, "");
  most = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, most, i64c(g, CG_PAR_MAX_CHUNKS), ""),
                         i64c(g, CG_PAR_MAX_CHUNKS), most, "");
  par_begin(B, rows, 1, most, 1, p);
}

static void par_begin(Body *B, LLVMValueRef n, int64_t least, LLVMValueRef most, int64_t align, Par *p) {
  Cg *g = B->g;
  memset(p, 0, sizeof *p);
  p->n = n;
  /* chunk = max(least, ceil(n / most) rounded up to a multiple of align);
   * nchunks = ceil(n / chunk) <= most */
  LLVMValueRef per = LLVMBuildSDiv(g->b, LLVMBuildNSWAdd(g->b, n, LLVMBuildNSWSub(g->b, most, i64c(g, 1), ""), ""),
                                   most, "");
  if (align > 1)
    per = LLVMBuildNSWMul(g->b,
                          LLVMBuildSDiv(g->b, LLVMBuildNSWAdd(g->b, per, i64c(g, align - 1), ""),
                                        i64c(g, align), ""),
                          i64c(g, align), "");
  LLVMValueRef small = LLVMBuildICmp(g->b, LLVMIntSLT, per, i64c(g, least), "");
  p->chunk = LLVMBuildSelect(g->b, small, i64c(g, least), per, "chunk");
  p->nchunks = LLVMBuildSDiv(g->b, LLVMBuildNSWAdd(g->b, n, LLVMBuildNSWSub(g->b, p->chunk, i64c(g, 1), ""), ""),
                             p->chunk, "nchunks");
  LLVMTypeRef ps[3] = {g->ptr, g->i64, g->i64};
  char name[256];
  snprintf(name, sizeof name, "%s.par", LLVMGetValueName(B->fn));
  p->fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->vd, ps, 3, 0));
  LLVMSetLinkage(p->fn, LLVMInternalLinkage);
  /* Inlined at its one-chunk call, the loop would be compiled twice (cd1's
   * gradient: four of its fourteen, 20% of the module's code). */
  unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
  LLVMAddAttributeAtIndex(p->fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, noinline, 0));
  p->loads = LLVMAppendBasicBlockInContext(g->ctx, p->fn, "entry");
  LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(g->ctx, p->fn, "start");
  p->start = start;
  p->begin = LLVMGetParam(p->fn, 1);
  p->end = LLVMGetParam(p->fn, 2);
  p->saved_block = LLVMGetInsertBlock(g->b);
  p->saved_fn = B->fn;
  p->saved_entry = B->entry;
  B->fn = p->fn;
  B->entry = p->loads;
  B->par = p;
  LLVMPositionBuilderAtEnd(g->b, start);
}

LLVMValueRef cg_par_chunk_index(Body *B, Par *p) {
  return LLVMBuildSDiv(B->g->b, p->begin, cg_outer(B, p->chunk), "");
}

void cg_par_end(Body *B, Par *p) {
  Cg *g = B->g;
  LLVMBuildRetVoid(g->b);
  LLVMBuilderRef lb = LLVMCreateBuilderInContext(g->ctx);
  LLVMPositionBuilderAtEnd(lb, p->loads);
  LLVMBuildBr(lb, p->start);
  LLVMDisposeBuilder(lb);
  B->par = NULL;
  B->fn = p->saved_fn;
  B->entry = p->saved_entry;
  LLVMPositionBuilderAtEnd(g->b, p->saved_block);
  int ncap = p->ncap ? p->ncap : 1;
  LLVMValueRef ctx = cg_alloca_at(g, B->entry, LLVMArrayType2(g->i64, (uint64_t)ncap), "ctx");
  for (int k = 0; k < p->ncap; k++) {
    LLVMValueRef at = i64c(g, 8 * k);
    LLVMBuildStore(g->b, p->outer[k], LLVMBuildInBoundsGEP2(g->b, g->i8, ctx, &at, 1, ""));
  }
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(g, RT_parallel_for, &fty);
  LLVMValueRef args[4] = {p->n, p->chunk, p->fn, ctx};
  cg_par_fail_clear(B, p);
  /* One chunk (a small call of a loop whose size is symbolic) runs as a
   * direct call: the pool's entry would only call it, after its checks. */
  LLVMBasicBlockRef direct = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "one_chunk");
  LLVMBasicBlockRef pool = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "chunks");
  LLVMBasicBlockRef joined = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "chunks_done");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLE, p->nchunks, i64c(g, 1), ""), direct, pool);
  LLVMPositionBuilderAtEnd(g->b, direct);
  LLVMTypeRef bps[3] = {g->ptr, g->i64, g->i64};
  LLVMValueRef bargs[3] = {ctx, i64c(g, 0), p->n};
  LLVMBuildCall2(g->b, LLVMFunctionType(g->vd, bps, 3, 0), p->fn, bargs, 3, "");
  LLVMBuildBr(g->b, joined);
  LLVMPositionBuilderAtEnd(g->b, pool);
  LLVMBuildCall2(g->b, fty, fn, args, 4, "");
  LLVMBuildBr(g->b, joined);
  LLVMPositionBuilderAtEnd(g->b, joined);
  cg_par_fail_report(B, p);
  free(p->outer);
  free(p->inner);
  p->outer = p->inner = NULL;
}
