/* What the code generator's files share: the state of a module (Cg) and
 * of a function body (Body, Slot), then each file's shared functions
 * under a banner naming it. cg.h declares the entry points of cg.c and
 * cg_header.c; cg_math.h the emitters of cg_math.c, cg_math_trig.c and
 * cg_math_gamma.c (cg_math_internal.h what those three share); cg_rows.h
 * what cg_rows.c shares with cg_rows_blocks.c and cg_rows_wide.c. cg.h's
 * comment is the map of the folder. */
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
  long long ad_memory; /* --ad-memory (cg_region.c), 0: loops keep a full tape */
  bool math_calls;     /* this body calls exp & co. instead of expanding them */
  LLVMValueRef *math_used; /* cg_mathcall.c's vector forms, kept until vectorized */
  int nmath_used;
  int alias_loops;     /* cg_alias.c: loops given alias scopes so far */
  PtrMap frame_temps;  /* allocas of cg_frame_bind (cg_temps.c): cg_split.c
                          keeps a small loop using one whole */
} Cg;

/* Where a value lives while a function body is generated. */
typedef struct Slot {
  bool has_buf;        /* materialized: buf holds every element */
  bool computed;       /* the buffer is filled by its own loop (not a view) */
  LLVMValueRef buf;    /* pointer to element 0 */
  int temp;            /* index into the temporaries, -1 if none */
  int group;           /* loop group (first member's id), -1 if none */
  Inst *group_last;    /* of a group's first member: its last member */
  bool internal;       /* a group member no one outside the group reads: no memory */
  bool view;           /* a slice of leading-axis rows of a value in memory:
                          a pointer into it, no loop (cg_slice_view) */
  LLVMValueRef reg;    /* while its group's loop is emitted: this element */
  Inst *acc_into;      /* a matmul whose product goes into this sum's memory */
  bool by_products;    /* an add of two matmuls: they compute it */
  Inst *inplace_of;    /* an indexed assignment updating this old value's
                          memory in place (cg_inplace.c) */
  bool inplace_old;    /* the old value of such an update */
  LLVMValueRef scratch; /* an update by a tensor index: its positions and the
                           table that finds a repeat (cg_update.c) */
  LLVMValueRef log, log_old; /* an update of a taped loop's chain: where
                          this iteration's undo log goes (cg_region.c) */
  LLVMValueRef scalar; /* a scalar with memory, loaded once computed: loops
                          read the register (a load inside a loop that also
                          stores is reloaded every iteration, as LLVM cannot
                          tell the temporaries apart, and keeps the loop's
                          reductions from vectorizing) */
  /* Row groups (cg_rows.c): */
  int rows;            /* the row group (first member's id), -1 if none */
  Inst *rows_last;     /* that group's last member */
  int rkind, rpass;    /* member kind, pass within a block of rows */
  bool rowbuf_ok;      /* read by a later pass, never outside: block scratch */
  bool rows_escapes;   /* read outside its group (or a result): stored */
  int rows_kmax;       /* of a group's first member: the widest k it takes */
  LLVMValueRef rowbuf; /* while the group is emitted: that block scratch */
  int pair;            /* 1 + index of the matrix-vector pair (cg_gemvpair.c)
                          this product or group head is part of; 0: none */
  bool pair_block;     /* a pair's z or g read only within its block: no
                          memory, a block scratch (pairbuf) instead */
  LLVMValueRef pairbuf; /* while the pair's group is emitted: that scratch */
  LLVMValueRef batchbuf; /* while its batch group is emitted: one batch element of it */
  /* Online groups (cg_online.c): */
  int online;          /* the group (its max's id), -1 if none */
  int okind;           /* member kind (how its block sums are rescaled) */
  int kernel;          /* its kernel in the plan (Body.kernels), -1: none */
  bool in_frame;       /* a small temporary of a loop or branch body: an
                          alloca of its own (cg_temps.c, cg_frame_plan) */
} Slot;

typedef struct RegionCg RegionCg;
typedef struct CgPair CgPair;
typedef struct CgAlias CgAlias;
typedef struct CgKernel CgKernel;
typedef struct CgMember CgMember;

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
  /* Checks that can fail inside the loop (cg_data.c): a failing chunk
   * records which check (1-based; 0: none) and its arguments in its entry
   * of these arrays of the body, and returns; the body reports the first
   * failed chunk's failure after the loop. NULL until a check is emitted. */
  LLVMValueRef fail_site, fail_arg0, fail_arg1;
  struct ParCheck *checks;
  int nchecks;
} Par;

