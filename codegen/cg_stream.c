/* Streaming stores. A store to a line that is not in the cache first
 * reads the line (write-allocate), so a loop that reads two arrays of
 * tens of MB and writes a third moves four arrays' worth of memory, not
 * three. An expert writes such an output with non-temporal stores, which
 * go to memory whole lines at a time without that read (bench W3's
 * gradient: 9.8 -> 8.9 ms).
 *
 * After LLVM's pipeline at -O2 and up, on x86-64, in every flat loop's
 * function (marked CG_STREAM_ATTR by cg_parallel.c; slot 0 of its context
 * is the loop's element count n), each vector store of 16 bytes or more
 * that does not go to the stack -- the vectorized loop's -- in a block of
 * at most STREAM_MAX_INSTS instructions per such store becomes
 *
 *   if (address aligned to the vector && n elements >= CG_STREAM_MIN bytes)
 *     non-temporal store (a line, or part of one that the next stores fill)
 *   else
 *     the store as it was
 *
 * through an always-inline helper that LLVM's inliner expands right after
 * (giving its stores the call's alias scopes). The test is per store: a
 * vector store is what LLVM makes of the scalar loop cg writes, so this
 * cannot be decided before LLVM has vectorized it (and LLVM's vectorizer
 * refuses a loop whose scalar stores are marked non-temporal but only
 * element aligned). Each return of such a function is preceded by an sfence:
 * non-temporal stores are weakly ordered, and the thread that waits for
 * the chunk reads them next.
 *
 * Small outputs are left alone: they are still in the cache when the
 * caller reads them, and the size test is made on every call, n being
 * symbolic.
 *
 * Requires: an optimized module. Keeps: every stored value and address. */
#include <stdio.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg_internal.h"

static bool is_flat_loop(LLVMValueRef fn) {
  return LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, CG_STREAM_ATTR,
                                       (unsigned)strlen(CG_STREAM_ATTR)) != NULL;
}

/* Instructions per vector store at most in the block of a store that
 * streams. A loop doing more per line it stores is limited by its
 * arithmetic, not by memory: the line fill is hidden there, and the test
 * per store costs more than the fill (bench ew_grad, three transcendental
 * functions, 120 instructions a store: 16% slower with the test, even
 * without streaming; W3's second pass, 35: 2%). */
enum { STREAM_MAX_INSTS = 64 };

static bool on_stack(LLVMValueRef p) {
  while (LLVMIsAGetElementPtrInst(p))
    p = LLVMGetOperand(p, 0);
  return LLVMIsAAllocaInst(p) != NULL;
}

/* The helper for stores of vt: void (vt v, ptr p, i1 big). */
static LLVMValueRef helper(LLVMModuleRef mod, LLVMTypeRef vt, LLVMTypeRef *fty) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i1 = LLVMInt1TypeInContext(ctx);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef ps[3] = {vt, ptr, i1};
  *fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), ps, 3, 0);
  LLVMTypeRef et = LLVMGetElementType(vt);
  LLVMTypeKind k = LLVMGetTypeKind(et);
  char name[64];
  snprintf(name, sizeof name, "sgc.stream.store.v%u%c%u", LLVMGetVectorSize(vt),
           k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind ? 'f' : 'i',
           (unsigned)LLVMSizeOfTypeInBits(LLVMGetModuleDataLayout(mod), et));
  LLVMValueRef fn = LLVMGetNamedFunction(mod, name);
  if (fn)
    return fn;
  fn = LLVMAddFunction(mod, name, *fty);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  unsigned inl = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, inl, 0));

  unsigned long long bytes = LLVMABISizeOfType(LLVMGetModuleDataLayout(mod), vt);
  unsigned elem = (unsigned)LLVMABIAlignmentOfType(LLVMGetModuleDataLayout(mod), LLVMGetElementType(vt));
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, fn, "entry");
  LLVMBasicBlockRef nt = LLVMAppendBasicBlockInContext(ctx, fn, "stream");
  LLVMBasicBlockRef plain = LLVMAppendBasicBlockInContext(ctx, fn, "plain");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef v = LLVMGetParam(fn, 0), p = LLVMGetParam(fn, 1);
  LLVMValueRef low = LLVMBuildAnd(b, LLVMBuildPtrToInt(b, p, i64, ""),
                                  LLVMConstInt(i64, bytes - 1, 0), "");
  LLVMValueRef aligned = LLVMBuildICmp(b, LLVMIntEQ, low, LLVMConstInt(i64, 0, 0), "");
  LLVMBuildCondBr(b, LLVMBuildAnd(b, aligned, LLVMGetParam(fn, 2), ""), nt, plain);

  LLVMPositionBuilderAtEnd(b, nt);
  LLVMValueRef st = LLVMBuildStore(b, v, p);
  LLVMSetAlignment(st, (unsigned)bytes);
  LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), 1, 0));
  LLVMSetMetadata(st, LLVMGetMDKindIDInContext(ctx, "nontemporal", 11),
                  LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, &one, 1)));
  LLVMBuildRetVoid(b);

  LLVMPositionBuilderAtEnd(b, plain);
  LLVMSetAlignment(LLVMBuildStore(b, v, p), elem);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return fn;
}

