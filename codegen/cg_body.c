/* A function body's frame (cg_body): the LLVM function with its
 * arguments, the check that every shape fits, the kernel plan (cg_plan.c),
 * the temporaries and the room kernels reserve in one block (in the
 * frame when small, else from the thread's workspace), then the kernels
 * in program order (cg_emit_block, cg_func.c) and the results copied to
 * the caller's buffers where they were not computed there. */
#include <string.h>

#include "cg_internal.h"

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* ---- size checks ---- */

/* a * b for sizes (non-negative), or-ing into *ovf whether it passed 2^62. */
static LLVMValueRef mul_checked(Body *B, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *ovf) {
  Cg *g = B->g;
  LLVMValueRef args[2] = {a, b};
  LLVMValueRef r = cg_intrinsic(g, "llvm.umul.with.overflow", g->i64, args, 2);
  LLVMValueRef v = LLVMBuildExtractValue(g->b, r, 0, "");
  LLVMValueRef big = LLVMBuildICmp(g->b, LLVMIntUGT, v, i64c(g, (int64_t)1 << 62), "");
  LLVMValueRef o = LLVMBuildOr(g->b, LLVMBuildExtractValue(g->b, r, 1, ""), big, "");
  *ovf = *ovf ? LLVMBuildOr(g->b, *ovf, o, "") : o;
  return v;
}

static void check_sizes(Body *B, int n) {
  Cg *g = B->g;
  LLVMValueRef ovf = NULL;
  const Type **seen = xmalloc(sizeof(Type *) * (size_t)(n + 1));
  int nseen = 0;
  for (Inst *i = B->f->first; i; i = ir_walk_next(i)) {
    if (i->nregions)
      continue;
    const Type *t = i->op == OP_count ? &i->attr : &i->type;
    if (ir_static_numel(t) >= 0 && ir_static_numel(t) < ((int64_t)1 << 40))
      continue; /* known small */
    bool dup = false;
    for (int k = 0; k < nseen && !dup; k++)
      dup = ir_shape_eq(seen[k], t);
    if (dup)
      continue;
    seen[nseen++] = t;
    LLVMValueRef bytes = i64c(g, 8);
    for (int k = 0; k < t->rank; k++)
      bytes = mul_checked(B, bytes, cg_dim(B, t->dim[k]), &ovf);
  }
  free(seen);
  if (!ovf)
    return;
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "too_large");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "sizes_ok");
  LLVMBuildCondBr(g->b, ovf, bad, ok);
  LLVMPositionBuilderAtEnd(g->b, bad);
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(g, RT_too_large, &fty);
  LLVMValueRef name = LLVMBuildGlobalStringPtr(g->b, B->f->name, "fname");
  LLVMBuildRet(g->b, LLVMBuildCall2(g->b, fty, fn, &name, 1, ""));
  LLVMPositionBuilderAtEnd(g->b, ok);
}

/* exp & co. are expanded inline (cg_math.c), about seventy instructions
 * each; a body with more than this many calls them (cg_mathcall.c), which
 * keeps LLVM's time on it in proportion. */
enum { MATH_INLINE_MAX = 256 };

/* Where argument k's data is, in the body: its parameter, or for a wide
 * signature the two loads through the export's array of descriptors,
 * which nothing writes during the call (marked CG_MD_FIXED: cg_split.c
 * loads them again in each piece that uses them instead of passing them). */
static LLVMValueRef arg_data(Cg *g, LLVMValueRef fn, int k, bool wide) {
  if (!wide)
    return LLVMGetParam(fn, (unsigned)k);
  LLVMValueRef idx = i64c(g, k);
  LLVMValueRef at = LLVMBuildInBoundsGEP2(g->b, g->ptr, LLVMGetParam(fn, 0), &idx, 1, "");
  LLVMValueRef loads[2];
  loads[0] = LLVMBuildLoad2(g->b, g->ptr, at, "desc"); /* sg_tensor.data is the first field */
  loads[1] = LLVMBuildLoad2(g->b, g->ptr, loads[0], "data");
  unsigned kind = cg_md_kind(g->ctx, CG_MD_FIXED);
  for (int j = 0; j < 2; j++)
    LLVMSetMetadata(loads[j], kind, LLVMMetadataAsValue(g->ctx, LLVMMDNodeInContext2(g->ctx, NULL, 0)));
  return loads[1];
}

/* The temporaries' block. One of at most STACK_TEMPS bytes (a call on a
 * 10 x 20 matrix) is in the function's frame -- just its size when that is
 * a literal, else room for the most, chosen at each call -- rather than in
 * the thread's workspace: no call into the runtime to take the block and
 * give it back, and LLVM sees memory no argument can alias (bench W5:
 * 127 -> 123.5 ns a call). A larger block comes from the workspace, and
 * its failure is the call's. */
enum { STACK_TEMPS = 4096 };

