/* Alias scopes for one flat loop: every buffer a statement's loop (or a
 * loop group's) stores to is its own memory while the loop runs (a value
 * being computed shares bytes with nothing live, views only alias values
 * computed before), but LLVM sees temporaries as offsets into one block
 * of workspace and loop state as pointers swapped every iteration. Without
 * help it vectorizes such a loop only behind run-time overlap checks, and
 * past eight pointers not at all (an LSTM step's fused group stores ten
 * buffers and reads twenty). So each access of the loop is noted with the
 * buffer it goes through (the pointer value the body uses for it), and when
 * the loop is closed every stored buffer gets a scope of its own: stores
 * and loads through any other buffer are marked as not aliasing it.
 *
 * The claim covers only the accesses of that one loop: each loop gets a
 * fresh domain, so nothing is said about accesses of other statements.
 * And only one run of it: where the statement is itself in a loop body,
 * its buffers may be others at the next step (loop state swapped between
 * two buffers, read through `cur` and written through `nxt`), but LLVM
 * holds scopes for every dynamic instance, so a load at step t + 1 was
 * taken not to alias the store of step t (-O2 read stale state: seed
 * 92130). In a loop body the scopes are therefore declared where the
 * statement starts (llvm.experimental.noalias.scope.decl), which makes
 * them hold within one run only. */
#include <stdio.h>
#include <string.h>

#include "cg_internal.h"

typedef struct Access {
  LLVMValueRef inst, key;
  bool store;
} Access;

struct CgAlias {
  Access *a;
  int n, cap;
  LLVMBasicBlockRef block; /* where the statement starts: after `after` */
  LLVMValueRef after;      /* in block, or NULL: at its start */
  bool in_loop;            /* the statement may run again in this call */
  CgAlias *saved;
};

void cg_alias_begin(Body *B) {
  CgAlias *al = xmalloc(sizeof *al);
  memset(al, 0, sizeof *al);
  al->block = LLVMGetInsertBlock(B->g->b);
  al->after = LLVMGetLastInstruction(al->block);
  al->in_loop = B->loop_depth > 0;
  al->saved = B->alias;
  B->alias = al;
}

void cg_alias_note(Body *B, LLVMValueRef inst, LLVMValueRef key, bool store) {
  CgAlias *al = B->alias;
  if (!al)
    return;
  if (al->n == al->cap) {
    al->cap = al->cap ? 2 * al->cap : 16;
    al->a = xrealloc(al->a, sizeof(Access) * (size_t)al->cap);
  }
  al->a[al->n++] = (Access){inst, key, store};
}

static LLVMValueRef md(Cg *g, LLVMMetadataRef *ops, int n) {
  return LLVMMetadataAsValue(g->ctx, LLVMMDNodeInContext2(g->ctx, ops, (size_t)n));
}

/* A declaration of each scope where the statement starts. */
static void declare_scopes(Cg *g, CgAlias *al, LLVMMetadataRef *scope, int n) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
  LLVMValueRef next = al->after ? LLVMGetNextInstruction(al->after) : LLVMGetFirstInstruction(al->block);
  if (next)
    LLVMPositionBuilderBefore(b, next);
  else
    LLVMPositionBuilderAtEnd(b, al->block);
  static const char name[] = "llvm.experimental.noalias.scope.decl";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, NULL, 0);
  LLVMTypeRef fty = LLVMIntrinsicGetType(g->ctx, id, NULL, 0);
  for (int j = 0; j < n; j++) {
    LLVMValueRef arg = md(g, &scope[j], 1);
    LLVMBuildCall2(b, fty, fn, &arg, 1, "");
  }
  LLVMDisposeBuilder(b);
}

void cg_alias_end(Body *B) {
  Cg *g = B->g;
  CgAlias *al = B->alias;
  B->alias = al->saved;
  /* the distinct stored buffers, each with a scope */
  LLVMValueRef *keys = xmalloc(sizeof(LLVMValueRef) * (size_t)(al->n + 1));
  LLVMMetadataRef *scope = xmalloc(sizeof(LLVMMetadataRef) * (size_t)(al->n + 1));
  int nk = 0;
  for (int k = 0; k < al->n; k++) {
    if (!al->a[k].store)
      continue;
    bool seen = false;
    for (int j = 0; j < nk && !seen; j++)
      seen = keys[j] == al->a[k].key;
    if (!seen)
      keys[nk++] = al->a[k].key;
  }
  if (nk > 0) {
    char name[64];
    int id = g->alias_loops++;
    snprintf(name, sizeof name, "sgc.loop%d", id);
    LLVMMetadataRef dname = LLVMMDStringInContext2(g->ctx, name, strlen(name));
    LLVMMetadataRef domain = LLVMMDNodeInContext2(g->ctx, &dname, 1);
    for (int j = 0; j < nk; j++) {
      snprintf(name, sizeof name, "sgc.loop%d.buf%d", id, j);
      LLVMMetadataRef sc[2] = {LLVMMDStringInContext2(g->ctx, name, strlen(name)), domain};
      scope[j] = LLVMMDNodeInContext2(g->ctx, sc, 2);
    }
    if (al->in_loop)
      declare_scopes(g, al, scope, nk);
    unsigned kscope = LLVMGetMDKindIDInContext(g->ctx, "alias.scope", 11);
    unsigned knoalias = LLVMGetMDKindIDInContext(g->ctx, "noalias", 7);
    LLVMMetadataRef *others = xmalloc(sizeof(LLVMMetadataRef) * (size_t)(nk + 1));
    for (int k = 0; k < al->n; k++) {
      int own = -1, no = 0;
      for (int j = 0; j < nk; j++) {
        if (keys[j] == al->a[k].key)
          own = j;
        else
          others[no++] = scope[j];
      }
      if (own >= 0)
        LLVMSetMetadata(al->a[k].inst, kscope, md(g, &scope[own], 1));
      if (no > 0)
        LLVMSetMetadata(al->a[k].inst, knoalias, md(g, others, no));
    }
    free(others);
  }
  free(keys);
  free(scope);
  free(al->a);
  free(al);
}
