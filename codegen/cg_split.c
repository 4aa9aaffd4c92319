/* Splitting big LLVM functions, so that compile time stays linear.
 *
 * LLVM's optimizer and code generator are superlinear in the size of one
 * function (live ranges, scheduling, alias queries over the whole body), so
 * a body of thousands of tensor statements compiled as one function takes
 * minutes. cg_split_function moves consecutive pieces of a big body into
 * functions of their own (`name.part1`, ...), each of about SPLIT_TARGET
 * instructions, marked noinline so that LLVM optimizes and compiles them one
 * at a time. Every function is still optimized at the requested -O level.
 *
 * It works on the LLVM IR, after the body is built, so it needs nothing from
 * the code that built it, only that the body is mostly a sequence of
 * single-entry single-exit pieces (one loop nest per value), which is what
 * cg_func.c emits. A piece [b0, b1) of the blocks in layout order can move
 * when
 *   - the only edges into it go to b0 and the only edges out of it go to
 *     b1, and b0 and b1 start with no phi (a piece may lie inside a loop
 *     body: the loop's edges then pass it by; see control_cuts);
 *   - no value it defines is used outside it (values defined earlier, in
 *     what stays in the caller, become parameters), also not before it:
 *     a loop header's phi reads what the body computed over the back
 *     edge (an unloop's count);
 *   - every alloca of the entry block it uses is used only inside it (the
 *     alloca then moves with it, so mem2reg still promotes it);
 *   - it does not start or end inside a loop of fewer than LOOP_WHOLE
 *     instructions made of small values (frame temporaries, cg_temps.c):
 *     a piece of a loop body is a call per iteration, and the
 *     temporaries its pieces share would reach them through memory
 *     instead of registers.
 * A `ret v` inside a piece returns v from the caller: such a piece returns
 * an i64, 2^32 for "go on" and v otherwise. Pieces whose values escape
 * (the prologue: sizes, temporaries) stay in the caller.
 *
 * Pointer parameters that are the caller's noalias parameters stay
 * noalias; temporaries arrive as plain pointers (the vectorizer's runtime
 * checks separate them, as it does in the unsplit body). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "cg_internal.h"

/* Bodies smaller than this stay whole; pieces are about SPLIT_TARGET. */
enum { SPLIT_MIN = 3000, SPLIT_TARGET = 800, SPLIT_MAX_ARGS = 64 };
/* Loops of small values smaller than this stay whole (control_cuts). */
enum { LOOP_WHOLE = 8000, FRAME_SHARE = 32 };

/* ---- a pointer -> int map over ir/util.h's PtrMap (values stored as
 * v + 3, so that NULL means absent and -2, -1 stay representable) ---- */

static void pm_init(PtrMap *m) { *m = (PtrMap){0}; }

static void pm_free(PtrMap *m) { ptrmap_free(m); }

static void pm_put(PtrMap *m, const void *k, int v) {
  *ptrmap_slot(m, k) = (void *)(intptr_t)(v + 3);
}

static int pm_get(const PtrMap *m, const void *k, int missing) {
  void *v = ptrmap_get(m, k);
  return v ? (int)((intptr_t)v - 3) : missing;
}

/* ---- analysis ---- */

typedef struct Split {
  Cg *g;
  LLVMValueRef fn;
  int nb;
  LLVMBasicBlockRef *bb; /* in layout order */
  int *ninst;            /* instructions per block */
  PtrMap index;          /* block -> its index */
  int *pred_at, *pred;   /* predecessors of block b: pred[pred_at[b]..pred_at[b+1]) */
  LLVMBasicBlockRef last_call; /* the caller's block calling the last piece moved */
  LLVMValueRef frame;    /* the caller's array of values passed through memory */
  PtrMap slot;           /* value -> its index in the frame */
  int nslots;
  int pieces;
} Split;

static int block_of(Split *S, LLVMValueRef inst) {
  return pm_get(&S->index, LLVMGetInstructionParent(inst), -1);
}

static bool starts_with_phi(LLVMBasicBlockRef b) {
  LLVMValueRef i = LLVMGetFirstInstruction(b);
  return i && LLVMIsAPHINode(i);
}

/* Where pieces may start and end, as far as the control flow goes. A piece
 * [c1, c2) may be entered only at c1 and left only to c2, so every edge
 * u -> v must have both ends inside it or both outside, except an edge
 * into c1 or to c2. Each edge gets a random number, added to the signature
 * of the positions ("cut before block p") it spans: u < p < v for a
 * forward edge, v < p <= u for a back edge. A piece is fine when its two
 * ends have the same signature (each edge spans both or neither; loops
 * around a piece inside a loop body span both ends). cut[p]: block p can
 * start a piece at all (no phi). */