/* A function body in progress (cg_func.c). */
typedef struct Body {
  Cg *g;
  Function *f;
  int n;               /* instructions (ids 0 .. n-1, ir_renumber) */
  LLVMValueRef fn;
  LLVMBasicBlockRef entry;
  LLVMValueRef *symv;  /* i64 size of each module symbol, NULL if unused */
  Slot *slot;          /* by Inst.id */
  Slot *pslot;         /* by parameter index */
  RegionCg **rg;       /* by Inst.id: loops and branches (cg_region.c) */
  LLVMValueRef temps;  /* the temporaries' memory, NULL if none */
  LLVMValueRef stack_temps; /* the frame's room for them (cg_body.c), or NULL */
  Par *par;            /* the parallel loop being generated, or NULL */
  bool has_regions;    /* f has loops or branches */
  int region_depth;    /* loops and branches around the code being emitted */
  int loop_depth;      /* the loops among them */
  LLVMValueRef call_id; /* sg_rt_call_id's number for this call, if a product
                          in a loop may keep an operand (cg_matmul.c) */
  CgAlias *alias;      /* the flat loop whose accesses are being noted, or NULL */
  int nunloops;        /* loops reversed (cg_region.c): --ad-memory is shared among them */
  LLVMValueRef rows_i0; /* while a row group is emitted: its block's first row */
  bool rows_fallback;   /* emitting a row group's members one loop each */
  CgPair *pairs;        /* matrix-vector pairs (cg_gemvpair.c) */
  LLVMValueRef pair_i0; /* while a pair's group is emitted: its block's first row */
  int npairs;
  CgKernel *kernels;    /* the plan (cg_plan.c), in the order they were formed */
  int nkernels;
  CgMember *member;     /* by Inst.id: each value's part in its kernel */
  PtrVec *users;        /* by Inst.id: the instructions reading it (not yields) */
  int nusers;           /* users' length: codegen may unlink instructions before the end */
  int *stepped_over;    /* by Inst.id: the nest group that stepped over it, or -1
                           (cg_nest.c; group ids are unique, so never cleared) */
} Body;

/* ---- cg_elem.c ---- */
LLVMTypeRef cg_elem_type(Cg *g, DType dt);   /* f32/f64/i1 */
LLVMTypeRef cg_mem_type(Cg *g, DType dt);    /* f32/f64/i8 */
int64_t cg_elem_size(DType dt);
/* One element of elementwise op `op` given its operands' elements. */
LLVMValueRef cg_elem(Cg *g, const Inst *i, LLVMValueRef *args);
/* m if v is x - max(x) = m, broadcast back over the axes it reduced
 * (every element <= 0); else NULL */
const Inst *cg_shifting_max(const Inst *v);
LLVMValueRef cg_intrinsic(Cg *g, const char *name, LLVMTypeRef t, LLVMValueRef *args, int n);

/* ---- cg_mathcall.c ---- */
/* exp & co.: cg_math.c's emitter inline, or with g->math_calls a call to a
 * per-module function with vector forms for the loop vectorizer. */
