/* gen_math.c -- builds test kernels around codegen/cg_math.c.
 *
 * Usage: gen_math [-cpu NAME] OUT.o [OUT.ll]
 *
 * For every function F in exp, exp_shifted, expm1, log, log1p, tanh, sigmoid, softplus,
 * log2, log10, tan, atan, asin, acos, sinh, cosh, erf, atan2 (two ways, below),
 * lgamma and the polygammas of order 0, 1, 2 (digamma, trigamma, tetragamma)
 * and T in f32, f64 it emits
 *   void sg_test_F_T(const T *x, T *y, int64_t n)    scalar emitter in a loop,
 *                                                    left to the vectorizer
 *   void sg_testv_F_T(const T *x, T *y, int64_t n)   emitter on <8 x T>, with a
 *                                                    scalar loop for the tail
 * runs LLVM's default<O2> pipeline for the host CPU (or -cpu NAME), verifies
 * the module, writes the object (and the optimized IR), and prints for each
 * sg_test_ function whether the loop was vectorized and whether any call to
 * a non-intrinsic function survived. Exit status 1 on any error.
 *
 * Built and run by math.test in this directory.
 */
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../codegen/cg_math.h"

typedef LLVMValueRef (*Emitter)(LLVMModuleRef, LLVMBuilderRef, LLVMValueRef);
enum { VLANES_MAX = 16 };

/* atan2 takes two operands: tested as atan2(x, 0.6 - x) and atan2(0.3 - x,
 * x), which between them put (x, y) in every quadrant and on both axes. */
static LLVMValueRef splat_like(LLVMValueRef x, double v)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind)
        return LLVMConstReal(t, v);
    LLVMValueRef e[VLANES_MAX];
    unsigned n = LLVMGetVectorSize(t);
    for (unsigned i = 0; i < n; i++)
        e[i] = LLVMConstReal(LLVMGetElementType(t), v);
    return LLVMConstVector(e, n);
}
static LLVMValueRef atan2_a(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    return cg_math_atan2(m, b, x, LLVMBuildFSub(b, splat_like(x, 0.6), x, ""));
}
static LLVMValueRef atan2_b(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    return cg_math_atan2(m, b, LLVMBuildFSub(b, splat_like(x, 0.3), x, ""), x);
}

static LLVMValueRef digamma(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    return cg_math_polygamma(m, b, x, 0);
}
static LLVMValueRef trigamma(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    return cg_math_polygamma(m, b, x, 1);
}
static LLVMValueRef tetragamma(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    return cg_math_polygamma(m, b, x, 2);
}

static const struct {
    const char *name;
    Emitter emit;
} funcs[] = {
    {"exp", cg_math_exp},         {"exp_shifted", cg_math_exp_shifted},
    {"expm1", cg_math_expm1},     {"log", cg_math_log},
    {"log1p", cg_math_log1p},     {"tanh", cg_math_tanh},   {"sigmoid", cg_math_sigmoid},
    {"softplus", cg_math_softplus},
    {"log2", cg_math_log2},       {"log10", cg_math_log10}, {"tan", cg_math_tan},
    {"atan", cg_math_atan},       {"asin", cg_math_asin},   {"acos", cg_math_acos},
    {"sinh", cg_math_sinh},       {"cosh", cg_math_cosh},   {"erf", cg_math_erf},
    {"atan2_a", atan2_a},         {"atan2_b", atan2_b},     {"lgamma", cg_math_lgamma},
    {"digamma", digamma},         {"trigamma", trigamma},   {"tetragamma", tetragamma},
};
enum { NFUNCS = sizeof funcs / sizeof funcs[0], VLANES = 8 };

/* for (i = start; i + step <= n; i += step) y[i..] = emit(x[i..]);
 * returns the final i (the start of the remainder). The builder is left in
 * the exit block. */
