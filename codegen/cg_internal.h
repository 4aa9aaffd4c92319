/* What the code generator's files share. */
#ifndef SGC_CG_INTERNAL_H
#define SGC_CG_INTERNAL_H

#include <llvm-c/Core.h>

#include "cg.h"

typedef struct Cg {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef i1, i8, i32, i64, f32, f64, ptr, vd; /* vd: void */
  Module *m;
  bool x86;
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

/* A loop being moved into a function of its own for the thread pool
 * (cg_parallel.c). */
typedef struct Par {
  LLVMValueRef n, chunk, nchunks; /* in the enclosing body */
  LLVMValueRef fn, begin, end;    /* the loop's function and its range */
  LLVMBasicBlockRef loads, start; /* its entry (loads from the context), its loop */
  LLVMBasicBlockRef saved_block, saved_entry;
  LLVMValueRef saved_fn;
  LLVMValueRef *outer, *inner;    /* captured values: body's, loop function's */
  int ncap, capcap;
} Par;

/* A function body in progress (cg_func.c). */
typedef struct Body {
  Cg *g;
  Function *f;
  LLVMValueRef fn;
  LLVMBasicBlockRef entry;
  LLVMValueRef *symv;  /* i64 size of each module symbol, NULL if unused */
  Slot *slot;          /* by Inst.id */
  Slot *pslot;         /* by parameter index */
  Par *par;            /* the parallel loop being generated, or NULL */
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

/* ---- cg_temps.c ---- */
/* Lays out f's temporaries (values with memory that is neither an output
 * nor a view) in one block, sharing space between values not live at once:
 * sets their Slot.temp, offset[id] to each one's byte offset, and returns
 * the block's size in bytes (i64, computed at the builder's position), or
 * NULL if f has no temporaries. */
LLVMValueRef cg_temp_layout(Body *B, int n, LLVMValueRef *offset);

/* ---- cg_parallel.c ---- */
/* Whether a loop over n elements is worth running on the pool: NULL if
 * never, else an i1 (constant true, or a test emitted at the builder). */
LLVMValueRef cg_par_worth(Body *B, LLVMValueRef n);
/* Starts the parallel loop: the builder moves to the loop's own function,
 * whose range is [p->begin, p->end). */
void cg_par_begin(Body *B, LLVMValueRef n, Par *p);
/* Ends it: back in the body, which runs the loop on the thread pool. */
void cg_par_end(Body *B, Par *p);
/* v as seen from the code being generated (inside a parallel loop: loaded
 * from the loop's context). Every value of the body a loop uses goes
 * through here. */
LLVMValueRef cg_outer(Body *B, LLVMValueRef v);
/* An array of one partial result per chunk (in the body's frame), and the
 * chunk a loop function's range is. */
LLVMValueRef cg_par_partials(Body *B, Par *p, LLVMTypeRef elem);
LLVMValueRef cg_par_chunk_index(Body *B, Par *p);

/* ---- cg_abi.c ---- */
void cg_export(Cg *g, Function *f);
/* The symbols f's signature mentions, in order of first appearance. */
int cg_func_syms(Module *m, Function *f, int *out);

#endif