static void control_cuts(Split *S, bool *cut, uint64_t *sig) {
  uint64_t *sdiff = xmalloc(sizeof(uint64_t) * (size_t)(S->nb + 2));
  memset(sdiff, 0, sizeof(uint64_t) * (size_t)(S->nb + 2));
  uint64_t rnd = 0x9E3779B97F4A7C15ull;
  for (int u = 0; u < S->nb; u++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(S->bb[u]);
    unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (unsigned k = 0; k < ns; k++) {
      int v = pm_get(&S->index, LLVMGetSuccessor(t, k), -1);
      if (v < 0 || v == u + 1)
        continue;
      rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17; /* xorshift */
      int lo = v > u ? u + 1 : v + 1, hi = v > u ? v - 1 : u;
      if (lo > hi)
        continue;
      sdiff[lo] += rnd;
      sdiff[hi + 1] -= rnd;
    }
  }
  uint64_t srun = 0;
  for (int i = 0; i <= S->nb; i++) {
    srun += sdiff[i];
    sig[i] = srun;
    if (i < S->nb)
      cut[i] = i > 0 && !starts_with_phi(S->bb[i]);
  }
  free(sdiff);
  /* A loop of fewer than LOOP_WHOLE instructions made of small values
   * (one operand in FRAME_SHARE names a frame temporary of cg_temps.c) is
   * not cut inside: a piece of its body would be a call per iteration,
   * and the temporaries its pieces share would reach them through memory
   * instead of living in registers. Other loops are cut as before: a
   * loop of big arrays with a few frame scalars (lstm's: 4 operands in
   * 2,750 instructions, against ba_jacobian's 355 in 3,038) gains
   * nothing, and kept whole it took twice the compile time. A back edge
   * u -> v spans the blocks [v, u]. */
  int *framed_before = xmalloc(sizeof(int) * (size_t)(S->nb + 1)); /* operands naming one, before b */
  framed_before[0] = 0;
  for (int b = 0; b < S->nb; b++) {
    int uses = 0;
    for (LLVMValueRef i = LLVMGetFirstInstruction(S->bb[b]); i; i = LLVMGetNextInstruction(i))
      for (int k = 0; k < LLVMGetNumOperands(i); k++)
        uses += ptrmap_get(&S->g->frame_temps, LLVMGetOperand(i, k)) != NULL;
    framed_before[b + 1] = framed_before[b] + uses;
  }
  long *before = xmalloc(sizeof(long) * (size_t)(S->nb + 1)); /* instructions before block b */
  before[0] = 0;
  for (int b = 0; b < S->nb; b++)
    before[b + 1] = before[b] + S->ninst[b];
  int *no_cut_to = xmalloc(sizeof(int) * (size_t)(S->nb + 1)); /* no cut in (b, no_cut_to[b]] */
  for (int b = 0; b <= S->nb; b++)
    no_cut_to[b] = b;
  for (int u = 0; u < S->nb; u++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(S->bb[u]);
    unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (unsigned k = 0; k < ns; k++) {
      int v = pm_get(&S->index, LLVMGetSuccessor(t, k), -1);
      long size = v >= 0 && v <= u ? before[u + 1] - before[v] : 0;
      if (size > 0 && size < LOOP_WHOLE && no_cut_to[v] < u &&
          FRAME_SHARE * (framed_before[u + 1] - framed_before[v]) >= size)
        no_cut_to[v] = u;
    }
  }
  for (int b = 0, reach = 0; b < S->nb; b++) {
    if (b <= reach && b > 0)
      cut[b] = false;
    if (no_cut_to[b] > reach)
      reach = no_cut_to[b];
  }
  free(no_cut_to);
  free(before);
  free(framed_before);
}

/* Last block using v (-1 if none), and the first one for allocas. */
static int last_use(Split *S, LLVMValueRef v, int *first) {
  int last = -1;
  *first = S->nb;
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    int b = block_of(S, LLVMGetUser(u));
    if (b > last)
      last = b;
    if (b < *first)
      *first = b;
  }
  return last;
}

