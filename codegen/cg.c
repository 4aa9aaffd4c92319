/* The LLVM side: a module holding every export, the new pass manager at the
 * requested -O level for the host CPU (or --target-cpu), and the output:
 * an object file (which libsgc's JIT loads too), assembly (-S) or LLVM IR
 * (--emit-llvm), in memory. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "cg_internal.h"

/* LLVM's target registry is not safe to fill from two threads at once,
 * and libsgc compiles on several. */
static void init_native_target(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
}

void cg_init_target(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init_native_target);
}

/* Loop Strength Reduction off. On a loop body's code (an LSTM step: a
 * loop holding dozens of short vector loops) it took half of the code
 * generator's time, 0.35 of 0.68 s for examples/lstm.sg, and bought
 * nothing measurable on x86, whose addressing modes take base + index *
 * scale as they are: bench W1-W6 and bench/lstm at b = 14, 256 and 2048
 * ran at the same speed with it and without (alternating runs). It is a
 * process-wide LLVM option, so only the sgc command, which owns its
 * process, sets it: libsgc leaves its host program's LLVM as it is.
 * X86 domain reassignment off too: LLVM 19's version builds each
 * register's whole closure before asking whether it may move to the mask
 * registers, quadratic in a big function (fixed upstream after 19). A
 * body of 3,000 branches took 176 s, 47 s without it; the pass changed no
 * instruction of any bench object (W1-W6, rnn_lm, small, xent_loop). */
void cg_command_options(void) {
  const char *argv[] = {"sgc", "-disable-lsr", "-disable-x86-domain-reassignment"};
  LLVMParseCommandLineOptions(3, argv, NULL);
}

/* The host's features, with 512-bit vectors preferred where it has
 * AVX-512. LLVM tunes Intel's AVX-512 cores (Ice Lake and later) for
 * 256-bit vectors ("prefer-256-bit"), a choice made for the clock
 * penalty of 512-bit work on Skylake's server cores; on this Sapphire
 * Rapids host a simple exp-times-sum compiled to 292 ymm and 13 zmm
 * instructions, where the runtime's GEMM and an expert's C use zmm
 * throughout. The same bench compiled for 512 bits, alternated in one run
 * with the default (bench/README.md, 2026-11-27 22:26 UTC): W6's gradient
 * 1.43x faster, W5 1.24x, W2n 1.19x, W2 1.13x, W3 1.09x, W1 and W4 the
 * same. Skylake-SP, Cascade Lake and Cooper Lake keep LLVM's tuning:
 * their clock drops under 512-bit load. An explicit --target-cpu gets
 * LLVM's tuning for that CPU as it is. Freed by the caller with
 * LLVMDisposeMessage, like LLVMGetHostCPUFeatures's. */
static char *host_features(const char *cpu) {
  char *f = LLVMGetHostCPUFeatures();
  static const char *const clocked_down[] = {"skylake-avx512", "cascadelake", "cooperlake"};
  bool wide = strstr(f, "+avx512f") != NULL;
  for (size_t k = 0; k < sizeof clocked_down / sizeof *clocked_down; k++)
    wide = wide && strcmp(cpu, clocked_down[k]) != 0;
  if (!wide)
    return f;
  static const char more[] = ",-prefer-256-bit";
  size_t n = strlen(f);
  char *g = xmalloc(n + sizeof more);
  memcpy(g, f, n);
  memcpy(g + n, more, sizeof more);
  LLVMDisposeMessage(f);
  char *r = LLVMCreateMessage(g);
  free(g);
  return r;
}

static LLVMTargetMachineRef target_machine(const CgOptions *o, char **triple_out) {
  cg_init_target();
  char *triple = LLVMGetDefaultTargetTriple();
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    fprintf(stderr, "sgc: error: no LLVM target for %s: %s\n", triple, err);
    LLVMDisposeMessage(err);
    LLVMDisposeMessage(triple);
    return NULL;
  }
  bool host = !o->cpu || strcmp(o->cpu, "native") == 0;
  char *cpu = host ? LLVMGetHostCPUName() : NULL;
  char *features = host ? host_features(cpu) : NULL;
  LLVMCodeGenOptLevel level = o->opt_level == 0   ? LLVMCodeGenLevelNone
                              : o->opt_level == 1 ? LLVMCodeGenLevelLess
                              : o->opt_level == 2 ? LLVMCodeGenLevelDefault
                                                  : LLVMCodeGenLevelAggressive;
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(target, triple, host ? cpu : o->cpu, host ? features : "", level,
                              LLVMRelocPIC, LLVMCodeModelDefault);
  if (cpu)
    LLVMDisposeMessage(cpu);
  if (features)
    LLVMDisposeMessage(features);
  *triple_out = triple;
  return tm;
}

