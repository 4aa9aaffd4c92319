/* LLVM's optimization pipeline over the module, default<On>, and for an
 * object the code generator too, on two threads when the module is big
 * enough to gain from it.
 *
 * The module's functions are split into two halves of about the same
 * size (an export's wrapper stays with its body, which LLVM inlines into
 * it): a copy of the module goes to a second LLVM context (through
 * bitcode: a context belongs to one thread), where the first half's
 * bodies are dropped; the first half stays in the original, where the
 * second half's are. So that either half can call the other's functions,
 * the internal symbols one half uses of the other's are hidden external
 * ones while they are apart. A small function of the other half (a math
 * routine, cg_mathcall.c) keeps its body in both, the other's copy
 * available_externally: it can still be inlined where it is called.
 *
 * Each half is optimized on its own thread. For an object, each is then
 * compiled there too, and the two objects made one (cg_elf.c, which makes
 * those symbols local again). Otherwise (LLVM IR, assembly, the JIT; or if
 * the objects cannot be merged) the second half is linked back into the
 * first, its symbols internal again, the functions put back in their
 * order, and the constants both halves made merged again.
 *
 * Compile times, best of seven alternating with one thread for both:
 * examples/lstm.sg 0.60 -> 0.45 s, contrastive_divergence 0.48 -> 0.36,
 * v2/bow_classifier 0.43 -> 0.34, v2/cd_k 0.43 -> 0.33. The generated
 * code ran at the same speed (bench W1-W6, bench/lstm).
 *
 * Requires: a verified module whose functions are all sgc's (cg.c's build).
 * Keeps: the same functions and symbols, each optimized at the -O level;
 * the output does not depend on the threads' timing. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Linker.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg_internal.h"

/* Instructions from which a module is split (at 600, the smaller
 * examples compiled no faster). A function under SMALL_FN instructions
 * is kept in both halves. */
enum { SPLIT_MIN = 1500, SMALL_FN = 300 };

/* `passes` (NULL: default<On>, then streaming stores) with the
 * vectorizers and unrolling of level n. */
static LLVMErrorRef run_pipeline(LLVMModuleRef mod, LLVMTargetMachineRef tm, int level,
                                 const char *passes) {
  char dflt[32];
  snprintf(dflt, sizeof dflt, "default<O%d>", level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, level >= 2);
  LLVMPassBuilderOptionsSetSLPVectorization(po, level >= 2);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, level >= 2);
  LLVMErrorRef e = LLVMRunPasses(mod, passes ? passes : dflt, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (!e && !passes && level >= 2)
    cg_stream_stores(mod, tm);
  return e;
}

static int64_t count_insts(LLVMValueRef fn) {
  int64_t n = 0;
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b; b = LLVMGetNextBasicBlock(b))
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
      n++;
  return n;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xmalloc(n), s, n);
}

static bool is_local(LLVMLinkage l) { return l == LLVMInternalLinkage || l == LLVMPrivateLinkage; }

/* The plan: which defined functions (by name) the second half optimizes,
 * and which symbols were internal (restored after the link). */
typedef struct Plan {
  char **order; /* every defined function, in module order */
  int norder;
  char **second;
  int nsecond;
  char **local;
  LLVMLinkage *was;
  int nlocal;
} Plan;

static bool in_second(const Plan *p, const char *name) {
  for (int k = 0; k < p->nsecond; k++)
    if (strcmp(p->second[k], name) == 0)
      return true;
  return false;
}

static const char *name_of(LLVMValueRef v) {
  size_t len;
  return LLVMGetValueName2(v, &len);
}

/* An export's wrapper f and its body f.body (which LLVM inlines into f)
 * go to the same half. */
static bool wrapper_of(const char *f, const char *body) {
  size_t n = strlen(f);
  return strncmp(f, body, n) == 0 && strcmp(body + n, ".body") == 0;
}

/* The halves: units (a function, or an export's wrapper with its body)
 * by size, each to the lighter half. Notes every defined function's name
 * in module order. Returns false when there is nothing worth splitting. */
