/* The argument checks of an export's entry, inline (spec section 9).
 *
 * sg_rt_check (runtime/check.c) walks the constant signature table and
 * writes the message of any failure; at W5's size (a 10x20 softmax) that
 * walk was an eighth of the call. So the entry first runs the same checks
 * as straight-line code specialized to the signature: every descriptor
 * non-NULL with non-NULL data, its dtype and rank, each literal dimension,
 * each symbolic one bound at its first use and equal at the others, and
 * no output overlapping another argument. All of them hold: the symbols
 * are stored and the body runs. Any of them fails, or the call is one the
 * fast path leaves to the table (below): the entry calls sg_rt_check, which
 * decides again and writes the spec's message word for word. The fast path
 * accepts a subset of what sg_rt_check accepts, with the same symbol
 * values, so the table stays the one definition of the rules.
 *
 * Byte sizes without overflow checks: every symbolic dimension, at its
 * first use, is in [1, 2^bits), with `bits` chosen (sym_bits) so that no
 * argument's byte size can reach 2^62, sg_rt_check's limit; the other uses
 * of the symbol equal it. Larger dimensions, and empty tensors (a zero
 * dimension: their data may be NULL, and they overlap nothing), take the
 * table's path. So each symbolic dimension costs one compare, sizes are
 * plain products, and the overlap test of two ranges needs no emptiness
 * terms: the entry of a 10x20 softmax's gradient (bench W5) checks its
 * five arguments in about 60 instructions.
 *
 * The overlap test is quadratic in the number of arguments: up to eight
 * of them it runs on vectors (overlaps_vector), up to
 * CG_ARGCHECK_MAX_ARGS pair by pair, and above that the entry calls
 * sg_rt_check directly. */
#include "cg_internal.h"

enum { CG_ARGCHECK_MAX_ARGS = 24 };

/* Field offsets of sg_tensor (runtime/sg_runtime.h): data, shape[8], rank,
 * dtype. */
enum { T_SHAPE = 8, T_RANK = 8 + 8 * IR_MAX_RANK, T_DTYPE = T_RANK + 4 };

/* Bytes are below 2^LIMIT_BITS (sg_rt_check: INT64_MAX / 2). */
enum { LIMIT_BITS = 62 };

static LLVMValueRef field(Cg *g, LLVMValueRef p, int64_t off, LLVMTypeRef ty) {
  LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)off, 0);
  return LLVMBuildLoad2(g->b, ty, LLVMBuildInBoundsGEP2(g->b, g->i8, p, &idx, 1, ""), "");
}

static LLVMValueRef or1(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  return a ? LLVMBuildOr(g->b, a, b, "") : b;
}

static const Type *arg_type(const Function *f, int a) {
  return a >= f->nparams ? &f->results[a - f->nparams]->type : &f->params[a]->type;
}

/* The bit length of v: the least b with v < 2^b. */
static int bit_length(uint64_t v) {
  int b = 0;
  while (b < 64 && v >> b)
    b++;
  return b;
}

/* The bound 2^bits on symbolic dimensions under which every argument's
 * byte size (element size, literal dimensions, symbolic ones) stays below
 * 2^LIMIT_BITS; 0 when some argument leaves no room for symbols, or is
 * always empty (a literal 0), and the table decides every call. */
static int sym_bits(const Function *f, int nargs) {
  int bits = LIMIT_BITS;
  for (int a = 0; a < nargs; a++) {
    const Type *t = arg_type(f, a);
    int used = t->dtype == DT_F64 ? 3 : 2, nsym = 0;
    for (int j = 0; j < t->rank; j++) {
      if (t->dim[j].sym >= 0)
        nsym++;
      else if (t->dim[j].size <= 0)
        return 0;
      else
        used += bit_length((uint64_t)t->dim[j].size);
    }
    if (used >= LIMIT_BITS)
      return 0;
    if (nsym && (LIMIT_BITS - used) / nsym < bits)
      bits = (LIMIT_BITS - used) / nsym;
  }
  return bits;
}

enum { OVERLAP_LANES = 8 };

/* The overlap tests of up to OVERLAP_LANES arguments as vectors: every
 * range's start and end in two vectors, shuffled into the two sides of
 * each pair, OVERLAP_LANES pairs a step; two vector compares and a test of
 * their mask. As one compare per side and pair, the 14 of bench W5's
 * gradient (five arguments) were 84 instructions, with their flags
 * spilled around the other checks' branches: 3.5 of its 111 ns. */