/* S->pred_at, S->pred: each block's predecessors (with repeats). */
static void predecessors(Split *S) {
  S->pred_at = xmalloc(sizeof(int) * (size_t)(S->nb + 2));
  memset(S->pred_at, 0, sizeof(int) * (size_t)(S->nb + 2));
  for (int pass = 0; pass < 2; pass++) {
    for (int u = 0; u < S->nb; u++) {
      LLVMValueRef t = LLVMGetBasicBlockTerminator(S->bb[u]);
      unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
      for (unsigned k = 0; k < ns; k++) {
        int v = pm_get(&S->index, LLVMGetSuccessor(t, k), -1);
        if (v < 0)
          continue;
        if (pass == 0)
          S->pred_at[v + 2]++;
        else
          S->pred[S->pred_at[v + 1]++] = u;
      }
    }
    if (pass == 0) {
      for (int b = 0; b < S->nb; b++)
        S->pred_at[b + 2] += S->pred_at[b + 1];
      S->pred = xmalloc(sizeof(int) * (size_t)(S->pred_at[S->nb + 1] + 1));
    }
  }
}

/* ---- moving one piece ---- */

/* The value `v` (an operand in the piece) comes from the caller. */
static bool foreign(Split *S, LLVMValueRef v, int b0, int b1) {
  if (LLVMIsAArgument(v))
    return true;
  if (!LLVMIsAInstruction(v))
    return false;
  int b = block_of(S, v);
  return b < b0 || b >= b1;
}

/* Whether a caller value goes through the frame: instructions (not phis)
 * of a type that fits a slot of 8 bytes, and with `args_too` the caller's
 * own parameters as well. */
static bool framed(LLVMValueRef v, bool args_too) {
  if (!(LLVMIsAInstruction(v) || (args_too && LLVMIsAArgument(v))) || LLVMIsAPHINode(v))
    return false;
  LLVMTypeRef t = LLVMTypeOf(v);
  switch (LLVMGetTypeKind(t)) {
  case LLVMPointerTypeKind:
  case LLVMFloatTypeKind:
  case LLVMDoubleTypeKind:
    return true;
  case LLVMIntegerTypeKind:
    return LLVMGetIntTypeWidth(t) <= 64;
  default:
    return false;
  }
}

/* The frame: an array of i64 slots in the caller's entry block, sized when
 * the last piece has moved. */
static LLVMValueRef frame_of(Split *S) {
  if (!S->frame) {
    LLVMBuilderRef b = LLVMCreateBuilderInContext(S->g->ctx);
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(S->fn);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first)
      LLVMPositionBuilderBefore(b, first);
    else
      LLVMPositionBuilderAtEnd(b, entry);
    S->frame = LLVMBuildArrayAlloca(b, S->g->i64, LLVMConstInt(S->g->i32, 1, 0), "frame");
    LLVMSetAlignment(S->frame, 8);
    LLVMDisposeBuilder(b);
    pm_init(&S->slot);
  }
  return S->frame;
}

/* v's slot in the frame; the first time, v is stored there right after
 * its definition. */
static int frame_slot(Split *S, LLVMValueRef v) {
  frame_of(S);
  int k = pm_get(&S->slot, v, -1);
  if (k >= 0)
    return k;
  k = S->nslots++;
  pm_put(&S->slot, v, k);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(S->g->ctx);
  /* a parameter of the caller: right after the frame itself */
  LLVMPositionBuilderBefore(b, LLVMGetNextInstruction(LLVMIsAArgument(v) ? S->frame : v));
  LLVMValueRef at = LLVMConstInt(S->g->i64, 8ull * (unsigned)k, 0);
  /* Volatile: thousands of stores to consecutive slots would otherwise
   * seed the SLP vectorizer and dead-store elimination, both superlinear
   * in the length of a block; the store itself costs the same. */
  LLVMTypeRef i8 = LLVMInt8TypeInContext(S->g->ctx);
  LLVMSetVolatile(LLVMBuildStore(b, v, LLVMBuildInBoundsGEP2(b, i8, S->frame, &at, 1, "")), 1);
  LLVMDisposeBuilder(b);
  return k;
}

/* Whether v is an address at constant offsets from another value
 * (`getelementptr inbounds i8, ptr %temps, i64 4096`: a temporary in the
 * workspace), or a load marked CG_MD_FIXED from such an address. A piece
 * rebuilds such values from their base instead of receiving each one: a body with 20,000 temporaries would otherwise pass
 * 20,000 pointers through the frame, and the caller's 20,000 stores to one
 * alloca make LLVM's InstCombine quadratic. */
static bool rebuildable(LLVMValueRef v) {
  /* a load from memory that does not change during the call (a wide
   * signature's descriptors, cg_func.c arg_data), from such an address */
  if (LLVMIsALoadInst(v))
    return LLVMGetMetadata(v, cg_md_kind(LLVMGetTypeContext(LLVMTypeOf(v)), CG_MD_FIXED)) != NULL;
  if (!LLVMIsAGetElementPtrInst(v))
    return false;
  int n = LLVMGetNumOperands(v);
  for (int k = 1; k < n; k++)
    if (!LLVMIsAConstantInt(LLVMGetOperand(v, (unsigned)k)))
      return false;
  return true;
}

