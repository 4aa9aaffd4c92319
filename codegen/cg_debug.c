/* -g: DWARF line information mapping the generated code to .sg lines, and
 * the .sg names of values as variables, so that gdb breaks on `model.sg:LINE`
 * and shows locals, and perf attributes samples to .sg lines.
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
 * Variables: every value a `let` or `var` names (Inst.name, set by the
 * lowering; the AD pass's copy of the primal sweep keeps it) that the body
 * keeps in a register or in memory gets a DILocalVariable of that name, in
 * the frame of the .sg function it was written in (an inlined one's too),
 * and an llvm.dbg.value once it is computed (cg_debug_value): a scalar in a
 * register is that register; a scalar in memory, or a tensor of literal
 * shape (a C array of that shape), is the memory it is in; a tensor of
 * symbolic shape is a pointer to its first element (`print *x@4`). So are
 * the parameters (cg_debug_params). Values fused into the loop of their
 * user have neither and show no variable. The module is kept in LLVM's
 * older debug-info form, with llvm.dbg.value calls, which cg_split.c can
 * delete from the pieces it moves out of a body (the C API has no way to
 * remove the newer form's records).
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

/* A variable of the function being generated: one per scope, name and
 * type, however many values (a var's assignments) it takes. */
typedef struct Var {
  LLVMMetadataRef scope, var;
  const char *name;
  Type type;
} Var;

struct CgDebug {
  LLVMDIBuilderRef di;
  LLVMMetadataRef file, fn_type;
  LLVMMetadataRef sp; /* the function being generated */
  int line;           /* its line: for code with no line of its own */
  bool optimized;
  Inlined *inl;
  size_t ninl, capinl; /* capinl a power of two */
  LLVMMetadataRef basic[DT_BOOL + 1]; /* float, double, int, bool */
  LLVMMetadataRef plain, deref;       /* DIExpressions: the value; the memory it points to */
  LLVMValueRef dbg_value;             /* llvm.dbg.value */
  Var *vars;
  int nvars, capvars;
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
                                 LLVMDWARFEmissionFull, 0, 1, 0, "", 0, "", 0);
  LLVMSetIsNewDbgInfoFormat(g->mod, 0); /* llvm.dbg.value calls (see the top) */
  static const struct {
    DType dt;
    const char *name;
    uint64_t bits;
    unsigned encoding; /* DW_ATE_float, DW_ATE_signed, DW_ATE_boolean */
  } basics[] = {{DT_F32, "float", 32, 4}, {DT_F64, "double", 64, 4}, {DT_I32, "int", 32, 5},
                {DT_BOOL, "bool", 8, 2}};
  for (size_t k = 0; k < sizeof basics / sizeof basics[0]; k++)
    d->basic[basics[k].dt] = LLVMDIBuilderCreateBasicType(
        d->di, basics[k].name, strlen(basics[k].name), basics[k].bits, basics[k].encoding,
        LLVMDIFlagZero);
  uint64_t deref = 0x06; /* DW_OP_deref */
  d->plain = LLVMDIBuilderCreateExpression(d->di, NULL, 0);
  d->deref = LLVMDIBuilderCreateExpression(d->di, &deref, 1);
  LLVMTypeRef md = LLVMMetadataTypeInContext(g->ctx), mds[3] = {md, md, md};
  d->dbg_value = LLVMAddFunction(g->mod, "llvm.dbg.value", LLVMFunctionType(g->vd, mds, 3, 0));
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

/* The location of code from i, and the scope it is in: the function's,
 * or that of the .sg function inlined where i came from. */
static LLVMMetadataRef where(Cg *g, const Inst *i, LLVMMetadataRef *scope) {
  CgDebug *d = g->dbg;
  const Loc *l = &i->loc;
  *scope = d->sp;
  if (l->line <= 0)
    return location(g, d->line, 0, d->sp, NULL);
  if (l->src_line <= 0 || !l->inlined)
    return location(g, l->line, l->col, d->sp, NULL);
  *scope = inlined_sp(d, l->inlined, l->inlined_line);
  return location(g, l->src_line, l->src_col, *scope, location(g, l->line, l->col, d->sp, NULL));
}

LLVMMetadataRef cg_debug_at(Cg *g, const Inst *i) {
  CgDebug *d = g->dbg;
  if (!d || !d->sp)
    return NULL;
  LLVMMetadataRef prev = LLVMGetCurrentDebugLocation2(g->b), scope;
  LLVMSetCurrentDebugLocation2(g->b, where(g, i, &scope));
  return prev;
}

/* The DWARF type of a value: its element's, an array of its literal
 * shape, or for a symbolic shape a pointer to its elements. */