typedef LLVMValueRef CgMathEmit(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_call(Cg *g, const char *op, CgMathEmit *emit, LLVMValueRef x);
void cg_math_finish(Cg *g); /* once every body is emitted, before the passes */

/* ---- cg_body.c (cg_md_kind: cg.c) ---- */
/* Emit `name` as an internal function computing f from data pointers (f's
 * parameters then its results, all noalias) and the i64 value of each
 * symbol in syms[0..nsyms); returns 0 or SG_ERR_ALLOC. `wide`: instead of
 * the data pointers, one pointer to the export's array of descriptors
 * (CG_WIDE_ARGS). */
enum { CG_WIDE_ARGS = 64 };
/* sgc's own metadata on LLVM instructions (ignored by LLVM).
 * CG_MD_FIXED: a load from memory nothing writes during the call. */
typedef enum { CG_MD_FIXED } CgMd;
unsigned cg_md_kind(LLVMContextRef ctx, CgMd md);
LLVMValueRef cg_body(Cg *g, Function *f, const char *name, const int *syms, int nsyms, bool wide);
/* At each return: the temporaries' block back to the workspace, unless it
 * is room in the frame. */
void cg_release_temps(Body *B);

/* ---- cg_plan.c: the kernel plan ----
 * A kernel is one unit of the generated code: a loop nest, a group of
 * values sharing one loop, a call into the runtime, a loop or branch.
 * Every value the body computes apart from its readers (Slot.has_buf)
 * belongs to exactly one; the others are evaluated inside their readers'
 * kernels. A strategy recognizes kernels in a block, may reserve room of
 * their own in the workspace, and emits them where their head stands;
 * the planner runs the table of strategies over every block in order,
 * each taking only values no earlier one took. */
typedef enum { CG_IN_MEMORY, CG_IN_REGISTER, CG_IN_SCRATCH, CG_IN_FRAME } CgLives;
/* A value's part in its kernel (Body.member, by id). */
struct CgMember {
  int role;      /* the strategy's own kind of member, printed by name */
  int pass;      /* rows: its pass in a block of rows */
  CgLives lives; /* where it lives while the kernel runs */
};
typedef struct CgStrategy {
  const char *name;
  const char *const *roles; /* CgMember.role's names (NULL: one kind) */
  /* The kernels of the block starting at `first` it takes (cg_kernel_new,
   * cg_kernel_add), among values no earlier strategy took. */
  void (*recognize)(Body *B, Inst *first);
  /* Room of its own after the temporaries: total grows; bound once the
   * workspace block exists (NULL: none). */
  LLVMValueRef (*reserve)(Body *B, CgKernel *k, LLVMValueRef total);
  void (*bind)(Body *B, CgKernel *k, LLVMValueRef base);
  void (*emit)(Body *B, CgKernel *k);
  /* After "%head ": its schedule and the rest of its line of the plan. */
  void (*describe)(Body *B, const CgKernel *k, FILE *out);
} CgStrategy;
struct CgKernel {
  const CgStrategy *st;
  Inst *head;  /* emitted where it stands */
  Inst *first; /* its first member: the head, or an online group's plain sum before it */
  Inst *last;  /* its last member, in head's block */
  void *data;  /* the strategy's own */
};
extern const CgStrategy cg_region_strategy, cg_inplace_strategy, cg_view_strategy,
    cg_rows_strategy, cg_online_strategy, cg_batch_strategy, cg_flat_strategy, cg_pair_strategy, cg_nest_strategy,
    cg_own_strategy;
/* Memory first (cg_memory.c), then the table over every block. */
void cg_plan(Body *B, int n);
void cg_plan_free(Body *B);
/* A new kernel of st at head (head its first member); returns its index. */
int cg_kernel_new(Body *B, const CgStrategy *st, Inst *head);
void cg_kernel_add(Body *B, int k, Inst *v, int role, CgLives lives);
/* v's kernel, or NULL. */
CgKernel *cg_kernel_of(Body *B, const Inst *v);
/* The members of k in order, " %id role lives" each (for describe). */
void cg_plan_members(Body *B, const CgKernel *k, FILE *out);
/* "%x" or "%12": a value as the IR printer names it, for describe. */
void cg_plan_value(const Inst *v, FILE *out);
/* " [n, 8]": a type's shape, for describe. */
void cg_plan_shape(Body *B, const Type *t, FILE *out);
/* "flat [n], pool: %3 elem mem ...": a loop group's line, its strategy's
 * name, the space, whether it may run on the pool, its members. */
void cg_plan_group(Body *B, const CgKernel *k, const Type *space, bool pool, FILE *out);

/* ---- cg_memory.c ---- */
/* Which values get memory (Slot.has_buf), first of all. */
void cg_memory_plan(Body *B, int n);

/* ---- cg_inplace.c ---- */
void cg_inplace_plan(Body *B, int n);     /* cg_memory.c's last step */
bool cg_inplace_emit(Body *B, Inst *i);   /* false: i is not updated in place */

/* ---- cg_rt.c: the runtime functions the generated code calls ---- */
/* One per row of runtime/rt_functions.def: RT_<name> is sg_rt_<name>. */
typedef enum RtFunc {
#define RT(name, ret, params) RT_##name,
#include "../runtime/rt_functions.def"
#undef RT
  RT_NFUNCS
} RtFunc;
/* sg_rt_<f>'s declaration in g's module (made at the first use), its
 * function type in *fty: the table's row, the C prototype's type. */
LLVMValueRef cg_rt(Cg *g, RtFunc f, LLVMTypeRef *fty);

/* ---- cg_func.c: the helpers cg_region.c uses ---- */
Slot *cg_slot(Body *B, const Inst *v);
LLVMValueRef cg_eval_scalar(Body *B, const Inst *v);           /* a scalar's element */
void cg_copy_value(Body *B, const Inst *v, LLVMValueRef dst);  /* dst[i] = v[i] */
void cg_fill_nest(Body *B, const Inst *v, LLVMValueRef dst);   /* the same, by its loop nest */
void cg_emit_block(Body *B, Inst *first);                      /* a block's values */
LLVMValueRef cg_entry_alloca(Body *B, LLVMTypeRef t);
LLVMValueRef cg_block_alloca(Body *B, LLVMTypeRef elem, int64_t n); /* n elements, vector-aligned */
LLVMValueRef cg_bytes(Body *B, const Type *t);                 /* i64 size in memory */
/* Leave the function early with error `code` (the message already set):
 * frees the loop tapes, hands the temporaries back, returns code. Emitted
 * at each failure site, so that cg_split.c can still cut the body. */
void cg_fail_exit(Body *B, LLVMValueRef code);

/* ---- cg_region.c: for, while, if, unloop ---- */
void cg_region_plan(Body *B, Inst *op);    /* memory of its arguments and results */
/* Its buffers in the temporaries: total grows; bound once they exist. */
LLVMValueRef cg_region_reserve(Body *B, Inst *op, LLVMValueRef total);
bool cg_region_computes_into(Body *B, const Inst *v);
void cg_region_bind(Body *B, Inst *op, LLVMValueRef base);
void cg_region_emit(Body *B, Inst *op);
/* May a loop's (or unloop's) state `arg` stay in one buffer that its yield
 * `yield` updates in place? (cg_inplace.c) */
bool cg_region_keeps(const Inst *arg, const Inst *yield);
void cg_region_finish(Body *B);            /* at every return: free the tapes */
void cg_region_free(Body *B);              /* sgc's own memory for them */

/* ---- cg_func.c, for cg_data.c ---- */
/* An element position in a value of some shape: the per-axis indices, and
 * the row-major linear index once computed. rank < 0: linear only. */
typedef struct Idx {
  int rank;
  LLVMValueRef i[IR_MAX_RANK];
  LLVMValueRef lin;
} Idx;
LLVMValueRef cg_eval(Body *B, const Inst *v, Idx *x);     /* element x of v */
LLVMValueRef cg_eval_def(Body *B, const Inst *v, Idx *x); /* v's element, by its definition */
LLVMValueRef cg_dim(Body *B, Dim d);                      /* i64 size */
LLVMValueRef cg_mul64(Cg *g, LLVMValueRef a, LLVMValueRef b); /* a * b, 1s folded */
LLVMValueRef cg_add64(Cg *g, LLVMValueRef a, LLVMValueRef b); /* a + b, 0 folded */
LLVMValueRef cg_numel(Body *B, const Type *t);
LLVMValueRef cg_lin(Body *B, Idx *x, const Type *t);      /* row-major index */
LLVMValueRef cg_load(Body *B, DType dt, LLVMValueRef buf, LLVMValueRef lin);
void cg_store(Body *B, DType dt, LLVMValueRef buf, LLVMValueRef lin, LLVMValueRef x);
typedef void CgLoopBody(Body *B, Idx *x, void *ctx);
/* Loops over axes [from, to) of t (x->i filled there), `body` inside; the
 * element count of those axes; whether such a loop is short (a fixed
 * few elements in a loop body: tail folded into masked iterations). */
void cg_loop_nest(Body *B, const Type *t, int from, int to, Idx *x, CgLoopBody *body, void *ctx);
LLVMValueRef cg_numel_span(Body *B, const Type *t, int from, int to);
bool cg_span_short(Body *B, const Type *t, int from, int to);
/* Loops over every position of t (x->i filled), `body` inside. */
void cg_loop_all(Body *B, const Type *t, Idx *x, CgLoopBody *body, void *ctx);
/* for (i = 0; i < n; i++): returns i; cg_loop_end closes it */
LLVMValueRef cg_loop_begin(Body *B, LLVMValueRef n, void **loop);
void cg_loop_end(Body *B, void *loop);
/* The same over [lo, hi) with its hints at hand (cg_groups.c). */
typedef struct CgLoop {
  LLVMBasicBlockRef header, exit;
  LLVMValueRef iv;
  bool short_trip; /* fold the tail into masked iterations (small_trip_hint) */
  bool once;       /* [0, 1): no loop, the body runs once at index 0 */
  bool whole;      /* a multiple of 16 iterations (nest_split): not interleaved */
} CgLoop;
LLVMValueRef cg_loop_range(Body *B, LLVMValueRef lo, LLVMValueRef hi, CgLoop *L);
void cg_loop_close(Body *B, CgLoop *L);
bool cg_flat_def_ok(Body *B, const Inst *v); /* v's definition evaluates at a flat index */
bool cg_flat_ok(Body *B, const Inst *v);     /* the same for v, its memory included */
void cg_emit_view(Body *B, Inst *v);         /* a slice view's pointer */
/* One value with memory by a loop (or call) of its own, whatever kernel
 * it is in (a row group's fallback). */
void cg_emit_alone(Body *B, Inst *i);
/* Is i computed element by element from its definition (not a call,
 * scatter, reduction, scan...)? Its own loop is then a fill. */
bool cg_fills(const Inst *i);

/* ---- cg_reduce.c ---- */
/* A reduction's own loop into out. */
void cg_emit_reduce(Body *B, const Inst *v, LLVMValueRef out);
/* Is v a sum over leading axes summed by periods of rows (when the kept
 * elements fit one 64-byte vector; tested when run if that is symbolic)? */
bool cg_reduce_by_periods(Body *B, const Inst *v);
/* A reduction's starting value and one combining step (cg_rows.c and the
 * groups accumulate with them). */
LLVMValueRef cg_reduce_init(Op op, LLVMTypeRef t);
LLVMValueRef cg_combine(Cg *g, Op op, LLVMValueRef acc, LLVMValueRef x);

/* ---- cg_matmul.c ---- */
/* out (+)= v's product (accumulate: add to what out holds). */
void cg_emit_matmul(Body *B, const Inst *v, LLVMValueRef out, bool accumulate);
/* A matrix-vector product with at most this many elements of the matrix
 * runs inline, without the runtime's GEMM (cg_matmul.c emit_small_gemv). */
enum { CG_SMALL_GEMV = 4096 };
/* out[0, m) = a [m, k] (rows back to back) @ b [k], inline, each element as
 * cg_emit_matmul computes it for such a small product (a fused pair's
 * blocks of a small matrix, cg_gemvpair.c). */
void cg_gemv_inline(Body *B, DType dt, LLVMValueRef a, LLVMValueRef b, LLVMValueRef m, LLVMValueRef k,
                    LLVMValueRef out);
/* out[0, k) += w[0, m) @ a [m, k], inline: each vector of columns summed
 * over the rows in registers; with the zero rule (matmulz) a term with a
 * factor 0 adds nothing, even where the other is inf or NaN. */
void cg_gemv_acc_inline(Body *B, DType dt, LLVMValueRef w, LLVMValueRef a, LLVMValueRef m, LLVMValueRef k,
                        LLVMValueRef out, bool zero_rule);
/* A transpose swapping only the last two axes: GEMM reads it in place. */
bool cg_swaps_last2(const Inst *x);
/* x * y, a term of product v's sums (scalars or vectors alike): for
 * matmulz, `zero` where either factor is 0. */
LLVMValueRef cg_product_term(Cg *g, const Inst *v, LLVMValueRef x, LLVMValueRef y, LLVMValueRef zero);
/* Does a product in a loop read a parameter the runtime packs once for
 * the call (sg_rt_gemm's kept)? */
bool cg_gemm_keeps(const Inst *v);
/* Before the body is emitted: B->call_id, if a product keeps one. */
void cg_call_id_plan(Body *B);

/* ---- cg_minmax.c ---- */
/* A reduction's running value in registers: op's usual combine, or for a
 * float max/min the largest and smallest integer keys (hi, lo). init
 * allocates at the body's entry and stores the start at the builder. */
typedef struct CgAcc {
  Op op;
  LLVMTypeRef t, it; /* element type; key type (NULL: not keyed) */
  LLVMValueRef hi, lo;
} CgAcc;
void cg_acc_init(Body *B, CgAcc *a, Op op, LLVMTypeRef t);
void cg_acc_add(Cg *g, CgAcc *a, LLVMValueRef x);
LLVMValueRef cg_acc_value(Cg *g, CgAcc *a);

/* ---- cg_rows.c, cg_rows_blocks.c ---- */
/* Row groups (cg_rows_strategy): the values of a softmax-like chain over
 * [n, k] (row reductions and their broadcast users) computed in one loop
 * over blocks of rows, lanes over rows. */
LLVMValueRef cg_rows_load(Body *B, const Inst *v, Idx *x); /* a member in block scratch */

/* ---- cg_gemvpair.c ---- */
/* Matrix-vector pairs: z = M @ v and M^T g fused with the loop group over
 * M's rows that computes g, reading M once (cg_pair_strategy). Its partials
 * of d_v take room after the temporaries. The group's loop (cg_groups.c's
 * group_version): the pair whose group starts at head, or NULL; the most
 * chunks its pool loop may have; per chunk (chunk: its index, NULL
 * inline), zero its partial; per block of cg_pair_block_rows rows, the
 * forward product before the members' loop and the adjoint's sum after;
 * then, in the body, how many chunks ran. */
CgPair *cg_pair_of(Body *B, const Inst *head);
LLVMValueRef cg_pair_max_chunks(Body *B, CgPair *p);
void cg_pair_chunk_begin(Body *B, CgPair *p, LLVMValueRef chunk);
LLVMValueRef cg_pair_block_rows(Body *B, CgPair *p);
void cg_pair_forward(Body *B, CgPair *p, LLVMValueRef i0, LLVMValueRef rows);
void cg_pair_adjoint(Body *B, CgPair *p, LLVMValueRef i0, LLVMValueRef rows, LLVMValueRef chunk);
void cg_pair_set_chunks(Body *B, CgPair *p, LLVMValueRef nchunks);
/* After the group's loop: its block scratch is gone. */
void cg_pair_group_end(Body *B, CgPair *p);
/* Element x of a value in its pair's block scratch (Slot.pairbuf), and a
 * member's store there. */
LLVMValueRef cg_pair_load(Body *B, const Inst *v, Idx *x);
void cg_pair_store(Body *B, const Inst *v, LLVMValueRef iv, LLVMValueRef e);

/* ---- cg_nest.c ---- */
/* Does v's definition read a member of group gid past an op that does not
 * keep its position (keeps false), or a value group g stepped over
 * (B->stepped_over)? Nest and batch groups' tests of a member. */
bool cg_reads_member_moved(Body *B, const Inst *v, int gid, bool (*keeps)(const Inst *), bool moved);
bool cg_reads_skipped(Body *B, const Inst *v, int g);

/* ---- cg_batch.c ---- */
/* Element x of a batch group's member in its scratch (Slot.batchbuf). */
LLVMValueRef cg_batch_load(Body *B, const Inst *v, Idx *x);

/* ---- cg_groups.c ---- */
/* Loop groups: values computed by flat loops over the same space share
 * one loop (cg_flat_strategy); cg_group_emit emits the group at its first
 * member (a matrix-vector pair's too). */
void cg_group_emit(Body *B, Inst *first);
/* Can i be a loop group's member, and over which space? */
bool cg_flat_member(Body *B, const Inst *i, const Type **space);
/* Does v (computed in the current iteration) read a reduction of group g?
 * Is every read of v inside group g (through values computed where used)? */
bool cg_group_reads_reduction(Body *B, const Inst *v, int g);
bool cg_group_only_reads(Body *B, const Inst *v, int g, PtrVec *users);
/* The reductions among group gid's members in [first, end), which loop
 * and nest groups share: how many; their final values' slots (fin);
 * their running values started in the function that runs the loop, with a
 * partial per chunk on the pool (par non-NULL); after the loop each
 * value stored to fin or its chunk's partial; after cg_par_end the
 * partials combined into fin in chunk order; and at the end every member
 * marked computed, each reduction loaded (Slot.scalar) and stored. */
/* The kernels of strategy st for the groups marked in a block (Slot.group,
 * group_last): groups of two members or more; a member read only inside
 * its group gets no memory (Slot.internal). */
void cg_group_kernels(Body *B, Inst *first, const CgStrategy *st);
int cg_group_reductions(Body *B, Inst *first, Inst *end, int gid);
LLVMValueRef *cg_group_fin(Body *B, Inst *first, Inst *end, int gid);
void cg_group_acc_begin(Body *B, Inst *first, Inst *end, int gid, Par *par, CgAcc *acc,
                        LLVMValueRef *part);
void cg_group_acc_end(Body *B, Inst *first, Inst *end, int gid, Par *par, CgAcc *acc,
                      LLVMValueRef *part, LLVMValueRef *fin);
void cg_group_acc_combine(Body *B, Inst *first, Inst *end, int gid, Par *par, LLVMValueRef *part,
                          LLVMValueRef *fin);
void cg_group_done(Body *B, Inst *first, Inst *end, int gid, LLVMValueRef *fin);

/* ---- cg_opt.c ---- */
/* LLVM's pipeline at o's -O level over mod, big modules in two halves on
 * two threads (tm2 the second's target machine, which cg_optimize
 * disposes of; NULL: one thread).
 * With halves NULL the second half is linked back; otherwise, if the
 * module was split, *halves is the second half, optimized and compiled
 * to an object on its thread, for cg_second_merge (or cg_second_link
 * when that fails), then cg_second_free. Returns NULL, or the error
 * message (the caller frees it). */
typedef struct CgSecond CgSecond;
char *cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, LLVMTargetMachineRef tm2,
                  const CgOptions *o, CgSecond **halves);