/* The caller values a piece reads, in an order where a rebuilt address
 * comes after its base; base[k] is the index of from[k]'s base, or -1 when
 * from[k] is passed (as an argument or through the frame). */
typedef struct Inputs {
  LLVMValueRef *from;
  int *base;
  int n, cap;
  LLVMValueRef *allocas; /* entry allocas used only in the piece: they move */
  int nalloca, acap;
} Inputs;

static void take_input(Split *S, PtrMap *param, Inputs *in, LLVMValueRef v, int b0, int b1) {
  if (!v || LLVMValueIsBasicBlock(v) || !foreign(S, v, b0, b1) || pm_get(param, v, -1) != -1)
    return;
  int first, last = LLVMIsAAllocaInst(v) ? last_use(S, v, &first) : S->nb;
  if (LLVMIsAAllocaInst(v) && first >= b0 && last < b1) {
    if (in->nalloca == in->acap)
      in->allocas = xrealloc(in->allocas, sizeof *in->allocas * (size_t)(in->acap = in->acap ? 2 * in->acap : 8));
    in->allocas[in->nalloca++] = v;
    pm_put(param, v, -2);
    return;
  }
  int b = -1;
  if (rebuildable(v)) {
    LLVMValueRef root = LLVMGetOperand(v, 0);
    take_input(S, param, in, root, b0, b1);
    b = pm_get(param, root, -1);
    if (b < 0) /* a constant base, or an alloca that moves: never here */
      b = -1;
  }
  if (in->n == in->cap) {
    in->cap = in->cap ? 2 * in->cap : 16;
    in->from = xrealloc(in->from, sizeof *in->from * (size_t)in->cap);
    in->base = xrealloc(in->base, sizeof *in->base * (size_t)in->cap);
  }
  pm_put(param, v, in->n);
  in->base[in->n] = b;
  in->from[in->n++] = v;
}

/* A call of llvm.dbg.value (cg_debug.c's variables). */
static bool is_dbg_call(LLVMValueRef i) {
  if (!LLVMIsACallInst(i))
    return false;
  LLVMValueRef callee = LLVMGetCalledValue(i);
  size_t len;
  const char *name = callee ? LLVMGetValueName2(callee, &len) : NULL;
  return name && strncmp(name, "llvm.dbg.", 9) == 0;
}

