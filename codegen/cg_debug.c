/* -g: DWARF line information mapping the generated code to .sg lines, so
 * that gdb breaks on `model.sg:LINE` and perf attributes samples to it.
 *
 * One DICompileUnit for the .sg file; one DISubprogram per generated LLVM
 * function (an export's C entry point and its body); each IR instruction's
 * code carries the instruction's line and column (cg_debug_at, called as
 * cg_func.c emits each value). Code inlined from another .sg function
 * (Loc.src_line, passes/inline.c) gets that function's line, inlined at the
 * call site, as C compilers describe inlining: gdb then shows the .sg
 * function as a frame of its own and its lines as breakpoints. LLVM keeps
 * the locations through its optimizations.
 *
 * Every entry point does nothing when -g is off (Cg.dbg is NULL). Code
 * outside a function given cg_debug_func has no location: cg_debug_end
 * clears the builder's, so no later function inherits a stale one (LLVM's
 * verifier rejects locations in functions without a subprogram). */
#include <string.h>
#include <unistd.h>

#include <llvm-c/DebugInfo.h>

#include "cg_internal.h"

/* The DISubprograms of inlined functions, by name (an open-addressing
 * table: one lookup per instruction, so no linear search). */
typedef struct Inlined {
  const char *name;
  LLVMMetadataRef sp;
} Inlined;

struct CgDebug {
  LLVMDIBuilderRef di;
  LLVMMetadataRef file, fn_type;
  LLVMMetadataRef sp; /* the function being generated */
  int line;           /* its line: for code with no line of its own */
  bool optimized;
  Inlined *inl;
  size_t ninl, capinl; /* capinl a power of two */
};

void cg_debug_begin(Cg *g, const char *path, bool optimized) {
  CgDebug *d = xmalloc(sizeof *d);
  memset(d, 0, sizeof *d);
  d->di = LLVMCreateDIBuilder(g->mod);
  d->optimized = optimized;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd))
    cwd[0] = 0;
  d->file = LLVMDIBuilderCreateFile(d->di, path, strlen(path), cwd, strlen(cwd));
  static const char producer[] = "sgc";
  /* DW_LANG_C99: debuggers know no .sg language; a C frame reads well. */
  LLVMDIBuilderCreateCompileUnit(d->di, LLVMDWARFSourceLanguageC99, d->file, producer,
                                 sizeof producer - 1, optimized, "", 0, 0, "", 0,
                                 LLVMDWARFEmissionLineTablesOnly, 0, 1, 0, "", 0, "", 0);
  d->fn_type = LLVMDIBuilderCreateSubroutineType(d->di, d->file, NULL, 0, LLVMDIFlagZero);
  LLVMAddModuleFlag(g->mod, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                    LLVMValueAsMetadata(LLVMConstInt(g->i32, LLVMDebugMetadataVersion(), 0)));
  LLVMAddModuleFlag(g->mod, LLVMModuleFlagBehaviorWarning, "Dwarf Version", 13,
                    LLVMValueAsMetadata(LLVMConstInt(g->i32, 4, 0)));
  d->capinl = 16;
  d->inl = xmalloc(sizeof(Inlined) * d->capinl);
  memset(d->inl, 0, sizeof(Inlined) * d->capinl);
  g->dbg = d;
}

static LLVMMetadataRef subprogram(CgDebug *d, const char *name, int line) {
  unsigned l = line > 0 ? (unsigned)line : 1;
  return LLVMDIBuilderCreateFunction(d->di, d->file, name, strlen(name), name, strlen(name),
                                     d->file, l, d->fn_type, 1, 1, l, LLVMDIFlagPrototyped,
                                     d->optimized);
}

static size_t hash(const char *s) {
  size_t h = 5381;
  for (; *s; s++)
    h = h * 33 + (unsigned char)*s;
  return h;
}

static LLVMMetadataRef inlined_sp(CgDebug *d, const char *name, int line) {
  size_t k = hash(name) & (d->capinl - 1);
  for (; d->inl[k].name; k = (k + 1) & (d->capinl - 1))
    if (strcmp(d->inl[k].name, name) == 0)
      return d->inl[k].sp;
  LLVMMetadataRef sp = subprogram(d, name, line);
  d->inl[k] = (Inlined){name, sp};
  if (++d->ninl * 2 > d->capinl) { /* grow, keeping at most half full */
    Inlined *old = d->inl;
    size_t cap = d->capinl;
    d->capinl *= 2;
    d->inl = xmalloc(sizeof(Inlined) * d->capinl);
    memset(d->inl, 0, sizeof(Inlined) * d->capinl);
    for (size_t j = 0; j < cap; j++) {
      if (!old[j].name)
        continue;
      size_t h = hash(old[j].name) & (d->capinl - 1);
      while (d->inl[h].name)
        h = (h + 1) & (d->capinl - 1);
      d->inl[h] = old[j];
    }
    free(old);
  }
  return sp;
}

static LLVMMetadataRef location(Cg *g, int line, int col, LLVMMetadataRef scope,
                                LLVMMetadataRef inlined_at) {
  return LLVMDIBuilderCreateDebugLocation(g->ctx, line > 0 ? (unsigned)line : 0,
                                          col > 0 ? (unsigned)col : 0, scope, inlined_at);
}

void cg_debug_func(Cg *g, LLVMValueRef fn, const Function *f) {
  CgDebug *d = g->dbg;
  if (!d)
    return;
  d->line = f->loc.line > 0 ? f->loc.line : 1;
  const char *name = LLVMGetValueName2(fn, &(size_t){0});
  d->sp = subprogram(d, name, d->line);
  LLVMSetSubprogram(fn, d->sp);
  LLVMSetCurrentDebugLocation2(g->b, location(g, d->line, f->loc.col, d->sp, NULL));
}

LLVMMetadataRef cg_debug_at(Cg *g, const Inst *i) {
  CgDebug *d = g->dbg;
  if (!d || !d->sp)
    return NULL;
  LLVMMetadataRef prev = LLVMGetCurrentDebugLocation2(g->b);
  const Loc *l = &i->loc;
  LLVMMetadataRef at;
  if (l->line <= 0)
    at = location(g, d->line, 0, d->sp, NULL);
  else if (l->src_line <= 0 || !l->inlined)
    at = location(g, l->line, l->col, d->sp, NULL);
  else
    at = location(g, l->src_line, l->src_col, inlined_sp(d, l->inlined, l->inlined_line),
                  location(g, l->line, l->col, d->sp, NULL));
  LLVMSetCurrentDebugLocation2(g->b, at);
  return prev;
}

void cg_debug_restore(Cg *g, LLVMMetadataRef prev) {
  if (g->dbg && g->dbg->sp)
    LLVMSetCurrentDebugLocation2(g->b, prev);
}

void cg_debug_end(Cg *g) {
  CgDebug *d = g->dbg;
  if (!d)
    return;
  LLVMSetCurrentDebugLocation2(g->b, NULL);
  if (d->sp)
    LLVMDIBuilderFinalizeSubprogram(d->di, d->sp);
  d->sp = NULL;
}

void cg_debug_finish(Cg *g) {
  CgDebug *d = g->dbg;
  if (!d)
    return;
  LLVMDIBuilderFinalize(d->di);
  LLVMDisposeDIBuilder(d->di);
  free(d->inl);
  free(d);
  g->dbg = NULL;
}