bool cg_second_merge(CgSecond *s, const char *obj, size_t len, char **out, size_t *outlen);
char *cg_second_link(LLVMModuleRef mod, CgSecond *s, LLVMTargetMachineRef tm, const CgOptions *o);
void cg_second_free(CgSecond *s);

/* ---- cg_elf.c ---- */
/* Objects a and b (x86-64 ELF, relocatable) as one, in *out (malloc'd);
 * the symbols named in locals become local. False if it cannot. */
bool cg_elf_merge(const void *a, size_t alen, const void *b, size_t blen,
                  const char *const *locals, int nlocals, char **out, size_t *outlen);

/* ---- cg_online.c ---- */
/* Online groups (cg_online_strategy): a max over all of an operand and the
 * sums shifted by it (log-sum-exp, a softmax cross-entropy over a vector)
 * in one pass over blocks that stay in cache, rescaling the blocks' sums. */
/* The shortest (literal) row a row max takes part from: shorter rows stay
 * in cache between their passes anyway (W1's 1000); the row groups leave
 * longer ones to these. */
enum { ONLINE_ROW_MIN = 8192 };

/* ---- cg_data.c ---- */
/* Element x of gather, take_along, slice, unslice or a permuting
 * scatter_add (index maps). */
LLVMValueRef cg_index_elem(Body *B, const Inst *v, Idx *x);
/* Is v a scatter_add by a known permutation of its axis (`(arange(3) + 1) %
 * 3`, ir_index_table)? Then it is a gather by the inverse permutation: an
 * element of it is one element of its operand, with no zero fill and no
 * adding (cg_index_elem). */