static void outline(Split *S, int b0, int b1) {
  Cg *g = S->g;
  /* The caller's values the piece reads, in order of first use; entry
   * allocas used only here move instead. */
  PtrMap param;
  pm_init(&param);
  Inputs in = {0};
  bool has_ret = false;
  for (int b = b0; b < b1; b++)
    for (LLVMValueRef i = LLVMGetFirstInstruction(S->bb[b]); i; i = LLVMGetNextInstruction(i)) {
      if (LLVMGetInstructionOpcode(i) == LLVMRet)
        has_ret = true;
      int nops = LLVMGetNumOperands(i);
      for (int k = 0; k < nops; k++)
        take_input(S, &param, &in, LLVMGetOperand(i, (unsigned)k), b0, b1);
    }
  LLVMValueRef *from = in.from, *allocas = in.allocas;
  int nfrom = in.n, nalloca = in.nalloca;

  /* The new function: the caller's parameters (and anything that cannot
   * go through memory) are passed as they are, so that noalias carries
   * over; the caller's other values (temporaries' addresses, sizes) go
   * through the frame, one slot each, stored once where they are defined.
   * Passing them as arguments would keep hundreds of values live across
   * every call in the caller, which the register allocator pays for. */
  LLVMValueRef *args = xmalloc(sizeof(LLVMValueRef) * (size_t)(nfrom + 1));
  LLVMTypeRef *pt = xmalloc(sizeof(LLVMTypeRef) * (size_t)(nfrom + 1));
  int nargs = 0, nframed = 0;
  /* A call with thousands of arguments (an export with thousands of
   * parameters) is one scheduling region in the code generator, which is
   * quadratic in it: past SPLIT_MAX_ARGS, the caller's parameters go
   * through the frame too, giving up their noalias. */
  int direct = 0;
  for (int k = 0; k < nfrom; k++)
    direct += in.base[k] < 0 && !framed(from[k], false);
  bool args_too = direct > SPLIT_MAX_ARGS;
  for (int k = 0; k < nfrom; k++) {
    if (in.base[k] >= 0)
      continue;
    if (framed(from[k], args_too)) {
      nframed++;
      continue;
    }
    pm_put(&param, from[k], nargs);
    pt[nargs] = LLVMTypeOf(from[k]);
    args[nargs++] = from[k];
  }
  if (nframed) {
    pt[nargs] = g->ptr;
    args[nargs] = frame_of(S);
  }
  LLVMTypeRef ret = has_ret ? g->i64 : g->vd;
  size_t len;
  const char *caller = LLVMGetValueName2(S->fn, &len);
  char name[256];
  snprintf(name, sizeof name, "%.*s.part%d", (int)(len < 200 ? len : 200), caller, ++S->pieces);
  LLVMValueRef fn = LLVMAddFunction(g->mod, name,
                                    LLVMFunctionType(ret, pt, (unsigned)(nargs + (nframed > 0)), 0));
  free(pt);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, noinline, 0));
  for (int k = 0; k < nargs; k++) {
    LLVMValueRef v = args[k];
    if (LLVMIsAArgument(v) && LLVMGetParamParent(v) == S->fn) {
      unsigned idx = 0;
      for (LLVMValueRef p = LLVMGetFirstParam(S->fn); p != v; p = LLVMGetNextParam(p))
        idx++;
      if (LLVMGetEnumAttributeAtIndex(S->fn, idx + 1, noalias))
        LLVMAddAttributeAtIndex(fn, (unsigned)k + 1, LLVMCreateEnumAttribute(g->ctx, noalias, 0));
    }
  }
  if (nframed)
    LLVMAddAttributeAtIndex(fn, (unsigned)nargs + 1, LLVMCreateEnumAttribute(g->ctx, noalias, 0));

  /* Move the blocks, then the allocas into the new entry block. */
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
  LLVMBasicBlockRef after = entry;
  for (int b = b0; b < b1; b++) {
    LLVMMoveBasicBlockAfter(S->bb[b], after);
    after = S->bb[b];
  }
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(g->ctx);
  LLVMPositionBuilderAtEnd(eb, entry);
  for (int k = 0; k < nalloca; k++) {
    LLVMInstructionRemoveFromParent(allocas[k]);
    LLVMInsertIntoBuilder(eb, allocas[k]);
  }
  /* What replaces each caller value inside: a parameter or a load. */
  LLVMValueRef *repl = xmalloc(sizeof(LLVMValueRef) * (size_t)(nfrom + 1));
  for (int k = 0; k < nfrom; k++) {
    LLVMValueRef v = from[k];
    int p = pm_get(&param, v, -1);
    if (in.base[k] >= 0 && LLVMIsALoadInst(v)) {
      repl[k] = LLVMBuildLoad2(eb, LLVMTypeOf(v), repl[in.base[k]], "");
      unsigned kind = cg_md_kind(g->ctx, CG_MD_FIXED);
      LLVMSetMetadata(repl[k], kind, LLVMGetMetadata(v, kind));
      continue;
    }
    if (in.base[k] >= 0) {
      int n = LLVMGetNumOperands(v);
      LLVMValueRef idx[8];
      if (n - 1 > 8)
        die("cg_split: a constant address with %d indices", n - 1);
      for (int j = 1; j < n; j++)
        idx[j - 1] = LLVMGetOperand(v, (unsigned)j);
      LLVMTypeRef et = LLVMGetGEPSourceElementType(v);
      LLVMValueRef root = repl[in.base[k]];
      repl[k] = LLVMIsInBounds(v) ? LLVMBuildInBoundsGEP2(eb, et, root, idx, (unsigned)(n - 1), "")
                                  : LLVMBuildGEP2(eb, et, root, idx, (unsigned)(n - 1), "");
      continue;
    }
    if (!framed(v, args_too)) {
      repl[k] = LLVMGetParam(fn, (unsigned)p);
      continue;
    }
    LLVMValueRef at = LLVMConstInt(g->i64, 8ull * (unsigned)frame_slot(S, v), 0);
    LLVMValueRef addr = LLVMBuildInBoundsGEP2(eb, LLVMInt8TypeInContext(g->ctx),
                                              LLVMGetParam(fn, (unsigned)nargs), &at, 1, "");
    repl[k] = LLVMBuildLoad2(eb, LLVMTypeOf(v), addr, "");
  }
  for (int k = 0; k < nfrom; k++)
    pm_put(&param, from[k], k);
  LLVMBuildBr(eb, S->bb[b0]);

  /* Inside: caller values become parameters, the exit returns, and debug
   * locations and variables go (they name the caller's subprogram). */
  LLVMBasicBlockRef next = b1 < S->nb ? S->bb[b1] : NULL, out = NULL;
  bool debug = LLVMGetSubprogram(S->fn) != NULL;
  LLVMValueRef go_on = LLVMConstInt(g->i64, 1ull << 32, 0);
  for (int b = b0; b < b1; b++) {
    for (LLVMValueRef i = LLVMGetFirstInstruction(S->bb[b]); i;) {
      LLVMValueRef nexti = LLVMGetNextInstruction(i);
      if (debug && is_dbg_call(i)) {
        LLVMInstructionEraseFromParent(i);
        i = nexti;
        continue;
      }
      if (debug)
        LLVMInstructionSetDebugLoc(i, NULL);
      int nops = LLVMGetNumOperands(i);
      for (int k = 0; k < nops; k++) {
        LLVMValueRef v = LLVMGetOperand(i, (unsigned)k);
        int p = v && !LLVMValueIsBasicBlock(v) ? pm_get(&param, v, -1) : -1;
        if (p >= 0)
          LLVMSetOperand(i, (unsigned)k, repl[p]);
      }
      if (LLVMGetInstructionOpcode(i) == LLVMRet) { /* ret v: v as an i64 */
        LLVMPositionBuilderBefore(eb, i);
        LLVMValueRef r = LLVMGetNumOperands(i) ? LLVMGetOperand(i, 0) : NULL;
        LLVMBuildRet(eb, r ? LLVMBuildZExt(eb, r, g->i64, "") : LLVMConstInt(g->i64, 0, 0));
        LLVMInstructionEraseFromParent(i);
      } else if (LLVMIsATerminatorInst(i)) {
        unsigned ns = LLVMGetNumSuccessors(i);
        for (unsigned k = 0; k < ns; k++)
          if (LLVMGetSuccessor(i, k) == next) {
            if (!out) {
              out = LLVMAppendBasicBlockInContext(g->ctx, fn, "exit");
              LLVMPositionBuilderAtEnd(eb, out);
              if (has_ret)
                LLVMBuildRet(eb, go_on);
              else
                LLVMBuildRetVoid(eb);
            }
            LLVMSetSuccessor(i, k, out);
          }
      }
      i = nexti;
    }
  }

  /* The caller: the edges into b0 now go to a block that calls the piece
   * and goes on to b1 (or returns what the piece's ret returned). */
  LLVMBasicBlockRef call = LLVMAppendBasicBlockInContext(g->ctx, S->fn, "call");
  for (int k = S->pred_at[b0]; k <= S->pred_at[b0 + 1]; k++) {
    LLVMBasicBlockRef u = k < S->pred_at[b0 + 1] ? S->bb[S->pred[k]] : S->last_call;
    if (!u || LLVMGetBasicBlockParent(u) != S->fn)
      continue; /* moved with an earlier piece, whose call block comes next */
    LLVMValueRef t = LLVMGetBasicBlockTerminator(u);
    unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (unsigned j = 0; j < ns; j++)
      if (LLVMGetSuccessor(t, j) == S->bb[b0])
        LLVMSetSuccessor(t, j, call);
  }
  S->last_call = call;
  LLVMPositionBuilderAtEnd(eb, call);
  LLVMValueRef r = LLVMBuildCall2(eb, LLVMGlobalGetValueType(fn), fn, args, (unsigned)(nargs + (nframed > 0)), "");
  LLVMTypeRef fret = LLVMGetReturnType(LLVMGlobalGetValueType(S->fn));
  LLVMValueRef retv = has_ret && LLVMGetTypeKind(fret) != LLVMVoidTypeKind ? LLVMBuildTrunc(eb, r, fret, "") : NULL;
  if (!next) {
    if (retv)
      LLVMBuildRet(eb, retv);
    else
      LLVMBuildRetVoid(eb);
  } else if (has_ret && out) {
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, S->fn, "returned");
    LLVMBuildCondBr(eb, LLVMBuildICmp(eb, LLVMIntEQ, r, go_on, ""), next, done);
    LLVMPositionBuilderAtEnd(eb, done);
    if (retv)
      LLVMBuildRet(eb, retv);
    else
      LLVMBuildRetVoid(eb);
  } else if (has_ret) { /* every path returns */
    if (retv)
      LLVMBuildRet(eb, retv);
    else
      LLVMBuildRetVoid(eb);
  } else {
    LLVMBuildBr(eb, next);
  }
  LLVMDisposeBuilder(eb);
  pm_free(&param);
  free(from);
  free(in.base);
  free(args);
  free(repl);
  free(allocas);
}

