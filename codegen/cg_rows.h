/* cg_rows.h: what cg_rows.c (row groups: forming and planning them)
 * shares with cg_rows_blocks.c (running them in blocks of rows) and
 * cg_rows_wide.c (running them row by row). Private to those three files. */
#ifndef CG_ROWS_H
#define CG_ROWS_H

#include "cg_internal.h"

/* ROWS_KMAX_MEM: the widest k for a group that reads or writes [n, k]
 * memory: lanes over rows read it with a stride of k (gathers), which
 * beats a loop of its own per row only for narrow rows (measured: a
 * softmax cross-entropy over memory, 1M rows, 5% faster at k = 10, 15%
 * and 40% slower at k = 16 and 32). */
enum { ROWS_BLOCK = 64, ROWS_KMAX = 32, ROWS_KMAX_MEM = 12, ROWS_MAX_MEMBERS = 32 };

/* ROWS_WIDE: the narrowest k a group runs row by row (cg_rows_wide.c).
 * Each row's loops and reductions cost a few dozen cycles of their own;
 * softmax cross-entropy's gradient over 256,000 elements against the
 * members' own loops, one thread and two: k = 64, 1.6x slower and 1.4x
 * faster; k = 128, the same and 1.9x faster; k = 1000, 1.2x and 2.1x
 * faster (own loops do not gain from a second thread: each member's rows
 * go to whichever thread takes them, away from its operands' cache). */
enum { ROWS_WIDE = 128 };

/* On the pool (bench W6: 1M rows): chunks of whole blocks, at least
 * ROWS_PAR_LEAST rows, at most ROWS_PAR_CHUNKS of them, so that a column
 * sum's partials (ROWS_KMAX per chunk) stay small on the stack. */
enum { ROWS_PAR_LEAST = 2048, ROWS_PAR_CHUNKS = 64 };

/* Member kinds: over [n, k], computed in a pass's loop over columns and
 * rows -- ELEM (elementwise), ROWRED (along axis 1, into [n]), FULLRED
 * (over both axes), COLRED (along axis 0, into [k]); over [n], computed
 * in the pass's loop over rows after that -- ROWELEM (elementwise),
 * ROWFULL (a reduction of an [n] value); VIEW (a reshape of a member or
 * of anything: its operand's bytes). */
enum { RK_NONE, RK_ELEM, RK_ROWRED, RK_FULLRED, RK_COLRED, RK_ROWELEM, RK_ROWFULL, RK_VIEW };

static inline bool per_row(int kind) { return kind == RK_ROWELEM || kind == RK_ROWFULL; }

typedef struct Rows {
  Inst **mem; /* the members, in order (views left out) */
  LLVMValueRef *acc;
  LLVMValueRef *col; /* COLRED: where the column sums accumulate */
  LLVMValueRef *base;      /* a member's block scratch (NULL: none) */
  LLVMValueRef (*half)[2]; /* with lag: its current and previous block's halves */
  const Type *space;
  int nmem, npass;
  bool lag; /* the last pass runs a block behind (cg_rows_blocks.c emit_blocks) */
} Rows;

/* After a run on the pool: each sum's (and column sum's) partials, one per
 * chunk, added in chunk order into its memory. */
void rows_add_partials(Body *B, Rows *R, LLVMValueRef *part, LLVMValueRef nchunks);
void rows_emit_blocks(Body *B, Rows *R, bool pooled); /* cg_rows_blocks.c */

/* Can the group run row by row (no column sum)? Then emit it so. */
bool rows_wide_ok(Body *B, const Rows *R);
void rows_emit_wide(Body *B, Rows *R);

#endif
