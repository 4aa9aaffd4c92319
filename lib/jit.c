/* libsgc's JIT. The object the sgc command would write (cg_emit: same
 * passes, same target machine: host CPU or --target-cpu, -O level), made
 * by libsgc.c or read from its cache (cache.c), is linked in memory by an
 * ORC LLJIT of its own, so modules compiled on different threads share no
 * LLVM state. Calls into the runtime are bound to the addresses of this
 * library's copy of libsgrt (jit_rt_symbols), the rest (libc, libm) to the
 * process. Every entry point is resolved at once, so a link error is
 * reported by sgc_compile and jit_lookup only reads a table. */
#include "jit.h"

#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

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

Jit *jit_load(const char *object, size_t len, const char *names, size_t names_len, FILE *err) {
  /* The code is compiled already: the JIT's target machine is the host's
   * (for its own stubs), whatever CPU the object was made for. */
  cg_init_target(); /* (a cached object skips cg_emit, which does it) */
  char *triple = LLVMGetDefaultTargetTriple(), *msg = NULL;
  LLVMTargetRef target;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    fprintf(err, "sgc: error: cannot start LLVM's JIT: %s\n", msg);
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(triple);
    return NULL;
  }
  /* (LLVMOrcJITTargetMachineBuilderDetectHost would do, but each call
   * keeps a few hundred bytes for good: test/lib/leak.test) */
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, "", "", LLVMCodeGenLevelDefault,
                                                    LLVMRelocPIC, LLVMCodeModelDefault);
  LLVMDisposeMessage(triple);
  LLVMOrcJITTargetMachineBuilderRef jtmb = LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm);
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
  Jit *j = xmalloc(sizeof *j);
  memset(j, 0, sizeof *j);
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&j->lljit, builder);
  if (e) {
    jit_error(err, "cannot start LLVM's JIT", e);
    free(j);
    return NULL;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->lljit);
  if ((e = define_runtime(j->lljit, jd)) || (e = link_process(j->lljit, jd))) {
    jit_error(err, "cannot link the runtime", e);
    jit_free(j);
    return NULL;
  }
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(object, len, "sgc");
  if ((e = LLVMOrcLLJITAddObjectFile(j->lljit, jd, buf))) { /* (which owns buf) */
    jit_error(err, "cannot add the object to LLVM's JIT", e);
    jit_free(j);
    return NULL;
  }
  int n = 0;
  for (size_t k = 0; k < names_len; k++)
    n += names[k] == 0;
  j->entries = xmalloc((size_t)n * sizeof *j->entries + 1);
  for (const char *name = names; name < names + names_len; name += strlen(name) + 1) {
    LLVMOrcExecutorAddress addr;
    if ((e = LLVMOrcLLJITLookup(j->lljit, &addr, name))) {
      jit_error(err, "cannot link the generated code", e);
      jit_free(j);
      return NULL;
    }
    JitEntry *entry = &j->entries[j->nentries++];
    entry->name = xmalloc(strlen(name) + 1);
    strcpy(entry->name, name);
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