static LLVMValueRef build_loop(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef fn, Emitter emit,
                               LLVMTypeRef elt, LLVMTypeRef vt, unsigned step,
                               LLVMValueRef start, const char *tag)
{
    LLVMContextRef cx = LLVMGetModuleContext(m);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(cx);
    LLVMValueRef x = LLVMGetParam(fn, 0), y = LLVMGetParam(fn, 1), n = LLVMGetParam(fn, 2);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    char nm[64];
    snprintf(nm, sizeof nm, "%s.body", tag);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cx, fn, nm);
    snprintf(nm, sizeof nm, "%s.exit", tag);
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(cx, fn, nm);
    LLVMValueRef stepc = LLVMConstInt(i64, step, 0);

    LLVMValueRef first = LLVMBuildICmp(b, LLVMIntSLE, LLVMBuildAdd(b, start, stepc, ""), n, "");
    LLVMBuildCondBr(b, first, body, exit);

    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
    LLVMValueRef px = LLVMBuildGEP2(b, elt, x, &i, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(b, vt, px, "");
    LLVMSetAlignment(v, LLVMABISizeOfType(LLVMGetModuleDataLayout(m), elt) > 4 ? 8 : 4);
    LLVMValueRef r = emit(m, b, v);
    LLVMValueRef py = LLVMBuildGEP2(b, elt, y, &i, 1, "");
    LLVMValueRef st = LLVMBuildStore(b, r, py);
    LLVMSetAlignment(st, LLVMGetAlignment(v));
    LLVMValueRef inext = LLVMBuildNSWAdd(b, i, stepc, "");
    LLVMValueRef more = LLVMBuildICmp(b, LLVMIntSLE, LLVMBuildAdd(b, inext, stepc, ""), n, "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    LLVMBuildCondBr(b, more, body, exit);
    LLVMAddIncoming(i, &start, &pre, 1);
    LLVMAddIncoming(i, &inext, &latch, 1);

    LLVMPositionBuilderAtEnd(b, exit);
    LLVMValueRef fin = LLVMBuildPhi(b, i64, "");
    LLVMAddIncoming(fin, &start, &pre, 1);
    LLVMAddIncoming(fin, &inext, &latch, 1);
    return fin;
}

static void build_kernel(LLVMModuleRef m, const char *name, Emitter emit, LLVMTypeRef elt,
                         int vector)
{
    LLVMContextRef cx = LLVMGetModuleContext(m);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(cx, 0);
    LLVMTypeRef params[3] = {ptr, ptr, LLVMInt64TypeInContext(cx)};
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(cx), params, 3, 0);
    LLVMValueRef fn = LLVMAddFunction(m, name, fty);
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(cx, noalias, 0));
    LLVMAddAttributeAtIndex(fn, 2, LLVMCreateEnumAttribute(cx, noalias, 0));

    LLVMBuilderRef b = LLVMCreateBuilderInContext(cx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cx, fn, "entry"));
    LLVMValueRef i = LLVMConstInt(LLVMInt64TypeInContext(cx), 0, 0);
    if (vector)
        i = build_loop(m, b, fn, emit, elt, LLVMVectorType(elt, VLANES), VLANES, i, "vec");
    build_loop(m, b, fn, emit, elt, elt, 1, i, "scalar");
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
}

/* After optimization: the widest float vector type produced in fn (0 if
 * none), and the number of calls to non-intrinsic functions. */
static void inspect(LLVMValueRef fn, unsigned *lanes, int *calls)
{
    *lanes = 0;
    *calls = 0;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
            LLVMTypeRef t = LLVMTypeOf(in);
            if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) {
                LLVMTypeKind ek = LLVMGetTypeKind(LLVMGetElementType(t));
                if ((ek == LLVMFloatTypeKind || ek == LLVMDoubleTypeKind) &&
                    LLVMGetVectorSize(t) > *lanes)
                    *lanes = LLVMGetVectorSize(t);
            }
            if (LLVMGetInstructionOpcode(in) == LLVMCall) {
                LLVMValueRef callee = LLVMGetCalledValue(in);
                if (!LLVMIsAFunction(callee) || LLVMGetIntrinsicID(callee) == 0) {
                    *calls += 1;
                    size_t len;
                    fprintf(stderr, "call to %s in %s\n", LLVMGetValueName2(callee, &len),
                            LLVMGetValueName2(fn, &len));
                }
            }
        }
}