void cg_split_function(Cg *g, LLVMValueRef fn) {
  LLVMTypeRef fret = LLVMGetReturnType(LLVMGlobalGetValueType(fn));
  LLVMTypeKind rk = LLVMGetTypeKind(fret);
  if (rk != LLVMVoidTypeKind && !(rk == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(fret) <= 32))
    return;
  Split S = {g, fn, (int)LLVMCountBasicBlocks(fn), NULL, NULL, {0}, NULL, NULL, NULL, NULL, {0}, 0, 0};
  if (S.nb < 2)
    return;
  S.bb = xmalloc(sizeof *S.bb * (size_t)S.nb);
  S.ninst = xmalloc(sizeof(int) * (size_t)S.nb);
  LLVMGetBasicBlocks(fn, S.bb);
  pm_init(&S.index);
  long total = 0;
  for (int b = 0; b < S.nb; b++) {
    pm_put(&S.index, S.bb[b], b);
    S.ninst[b] = 0;
    for (LLVMValueRef i = LLVMGetFirstInstruction(S.bb[b]); i; i = LLVMGetNextInstruction(i))
      S.ninst[b]++;
    total += S.ninst[b];
  }
  if (total < SPLIT_MIN)
    goto out;
  predecessors(&S);

  /* reach[b]: the last block using a value defined in block b (allocas
   * count at their first user), so a piece starting at or before b must
   * extend past reach[b]. */
  bool *cut = xmalloc(sizeof(bool) * (size_t)(S.nb + 1));
  uint64_t *sig = xmalloc(sizeof(uint64_t) * (size_t)(S.nb + 1));
  int *reach = xmalloc(sizeof(int) * (size_t)S.nb);
  control_cuts(&S, cut, sig);
  cut[S.nb] = true;
  /* back[b]: the first block using a value defined in block b, when that
   * is before b (a loop header's phi reading the count or state the body
   * computed, over the back edge): a piece starting after it cannot hold
   * block b. */
  int *back = xmalloc(sizeof(int) * (size_t)S.nb);
  for (int b = 0; b < S.nb; b++)
    reach[b] = back[b] = b;
  for (int b = 0; b < S.nb; b++)
    for (LLVMValueRef i = LLVMGetFirstInstruction(S.bb[b]); i; i = LLVMGetNextInstruction(i)) {
      int first, last = last_use(&S, i, &first);
      bool alloca = LLVMIsAAllocaInst(i);
      int def = alloca && first < S.nb ? first : b;
      if (last > reach[def])
        reach[def] = last;
      if (!alloca && first < back[b])
        back[b] = first;
    }

  /* Greedy, left to right: a piece starts at a cut, grows to at least
   * SPLIT_TARGET instructions, and ends at the first cut past everything
   * its values reach. A start whose values reach too far (the prologue:
   * sizes, temporaries used to the end) stays in the caller. Pieces are recorded first and moved afterwards,
   * since moving renumbers nothing we still need. */
  int *starts = xmalloc(sizeof(int) * (size_t)(S.nb + 1));
  int *ends = xmalloc(sizeof(int) * (size_t)(S.nb + 1));
  int npieces = 0;
  int b = 1;
  while (b < S.nb) {
    if (!cut[b]) {
      b++;
      continue;
    }
    int end = b, far = b, size = 0;
    bool ok = false;
    while (end < S.nb && size <= 2 * SPLIT_TARGET && back[end] >= b) {
      if (reach[end] > far)
        far = reach[end];
      size += S.ninst[end];
      end++;
      if (far < end && cut[end] && sig[end] == sig[b] && (size >= SPLIT_TARGET || end == S.nb)) {
        ok = true;
        break;
      }
    }
    if (!ok) { /* this block stays in the caller */
      b++;
      continue;
    }
    starts[npieces] = b;
    ends[npieces++] = end;
    b = end;
  }
  if (getenv("SG_SPLIT_DEBUG")) {
    fprintf(stderr, "split %s: %ld insts %d blocks, %d pieces:", LLVMGetValueName(fn), total, S.nb, npieces);
    for (int k = 0; k < npieces; k++)
      fprintf(stderr, " [%d,%d)", starts[k], ends[k]);
    fprintf(stderr, "\n");
  }
  /* One piece that is nearly the whole body gains nothing. */
  if (npieces > 1 || (npieces == 1 && 2 * (ends[0] - starts[0]) < S.nb))
    for (int k = 0; k < npieces; k++)
      outline(&S, starts[k], ends[k]);
  if (S.frame) {
    LLVMSetOperand(S.frame, 0, LLVMConstInt(g->i32, (unsigned long long)S.nslots, 0));
    pm_free(&S.slot);
  }
  free(starts);
  free(ends);
  free(cut);
  free(sig);
  free(reach);
  free(back);
out:
  pm_free(&S.index);
  free(S.pred_at);
  free(S.pred);
  free(S.bb);
  free(S.ninst);
}