static bool plan_split(LLVMModuleRef mod, Plan *p) {
  int n = 0;
  int64_t total = 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn))
      n++, total += count_insts(fn);
  if (n < 2 || total < SPLIT_MIN)
    return false;
  LLVMValueRef *fns = xmalloc(sizeof(LLVMValueRef) * (size_t)n);
  int64_t *size = xmalloc(sizeof(int64_t) * (size_t)n);
  int *unit = xmalloc(sizeof(int) * (size_t)n), *half = xmalloc(sizeof(int) * (size_t)n);
  int k = 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn))
      fns[k] = fn, size[k] = count_insts(fn), unit[k] = k, half[k] = -1, k++;
  for (int a = 0; a < n; a++) /* a body joins its wrapper's unit */
    for (int b = 0; b < n; b++)
      if (a != b && wrapper_of(name_of(fns[a]), name_of(fns[b])))
        unit[b] = a;
  for (int b = 0; b < n; b++)
    if (unit[b] != b)
      size[unit[b]] += size[b], size[b] = 0;
  int64_t load[2] = {0, 0};
  for (;;) {
    int big = -1;
    for (int u = 0; u < n; u++)
      if (unit[u] == u && half[u] < 0 && (big < 0 || size[u] > size[big]))
        big = u;
    if (big < 0)
      break;
    half[big] = load[1] < load[0];
    load[half[big]] += size[big];
  }
  p->order = xmalloc(sizeof(char *) * (size_t)n);
  p->second = xmalloc(sizeof(char *) * (size_t)n);
  p->norder = n;
  for (int k2 = 0; k2 < n; k2++) {
    p->order[k2] = xstrdup(name_of(fns[k2]));
    if (half[unit[k2]] == 1)
      p->second[p->nsecond++] = xstrdup(name_of(fns[k2]));
  }
  free(fns), free(size), free(unit), free(half);
  return load[0] > 0 && load[1] > 0;
}

/* Where v is used: bit 0, in a function of the first half; bit 1, of
 * the second (both for a use in a global's initializer). */
static int used_in(const Plan *p, LLVMValueRef v) {
  int where = 0;
  for (LLVMUseRef u = LLVMGetFirstUse(v); u && where != 3; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    if (LLVMIsAInstruction(user)) {
      LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInstructionParent(user));
      where |= in_second(p, name_of(fn)) ? 2 : 1;
    } else if (LLVMIsAGlobalValue(user)) {
      where = 3;
    } else {
      where |= used_in(p, user); /* a constant expression */
    }
  }
  return where;
}

/* An internal symbol the other half uses becomes a hidden external one
 * (named, if it was not), noted in p to be restored: a function used by
 * the other half's, a global variable used by the second half (the first
 * keeps the definitions). The rest stay internal: an export's body, used
 * by its wrapper alone, is still inlined into it. */
static void expose_locals(LLVMModuleRef mod, Plan *p) {
  int cap = 16, anon = 0;
  p->local = xmalloc(sizeof(char *) * (size_t)cap);
  p->was = xmalloc(sizeof(LLVMLinkage) * (size_t)cap);
  p->nlocal = 0;
  for (int kind = 0; kind < 2; kind++)
    for (LLVMValueRef v = kind ? LLVMGetFirstGlobal(mod) : LLVMGetFirstFunction(mod); v;
         v = kind ? LLVMGetNextGlobal(v) : LLVMGetNextFunction(v)) {
      if (LLVMIsDeclaration(v) || !is_local(LLVMGetLinkage(v)))
        continue;
      int other = kind ? 2 : in_second(p, name_of(v)) ? 1 : 2;
      if (!(used_in(p, v) & other))
        continue;
      if (!*name_of(v)) {
        char name[32];
        snprintf(name, sizeof name, "sg.anon.%d", anon++);
        LLVMSetValueName2(v, name, strlen(name));
      }
      if (p->nlocal == cap) {
        cap *= 2;
        p->local = xrealloc(p->local, sizeof(char *) * (size_t)cap);
        p->was = xrealloc(p->was, sizeof(LLVMLinkage) * (size_t)cap);
      }
      p->was[p->nlocal] = LLVMGetLinkage(v);
      p->local[p->nlocal++] = xstrdup(name_of(v));
      LLVMSetLinkage(v, LLVMExternalLinkage);
      LLVMSetVisibility(v, LLVMHiddenVisibility);
    }
}

