/* libsgc's JIT. The module cg_build makes for the sgc command (same
 * passes, same target machine: host CPU or --target-cpu, -O level) goes to
 * its own ORC LLJIT, so modules compiled on different threads share no
 * LLVM state. Calls into the runtime are bound to the addresses of this
 * library's copy of libsgrt (jit_rt_symbols), the rest (libc, libm) to the
 * process. Every export is resolved at once, so a link error is reported
 * by sgc_compile and jit_lookup only reads a table. */
#include "jit.h"

#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

typedef struct JitEntry {
  char *name;
  void *address;
} JitEntry;

struct Jit {
  LLVMOrcLLJITRef lljit;
  JitEntry *entries;
  int nentries;
};

/* Reports and consumes e. */
static int jit_error(FILE *err, const char *what, LLVMErrorRef e) {
  char *msg = LLVMGetErrorMessage(e);
  fprintf(err, "sgc: error: %s: %s\n", what, msg);
  LLVMDisposeErrorMessage(msg);
  return 1;
}

static LLVMErrorRef define_runtime(LLVMOrcLLJITRef lljit, LLVMOrcJITDylibRef jd) {
  size_t n = 0;
  while (jit_rt_symbols[n].name)
    n++;
  LLVMOrcCSymbolMapPair *pairs = xmalloc(n * sizeof *pairs);
  for (size_t k = 0; k < n; k++) {
    pairs[k].Name = LLVMOrcLLJITMangleAndIntern(lljit, jit_rt_symbols[k].name);
    pairs[k].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)jit_rt_symbols[k].fn;
    pairs[k].Sym.Flags.GenericFlags =
        LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[k].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, n);
  free(pairs);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(jd, mu);
  if (e)
    LLVMOrcDisposeMaterializationUnit(mu);
  return e;
}

static LLVMErrorRef link_process(LLVMOrcLLJITRef lljit, LLVMOrcJITDylibRef jd) {
  LLVMOrcDefinitionGeneratorRef gen;
  LLVMErrorRef e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
      &gen, LLVMOrcLLJITGetGlobalPrefix(lljit), NULL, NULL);
  if (!e)
    LLVMOrcJITDylibAddGenerator(jd, gen);
  return e;
}

Jit *jit_compile(Module *m, const char *module_name, const CgOptions *o, FILE *err) {
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef mod;
  LLVMTargetMachineRef tm;
  if (cg_build(m, module_name, o, LLVMOrcThreadSafeContextGetContext(tsc), &mod, &tm)) {
    LLVMOrcDisposeThreadSafeContext(tsc);
    fprintf(err, "sgc: error: code generation failed\n");
    return NULL;
  }
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
  LLVMOrcDisposeThreadSafeContext(tsc); /* the module keeps it alive */

  /* The JIT generates code with the very target machine the module was
   * optimized for. */
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
      builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
  Jit *j = xmalloc(sizeof *j);
  memset(j, 0, sizeof *j);
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&j->lljit, builder);
  if (e) {
    jit_error(err, "cannot start LLVM's JIT", e);
    LLVMOrcDisposeThreadSafeModule(tsm);
    free(j);
    return NULL;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->lljit);
  if ((e = define_runtime(j->lljit, jd)) || (e = link_process(j->lljit, jd))) {
    jit_error(err, "cannot link the runtime", e);
    LLVMOrcDisposeThreadSafeModule(tsm);
    jit_free(j);
    return NULL;
  }
  if ((e = LLVMOrcLLJITAddLLVMIRModule(j->lljit, jd, tsm))) {
    jit_error(err, "cannot add the module to LLVM's JIT", e);
    jit_free(j);
    return NULL;
  }

  int n = 0;
  for (Function *f = m->funcs; f; f = f->next)
    n += f->exported;
  j->entries = xmalloc((size_t)n * sizeof *j->entries);
  for (Function *f = m->funcs; f; f = f->next) {
    if (!f->exported)
      continue;
    LLVMOrcExecutorAddress addr;
    if ((e = LLVMOrcLLJITLookup(j->lljit, &addr, f->name))) {
      jit_error(err, "cannot link the generated code", e);
      jit_free(j);
      return NULL;
    }
    JitEntry *entry = &j->entries[j->nentries++];
    entry->name = xmalloc(strlen(f->name) + 1);
    strcpy(entry->name, f->name);
    entry->address = (void *)(uintptr_t)addr;
  }
  return j;
}

void *jit_lookup(const Jit *j, const char *name) {
  for (int k = 0; k < j->nentries; k++)
    if (strcmp(j->entries[k].name, name) == 0)
      return j->entries[k].address;
  return NULL;
}

void jit_free(Jit *j) {
  if (!j)
    return;
  for (int k = 0; k < j->nentries; k++)
    free(j->entries[k].name);
  free(j->entries);
  if (j->lljit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(j->lljit);
    if (e)
      LLVMConsumeError(e);
  }
  free(j);
}