unsigned cg_md_kind(LLVMContextRef ctx, CgMd md) {
  static const char *const names[] = {[CG_MD_FIXED] = "sg.fixed"};
  return LLVMGetMDKindIDInContext(ctx, names[md], (unsigned)strlen(names[md]));
}

/* LLVM accepts any CPU name and only warns; sgc rejects unknown ones
 * (there is no C API to ask LLVM, hence the list: x86-64's names). */
bool cg_cpu_known(const char *cpu) {
  if (!cpu || strcmp(cpu, "native") == 0 || strcmp(cpu, "generic") == 0)
    return true;
  static const char *const x86[] = {
      "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell", "broadwell", "skylake",
      "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
      "icelake-server", "tigerlake", "sapphirerapids", "alderlake", "raptorlake", "meteorlake",
      "graniterapids", "znver1", "znver2", "znver3", "znver4", "nehalem", "westmere",
      "sandybridge", "ivybridge", "core2", "atom", "silvermont", "goldmont", "tremont",
      "knl", "knm", "btver2", "bdver4", "k8", "pentium4", "i686", NULL};
  for (int k = 0; x86[k]; k++)
    if (strcmp(x86[k], cpu) == 0)
      return true;
  return false;
}

/* The optimized LLVM module of every export of m, in ctx, and the target
 * machine it was optimized for; with halves, a module optimized in two
 * halves may stay so (cg_optimize). */
static int build(Module *m, const char *module_name, const CgOptions *o, LLVMContextRef ctx,
                 LLVMModuleRef *mod_out, LLVMTargetMachineRef *tm_out, CgSecond **halves) {
  Cg g = {0};
  g.m = m;
  g.ad_memory = o->ad_memory;
  g.ctx = ctx;
  g.mod = LLVMModuleCreateWithNameInContext(module_name, g.ctx);
  g.b = LLVMCreateBuilderInContext(g.ctx);
  g.i1 = LLVMInt1TypeInContext(g.ctx);
  g.i8 = LLVMInt8TypeInContext(g.ctx);
  g.i32 = LLVMInt32TypeInContext(g.ctx);
  g.i64 = LLVMInt64TypeInContext(g.ctx);
  g.f32 = LLVMFloatTypeInContext(g.ctx);
  g.f64 = LLVMDoubleTypeInContext(g.ctx);
  g.ptr = LLVMPointerTypeInContext(g.ctx, 0);
  g.vd = LLVMVoidTypeInContext(g.ctx);
  int rc = 1;
  char *triple = NULL, *err = NULL;
  LLVMTargetMachineRef tm = target_machine(o, &triple);
  if (!tm)
    goto out;
  LLVMSetTarget(g.mod, triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *layout = LLVMCopyStringRepOfTargetData(td);
  LLVMSetDataLayout(g.mod, layout);
  LLVMDisposeMessage(layout);
  LLVMDisposeTargetData(td);

  if (o->debug)
    cg_debug_begin(&g, module_name, o->opt_level > 0);
  for (Function *f = m->funcs; f; f = f->next)
    if (f->exported)
      cg_export(&g, f);
  cg_debug_finish(&g);
  cg_math_finish(&g);
  /* Big bodies become several functions that LLVM optimizes one at a time
   * (cg_split.c): compile time stays linear at every -O level. */
  LLVMValueRef last = LLVMGetLastFunction(g.mod);
  for (LLVMValueRef fn = LLVMGetFirstFunction(g.mod); fn; fn = LLVMGetNextFunction(fn)) {
    if (!LLVMIsDeclaration(fn))
      cg_split_function(&g, fn);
    if (fn == last)
      break;
  }

  if (o->verify && LLVMVerifyModule(g.mod, LLVMReturnStatusAction, &err)) {
    fprintf(stderr, "sgc: internal error: invalid LLVM IR:\n%s\n", err);
    goto out;
  }
  LLVMDisposeMessage(err);
  err = NULL;

  /* a second target machine for cg_optimize's second thread */
  char *triple2 = NULL;
  LLVMTargetMachineRef tm2 = o->opt_level > 0 && !o->debug ? target_machine(o, &triple2) : NULL;
  char *msg = cg_optimize(g.mod, tm, tm2, o, halves); /* (which disposes of tm2) */
  if (triple2)
    LLVMDisposeMessage(triple2);
  if (msg) {
    fprintf(stderr, "sgc: internal error: LLVM passes failed: %s\n", msg);
    free(msg);
    goto out;
  }
  cg_split_blocks(g.mod);
  rc = 0;
out:
  free(g.math_used);
  ptrmap_free(&g.frame_temps);
  if (err)
    LLVMDisposeMessage(err);
  if (triple)
    LLVMDisposeMessage(triple);
  LLVMDisposeBuilder(g.b);
  if (rc) {
    if (tm)
      LLVMDisposeTargetMachine(tm);
    LLVMDisposeModule(g.mod);
    return rc;
  }
  *mod_out = g.mod;
  *tm_out = tm;
  return 0;
}

/* The module compiled to an object or assembly, in *data (malloc'd). */
static int emit_code(LLVMTargetMachineRef tm, LLVMModuleRef mod, LLVMCodeGenFileType kind,
                     char **data, size_t *len) {
  char *err = NULL;
  LLVMMemoryBufferRef buf;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, kind, &err, &buf)) {
    fprintf(stderr, "sgc: internal error: LLVM code generation failed: %s\n", err);
    LLVMDisposeMessage(err);
    return 1;
  }
  *len = LLVMGetBufferSize(buf);
  *data = xmalloc(*len + 1);
  memcpy(*data, LLVMGetBufferStart(buf), *len);
  LLVMDisposeMemoryBuffer(buf);
  return 0;
}