static void restore_locals(LLVMModuleRef mod, const Plan *p) {
  for (int k = 0; k < p->nlocal; k++) {
    LLVMValueRef v = LLVMGetNamedFunction(mod, p->local[k]);
    if (!v)
      v = LLVMGetNamedGlobal(mod, p->local[k]);
    if (!v)
      continue; /* optimized away */
    LLVMSetVisibility(v, LLVMDefaultVisibility);
    LLVMSetLinkage(v, p->was[k]);
  }
}

static bool exposed(LLVMValueRef v) {
  return LLVMGetLinkage(v) == LLVMExternalLinkage && LLVMGetVisibility(v) == LLVMHiddenVisibility;
}

/* Keep the functions of one half (second or not). The other half's that
 * this half uses become declarations, or available_externally copies when
 * small; the rest go. In the second half, global variables are the
 * first's: exposed ones become declarations (available_externally when
 * constant), internal ones it does not use go. */
static void keep_half(LLVMModuleRef mod, const Plan *p, bool second) {
  int n = 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    n++;
  for (LLVMValueRef v = LLVMGetFirstGlobal(mod); v; v = LLVMGetNextGlobal(v))
    n++;
  LLVMValueRef *drop = xmalloc(sizeof(LLVMValueRef) * (size_t)(n ? n : 1));
  int ndrop = 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn) || in_second(p, name_of(fn)) == second)
      continue;
    if (exposed(fn) && count_insts(fn) < SMALL_FN)
      LLVMSetLinkage(fn, LLVMAvailableExternallyLinkage);
    else
      drop[ndrop++] = fn;
  }
  for (int k = 0; k < ndrop; k++) { /* a declaration in its place, if used */
    LLVMValueRef fn = drop[k];
    if (LLVMGetFirstUse(fn)) {
      char *name = xstrdup(name_of(fn));
      LLVMSetValueName2(fn, "", 0);
      LLVMValueRef decl = LLVMAddFunction(mod, name, LLVMGlobalGetValueType(fn));
      LLVMSetVisibility(decl, LLVMGetVisibility(fn));
      LLVMReplaceAllUsesWith(fn, decl);
      free(name);
    }
    LLVMDeleteFunction(fn);
  }
  ndrop = 0;
  for (LLVMValueRef v = second ? LLVMGetFirstGlobal(mod) : NULL; v; v = LLVMGetNextGlobal(v)) {
    if (LLVMIsDeclaration(v))
      continue;
    if (is_local(LLVMGetLinkage(v)) && !LLVMGetFirstUse(v))
      drop[ndrop++] = v;
    else if (exposed(v) && LLVMIsGlobalConstant(v))
      LLVMSetLinkage(v, LLVMAvailableExternallyLinkage);
    else if (exposed(v))
      LLVMSetInitializer(v, NULL);
  }
  for (int k = 0; k < ndrop; k++)
    LLVMDeleteGlobal(drop[k]);
  free(drop);
}

/* An LLVM error as a message of ours (NULL: none). */
static char *message_of(LLVMErrorRef e) {
  if (!e)
    return NULL;
  char *msg = LLVMGetErrorMessage(e), *r = xstrdup(msg);
  LLVMDisposeErrorMessage(msg);
  return r;
}

/* The second half, on its own thread and context: optimized, its bitcode
 * kept (to link back), and when asked compiled to an object there too. */
struct CgSecond {
  Plan plan;
  LLVMMemoryBufferRef whole; /* the whole module, exposed (read by the thread) */
  const char *bc;
  size_t len;
  pthread_t thread;
  bool running;
  LLVMTargetMachineRef tm;
  int level;
  bool object;
  LLVMMemoryBufferRef out, obj; /* its optimized bitcode, its object */
  char *err;
};