/* The code generator's instruction schedulers are quadratic in the length
 * of a scheduling region, which is a basic block. Straight-line code in the
 * thousands of instructions (a prologue computing the addresses of
 * thousands of temporaries) is therefore cut, after the optimizer, into
 * blocks of at most BLOCK_MAX instructions joined by branches. The blocks'
 * addresses are taken so that CodeGenPrepare does not merge them back; the
 * branches are free fallthroughs. */
enum { BLOCK_MAX = 400 };

/* The phis of `succ` name `from` as an incoming block; make that `to`. The
 * C API cannot set an incoming block, so each such phi is rebuilt. */
static void rename_incoming(LLVMBuilderRef b, LLVMBasicBlockRef succ, LLVMBasicBlockRef from,
                            LLVMBasicBlockRef to) {
  for (LLVMValueRef phi = LLVMGetFirstInstruction(succ); phi && LLVMIsAPHINode(phi);) {
    LLVMValueRef next = LLVMGetNextInstruction(phi);
    unsigned n = LLVMCountIncoming(phi);
    bool names = false;
    for (unsigned k = 0; k < n; k++)
      names |= LLVMGetIncomingBlock(phi, k) == from;
    if (names) {
      LLVMPositionBuilderBefore(b, phi);
      LLVMValueRef np = LLVMBuildPhi(b, LLVMTypeOf(phi), "");
      for (unsigned k = 0; k < n; k++) {
        LLVMValueRef v = LLVMGetIncomingValue(phi, k);
        LLVMBasicBlockRef in = LLVMGetIncomingBlock(phi, k);
        if (in == from)
          in = to;
        LLVMAddIncoming(np, &v, &in, 1);
      }
      LLVMReplaceAllUsesWith(phi, np);
      LLVMInstructionEraseFromParent(phi);
    }
    phi = next;
  }
}