bool cg_scatter_permutes(const Inst *v);
/* Is v a gather by known positions, all inside its axis? An element of it
 * is one element of its operand, read with no check (cg_memory.c fuses it
 * into its readers as an index map). */
bool cg_gather_known(const Inst *v);
/* A slice along the leading axis as a pointer into its operand's memory
 * (mem, found by the caller), its start checked once. */
LLVMValueRef cg_slice_view(Body *B, const Inst *v, LLVMValueRef mem);
/* The start of a slice of len positions from raw i32 start `raw` of an axis
 * of `size`, checked as slice and unslice check it (SG_ERR_INDEX at `at`). */
LLVMValueRef cg_slice_start(Body *B, const Inst *at, LLVMValueRef raw, LLVMValueRef size,
                            LLVMValueRef len);
/* A slice's or unslice's start checked before the loop that computes it:
 * inside, it is checked at every element, and an empty result has none
 * (spec 6: reported whether or not a value is used or has elements). */
void cg_check_slice_once(Body *B, const Inst *v);
/* The position (i64) of raw i32 index `raw` of an axis of `size`, counted
 * from the end when negative, checked as gather checks it. */
LLVMValueRef cg_checked_index(Body *B, const Inst *at, LLVMValueRef raw, LLVMValueRef size);
/* scatter_add and scatter_along into out (zeroed first); not a permuting
 * scatter_add (cg_scatter_permutes). */
