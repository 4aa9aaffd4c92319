/* The kernel plan: what code a function body becomes, decided before any
 * of it is emitted, and printed by `sgc --emit-plan`.
 *
 * First cg_memory.c decides which values are computed apart from their
 * readers (Slot.has_buf); every other value is evaluated inside the loop
 * of the kernel that reads it. Then each block -- the function body and,
 * innermost first, every body of a loop or branch -- is given its kernels
 * by the strategies of one table, in its order: each recognizes the
 * kernels it can make of the values no earlier strategy took (a row
 * group takes a softmax's chain before the loop groups could cut it in
 * pieces), and the last one takes each value left over alone. A kernel
 * has a head, where it is emitted, its members (Slot.kernel) and, for each
 * member, its role and where it lives while the kernel runs (Body.member);
 * cg_emit_block (cg_func.c) emits each kernel at its head, and the body's
 * frame (cg_body.c) asks each for the room it reserves in the workspace.
 *
 * Requires: the function verified. Keeps: Slot reset, then the decisions
 * of cg_memory.c and of the strategies; Body.users the readers of each
 * value for the strategies to share. */
#include <string.h>

#include "cg_internal.h"

/* The table: the strategies in the order they choose. */
static const CgStrategy *const strategies[] = {
    &cg_region_strategy, /* loops and branches (cg_region.c) */
    &cg_inplace_strategy, /* updates in place (cg_inplace.c) */
    &cg_rows_strategy,   /* row groups (cg_rows.c) */
    &cg_online_strategy, /* online max and sums (cg_online.c) */
    &cg_batch_strategy,  /* batch groups of small products (cg_batch.c) */
    &cg_flat_strategy,   /* loop groups over a flat index (cg_groups.c) */
    &cg_pair_strategy,   /* a product and its adjoint around a group (cg_gemvpair.c) */
    &cg_nest_strategy,   /* nest groups over one multi-axis space (cg_nest.c) */
    &cg_view_strategy,   /* views of memory: no code (cg_func.c) */
    &cg_own_strategy,    /* every value left, its own loop or call (cg_func.c) */
};

int cg_kernel_new(Body *B, const CgStrategy *st, Inst *head) {
  if (B->nkernels % 64 == 0)
    B->kernels = xrealloc(B->kernels, sizeof(CgKernel) * (size_t)(B->nkernels + 64));
  int k = B->nkernels++;
  B->kernels[k] = (CgKernel){st, head, head, head, NULL};
  return k;
}

void cg_kernel_add(Body *B, int k, Inst *v, int role, CgLives lives) {
  cg_slot(B, v)->kernel = k;
  B->member[v->id] = (CgMember){role, 0, lives};
  if (v->id > B->kernels[k].last->id)
    B->kernels[k].last = v;
  if (v->id < B->kernels[k].first->id)
    B->kernels[k].first = v;
}

CgKernel *cg_kernel_of(Body *B, const Inst *v) {
  if (v->op == OP_param)
    return NULL;
  int k = cg_slot(B, v)->kernel;
  return k >= 0 ? &B->kernels[k] : NULL;
}

/* The blocks inside first's (their bodies' blocks first), then first's own. */
static void plan_block(Body *B, Inst *first) {
  for (Inst *i = first; i; i = i->next)
    for (int r = 0; r < i->nregions; r++)
      plan_block(B, i->regions[r].first);
  for (size_t s = 0; s < sizeof strategies / sizeof *strategies; s++)
    strategies[s]->recognize(B, first);
}

void cg_plan(Body *B, int n) {
  Function *f = B->f;
  cg_memory_plan(B, n);
  B->member = xmalloc(sizeof(CgMember) * (size_t)(n + 1));
  memset(B->member, 0, sizeof(CgMember) * (size_t)(n + 1));
  B->nusers = n + 1;
  B->users = xmalloc(sizeof(PtrVec) * (size_t)B->nusers);
  memset(B->users, 0, sizeof(PtrVec) * (size_t)B->nusers);
  B->stepped_over = xmalloc(sizeof(int) * (size_t)B->nusers);
  for (int k = 0; k < B->nusers; k++)
    B->stepped_over[k] = -1;
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    for (int k = 0; k < i->nargs; k++)
      if (i->args[k]->op != OP_param)
        vec_push(&B->users[i->args[k]->id], i);
  for (int k = 0; k < f->nparams; k++)
    B->pslot[k].kernel = -1;
  plan_block(B, f->first);
  cg_frame_plan(B);
}