/* The object of a module optimized in halves: the first half's, compiled
 * here while the second's was on its thread, and the second's, made one
 * (cg_elf.c); or if that fails, the halves linked and compiled whole. */
static int emit_halves(LLVMModuleRef mod, LLVMTargetMachineRef tm, CgSecond *second,
                       const CgOptions *o, char **data, size_t *len) {
  char *first;
  size_t nfirst;
  if (emit_code(tm, mod, LLVMObjectFile, &first, &nfirst))
    return 1;
  bool merged = cg_second_merge(second, first, nfirst, data, len);
  free(first);
  if (merged)
    return 0;
  char *err = cg_second_link(mod, second, tm, o);
  if (err) {
    fprintf(stderr, "sgc: internal error: LLVM passes failed: %s\n", err);
    free(err);
    return 1;
  }
  cg_split_blocks(mod);
  return emit_code(tm, mod, LLVMObjectFile, data, len);
}

/* The bytes go back to the driver, which writes them with its own checks
 * (driver/files.c): never over the input, all outputs or none. */
int cg_emit(Module *m, const char *module_name, const CgOptions *o, char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod;
  LLVMTargetMachineRef tm;
  CgSecond *second = NULL;
  bool object = !o->emit_llvm && !o->emit_asm;
  if (build(m, module_name, o, ctx, &mod, &tm, object ? &second : NULL)) {
    LLVMContextDispose(ctx);
    return 1;
  }
  int rc = 0;
  if (second) {
    rc = emit_halves(mod, tm, second, o, data, len);
    cg_second_free(second);
  } else if (o->emit_llvm) {
    char *text = LLVMPrintModuleToString(mod);
    *len = strlen(text);
    *data = xmalloc(*len + 1);
    memcpy(*data, text, *len + 1);
    LLVMDisposeMessage(text);
  } else {
    rc = emit_code(tm, mod, o->emit_asm ? LLVMAssemblyFile : LLVMObjectFile, data, len);
  }
  LLVMDisposeTargetMachine(tm);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return rc;
}