void cg_emit_scatter(Body *B, const Inst *v, LLVMValueRef out);
/* scatter_add or scatter_along v's operand added to (sub: subtracted from)
 * out as it is, element by element in order (an update in place). */
void cg_scatter_into(Body *B, const Inst *v, LLVMValueRef out, bool sub);
/* Branch to the function's failure exit when `bad` holds, after calling
 * the runtime's `rt` (which sets the message; its arguments follow the
 * function name and "file.sg:LINE" of `at`). */
void cg_fail_if(Body *B, LLVMValueRef bad, const Inst *at, RtFunc rt, LLVMValueRef *args,
                int nargs);
/* "model.sg:9": where `at` is, for run-time messages (a global string). */
LLVMValueRef cg_where(Body *B, const Inst *at);
/* a // b and a % b on i32 (Python's floor rules); b == 0 fails. */
LLVMValueRef cg_int_divide(Body *B, const Inst *v, LLVMValueRef a, LLVMValueRef b);
/* Around the call of a parallel loop with checks that can fail: clear the
 * chunks' failure records before it, report the first after. */
void cg_par_fail_clear(Body *B, Par *p);
void cg_par_fail_report(Body *B, Par *p);

/* ---- cg_scan.c ---- */
/* cumsum, rcumsum, prod_others (a scan along their axis); concat. */
void cg_emit_scan(Body *B, const Inst *v, LLVMValueRef out);
void cg_emit_concat(Body *B, const Inst *v, LLVMValueRef out);
/* ---- cg_update.c: update and update_add (indexed assignment) ---- */
/* Scratch for the positions of each update by a tensor index, after the
 * temporaries (reserve: total grows; bound once the block exists). */
