/* The C entry point of each export (spec section 9):
 *
 *   int f(const sg_tensor *p1, ..., sg_tensor *out, sg_tensor *d_p1, ...)
 *
 * It checks every descriptor and binds the symbolic sizes, so nothing is
 * written unless all of them are right: inline code specialized to the
 * signature (cg_argcheck.c) for the common case, and when that doubts, a
 * constant description of the signature (an sg_rt_sig, laid out as in
 * runtime/sgrt.h) handed with the arguments to sg_rt_check, which decides
 * and writes the message; then it calls the body (cg_func.c) with the data
 * pointers, which may be marked noalias because the check ruled overlaps
 * out. The IR function's parameters are the C inputs, its results the C
 * outputs, for f, f_grad and f_vjp alike. */
#include <string.h>

#include "cg_internal.h"

static void add_sym(int *out, int *n, int s) {
  for (int k = 0; k < *n; k++)
    if (out[k] == s)
      return;
  out[(*n)++] = s;
}

static void add_type_syms(const Type *t, int *out, int *n) {
  for (int j = 0; j < t->rank; j++)
    if (t->dim[j].sym >= 0)
      add_sym(out, n, t->dim[j].sym);
}

/* The parameters' names, then the results' sizes, then the size
 * expressions only the body uses (they are computed at entry). */
int cg_func_syms(Module *m, Function *f, int *out) {
  (void)m;
  int n = 0;
  for (int k = 0; k < f->nparams; k++)
    add_type_syms(&f->params[k]->type, out, &n);
  for (int k = 0; k < f->nresults; k++)
    add_type_syms(&f->results[k]->type, out, &n);
  /* loop and branch bodies too (a block argument has the type of the
   * operand it comes from) */
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    add_type_syms(&i->type, out, &n);
    add_type_syms(&i->attr, out, &n);
  }
  return n;
}

static int64_t sym_index(const int *syms, int nsyms, int s) {
  for (int k = 0; k < nsyms; k++)
    if (syms[k] == s)
      return k;
  die("size symbol %d not in the signature", s);
}

/* The value of derived size `s` from the bound names in symv. */
static LLVMValueRef derived_value(Cg *g, LLVMValueRef symv, const int *syms, int nsyms, int s) {
  const SizePoly *p = g->m->sym_poly[s];
  LLVMValueRef sum = LLVMConstInt(g->i64, 0, 0);
  for (int t = 0; t < p->nterms; t++) {
    LLVMValueRef term = LLVMConstInt(g->i64, (unsigned long long)p->t[t].coef, 1);
    for (int k = 0; k < p->t[t].nvars; k++) {
      LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)sym_index(syms, nsyms, p->t[t].vars[k]), 0);
      LLVMValueRef v = LLVMBuildLoad2(g->b, g->i64, LLVMBuildInBoundsGEP2(g->b, g->i64, symv, &idx, 1, ""), "");
      term = LLVMBuildMul(g->b, term, v, "");
    }
    sum = LLVMBuildAdd(g->b, sum, term, "");
  }
  return sum;
}

/* A call of runtime function `name` returning its int, then `ret` of it
 * when `bad` holds; continues in a fresh block otherwise. */
static void fail_with(Cg *g, LLVMValueRef fn_ir, LLVMValueRef bad, RtFunc rt, LLVMValueRef *args,
                      int n) {
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(g->ctx, fn_ir, "bad_size");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, fn_ir, "size_ok");
  LLVMBuildCondBr(g->b, bad, fail, ok);
  LLVMPositionBuilderAtEnd(g->b, fail);
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(g, rt, &fty);
  LLVMBuildRet(g->b, LLVMBuildCall2(g->b, fty, fn, args, (unsigned)n, ""));
  LLVMPositionBuilderAtEnd(g->b, ok);
}

/* Size expressions (ir/size.c): computed from the bound names; negative is
 * SG_ERR_SHAPE; one that an output's shape bound must equal its value. */