void cg_plan_free(Body *B) {
  for (int k = 0; k < B->nkernels; k++)
    free(B->kernels[k].data);
  free(B->kernels);
  free(B->member);
  for (int k = 0; B->users && k < B->nusers; k++)
    vec_free(&B->users[k]);
  free(B->users);
  free(B->stepped_over);
}

/* ---- printing ---- */

static const char *const lives_name[] = {"mem", "reg", "scratch", "frame"};

void cg_plan_value(const Inst *v, FILE *out) {
  if (v->op == OP_param)
    fprintf(out, "%%%s", v->name);
  else
    fprintf(out, "%%%d", v->id);
}

void cg_plan_members(Body *B, const CgKernel *k, FILE *out) {
  int id = (int)(k - B->kernels);
  for (Inst *i = k->first; i; i = i->next) {
    if (cg_slot(B, i)->kernel == id) {
      const CgMember *m = &B->member[i->id];
      fprintf(out, " %%%d", i->id);
      if (k->st->roles)
        fprintf(out, " %s", k->st->roles[m->role]);
      fprintf(out, " %s", lives_name[m->lives]);
    }
    if (i == k->last)
      break;
  }
}

void cg_plan_shape(Body *B, const Type *t, FILE *out) {
  fputs(" [", out);
  for (int d = 0; d < t->rank; d++) {
    if (t->dim[d].sym >= 0)
      fprintf(out, "%s%s", d ? ", " : "", B->g->m->syms[t->dim[d].sym]);
    else
      fprintf(out, "%s%lld", d ? ", " : "", (long long)t->dim[d].size);
  }
  fputs("]", out);
}

void cg_plan_group(Body *B, const CgKernel *k, const Type *space, bool pool, FILE *out) {
  fputs(k->st->name, out);
  cg_plan_shape(B, space, out);
  if (pool)
    fputs(", pool", out);
  fputc(':', out);
  cg_plan_members(B, k, out);
}

static void print_block(Body *B, Inst *first, int depth, FILE *out) {
  for (Inst *i = first; i; i = i->next) {
    CgKernel *k = cg_kernel_of(B, i);
    if (!k || k->head != i)
      continue;
    fprintf(out, "%*s%%%d ", 2 * depth, "", i->id);
    k->st->describe(B, k, out);
    fputc('\n', out);
    for (int r = 0; r < i->nregions; r++) {
      if (i->nregions > 1)
        fprintf(out, "%*s%s:\n", 2 * depth + 2, "",
                i->op == OP_if ? (r ? "else" : "then") : (r ? "body" : "condition"));
      print_block(B, i->regions[r].first, depth + i->nregions, out);
    }
  }
}

static void cg_plan_function(Cg *g, Function *f, FILE *out) {
  int n = ir_renumber(f);
  Body B = {.g = g, .f = f};
  for (Inst *i = f->first; i && !B.has_regions; i = ir_walk_next(i))
    B.has_regions = i->nregions || i->op == OP_proj;
  B.n = n;
  B.slot = xmalloc(sizeof(Slot) * (size_t)(n + 1));
  B.rg = xmalloc(sizeof(*B.rg) * (size_t)(n + 1));
  memset(B.rg, 0, sizeof(*B.rg) * (size_t)(n + 1));
  B.pslot = xmalloc(sizeof(Slot) * (size_t)(f->nparams + 1));
  for (int k = 0; k < f->nparams; k++)
    B.pslot[k] = (Slot){.has_buf = true, .temp = -1, .group = -1, .rows = -1, .online = -1};
  cg_plan(&B, n);
  fprintf(out, "plan @%s\n", f->name);
  print_block(&B, f->first, 1, out);
  cg_plan_free(&B);
  cg_region_free(&B);
  free(B.rg);
  free(B.slot);
  free(B.pslot);
  free(B.pairs);
}

void cg_print_plans(Module *m, long long ad_memory, FILE *out) {
  Cg g = {.m = m, .ad_memory = ad_memory};
  for (Function *f = m->funcs; f; f = f->next)
    if (f->exported)
      cg_plan_function(&g, f, out);
}