LLVMValueRef cg_update_reserve(Body *B, LLVMValueRef total);
void cg_update_bind(Body *B, LLVMValueRef base);
/* i into buf: a copy of its old value first unless `in_place` (buf then
 * holds the old value), then the selected positions, checked. */
void cg_emit_update(Body *B, const Inst *i, LLVMValueRef buf, bool in_place);
/* The bytes of the 8-byte part of i's undo log (Slot.log: its starts and
 * positions; Slot.log_old holds its new data's size of old values), and
 * the log undone: the old values written back into buf (i's result). */
LLVMValueRef cg_update_log_head(Body *B, const Inst *i);
void cg_update_undo(Body *B, const Inst *i, LLVMValueRef log, LLVMValueRef old, LLVMValueRef buf);
/* ---- cg_ctor.c ---- */
/* argmax/argmin into out; an empty axis fails (SG_ERR_INDEX). */
void cg_emit_argreduce(Body *B, const Inst *v, LLVMValueRef out);
/* uniform, normal, split into out (runtime/philox.c). */
void cg_emit_random(Body *B, const Inst *v, LLVMValueRef out);
/* ---- cg_debug.c: -g (each does nothing without it) ---- */
void cg_debug_begin(Cg *g, const char *path, bool optimized);
/* fn (just added) is f's code: give it a subprogram and the builder f's line. */
void cg_debug_func(Cg *g, LLVMValueRef fn, const Function *f);
/* The code built next is i's; returns the location it replaces. */
LLVMMetadataRef cg_debug_at(Cg *g, const Inst *i);
void cg_debug_restore(Cg *g, LLVMMetadataRef prev);
void cg_debug_end(Cg *g);    /* the function of cg_debug_func is done */
/* The variable a let or var names, once i is computed (in a register or
 * in memory; nothing for a value without either), and the parameters. */
void cg_debug_value(Body *B, const Inst *i);
void cg_debug_params(Body *B);
void cg_debug_finish(Cg *g); /* before verifying and optimizing the module */

/* ---- cg_alias.c ---- */
/* Around the emission of one flat loop: its loads and stores are noted
 * (load_elem, store_elem) and, at the end, the buffers it stores to are
 * given alias scopes of their own. Nests (a loop in a loop's body). */
void cg_alias_begin(Body *B);
void cg_alias_note(Body *B, LLVMValueRef inst, LLVMValueRef key, bool store);
void cg_alias_end(Body *B);

/* ---- cg_temps.c ---- */
/* Does v need a temporary: is it computed into memory (has_buf) that is not
 * already its own (an argument's or a result's), nor a view or reshape of
 * other memory, nor kept elsewhere by the kernel that computes it (a
 * product summing into another, an update in place, a strategy's internal
 * value)? The workspace layouts (cg_body.c, cg_temp_layout) and the frame
 * plan ask this one question. */
bool cg_needs_temp(Body *B, const Inst *v);
/* Lays out f's temporaries (values with memory that is neither an output
 * nor a view) in one block, sharing space between values not live at once:
 * sets their Slot.temp, offset[id] to each one's byte offset, and returns
 * the block's size in bytes (i64, computed at the builder's position), or
 * NULL if f has no temporaries. */
LLVMValueRef cg_temp_layout(Body *B, int n, LLVMValueRef *offset);
void cg_frame_plan(Body *B);
void cg_frame_bind(Body *B);