static void split_blocks(LLVMContextRef ctx, LLVMValueRef fn) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMValueRef *cuts = NULL;
  int cap = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    int n = 0;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
      n++;
    if (n <= BLOCK_MAX + BLOCK_MAX / 4)
      continue;
    /* Cut after every BLOCK_MAX-th instruction that leaves more than a
     * quarter block behind it. */
    int ncut = 0, k = 0;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i), k++) {
      if ((k + 1) % BLOCK_MAX || n - k - 1 <= BLOCK_MAX / 4 || LLVMIsAPHINode(i) ||
          LLVMIsAAllocaInst(i) || LLVMIsATerminatorInst(i))
        continue;
      if (ncut == cap)
        cuts = xrealloc(cuts, sizeof *cuts * (size_t)(cap = cap ? 2 * cap : 16));
      cuts[ncut++] = i;
    }
    if (!ncut)
      continue;
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
    /* From the last cut back, so that every instruction moves once: what
     * follows a cut (the next piece's branch included) goes to a new block
     * placed right after bb. */
    LLVMBasicBlockRef last = NULL;
    for (int c = ncut - 1; c >= 0; c--) {
      LLVMBasicBlockRef after = LLVMGetNextBasicBlock(bb);
      LLVMBasicBlockRef rest = after ? LLVMInsertBasicBlockInContext(ctx, after, "cont")
                                     : LLVMAppendBasicBlockInContext(ctx, fn, "cont");
      if (!last)
        last = rest;
      LLVMPositionBuilderAtEnd(b, rest);
      for (LLVMValueRef i = LLVMGetNextInstruction(cuts[c]); i;) {
        LLVMValueRef next = LLVMGetNextInstruction(i);
        LLVMInstructionRemoveFromParent(i);
        LLVMInsertIntoBuilder(b, i);
        i = next;
      }
      LLVMPositionBuilderAtEnd(b, bb);
      LLVMBuildBr(b, rest);
      (void)LLVMBlockAddress(fn, rest);
    }
    for (unsigned s = 0; t && s < LLVMGetNumSuccessors(t); s++)
      rename_incoming(b, LLVMGetSuccessor(t, s), bb, last);
  }
  free(cuts);
  LLVMDisposeBuilder(b);
}

void cg_split_blocks(LLVMModuleRef mod) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn))
      split_blocks(ctx, fn);
}
