/* Code generation: IR -> LLVM IR -> object file, assembly or a C header.
 *
 * The module and its output:
 *   cg.c           the LLVM module, target machine, output
 *   cg_opt.c       LLVM's pass pipeline, on two threads for big modules
 *   cg_stream.c    streaming stores, after the optimizer
 *   cg_elf.c       the two halves' objects made one
 *   cg_split.c     big bodies cut into functions LLVM optimizes one at a time
 *                  (small loops kept whole)
 *   cg_debug.c     -g: DWARF line information
 *   cg_header.c    the C header for --header
 * An export's entry point:
 *   cg_abi.c       the C entry point: argument checks, the call of the body
 *   cg_argcheck.c  the argument checks inline
 * A function body (docs/internals.md, "The kernel plan"):
 *   cg_body.c      the frame: the plan, the temporaries' block, the results
 *   cg_memory.c    which values get memory of their own
 *   cg_plan.c      the kernel plan: the table of strategies over every block
 *   cg_temps.c     where temporaries live: the workspace block (liveness),
 *                  or the frame (small ones of loop bodies)
 *   cg_func.c      emitting the kernels in order; views and values alone
 * The strategies of the plan, in the table's order:
 *   cg_region.c    loops and branches, their state buffers and tapes
 *   cg_inplace.c   indexed updates in place
 *   cg_rows.c      row groups, formed and planned (cg_rows_blocks.c: run in
 *                  blocks of rows; cg_rows_wide.c: row by row; cg_rows.h)
 *   cg_online.c    online groups: a max and the sums it shifts, one pass
 *   cg_batch.c     batch groups: small products over a batch, one element at a time
 *   cg_groups.c    loop groups over one flat space
 *   cg_gemvpair.c  a matrix-vector product and its adjoint inside a group
 *   cg_nest.c      nest groups: values needing loop nests over one space
 * What kernels emit with:
 *   cg_elem.c      one element of each elementwise op (a switch over ops.def)
 *   cg_math.c      exp, log, tanh... as plain arithmetic the vectorizer handles
 *                  (cg_math_trig.c: tan, the inverse and hyperbolic functions,
 *                  erf; cg_math_gamma.c: lgamma and the polygammas)
 *   cg_mathcall.c  the same as calls, for bodies with very many
 *   cg_minmax.c    max and min accumulators (integer keys)
 *   cg_reduce.c    a reduction with a loop of its own (a sum over leading
 *                  axes with short rows: by periods of 16 rows)
 *   cg_scan.c      cumsum, rcumsum, prod_others and concat along one axis
 *   cg_update.c    update and update_add (indexed assignment)
 *   cg_matmul.c    matrix products: calls to the runtime's GEMM, small
 *                  matrix-vector products by rows in lanes (a small pair's
 *                  blocks too), small literal ones written out
 *   cg_ctor.c      argmax/argmin, random numbers
 *   cg_data.c      operations that can fail (division, indexing); gathers by
 *                  known positions
 *   cg_parallel.c  loops moved to the thread pool
 *   cg_alias.c     alias scopes for a loop's buffers
 *   cg_rt.c        the runtime's functions, declared from runtime/rt_functions.def
 * Headers:
 *   cg.h           this file: what the driver and the library call
 *   cg_internal.h  what the files above share, a banner per file
 *   cg_math.h      the emitters of cg_math*.c (cg_math_internal.h: their
 *                  shared helpers)
 *   cg_rows.h      what cg_rows.c shares with cg_rows_blocks.c and cg_rows_wide.c */
#ifndef SGC_CG_H
#define SGC_CG_H

#include <stdbool.h>
#include <stdio.h>

#include <llvm-c/TargetMachine.h>

#include "../ir/ir.h"

typedef struct CgOptions {
  int opt_level;          /* 0..3 */
  const char *cpu;        /* NULL or "native": the host; "generic": portable */
  bool emit_asm;          /* assembly instead of an object */
  bool emit_llvm;         /* LLVM IR (text) instead of an object */
  bool verify;            /* run LLVM's verifier on the module */
  bool debug;             /* -g: DWARF line information (cg_debug.c) */
  long long ad_memory;    /* --ad-memory: bytes of saved loop state per call; 0: a full tape */
} CgOptions;

/* Emit every exported function of m: the object (assembly, LLVM IR) in
 * *data (malloc'd, the caller frees it), *len bytes. Returns 0, or 1 after
 * printing "sgc: ...error: ..." with *data NULL. */
int cg_emit(Module *m, const char *module_name, const CgOptions *o, char **data, size_t *len);

/* --emit-plan: the kernel plan of every export of m (codegen/cg_plan.c),
 * one kernel per line; the caller checks out for write errors. */
void cg_print_plans(Module *m, long long ad_memory, FILE *out);

/* LLVM's native target, registered once for the process (any thread may
 * call this; cg_emit does). */
void cg_init_target(void);

/* Whether --target-cpu=cpu names a CPU sgc can generate code for. */
bool cg_cpu_known(const char *cpu);

/* LLVM options for a process that only compiles (the sgc command), set
 * once, before the first compile: Loop Strength Reduction off. */
void cg_command_options(void);

/* Write a C header declaring every export of m, with its shapes in a
 * comment, and the bytes each loop its gradient reverses saves per
 * iteration (whole values in the snapshots of --ad-memory=ad_memory when it
 * is not 0). Returns 0 or 1 on a write error. */
int cg_write_header(Module *m, FILE *out, const char *guard, long long ad_memory);

/* The tape of a loop AD reverses (cg_region.c, cg_update.c): when the body
 * yields for carried value k a chain of update / update_add ops of its own
 * block argument, the number of them (their undo logs are recorded instead
 * of the value), listed in links (if not NULL) in the order they run; else
 * 0 (the whole value is recorded). */
int cg_tape_links(const Inst *loop, int k, const Inst **links);

/* The include guard for a header written to path: "model.h" -> "MODEL_H"
 * (malloc'ed). */
char *cg_header_guard(const char *path);

#endif