int main(int argc, char **argv)
{
    const char *cpu_opt = NULL;
    int ai = 1;
    if (ai + 1 < argc && strcmp(argv[ai], "-cpu") == 0) {
        cpu_opt = argv[ai + 1];
        ai += 2;
    }
    if (ai >= argc || argc - ai > 2) {
        fprintf(stderr, "usage: %s [-cpu NAME] OUT.o [OUT.ll]\n", argv[0]);
        return 2;
    }
    const char *out_o = argv[ai], *out_ll = ai + 1 < argc ? argv[ai + 1] : NULL;

    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    char *triple = LLVMGetDefaultTargetTriple();
    char *err = NULL;
    LLVMTargetRef target;
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        fprintf(stderr, "gen_math: %s\n", err);
        return 1;
    }
    char *cpu = cpu_opt ? NULL : LLVMGetHostCPUName();
    char *features = cpu_opt ? NULL : LLVMGetHostCPUFeatures();
    LLVMTargetMachineRef tm =
        LLVMCreateTargetMachine(target, triple, cpu_opt ? cpu_opt : cpu, cpu_opt ? "" : features,
                                LLVMCodeGenLevelAggressive, LLVMRelocPIC, LLVMCodeModelDefault);

    LLVMContextRef cx = LLVMContextCreate();
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("sg_math_test", cx);
    LLVMSetTarget(m, triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(m, td);

    LLVMTypeRef types[2] = {LLVMFloatTypeInContext(cx), LLVMDoubleTypeInContext(cx)};
    const char *tnames[2] = {"f32", "f64"};
    char name[64];
    for (int f = 0; f < NFUNCS; f++)
        for (int t = 0; t < 2; t++)
            for (int v = 0; v < 2; v++) {
                snprintf(name, sizeof name, "sg_test%s_%s_%s", v ? "v" : "", funcs[f].name,
                         tnames[t]);
                build_kernel(m, name, funcs[f].emit, types[t], v);
            }

    int rc = 0;
    if (LLVMVerifyModule(m, LLVMReturnStatusAction, &err)) {
        fprintf(stderr, "gen_math: invalid module before optimization:\n%s\n", err);
        return 1;
    }
    LLVMDisposeMessage(err);

    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
    LLVMErrorRef perr = LLVMRunPasses(m, "default<O2>", tm, po);
    if (perr) {
        char *msg = LLVMGetErrorMessage(perr);
        fprintf(stderr, "gen_math: passes: %s\n", msg);
        LLVMDisposeErrorMessage(msg);
        return 1;
    }
    LLVMDisposePassBuilderOptions(po);
    if (LLVMVerifyModule(m, LLVMReturnStatusAction, &err)) {
        fprintf(stderr, "gen_math: invalid module after optimization:\n%s\n", err);
        return 1;
    }
    LLVMDisposeMessage(err);

    for (int f = 0; f < NFUNCS; f++)
        for (int t = 0; t < 2; t++)
            for (int v = 0; v < 2; v++) {
                snprintf(name, sizeof name, "sg_test%s_%s_%s", v ? "v" : "", funcs[f].name,
                         tnames[t]);
                unsigned lanes;
                int calls;
                inspect(LLVMGetNamedFunction(m, name), &lanes, &calls);
                if (!v)
                    printf("%s: %s <%u x %s>, %d libcalls\n", name,
                           lanes ? "vectorized" : "NOT vectorized", lanes,
                           t ? "double" : "float", calls);
                if (calls)
                    rc = 1;
            }

    if (out_ll && LLVMPrintModuleToFile(m, out_ll, &err)) {
        fprintf(stderr, "gen_math: %s\n", err);
        return 1;
    }
    if (LLVMTargetMachineEmitToFile(tm, m, out_o, LLVMObjectFile, &err)) {
        fprintf(stderr, "gen_math: %s\n", err);
        return 1;
    }

    LLVMDisposeModule(m);
    LLVMDisposeTargetData(td);
    LLVMContextDispose(cx);
    LLVMDisposeTargetMachine(tm);
    LLVMDisposeMessage(triple);
    if (cpu)
        LLVMDisposeMessage(cpu);
    if (features)
        LLVMDisposeMessage(features);
    return rc;
}
