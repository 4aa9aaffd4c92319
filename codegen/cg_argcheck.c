/* The argument checks of an export's entry, inline (spec section 9).
 *
 * sg_rt_check (runtime/check.c) walks the constant signature table and
 * writes the message of any failure; at W5's size (a 10x20 softmax) that
 * walk was an eighth of the call. So the entry first runs the same checks
 * as straight-line code specialized to the signature: every descriptor
 * non-NULL with non-NULL data, its dtype and rank, each literal dimension,
 * each symbolic one bound at its first use (not negative) and equal at the
 * others, its byte size below 2^62 without overflow, and no output
 * overlapping another argument. All of them hold: the symbols are stored
 * and the body runs. Any of them fails, or is too hard for straight-line
 * code (empty tensors with NULL data, huge shapes whose product overflows
 * before a zero): the entry calls sg_rt_check, which decides again and
 * writes the spec's message word for word. The fast path accepts a subset
 * of what sg_rt_check accepts, with the same symbol values, so the table
 * stays the one definition of the rules.
 *
 * The overlap test is quadratic in the number of arguments; above
 * CG_ARGCHECK_MAX_ARGS the entry calls sg_rt_check directly. */
#include "cg_internal.h"

enum { CG_ARGCHECK_MAX_ARGS = 24 };

/* Field offsets of sg_tensor (runtime/sg_runtime.h): data, shape[8], rank,
 * dtype. */
enum { T_SHAPE = 8, T_RANK = 8 + 8 * IR_MAX_RANK, T_DTYPE = T_RANK + 4 };

static LLVMValueRef field(Cg *g, LLVMValueRef p, int64_t off, LLVMTypeRef ty) {
  LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)off, 0);
  return LLVMBuildLoad2(g->b, ty, LLVMBuildInBoundsGEP2(g->b, g->i8, p, &idx, 1, ""), "");
}

static LLVMValueRef or1(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  return a ? LLVMBuildOr(g->b, a, b, "") : b;
}

static LLVMValueRef umul_ovf(Cg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *ovf) {
  LLVMTypeRef ty[1] = {g->i64};
  unsigned id = LLVMLookupIntrinsicID("llvm.umul.with.overflow", 23);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, ty, 1);
  LLVMValueRef args[2] = {a, b};
  LLVMValueRef r = LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->ctx, id, ty, 1), fn, args, 2, "");
  *ovf = or1(g, *ovf, LLVMBuildExtractValue(g->b, r, 1, ""));
  return LLVMBuildExtractValue(g->b, r, 0, "");
}

bool cg_argcheck_fast(Cg *g, Function *f, LLVMValueRef fn, const int *syms, int nsyms,
                      LLVMValueRef symv, LLVMBasicBlockRef slow) {
  int nargs = f->nparams + f->nresults;
  if (nargs > CG_ARGCHECK_MAX_ARGS)
    return false;
  /* NULL descriptors first: nothing may be loaded through them. */
  LLVMValueRef bad = NULL;
  for (int a = 0; a < nargs; a++)
    bad = or1(g, bad, LLVMBuildIsNull(g->b, LLVMGetParam(fn, (unsigned)a), ""));
  if (bad) {
    LLVMBasicBlockRef loads = LLVMAppendBasicBlockInContext(g->ctx, fn, "check_fields");
    LLVMBuildCondBr(g->b, bad, slow, loads);
    LLVMPositionBuilderAtEnd(g->b, loads);
  }
  bad = NULL;
  LLVMValueRef *symval = xmalloc(sizeof(LLVMValueRef) * (size_t)(nsyms + 1));
  for (int s = 0; s < nsyms; s++)
    symval[s] = NULL;
  LLVMValueRef lo[CG_ARGCHECK_MAX_ARGS], hi[CG_ARGCHECK_MAX_ARGS], empty[CG_ARGCHECK_MAX_ARGS];
  for (int a = 0; a < nargs; a++) {
    bool out = a >= f->nparams;
    const Type *t = out ? &f->results[a - f->nparams]->type : &f->params[a]->type;
    LLVMValueRef p = LLVMGetParam(fn, (unsigned)a);
    LLVMValueRef data = LLVMBuildLoad2(g->b, g->ptr, p, "");
    bad = or1(g, bad, LLVMBuildIsNull(g->b, data, ""));
    bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntNE, field(g, p, T_RANK, g->i32),
                                    LLVMConstInt(g->i32, (unsigned)t->rank, 0), ""));
    bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntNE, field(g, p, T_DTYPE, g->i32),
                                    LLVMConstInt(g->i32, (unsigned)t->dtype, 0), ""));
    int64_t esize = t->dtype == DT_F64 ? 8 : 4;
    LLVMValueRef n = LLVMConstInt(g->i64, (unsigned long long)esize, 0), ovf = NULL;
    for (int j = 0; j < t->rank; j++) {
      LLVMValueRef v = field(g, p, T_SHAPE + 8 * j, g->i64);
      int s = -1;
      if (t->dim[j].sym >= 0)
        for (int k = 0; k < nsyms; k++)
          if (syms[k] == t->dim[j].sym)
            s = k;
      if (s < 0) {
        bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntNE, v,
                                        LLVMConstInt(g->i64, (unsigned long long)t->dim[j].size, 1), ""));
      } else if (!symval[s]) {
        symval[s] = v;
        bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntSLT, v, LLVMConstInt(g->i64, 0, 0), ""));
      } else {
        bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntNE, v, symval[s], ""));
      }
      n = umul_ovf(g, n, v, &ovf);
    }
    /* below 2^62 bytes: sg_rt_check's limit, INT64_MAX / 2 / esize elements */
    if (ovf)
      bad = or1(g, bad, ovf);
    bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntUGT, n,
                                    LLVMConstInt(g->i64, (unsigned long long)(INT64_MAX / 2 / esize * esize), 0), ""));
    lo[a] = LLVMBuildPtrToInt(g->b, data, g->i64, "");
    hi[a] = LLVMBuildAdd(g->b, lo[a], n, "");
    empty[a] = LLVMBuildICmp(g->b, LLVMIntEQ, n, LLVMConstInt(g->i64, 0, 0), "");
  }
  /* an output overlaps argument j: both non-empty and the ranges meet */
  for (int i = f->nparams; i < nargs; i++)
    for (int j = 0; j < nargs; j++) {
      if (j == i)
        continue;
      LLVMValueRef meet = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntULT, lo[i], hi[j], ""),
                                       LLVMBuildICmp(g->b, LLVMIntULT, lo[j], hi[i], ""), "");
      LLVMValueRef some = LLVMBuildNot(g->b, LLVMBuildOr(g->b, empty[i], empty[j], ""), "");
      bad = or1(g, bad, LLVMBuildAnd(g->b, meet, some, ""));
    }
  /* what sg_rt_check would have bound; a symbol no argument uses is 0 */
  for (int s = 0; s < nsyms; s++) {
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned)s, 0);
    LLVMBuildStore(g->b, symval[s] ? symval[s] : LLVMConstInt(g->i64, 0, 0),
                   LLVMBuildInBoundsGEP2(g->b, g->i64, symv, &idx, 1, ""));
  }
  free(symval);
  if (bad) {
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, fn, "checked");
    LLVMBuildCondBr(g->b, bad, slow, ok);
    LLVMPositionBuilderAtEnd(g->b, ok);
  }
  return true;
}