static LLVMValueRef overlaps_vector(Cg *g, const Function *f, int nargs, LLVMValueRef *lo,
                                    LLVMValueRef *hi) {
  LLVMTypeRef vt = LLVMVectorType(g->i64, OVERLAP_LANES);
  LLVMValueRef los = LLVMGetUndef(vt), his = LLVMGetUndef(vt);
  for (int a = 0; a < nargs; a++) {
    LLVMValueRef k = LLVMConstInt(g->i32, (unsigned)a, 0);
    los = LLVMBuildInsertElement(g->b, los, lo[a], k, "");
    his = LLVMBuildInsertElement(g->b, his, hi[a], k, "");
  }
  int pi[OVERLAP_LANES * OVERLAP_LANES], pj[OVERLAP_LANES * OVERLAP_LANES], np = 0;
  for (int i = f->nparams; i < nargs; i++)
    for (int j = 0; j < nargs; j++)
      if (j != i && !(j >= f->nparams && j < i))
        pi[np] = i, pj[np] = j, np++;
  LLVMValueRef any = NULL;
  for (int at = 0; at < np; at += OVERLAP_LANES) {
    LLVMValueRef mi[OVERLAP_LANES], mj[OVERLAP_LANES];
    for (int l = 0; l < OVERLAP_LANES; l++) {
      int p = at + l < np ? at + l : at; /* spare lanes repeat the step's first pair */
      mi[l] = LLVMConstInt(g->i32, (unsigned)pi[p], 0);
      mj[l] = LLVMConstInt(g->i32, (unsigned)pj[p], 0);
    }
    LLVMValueRef si = LLVMConstVector(mi, OVERLAP_LANES), sj = LLVMConstVector(mj, OVERLAP_LANES);
    LLVMValueRef lo_i = LLVMBuildShuffleVector(g->b, los, los, si, "");
    LLVMValueRef hi_i = LLVMBuildShuffleVector(g->b, his, his, si, "");
    LLVMValueRef lo_j = LLVMBuildShuffleVector(g->b, los, los, sj, "");
    LLVMValueRef hi_j = LLVMBuildShuffleVector(g->b, his, his, sj, "");
    LLVMValueRef starts_before_end = LLVMBuildICmp(g->b, LLVMIntULT, lo_i, hi_j, "");
    LLVMValueRef ends_after_start = LLVMBuildICmp(g->b, LLVMIntULT, lo_j, hi_i, "");
    LLVMValueRef meet = LLVMBuildAnd(g->b, starts_before_end, ends_after_start, "");
    LLVMTypeRef mt = LLVMIntTypeInContext(g->ctx, OVERLAP_LANES);
    LLVMValueRef bits = LLVMBuildBitCast(g->b, meet, mt, "");
    any = or1(g, any, LLVMBuildICmp(g->b, LLVMIntNE, bits, LLVMConstInt(mt, 0, 0), ""));
  }
  return any;
}

bool cg_argcheck_fast(Cg *g, Function *f, LLVMValueRef fn, const int *syms, int nsyms,
                      LLVMValueRef symv, LLVMBasicBlockRef slow) {
  int nargs = f->nparams + f->nresults;
  int bits = sym_bits(f, nargs);
  if (nargs > CG_ARGCHECK_MAX_ARGS || bits == 0)
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
  /* 1 <= v < 2^bits as one unsigned compare: v - 1 < 2^bits - 1 */
  LLVMValueRef one = LLVMConstInt(g->i64, 1, 0);
  LLVMValueRef span = LLVMConstInt(g->i64, ((unsigned long long)1 << bits) - 1, 0);
  LLVMValueRef lo[CG_ARGCHECK_MAX_ARGS], hi[CG_ARGCHECK_MAX_ARGS];
  for (int a = 0; a < nargs; a++) {
    const Type *t = arg_type(f, a);
    LLVMValueRef p = LLVMGetParam(fn, (unsigned)a);
    LLVMValueRef data = LLVMBuildLoad2(g->b, g->ptr, p, "");
    bad = or1(g, bad, LLVMBuildIsNull(g->b, data, ""));
    bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntNE, field(g, p, T_RANK, g->i32),
                                    LLVMConstInt(g->i32, (unsigned)t->rank, 0), ""));
    bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntNE, field(g, p, T_DTYPE, g->i32),
                                    LLVMConstInt(g->i32, (unsigned)t->dtype, 0), ""));
    int64_t esize = t->dtype == DT_F64 ? 8 : 4;
    LLVMValueRef n = LLVMConstInt(g->i64, (unsigned long long)esize, 0);
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
        bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntUGE, LLVMBuildSub(g->b, v, one, ""), span, ""));
      } else {
        bad = or1(g, bad, LLVMBuildICmp(g->b, LLVMIntNE, v, symval[s], ""));
      }
      n = LLVMBuildNUWMul(g->b, n, v, "");
    }
    lo[a] = LLVMBuildPtrToInt(g->b, data, g->i64, "");
    hi[a] = LLVMBuildAdd(g->b, lo[a], n, "");
  }
  /* an output overlaps another argument: the ranges meet (each pair once) */
  if (nargs <= OVERLAP_LANES && nargs >= 2 && f->nresults) {
    bad = or1(g, bad, overlaps_vector(g, f, nargs, lo, hi));
  } else {
    for (int i = f->nparams; i < nargs; i++)
      for (int j = 0; j < nargs; j++) {
        if (j == i || (j >= f->nparams && j < i))
          continue;
        bad = or1(g, bad, LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntULT, lo[i], hi[j], ""),
                                       LLVMBuildICmp(g->b, LLVMIntULT, lo[j], hi[i], ""), ""));
      }
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