static LLVMValueRef acquire_temps(Body *B, LLVMValueRef total) {
  Cg *g = B->g;
  LLVMValueRef fits = LLVMBuildICmp(g->b, LLVMIntULE, total, i64c(g, STACK_TEMPS), "");
  bool never = LLVMIsAConstantInt(fits) && !LLVMConstIntGetZExtValue(fits);
  bool always = LLVMIsAConstantInt(fits) && LLVMConstIntGetZExtValue(fits);
  B->stack_temps = NULL;
  if (!never) {
    unsigned room = always ? (unsigned)LLVMConstIntGetZExtValue(total) : STACK_TEMPS;
    B->stack_temps = cg_alloca_at(g, B->entry, LLVMArrayType(g->i8, room ? room : 1), "temps.stack");
    LLVMSetAlignment(B->stack_temps, 64);
    if (always)
      return B->stack_temps;
  }
  /* (blocks in the order they run, for -O0's readers) */
  LLVMBasicBlockRef stack = LLVMGetInsertBlock(g->b), heap = stack;
  if (!never)
    heap = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "temps.heap");
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "nomem");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "run");
  if (!never) {
    LLVMBuildCondBr(g->b, fits, ok, heap);
    LLVMPositionBuilderAtEnd(g->b, heap);
  }
  LLVMTypeRef fty;
  LLVMValueRef acquire = cg_rt(g, RT_ws_acquire, &fty);
  LLVMValueRef p = LLVMBuildCall2(g->b, fty, acquire, &total, 1, "temps");
  LLVMBuildCondBr(g->b, LLVMBuildIsNull(g->b, p, ""), fail, ok);
  LLVMPositionBuilderAtEnd(g->b, fail);
  LLVMValueRef failed = cg_rt(g, RT_alloc_failed, &fty);
  LLVMValueRef args[2] = {LLVMBuildGlobalStringPtr(g->b, B->f->name, "fname"), total};
  LLVMBuildRet(g->b, LLVMBuildCall2(g->b, fty, failed, args, 2, ""));
  LLVMPositionBuilderAtEnd(g->b, ok);
  if (never)
    return p;
  LLVMValueRef base = LLVMBuildPhi(g->b, g->ptr, "temps.base");
  LLVMValueRef in[2] = {B->stack_temps, p};
  LLVMBasicBlockRef from[2] = {stack, heap};
  LLVMAddIncoming(base, in, from, 2);
  return base;
}

/* The workspace back, unless the temporaries were in the frame. */
void cg_release_temps(Body *B) {
  Cg *g = B->g;
  if (!B->temps || B->temps == B->stack_temps)
    return;
  LLVMTypeRef fty;
  LLVMValueRef release = cg_rt(g, RT_ws_release, &fty);
  if (!B->stack_temps) {
    LLVMBuildCall2(g->b, fty, release, &B->temps, 1, "");
    return;
  }
  LLVMBasicBlockRef heap = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "temps.release");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "temps.released");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, B->temps, B->stack_temps, ""), done, heap);
  LLVMPositionBuilderAtEnd(g->b, heap);
  LLVMBuildCall2(g->b, fty, release, &B->temps, 1, "");
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, done);
}

