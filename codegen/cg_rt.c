/* The LLVM declarations of the runtime functions the generated code calls,
 * made from their rows in runtime/rt_functions.def, the table that
 * runtime/rt_functions.c checks against the C prototypes and the JIT binds
 * (lib/rt_symbols.c). Every call site asks cg_rt for its function by
 * RtFunc: no codegen file spells a runtime function's type. */
#include "cg_internal.h"

/* The type codes of the table's rows (0 ends a parameter list; a list
 * of RT_VOID alone is empty). */
enum { RT_VOID = 1, RT_I32, RT_I64, RT_PTR_ };
#define RT_PTR(T) RT_PTR_
#define RT_MAX_PARAMS 13

typedef struct RtRow {
  const char *name;
  unsigned char ret;
  unsigned char params[RT_MAX_PARAMS]; /* too many: a compile error */
} RtRow;

#define RT_LIST(...) {__VA_ARGS__}
static const RtRow rows[RT_NFUNCS] = {
#define RT(name, ret, params) [RT_##name] = {"sg_rt_" #name, ret, RT_LIST params},
#include "../runtime/rt_functions.def"
#undef RT
};

static LLVMTypeRef type_of(Cg *g, unsigned char code) {
  switch (code) {
  case RT_VOID:
    return g->vd;
  case RT_I32:
    return g->i32;
  case RT_I64:
    return g->i64;
  default:
    return g->ptr;
  }
}

LLVMValueRef cg_rt(Cg *g, RtFunc f, LLVMTypeRef *fty) {
  const RtRow *r = &rows[f];
  LLVMTypeRef ps[RT_MAX_PARAMS];
  unsigned n = 0;
  while (n < RT_MAX_PARAMS && r->params[n] && r->params[n] != RT_VOID) {
    ps[n] = type_of(g, r->params[n]);
    n++;
  }
  *fty = LLVMFunctionType(type_of(g, r->ret), ps, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, r->name);
  return fn ? fn : LLVMAddFunction(g->mod, r->name, *fty);
}