static void check_derived(Cg *g, Function *f, LLVMValueRef fn, LLVMValueRef symv, const int *syms,
                          int nsyms) {
  char buf[512];
  for (int k = 0; k < nsyms; k++) {
    int s = syms[k];
    if (!ir_sym_derived(g->m, s))
      continue;
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)k, 0);
    LLVMValueRef slotp = LLVMBuildInBoundsGEP2(g->b, g->i64, symv, &idx, 1, "");
    LLVMValueRef v = derived_value(g, symv, syms, nsyms, s);
    LLVMValueRef fname = LLVMBuildGlobalStringPtr(g->b, f->name, "fname");
    LLVMValueRef sname = LLVMBuildGlobalStringPtr(g->b, g->m->syms[s], "size");
    LLVMValueRef a3[3] = {fname, sname, v};
    fail_with(g, fn, LLVMBuildICmp(g->b, LLVMIntSLT, v, LLVMConstInt(g->i64, 0, 0), ""),
              RT_negative_size, a3, 3);
    /* the first output whose shape holds it bound it in sg_rt_check */
    for (int a = 0; a < f->nresults; a++) {
      const Type *t = &f->results[a]->type;
      bool uses = false;
      for (int j = 0; j < t->rank; j++)
        uses |= t->dim[j].sym == s;
      if (!uses)
        continue;
      LLVMValueRef bound = LLVMBuildLoad2(g->b, g->i64, slotp, "");
      LLVMValueRef a6[6] = {fname, LLVMBuildGlobalStringPtr(g->b, f->result_names[a], "arg"),
                            LLVMGetParam(fn, (unsigned)(f->nparams + a)),
                            LLVMBuildGlobalStringPtr(g->b, ir_dims_str(g->m, t, buf, sizeof buf), "dims"),
                            sname, v};
      fail_with(g, fn, LLVMBuildICmp(g->b, LLVMIntNE, bound, v, ""), RT_size_mismatch, a6, 6);
      break;
    }
    LLVMBuildStore(g->b, v, slotp);
  }
}

static LLVMValueRef const_string(Cg *g, const char *s) {
  LLVMValueRef init = LLVMConstStringInContext(g->ctx, s, (unsigned)strlen(s), 0);
  LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), ".str");
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  return gv;
}

static LLVMValueRef const_array(Cg *g, LLVMTypeRef elt, LLVMValueRef *vals, int n, const char *name) {
  LLVMValueRef init = LLVMConstArray2(elt, vals, (uint64_t)n);
  LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  return gv;
}

/* The sg_rt_sig of f: inputs (f's parameters), then outputs (its results). */
static LLVMValueRef signature(Cg *g, Function *f, const int *syms, int nsyms) {
  int nargs = f->nparams + f->nresults;
  LLVMTypeRef argf[6] = {g->ptr, g->i32, g->i32, g->i32, g->i32, g->ptr};
  LLVMTypeRef arg_ty = LLVMStructTypeInContext(g->ctx, argf, 6, 0);
  LLVMValueRef *args = xmalloc(sizeof(LLVMValueRef) * (size_t)(nargs + 1));
  for (int a = 0; a < nargs; a++) {
    bool out = a >= f->nparams;
    const Type *t = out ? &f->results[a - f->nparams]->type : &f->params[a]->type;
    const char *name = out ? f->result_names[a - f->nparams] : f->params[a]->name;
    LLVMValueRef dims[IR_MAX_RANK];
    for (int j = 0; j < t->rank; j++) {
      int64_t code = t->dim[j].size;
      if (t->dim[j].sym >= 0)
        for (int s = 0; s < nsyms; s++)
          if (syms[s] == t->dim[j].sym)
            code = -1 - s;
      dims[j] = LLVMConstInt(g->i64, (unsigned long long)code, 1);
    }
    LLVMValueRef dims_gv = t->rank ? const_array(g, g->i64, dims, t->rank, ".dims")
                                   : LLVMConstNull(g->ptr);
    LLVMValueRef fields[6] = {const_string(g, name), LLVMConstInt(g->i32, (unsigned)t->dtype, 0),
                              LLVMConstInt(g->i32, (unsigned)t->rank, 0),
                              LLVMConstInt(g->i32, out, 0), LLVMConstInt(g->i32, 0, 0), dims_gv};
    args[a] = LLVMConstNamedStruct(arg_ty, fields, 6);
  }
  LLVMValueRef args_gv = const_array(g, arg_ty, args, nargs, ".args");
  free(args);
  LLVMValueRef *names = xmalloc(sizeof(LLVMValueRef) * (size_t)(nsyms + 1));
  for (int s = 0; s < nsyms; s++)
    names[s] = const_string(g, g->m->syms[syms[s]]);
  LLVMValueRef names_gv = nsyms ? const_array(g, g->ptr, names, nsyms, ".syms") : LLVMConstNull(g->ptr);
  free(names);
  LLVMValueRef fields[5] = {const_string(g, f->name), LLVMConstInt(g->i32, (unsigned)nargs, 0),
                            LLVMConstInt(g->i32, (unsigned)nsyms, 0), names_gv, args_gv};
  LLVMValueRef init = LLVMConstStructInContext(g->ctx, fields, 5, 0);
  LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), ".sig");
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  return gv;
}