static void *optimize_second(void *arg) {
  CgSecond *s = arg;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMMemoryBufferRef in = LLVMCreateMemoryBufferWithMemoryRange(s->bc, s->len, "second", 0);
  LLVMModuleRef mod;
  if (LLVMParseBitcodeInContext2(ctx, in, &mod)) {
    s->err = xstrdup("cannot read the module back");
  } else {
    keep_half(mod, &s->plan, true);
    s->err = message_of(run_pipeline(mod, s->tm, s->level, NULL));
    if (!s->err)
      s->out = LLVMWriteBitcodeToMemoryBuffer(mod);
    if (!s->err && s->object) {
      cg_split_blocks(mod);
      char *msg = NULL;
      if (LLVMTargetMachineEmitToMemoryBuffer(s->tm, mod, LLVMObjectFile, &msg, &s->obj))
        s->obj = NULL; /* the caller compiles the module whole */
      LLVMDisposeMessage(msg);
    }
    LLVMDisposeModule(mod);
  }
  LLVMDisposeMemoryBuffer(in);
  LLVMContextDispose(ctx);
  return NULL;
}

static void free_plan(Plan *p) {
  for (int k = 0; k < p->norder; k++)
    free(p->order[k]);
  free(p->order);
  for (int k = 0; k < p->nsecond; k++)
    free(p->second[k]);
  for (int k = 0; k < p->nlocal; k++)
    free(p->local[k]);
  free(p->second);
  free(p->local);
  free(p->was);
}

/* Two cores this process may run on (taskset, a container's CPU set). */
static bool two_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return CPU_COUNT(&set) >= 2;
  return sysconf(_SC_NPROCESSORS_ONLN) >= 2;
}

/* Moves fn to the end of the module's functions: a new function takes
 * over its name, attributes, arguments' uses and blocks (the C API has no
 * call that reorders functions). */
static void move_to_end(LLVMModuleRef mod, LLVMValueRef fn) {
  char *name = xstrdup(name_of(fn));
  LLVMSetValueName2(fn, "", 0);
  LLVMValueRef nf = LLVMAddFunction(mod, name, LLVMGlobalGetValueType(fn));
  free(name);
  LLVMSetLinkage(nf, LLVMGetLinkage(fn));
  LLVMSetVisibility(nf, LLVMGetVisibility(fn));
  LLVMSetUnnamedAddress(nf, LLVMGetUnnamedAddress(fn));
  LLVMSetFunctionCallConv(nf, LLVMGetFunctionCallConv(fn));
  LLVMSetAlignment(nf, LLVMGetAlignment(fn));
  if (LLVMGetSection(fn))
    LLVMSetSection(nf, LLVMGetSection(fn));
  unsigned nparams = LLVMCountParams(fn);
  for (unsigned k = 0; k <= nparams + 1; k++) { /* return, parameters, function */
    LLVMAttributeIndex at = k == nparams + 1 ? (LLVMAttributeIndex)LLVMAttributeFunctionIndex : k;
    unsigned n = LLVMGetAttributeCountAtIndex(fn, at);
    if (!n)
      continue;
    LLVMAttributeRef *attrs = xmalloc(sizeof(LLVMAttributeRef) * n);
    LLVMGetAttributesAtIndex(fn, at, attrs);
    for (unsigned a = 0; a < n; a++)
      LLVMAddAttributeAtIndex(nf, at, attrs[a]);
    free(attrs);
  }
  size_t nmd;
  LLVMValueMetadataEntry *md = LLVMGlobalCopyAllMetadata(fn, &nmd);
  for (unsigned k = 0; k < nmd; k++)
    LLVMGlobalSetMetadata(nf, LLVMValueMetadataEntriesGetKind(md, k),
                          LLVMValueMetadataEntriesGetMetadata(md, k));
  if (md)
    LLVMDisposeValueMetadataEntries(md);
  for (unsigned k = 0; k < nparams; k++) {
    size_t len;
    const char *pn = LLVMGetValueName2(LLVMGetParam(fn, k), &len);
    LLVMSetValueName2(LLVMGetParam(nf, k), pn, len);
    LLVMReplaceAllUsesWith(LLVMGetParam(fn, k), LLVMGetParam(nf, k));
  }
  for (LLVMBasicBlockRef b; (b = LLVMGetFirstBasicBlock(fn));) {
    LLVMRemoveBasicBlockFromParent(b);
    LLVMAppendExistingBasicBlock(nf, b);
  }
  LLVMReplaceAllUsesWith(fn, nf);
  LLVMDeleteFunction(fn);
}