static LLVMMetadataRef type_of(CgDebug *d, const Type *t, bool *in_memory) {
  LLVMMetadataRef elem = d->basic[t->dtype];
  *in_memory = t->rank == 0;
  if (t->rank == 0)
    return elem;
  LLVMMetadataRef sub[IR_MAX_RANK];
  uint64_t bits = (uint64_t)cg_elem_size(t->dtype) * 8;
  for (int k = 0; k < t->rank; k++) {
    if (t->dim[k].sym >= 0 || t->dim[k].size <= 0)
      return LLVMDIBuilderCreatePointerType(d->di, elem, 64, 0, 0, NULL, 0);
    sub[k] = LLVMDIBuilderGetOrCreateSubrange(d->di, 0, t->dim[k].size);
    bits *= (uint64_t)t->dim[k].size;
  }
  *in_memory = true;
  return LLVMDIBuilderCreateArrayType(d->di, bits, 0, elem, sub, (unsigned)t->rank);
}

/* The variable `name` of type t in scope (one per function). */
static LLVMMetadataRef variable(CgDebug *d, LLVMMetadataRef scope, const char *name,
                                const Type *t, int line, int arg, bool *in_memory) {
  LLVMMetadataRef ty = type_of(d, t, in_memory);
  for (int k = 0; k < d->nvars; k++)
    if (d->vars[k].scope == scope && strcmp(d->vars[k].name, name) == 0 &&
        ir_type_eq(&d->vars[k].type, t))
      return d->vars[k].var;
  if (d->nvars == d->capvars) {
    d->capvars = d->capvars ? 2 * d->capvars : 16;
    Var *grown = xmalloc(sizeof *grown * (size_t)d->capvars);
    if (d->nvars)
      memcpy(grown, d->vars, sizeof *grown * (size_t)d->nvars);
    free(d->vars);
    d->vars = grown;
  }
  unsigned l = line > 0 ? (unsigned)line : 1;
  LLVMMetadataRef var =
      arg ? LLVMDIBuilderCreateParameterVariable(d->di, scope, name, strlen(name), (unsigned)arg,
                                                 d->file, l, ty, 1, LLVMDIFlagZero)
          : LLVMDIBuilderCreateAutoVariable(d->di, scope, name, strlen(name), d->file, l, ty, 1,
                                            LLVMDIFlagZero, 0);
  d->vars[d->nvars++] = (Var){scope, var, name, *t};
  return var;
}

/* llvm.dbg.value(value, var, expr) at the builder's position. */
static void dbg_value(Cg *g, LLVMValueRef value, LLVMMetadataRef var, LLVMMetadataRef expr,
                      LLVMMetadataRef at) {
  CgDebug *d = g->dbg;
  LLVMValueRef args[3] = {LLVMMetadataAsValue(g->ctx, LLVMValueAsMetadata(value)),
                          LLVMMetadataAsValue(g->ctx, var), LLVMMetadataAsValue(g->ctx, expr)};
  LLVMMetadataRef prev = LLVMGetCurrentDebugLocation2(g->b);
  LLVMSetCurrentDebugLocation2(g->b, at);
  LLVMBuildCall2(g->b, LLVMGlobalGetValueType(d->dbg_value), d->dbg_value, args, 3, "");
  LLVMSetCurrentDebugLocation2(g->b, prev);
}

void cg_debug_value(Body *B, const Inst *i) {
  Cg *g = B->g;
  CgDebug *d = g->dbg;
  if (!d || !d->sp || !i->name || i->op == OP_param || B->par)
    return;
  Slot *s = cg_slot(B, (Inst *)i);
  LLVMValueRef reg = s->scalar ? s->scalar : i->op == OP_arg ? s->reg : NULL; /* (a loop index) */
  LLVMValueRef value = reg ? reg : s->has_buf && !s->internal ? s->buf : NULL;
  if (!value)
    return;
  /* (a block argument is declared by its loop or branch) */
  const Inst *decl = i->op == OP_arg && i->parent ? i->parent->owner : i;
  LLVMMetadataRef scope, at = where(g, decl, &scope);
  const Loc *l = &decl->loc;
  bool in_memory;
  LLVMMetadataRef var = variable(d, scope, i->name, &i->type,
                                 l->src_line > 0 && l->inlined ? l->src_line : l->line, 0,
                                 &in_memory);
  dbg_value(g, value, var, in_memory && !reg ? d->deref : d->plain, at);
}

void cg_debug_params(Body *B) {
  Cg *g = B->g;
  CgDebug *d = g->dbg;
  if (!d || !d->sp)
    return;
  LLVMMetadataRef at = location(g, d->line, 0, d->sp, NULL);
  for (int k = 0; k < B->f->nparams; k++) {
    const Inst *p = B->f->params[k];
    bool in_memory;
    LLVMMetadataRef var = variable(d, d->sp, p->name, &p->type, d->line, k + 1, &in_memory);
    dbg_value(g, B->pslot[k].buf, var, in_memory ? d->deref : d->plain, at);
  }
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
  d->nvars = 0;
}

void cg_debug_finish(Cg *g) {
  CgDebug *d = g->dbg;
  if (!d)
    return;
  LLVMDIBuilderFinalize(d->di);
  LLVMDisposeDIBuilder(d->di);
  free(d->inl);
  free(d->vars);
  free(d);
  g->dbg = NULL;
}