LLVMValueRef cg_body(Cg *g, Function *f, const char *name, const int *syms, int nsyms, bool wide) {
  int nptr = f->nparams + f->nresults, ndata = wide ? 1 : nptr;
  LLVMTypeRef *pt = xmalloc(sizeof(LLVMTypeRef) * (size_t)(ndata + nsyms + 1));
  for (int k = 0; k < ndata; k++)
    pt[k] = g->ptr;
  for (int k = 0; k < nsyms; k++)
    pt[ndata + k] = g->i64;
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->i32, pt, (unsigned)(ndata + nsyms), 0));
  free(pt);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  for (int k = 0; k < ndata && !wide; k++)
    LLVMAddAttributeAtIndex(fn, (unsigned)k + 1, LLVMCreateEnumAttribute(g->ctx, noalias, 0));

  int n = ir_renumber(f);
  Body B = {.g = g, .f = f, .fn = fn};
  for (Inst *i = f->first; i && !B.has_regions; i = ir_walk_next(i))
    B.has_regions = i->nregions || i->op == OP_proj;
  int nmath = 0;
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    nmath += ir_op_is(i->op, F_MATH);
  }
  g->math_calls = nmath > MATH_INLINE_MAX;
  B.symv = xmalloc(sizeof(LLVMValueRef) * (size_t)(g->m->nsyms + 1));
  memset(B.symv, 0, sizeof(LLVMValueRef) * (size_t)(g->m->nsyms + 1));
  for (int k = 0; k < nsyms; k++)
    B.symv[syms[k]] = LLVMGetParam(fn, (unsigned)(ndata + k));
  B.slot = xmalloc(sizeof(Slot) * (size_t)(n + 1));
  B.rg = xmalloc(sizeof(*B.rg) * (size_t)(n + 1));
  memset(B.rg, 0, sizeof(*B.rg) * (size_t)(n + 1));
  B.pslot = xmalloc(sizeof(Slot) * (size_t)(f->nparams + 1));
  B.entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
  LLVMPositionBuilderAtEnd(g->b, B.entry);
  cg_debug_func(g, fn, f);

  LLVMValueRef *data = xmalloc(sizeof(LLVMValueRef) * (size_t)(nptr + 1));
  for (int k = 0; k < nptr; k++)
    data[k] = arg_data(g, fn, k, wide);
  for (int k = 0; k < f->nparams; k++)
    B.pslot[k] = (Slot){.has_buf = true, .buf = data[k], .temp = -1, .group = -1, .rows = -1,
                        .online = -1, .kernel = -1};
  B.n = n;
  cg_plan(&B, n);

  /* Results computed straight into the caller's buffers, unless the body
   * can fail midway (then they are copied out at the end): an op that
   * checks its operands, at any depth, or a loop's tape or checkpoints
   * running out of memory. */
  bool may_fail = false;
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    may_fail |= ir_op_is(i->op, F_FAILS) || i->op == OP_unloop;
  for (int k = 0; k < f->nresults && !may_fail; k++) {
    Inst *v = f->results[k];
    Slot *s = cg_slot(&B, v);
    bool computes = v->op != OP_param && v->op != OP_reshape && !s->view;
    if (computes && !s->buf)
      s->buf = data[f->nparams + k];
  }
  /* Every shape the body loops over or stores must fit: a broadcast can
   * multiply the argument sizes past 64 bits. Checked once, at entry. */
  check_sizes(&B, n);
  /* Temporaries: one block from the thread's workspace. A function
   * without loops or branches lays them out by liveness (cg_temps.c:
   * temporaries never live at once share bytes); one with them, one after
   * the other, with room for the regions' buffers (cg_region.c). */
  cg_frame_bind(&B);
  LLVMValueRef *offset = xmalloc(sizeof(LLVMValueRef) * (size_t)(n + 1));
  bool plain = true;
  for (Inst *i = f->first; i && plain; i = ir_walk_next(i))
    plain = !i->nregions && i->op != OP_proj;
  LLVMValueRef total = plain ? cg_temp_layout(&B, n, offset) : i64c(g, 0);
  bool any_temp = total != NULL;
  if (!total)
    total = i64c(g, 0);
  /* the room kernels reserve: a pair's partials after the temporaries, a
   * loop's state buffers where the loop stands among them */
  for (int k = 0; k < B.nkernels; k++)
    if (B.kernels[k].st->reserve && !B.kernels[k].head->nregions) {
      total = B.kernels[k].st->reserve(&B, &B.kernels[k], total);
      any_temp = true;
    }
  LLVMValueRef before_scratch = total;
  total = cg_update_reserve(&B, total);
  any_temp |= total != before_scratch;
  for (Inst *i = f->first; i && !plain; i = ir_walk_next(i)) {
    Slot *s = cg_slot(&B, i);
    if (i->nregions) {
      CgKernel *k = cg_kernel_of(&B, i);
      total = k->st->reserve(&B, k, total);
      any_temp = true;
      continue;
    }
    if (!cg_needs_temp(&B, i))
      continue;
    offset[i->id] = total;
    LLVMValueRef bytes = cg_mul64(g, cg_numel(&B, &i->type), i64c(g, cg_elem_size(i->type.dtype)));
    bytes = LLVMBuildAnd(g->b, LLVMBuildNSWAdd(g->b, bytes, i64c(g, 63), ""), i64c(g, ~(int64_t)63), "");
    total = cg_add64(g, total, bytes);
    s->temp = i->id;
    any_temp = true;
  }
  LLVMValueRef base = NULL;
  if (any_temp) {
    base = acquire_temps(&B, total);
    for (Inst *i = f->first; i; i = ir_walk_next(i)) {
      Slot *s = cg_slot(&B, i);
      if (s->temp >= 0)
        s->buf = LLVMBuildInBoundsGEP2(g->b, g->i8, base, &offset[i->id], 1, "");
    }
    for (int k = 0; k < B.nkernels; k++)
      if (B.kernels[k].st->bind)
        B.kernels[k].st->bind(&B, &B.kernels[k], base);
    cg_update_bind(&B, base);
  }
  free(offset);

  B.temps = base;
  cg_debug_params(&B);
  cg_call_id_plan(&B);
  cg_emit_block(&B, f->first);
  /* Results that are not already in their output buffer are copied there. */
  for (int k = 0; k < f->nresults; k++) {
    Inst *v = f->results[k];
    LLVMValueRef out = data[f->nparams + k];
    if (cg_slot(&B, v)->buf == out)
      continue;
    cg_fill_nest(&B, v, out);
  }
  cg_region_finish(&B);
  cg_release_temps(&B);
  LLVMBuildRet(g->b, LLVMConstInt(g->i32, 0, 0));
  cg_region_free(&B);
  cg_plan_free(&B);
  free(B.rg);
  cg_debug_end(g);
  free(B.symv);
  free(B.slot);
  free(B.pslot);
  free(B.pairs);
  free(data);
  g->math_calls = false;
  return fn;
}
