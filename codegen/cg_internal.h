/* What the code generator's files share. */
#ifndef SGC_CG_INTERNAL_H
#define SGC_CG_INTERNAL_H

#include <llvm-c/Core.h>

#include "cg.h"

typedef struct CgDebug CgDebug;

typedef struct Cg {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef i1, i8, i32, i64, f32, f64, ptr, vd; /* vd: void */
  Module *m;
  bool x86;
  CgDebug *dbg;        /* -g: cg_debug.c's state; NULL without -g */
} Cg;

/* Where a value lives while a function body is generated. */
typedef struct Slot {
  bool has_buf;        /* materialized: buf holds every element */
  bool computed;       /* the buffer is filled by its own loop (not a view) */
  LLVMValueRef buf;    /* pointer to element 0 */
  int temp;            /* index into the temporaries, -1 if none */
  int group;           /* loop group (first member's id), -1 if none */
  bool internal;       /* a group member no one outside the group reads: no memory */
  LLVMValueRef reg;    /* while its group's loop is emitted: this element */
  Inst *acc_into;      /* a matmul whose product goes into this sum's memory */
  bool by_products;    /* an add of two matmuls: they compute it */
} Slot;

typedef struct RegionCg RegionCg;

/* A function body in progress (cg_func.c). */
typedef struct Body {
  Cg *g;
  Function *f;
  LLVMValueRef fn;
  LLVMBasicBlockRef entry;
  LLVMValueRef *symv;  /* i64 size of each module symbol, NULL if unused */
  Slot *slot;          /* by Inst.id */
  Slot *pslot;         /* by parameter index */
  RegionCg **rg;       /* by Inst.id: loops and branches (cg_region.c) */
  LLVMValueRef temps;  /* the temporaries' memory, NULL if none */
  LLVMBasicBlockRef fail; /* out of memory for a tape (cg_region.c); NULL if unused */
  LLVMValueRef fail_bytes; /* alloca: how many bytes were asked for */
} Body;

/* ---- cg_elem.c ---- */
LLVMTypeRef cg_elem_type(Cg *g, DType dt);   /* f32/f64/i1 */
LLVMTypeRef cg_mem_type(Cg *g, DType dt);    /* f32/f64/i8 */
int64_t cg_elem_size(DType dt);
/* One element of elementwise op `op` given its operands' elements. */
LLVMValueRef cg_elem(Cg *g, const Inst *i, LLVMValueRef *args);
LLVMValueRef cg_intrinsic(Cg *g, const char *name, LLVMTypeRef t, LLVMValueRef *args, int n);

/* ---- cg_func.c ---- */
/* Emit `name` as an internal function computing f from data pointers (f's
 * parameters then its results, all noalias) and the i64 value of each
 * symbol in syms[0..nsyms); returns 0 or SG_ERR_ALLOC. */
LLVMValueRef cg_body(Cg *g, Function *f, const char *name, const int *syms, int nsyms);

/* The helpers cg_region.c uses. */
Slot *cg_slot(Body *B, const Inst *v);
LLVMValueRef cg_eval_scalar(Body *B, const Inst *v);           /* a scalar's element */
void cg_copy_value(Body *B, const Inst *v, LLVMValueRef dst);  /* dst[i] = v[i] */
void cg_emit_block(Body *B, Inst *first);                      /* a block's values */
LLVMValueRef cg_entry_alloca(Body *B, LLVMTypeRef t);
LLVMValueRef cg_bytes(Body *B, const Type *t);                 /* i64 size in memory */
LLVMValueRef cg_rt(Cg *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *ps, int n,
                   LLVMTypeRef *fty);                          /* a runtime function */

/* ---- cg_region.c: for, while, if, unloop ---- */
void cg_region_plan(Body *B, Inst *op);    /* memory of its arguments and results */
/* Its buffers in the temporaries: total grows; bound once they exist. */
LLVMValueRef cg_region_reserve(Body *B, Inst *op, LLVMValueRef total);
void cg_region_bind(Body *B, Inst *op, LLVMValueRef base);
void cg_region_emit(Body *B, Inst *op);
void cg_region_finish(Body *B);            /* at the return: free the tapes */
void cg_region_fail_block(Body *B);        /* fill in the out-of-memory exit if used */

/* ---- cg_debug.c: -g (each does nothing without it) ---- */
void cg_debug_begin(Cg *g, const char *path, bool optimized);
/* fn (just added) is f's code: give it a subprogram and the builder f's line. */
void cg_debug_func(Cg *g, LLVMValueRef fn, const Function *f);
/* The code built next is i's; returns the location it replaces. */
LLVMMetadataRef cg_debug_at(Cg *g, const Inst *i);
void cg_debug_restore(Cg *g, LLVMMetadataRef prev);
void cg_debug_end(Cg *g);    /* the function of cg_debug_func is done */
void cg_debug_finish(Cg *g); /* before verifying and optimizing the module */

/* ---- cg_abi.c ---- */
void cg_export(Cg *g, Function *f);
/* The symbols f's signature mentions, in order of first appearance. */
int cg_func_syms(Module *m, Function *f, int *out);

/* ---- cg_split.c ---- */
/* Move pieces of a big function body into noinline functions of their own,
 * so that LLVM's superlinear passes see only small functions. */
void cg_split_function(Cg *g, LLVMValueRef fn);
/* After the optimizer: cut long straight-line blocks, which the code
 * generator's schedulers handle in quadratic time. */
void cg_split_blocks(Cg *g, LLVMValueRef fn);

#endif