void cg_export(Cg *g, Function *f) {
  int *syms = xmalloc(sizeof(int) * (size_t)(g->m->nsyms + 1)); /* each at most once */
  int nsyms = cg_func_syms(g->m, f, syms);
  int nargs = f->nparams + f->nresults;
  char *body_name = arena_printf(g->m->arena, "%s.body", f->name);
  /* A wide signature (2,000 scalar parameters) passes the body the array
   * of descriptors the checks read anyway, not one data pointer each:
   * thousands of loads and stores handed from piece to piece of a split
   * body (cg_split.c) were most of the compile time, all of it in LLVM's
   * code generation of straight-line blocks. */
  bool wide = nargs > CG_WIDE_ARGS;
  LLVMValueRef body = cg_body(g, f, body_name, syms, nsyms, wide);

  LLVMTypeRef *pt = xmalloc(sizeof(LLVMTypeRef) * (size_t)(nargs + 1));
  for (int k = 0; k < nargs; k++)
    pt[k] = g->ptr;
  LLVMValueRef fn = LLVMAddFunction(g->mod, f->name, LLVMFunctionType(g->i32, pt, (unsigned)nargs, 0));
  free(pt);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
  LLVMPositionBuilderAtEnd(g->b, entry);
  cg_debug_func(g, fn, f);

  LLVMValueRef argv = LLVMBuildArrayAlloca(g->b, g->ptr, LLVMConstInt(g->i32, (unsigned)(nargs ? nargs : 1), 0), "argv");
  LLVMValueRef symv = LLVMBuildArrayAlloca(g->b, g->i64, LLVMConstInt(g->i32, (unsigned)(nsyms ? nsyms : 1), 0), "syms");
  for (int k = 0; k < nargs && wide; k++) {
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned)k, 0);
    LLVMBuildStore(g->b, LLVMGetParam(fn, (unsigned)k), LLVMBuildInBoundsGEP2(g->b, g->ptr, argv, &idx, 1, ""));
  }
  /* The inline checks (cg_argcheck.c) run first; sg_rt_check only when
   * they doubt, to decide again and write the message. */
  LLVMBasicBlockRef full = LLVMAppendBasicBlockInContext(g->ctx, fn, "check_table");
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->ctx, fn, "bad");
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(g->ctx, fn, "run");
  if (cg_argcheck_fast(g, f, fn, syms, nsyms, symv, full))
    LLVMBuildBr(g->b, run);
  else
    LLVMBuildBr(g->b, full);
  LLVMPositionBuilderAtEnd(g->b, full);
  for (int k = 0; k < nargs && !wide; k++) {
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned)k, 0);
    LLVMBuildStore(g->b, LLVMGetParam(fn, (unsigned)k), LLVMBuildInBoundsGEP2(g->b, g->ptr, argv, &idx, 1, ""));
  }
  LLVMTypeRef check_ty;
  LLVMValueRef check = cg_rt(g, RT_check, &check_ty);
  LLVMValueRef cargs[3] = {signature(g, f, syms, nsyms), argv, symv};
  LLVMValueRef rc = LLVMBuildCall2(g->b, check_ty, check, cargs, 3, "rc");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, rc, LLVMConstInt(g->i32, 0, 0), ""), bad, run);
  LLVMPositionBuilderAtEnd(g->b, bad);
  LLVMBuildRet(g->b, rc);

  LLVMPositionBuilderAtEnd(g->b, run);
  check_derived(g, f, fn, symv, syms, nsyms);
  int ndata = wide ? 1 : nargs;
  LLVMValueRef *bargs = xmalloc(sizeof(LLVMValueRef) * (size_t)(ndata + nsyms + 1));
  if (wide)
    bargs[0] = argv;
  for (int k = 0; k < nargs && !wide; k++) /* sg_tensor.data is the first field */
    bargs[k] = LLVMBuildLoad2(g->b, g->ptr, LLVMGetParam(fn, (unsigned)k), "");
  for (int s = 0; s < nsyms; s++) {
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned)s, 0);
    bargs[ndata + s] = LLVMBuildLoad2(g->b, g->i64, LLVMBuildInBoundsGEP2(g->b, g->i64, symv, &idx, 1, ""), "");
  }
  LLVMValueRef r = LLVMBuildCall2(g->b, LLVMGlobalGetValueType(body), body, bargs, (unsigned)(ndata + nsyms), "");
  free(bargs);
  free(syms);
  LLVMBuildRet(g->b, r);
  cg_debug_end(g);
}
