/* Common-subexpression elimination: of two identical instructions (same op,
 * operands, attributes and type), the later one is replaced by the earlier.
 * Commutative ops match with their operands in either order. This is also
 * how the adjoint reuses forward values: an adjoint rule that recomputes
 * something the primal sweep already has (a 1/x, a broadcast, a literal)
 * collapses onto it here.
 * Scoped by regions: an instruction inside a loop or branch may be replaced
 * by an identical one before the region op (which it sees), never the other
 * way, and what a region defines is forgotten when the region ends.
 * Requires: nothing. Keeps: every value; removes only duplicates. */
#include <string.h>

#include "passes.h"

static bool same(const Inst *a, const Inst *b) {
  if (a->op != b->op || a->nargs != b->nargs || !ir_type_eq(&a->type, &b->type))
    return false;
  bool direct = true, swapped = a->nargs == 2 && ir_op_is(a->op, F_COMMUTE);
  for (int k = 0; k < a->nargs; k++)
    direct &= a->args[k] == b->args[k];
  if (swapped)
    swapped = a->args[0] == b->args[1] && a->args[1] == b->args[0];
  if (!direct && !swapped)
    return false;
  if (memcmp(&a->num, &b->num, sizeof a->num) != 0 || a->axes != b->axes ||
      a->callee != b->callee || a->wrt != b->wrt || a->index != b->index)
    return false;
  if (a->op == OP_transpose && memcmp(a->perm, b->perm, sizeof a->perm) != 0)
    return false;
  if (a->op == OP_count && !ir_type_eq(&a->attr, &b->attr))
    return false;
  return true;
}

static uint64_t hash(const Inst *i) {
  uint64_t h = (uint64_t)i->op * 0x9E3779B97F4A7C15ull;
  uint64_t args = 0;
  for (int k = 0; k < i->nargs; k++) /* order-independent, for commutative ops */
    args += (uint64_t)(uintptr_t)i->args[k] * 0xBF58476D1CE4E5B9ull;
  uint64_t bits;
  memcpy(&bits, &i->num, sizeof bits);
  h ^= args + bits + i->axes + (uint64_t)i->type.rank * 31;
  return h ^ (h >> 29);
}

/* Open addressing; entries of a finished region become tombstones. */
typedef struct Table {
  Inst **slot;
  size_t mask;
  PtrVec added; /* slots filled, in order, so a region's can be undone */
} Table;

#define TOMB ((Inst *)1)

static void cse_block(Function *f, Table *t, Inst *first) {
  for (Inst *i = first, *next; i; i = next) {
    next = i->next;
    ir_resolve_args(i);
    if (i->nregions) {
      for (int r = 0; r < i->nregions; r++) {
        int mark = t->added.len;
        cse_block(f, t, i->regions[r].first);
        for (int k = t->added.len - 1; k >= mark; k--)
          *(Inst **)t->added.data[k] = TOMB;
        t->added.len = mark;
      }
      continue;
    }
    if (i->op == OP_call)
      continue;
    size_t h = (size_t)hash(i) & t->mask;
    while (t->slot[h] && (t->slot[h] == TOMB || !same(t->slot[h], i)))
      h = (h + 1) & t->mask;
    if (t->slot[h]) {
      ir_forward(i, t->slot[h]);
      ir_unlink(f, i);
    } else {
      t->slot[h] = i;
      vec_push(&t->added, &t->slot[h]);
    }
  }
}

void pass_cse(Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    int n = ir_num_insts(f), cap = 16;
    while (cap < 2 * n)
      cap *= 2;
    Table t = {xmalloc(sizeof(Inst *) * (size_t)cap), (size_t)cap - 1, {0}};
    memset(t.slot, 0, sizeof(Inst *) * (size_t)cap);
    cse_block(f, &t, f->first);
    ir_resolve_func(f);
    free(t.slot);
    vec_free(&t.added);
  }
}
