/* Common-subexpression elimination: of two identical instructions (same op,
 * operands, attributes and type), the later one is replaced by the earlier.
 * Commutative ops match with their operands in either order. This is also
 * how the adjoint reuses forward values: an adjoint rule that recomputes
 * something the primal sweep already has (a 1/x, a broadcast, a literal)
 * collapses onto it here.
 * Requires: nothing. Keeps: every value; removes only duplicates. */
#include <string.h>

#include "passes.h"

static bool same(const Inst *a, const Inst *b) {
  if (a->op != b->op || a->nargs != b->nargs || !ir_type_eq(&a->type, &b->type))
    return false;
  bool direct = true, swapped = a->nargs == 2 && (ir_ops[a->op].flags & F_COMMUTE);
  for (int k = 0; k < a->nargs; k++)
    direct &= a->args[k] == b->args[k];
  if (swapped)
    swapped = a->args[0] == b->args[1] && a->args[1] == b->args[0];
  if (!direct && !swapped)
    return false;
  if (memcmp(&a->num, &b->num, sizeof a->num) != 0 || a->axes != b->axes ||
      a->callee != b->callee || a->wrt != b->wrt)
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

void pass_cse(Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    int n = ir_num_insts(f), cap = 16;
    while (cap < 2 * n)
      cap *= 2;
    Inst **table = xmalloc(sizeof(Inst *) * (size_t)cap);
    memset(table, 0, sizeof(Inst *) * (size_t)cap);
    for (Inst *i = f->first, *next; i; i = next) {
      next = i->next;
      ir_resolve_args(i);
      if (i->op == OP_call || i->op == OP_grad)
        continue;
      size_t h = (size_t)hash(i) & (size_t)(cap - 1);
      while (table[h] && !same(table[h], i))
        h = (h + 1) & (size_t)(cap - 1);
      if (table[h]) {
        ir_forward(i, table[h]);
        ir_unlink(f, i);
      } else {
        table[h] = i;
      }
    }
    ir_resolve_func(f);
    free(table);
  }
}
