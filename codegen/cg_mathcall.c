/* cg_mathcall.c -- exp, log, tanh, ... as calls, for bodies with very many.
 *
 * cg_math.c expands each transcendental function inline, about seventy
 * instructions a call, so that the fused loops around it vectorize. LLVM's
 * time is linear in those instructions but with a large constant: a body of
 * thousands of them (16,000 nested exp) spends minutes in the vectorizer
 * and instruction selection. Past MATH_INLINE_MAX such operations in one
 * body, cg_elem.c calls per-module functions instead, emitted once each:
 *
 *   float sg.exp.f32(float)               scalar, noinline
 *   <8 x float> sg.exp.f32.v8(<8 x float>) and v4, v16 (f64: v2, v4, v8)
 *
 * The scalar function names its vector forms in the attribute
 * "vector-function-abi-variant" (LLVM's VFABI mapping, the mechanism behind
 * `#pragma omp declare simd`), so the loop vectorizer still vectorizes the
 * loops, calling the vector form. Every form is the same cg_math.c emitter
 * on a different type, so results are bit for bit those of the inline
 * expansion. The vector forms are kept in llvm.compiler.used: nothing calls
 * them until the vectorizer does, and dead-function elimination runs first. */
#include <stdio.h>
#include <string.h>

#include "cg_internal.h"

/* One function `name` of one argument of type t, its body emit(x). */
static LLVMValueRef define_unary(Cg *g, const char *name, CgMathEmit *emit, LLVMTypeRef t) {
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(t, &t, 1, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  static const char *const attrs[] = {"nounwind", "willreturn", "nosync", "nofree"};
  for (size_t k = 0; k < sizeof attrs / sizeof *attrs; k++) {
    unsigned kind = LLVMGetEnumAttributeKindForName(attrs[k], strlen(attrs[k]));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, kind, 0));
  }
  /* memory(none): the effects mask 0 */
  unsigned memory = LLVMGetEnumAttributeKindForName("memory", 6);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, memory, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
  LLVMBuildRet(b, emit(g->mod, b, LLVMGetParam(fn, 0)));
  LLVMDisposeBuilder(b);
  return fn;
}

static void keep(Cg *g, LLVMValueRef fn) {
  g->math_used = xrealloc(g->math_used, sizeof(LLVMValueRef) * (size_t)(g->nmath_used + 1));
  g->math_used[g->nmath_used++] = fn;
}

static LLVMValueRef math_function(Cg *g, const char *op, CgMathEmit *emit, LLVMTypeRef t) {
  bool f64 = LLVMGetTypeKind(t) == LLVMDoubleTypeKind;
  char name[64];
  snprintf(name, sizeof name, "sg.%s.%s", op, f64 ? "f64" : "f32");
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
  if (fn)
    return fn;
  fn = define_unary(g, name, emit, t);
  unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, noinline, 0));
  char variants[512] = "";
  size_t used = 0;
  for (int w = f64 ? 2 : 4; w <= (f64 ? 8 : 16); w *= 2) {
    char vname[80];
    snprintf(vname, sizeof vname, "%s.v%d", name, w);
    keep(g, define_unary(g, vname, emit, LLVMVectorType(t, (unsigned)w)));
    used += (size_t)snprintf(variants + used, sizeof variants - used, "%s_ZGV_LLVM_N%dv_%s(%s)",
                             used ? "," : "", w, name, vname);
  }
  static const char key[] = "vector-function-abi-variant";
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(g->ctx, key, sizeof key - 1, variants,
                                                    (unsigned)used));
  return fn;
}

LLVMValueRef cg_math_call(Cg *g, const char *op, CgMathEmit *emit, LLVMValueRef x) {
  if (!g->math_calls)
    return emit(g->mod, g->b, x);
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMValueRef fn = math_function(g, op, emit, t);
  return LLVMBuildCall2(g->b, LLVMFunctionType(t, &t, 1, 0), fn, &x, 1, "");
}

void cg_math_finish(Cg *g) {
  if (!g->nmath_used)
    return;
  LLVMTypeRef at = LLVMArrayType2(g->ptr, (uint64_t)g->nmath_used);
  LLVMValueRef used = LLVMAddGlobal(g->mod, at, "llvm.compiler.used");
  LLVMSetLinkage(used, LLVMAppendingLinkage);
  LLVMSetSection(used, "llvm.metadata");
  LLVMSetInitializer(used, LLVMConstArray2(g->ptr, g->math_used, (uint64_t)g->nmath_used));
  free(g->math_used);
  g->math_used = NULL;
  g->nmath_used = 0;
}