/* Waits for the second half's thread; then its error, if any, is s->err. */
static void wait_second(CgSecond *s) {
  if (s->running)
    pthread_join(s->thread, NULL);
  s->running = false;
  if (s->whole)
    LLVMDisposeMemoryBuffer(s->whole);
  s->whole = NULL;
}

char *cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, LLVMTargetMachineRef tm2,
                  const CgOptions *o, CgSecond **halves) {
  CgSecond *s = xmalloc(sizeof *s);
  memset(s, 0, sizeof *s);
  if (halves)
    *halves = NULL;
  s->tm = tm2; /* ours now */
  if (o->opt_level == 0 || o->debug || !tm2 || !two_cores() || !plan_split(mod, &s->plan)) {
    cg_second_free(s);
    return message_of(run_pipeline(mod, tm, o->opt_level, NULL));
  }
  expose_locals(mod, &s->plan);
  s->whole = LLVMWriteBitcodeToMemoryBuffer(mod);
  s->bc = LLVMGetBufferStart(s->whole);
  s->len = LLVMGetBufferSize(s->whole);
  s->level = o->opt_level;
  s->object = halves != NULL;
  s->running = pthread_create(&s->thread, NULL, optimize_second, s) == 0;
  if (!s->running)
    optimize_second(s);
  keep_half(mod, &s->plan, false);
  char *err = message_of(run_pipeline(mod, tm, o->opt_level, NULL));
  if (!err && halves) {
    *halves = s; /* still running, maybe: the caller compiles the first half meanwhile */
    return NULL;
  }
  wait_second(s);
  if (!err)
    err = cg_second_link(mod, s, tm, o);
  cg_second_free(s);
  return err;
}

char *cg_second_link(LLVMModuleRef mod, CgSecond *s, LLVMTargetMachineRef tm, const CgOptions *o) {
  wait_second(s);
  if (s->err) {
    char *err = s->err;
    s->err = NULL;
    return err;
  }
  LLVMModuleRef second;
  if (!s->out || LLVMParseBitcodeInContext2(LLVMGetModuleContext(mod), s->out, &second) ||
      LLVMLinkModules2(mod, second))
    return xstrdup("cannot link the module's halves");
  /* the functions in the order they had (the second half's are where the
   * linker put them) */
  for (int k = 0; k < s->plan.norder; k++) {
    LLVMValueRef fn = LLVMGetNamedFunction(mod, s->plan.order[k]);
    if (fn && !LLVMIsDeclaration(fn))
      move_to_end(mod, fn);
  }
  restore_locals(mod, &s->plan);
  /* what both halves inlined everywhere is dead now that it is internal;
   * constants both made (function names of messages) are one again */
  return message_of(run_pipeline(mod, tm, o->opt_level, "globaldce,constmerge"));
}

bool cg_second_merge(CgSecond *s, const char *obj, size_t len, char **out, size_t *outlen) {
  wait_second(s);
  if (!s->obj)
    return false;
  return cg_elf_merge(obj, len, LLVMGetBufferStart(s->obj), LLVMGetBufferSize(s->obj),
                      (const char *const *)s->plan.local, s->plan.nlocal, out, outlen);
}

void cg_second_free(CgSecond *s) {
  if (!s)
    return;
  wait_second(s);
  if (s->tm)
    LLVMDisposeTargetMachine(s->tm);
  free_plan(&s->plan);
  free(s->err);
  if (s->out)
    LLVMDisposeMemoryBuffer(s->out);
  if (s->obj)
    LLVMDisposeMemoryBuffer(s->obj);
  free(s);
}