/* A store of vector type of 16 bytes or more, not to the stack, plain. */
static bool candidate(LLVMTargetDataRef dl, LLVMValueRef i) {
  if (!LLVMIsAStoreInst(i) || LLVMGetVolatile(i) || LLVMGetOrdering(i) != LLVMAtomicOrderingNotAtomic)
    return false;
  LLVMTypeRef vt = LLVMTypeOf(LLVMGetOperand(i, 0));
  return LLVMGetTypeKind(vt) == LLVMVectorTypeKind && LLVMABISizeOfType(dl, vt) >= 16 &&
         LLVMABISizeOfType(dl, LLVMGetElementType(vt)) <= 8 && !on_stack(LLVMGetOperand(i, 1));
}

/* Whether bb's stores are few enough for its arithmetic to stream. */
static bool memory_bound(LLVMTargetDataRef dl, LLVMBasicBlockRef bb) {
  int insts = 0, stores = 0;
  for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
    insts++;
    stores += candidate(dl, i);
  }
  return stores > 0 && insts <= STREAM_MAX_INSTS * stores;
}

/* Rewrites fn's vector stores; false if it has none. */
static bool stream_function(LLVMModuleRef mod, LLVMValueRef fn) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTargetDataRef dl = LLVMGetModuleDataLayout(mod);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMValueRef n = NULL, big[9] = {0}; /* by element size */
  bool any = false;
  LLVMBasicBlockRef nextbb;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = nextbb) {
    nextbb = LLVMGetNextBasicBlock(bb);
    if (!memory_bound(dl, bb))
      continue;
    LLVMValueRef next;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = next) {
      next = LLVMGetNextInstruction(i);
      if (!candidate(dl, i))
        continue;
      LLVMValueRef v = LLVMGetOperand(i, 0), p = LLVMGetOperand(i, 1);
      LLVMTypeRef vt = LLVMTypeOf(v);
      unsigned long long esize = LLVMABISizeOfType(dl, LLVMGetElementType(vt));
      if (!big[esize]) { /* from the loop's element count, at the entry */
        if (!n) {
          LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(fn)));
          n = LLVMBuildLoad2(b, i64, LLVMGetParam(fn, 0), "stream.n");
        }
        LLVMPositionBuilderBefore(b, LLVMGetNextInstruction(n));
        big[esize] = LLVMBuildICmp(b, LLVMIntSGE, n, LLVMConstInt(i64, CG_STREAM_MIN / esize, 0), "big");
      }
      LLVMTypeRef fty;
      LLVMValueRef h = helper(mod, vt, &fty);
      LLVMPositionBuilderBefore(b, i);
      LLVMValueRef args[3] = {v, p, big[esize]};
      LLVMValueRef call = LLVMBuildCall2(b, fty, h, args, 3, "");
      LLVMInstructionSetDebugLoc(call, LLVMInstructionGetDebugLoc(i));
      /* the inliner gives the call's alias scopes to the stores it inlines */
      const char *kinds[2] = {"alias.scope", "noalias"};
      for (int k = 0; k < 2; k++) {
        unsigned kind = LLVMGetMDKindIDInContext(ctx, kinds[k], (unsigned)strlen(kinds[k]));
        LLVMValueRef md = LLVMGetMetadata(i, kind);
        if (md)
          LLVMSetMetadata(call, kind, md);
      }
      LLVMInstructionEraseFromParent(i);
      any = true;
    }
  }
  if (any) {
    /* what LLVM inferred of its memory effects left the fence out */
    unsigned memory = LLVMGetEnumAttributeKindForName("memory", 6);
    LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex, memory);
    const char *fence = "llvm.x86.sse.sfence";
    unsigned id = LLVMLookupIntrinsicID(fence, strlen(fence));
    LLVMValueRef sfence = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
    LLVMTypeRef sfence_ty = LLVMIntrinsicGetType(ctx, id, NULL, 0);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
      if (t && LLVMIsAReturnInst(t)) {
        LLVMPositionBuilderBefore(b, t);
        LLVMValueRef call = LLVMBuildCall2(b, sfence_ty, sfence, NULL, 0, "");
        LLVMInstructionSetDebugLoc(call, LLVMInstructionGetDebugLoc(t));
      }
    }
  }
  LLVMDisposeBuilder(b);
  return any;
}

void cg_stream_stores(LLVMModuleRef mod, LLVMTargetMachineRef tm) {
  if (strncmp(LLVMGetTarget(mod), "x86_64", 6) != 0)
    return;
  bool any = false;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn) && is_flat_loop(fn))
      any |= stream_function(mod, fn);
  if (!any)
    return;
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(mod, "always-inline", tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e)
    die("cg_stream_stores: %s", LLVMGetErrorMessage(e));
  LLVMValueRef next;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = next) {
    next = LLVMGetNextFunction(fn);
    const char *name = LLVMGetValueName(fn);
    if (!strncmp(name, "sgc.stream.store.", 17) && !LLVMGetFirstUse(fn))
      LLVMDeleteFunction(fn);
  }
  char *msg = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
    die("cg_stream_stores left an invalid module: %s", msg);
  LLVMDisposeMessage(msg);
}