/* ---- cg_parallel.c ---- */
/* Whether a loop over n elements runs as a pool's loop (one version
 * either way). A symbolic size: outside loop bodies yes (a small call is
 * one chunk, run directly), in them no. A literal one: from two chunks on,
 * or in a loop body (cg_par_short) from SHORT_TRIP elements (1,000
 * elements are one chunk, run directly by the calling thread). */
bool cg_par_worth(Body *B, LLVMValueRef n);
/* The same as the plan sees it, for a flat loop over t emitted where `at`
 * stands. */
bool cg_par_planned(const Inst *at, const Type *t);
/* cg_par_rows_worth as the plan sees it, for loops over the rows of t. */
bool cg_par_rows_planned(const Inst *at, const Type *t);
/* Whether the inline version of a flat loop is a short one (inside a loop
 * or branch, and not already in a pool's loop): its tail is folded. */
bool cg_par_short(Body *B);
enum { SHORT_TRIP = 128 };
/* Starts the parallel loop: the builder moves to the loop's own function,
 * whose range is [p->begin, p->end). A flat loop over n elements (this and
 * cg_par_begin_chunks): its stores may stream (cg_stream.c). */
void cg_par_begin(Body *B, LLVMValueRef n, Par *p);
/* Chunks a parallel loop has at most, so that a reduction's partials
 * (one per chunk) fit a fixed array. */
enum { CG_PAR_MAX_CHUNKS = 1024 };
/* The same with at most maxchunks chunks (an i64; at most CG_PAR_MAX_CHUNKS). */
void cg_par_begin_chunks(Body *B, LLVMValueRef n, LLVMValueRef maxchunks, Par *p);
/* Ends it: back in the body, which runs the loop on the thread pool. */
void cg_par_end(Body *B, Par *p);
/* v as seen from the code being generated (inside a parallel loop: loaded
 * from the loop's context). Every value of the body a loop uses goes
 * through here. */
LLVMValueRef cg_outer(Body *B, LLVMValueRef v);
/* An alloca at the start of the entry block (so LLVM sees a fixed frame). */
LLVMValueRef cg_alloca_at(Cg *g, LLVMBasicBlockRef entry, LLVMTypeRef t, const char *name);
/* An array of one partial result per chunk (in the body's frame), and the
 * chunk a loop function's range is. */
LLVMValueRef cg_par_partials(Body *B, Par *p, LLVMTypeRef elem);
LLVMValueRef cg_par_partials_n(Body *B, Par *p, LLVMTypeRef elem, int64_t count);
/* cg_par_begin for a loop over n items in blocks of `align` (row groups):
 * chunks of at least `least` items, a multiple of align, at most `most`
 * of them; still a function of n alone. */
void cg_par_begin_blocks(Body *B, LLVMValueRef n, int64_t least, int64_t most, int64_t align, Par *p);
/* Whether a loop nest over `total` elements goes to the pool, in one copy:
 * not inside a pool's loop or a loop body, not when total is a literal
 * under two chunks. With a symbolic size the pool's version runs a small
 * call as one chunk on the calling thread: a nest is large code, and two
 * copies of each (inline and pool) cost the shipped examples 30-45% of
 * their compile time. */
bool cg_par_rows_worth(Body *B, LLVMValueRef total);
/* cg_par_begin for a loop over `rows` rows of `total` elements in all
 * (row reductions): chunks of whole rows, about PAR_CHUNK elements each. */
void cg_par_begin_rows(Body *B, LLVMValueRef rows, LLVMValueRef total, Par *p);
LLVMValueRef cg_par_chunk_index(Body *B, Par *p);

/* ---- cg_abi.c ---- */
void cg_export(Cg *g, Function *f);
/* The symbols f's signature mentions, in order of first appearance. */
int cg_func_syms(Module *m, Function *f, int *out);

/* ---- cg_argcheck.c ---- */
/* The argument checks of f's entry fn as inline code, filling symv;
 * branches to `slow` (sg_rt_check) on any doubt and continues in the
 * builder's block when all hold. false: not done (too many arguments). */
bool cg_argcheck_fast(Cg *g, Function *f, LLVMValueRef fn, const int *syms, int nsyms,
                      LLVMValueRef symv, LLVMBasicBlockRef slow);

/* ---- cg_stream.c ---- */
/* The function attribute of a flat loop's function (cg_parallel.c), whose
 * context's slot 0 is the loop's element count. */
#define CG_STREAM_ATTR "sgc-flat-loop"
/* Bytes an output must have to be streamed: well past a core's caches,
 * so that it would have left them before anyone read it. */
enum { CG_STREAM_MIN = 16 << 20 };
/* After the optimizer at -O2 and up: the vector stores of large flat
 * loops become non-temporal where aligned. */
void cg_stream_stores(LLVMModuleRef mod, LLVMTargetMachineRef tm);

/* ---- cg_split.c ---- */
/* Move pieces of a big function body into noinline functions of their own,
 * so that LLVM's superlinear passes see only small functions. */
void cg_split_function(Cg *g, LLVMValueRef fn);
/* After the optimizer: cut every function's long straight-line blocks,
 * which the code generator's schedulers handle in quadratic time. */
void cg_split_blocks(LLVMModuleRef mod);

#endif
