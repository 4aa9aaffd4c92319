/* Rematerialization: recompute instead of store, where recomputing is
 * cheaper.
 *
 * The rule: an instruction that costs at most one arithmetic operation per
 * element (F_CHEAP in ir/ops.def: neg, add, a comparison, select, ..., or a
 * broadcast/transpose, which cost none) and whose operands are all already in memory or free (parameters,
 * literals, matmul and reduction results, or broadcasts of those) is copied
 * once per use. Each copy then fuses into its user's loop (codegen/cg_func.c
 * gives memory to any non-trivial value with several users): one cheap
 * operation on operands that are being read anyway replaces a store and a
 * reload per use. Anything costlier (exp, log, tanh, div, ...) keeps one
 * computed copy, reused by every user: CSE has already merged the adjoint's
 * recomputations of forward values into them.
 *
 * A value that some user reads from memory (a matmul operand, say) is
 * stored anyway and not copied.
 * Copies go right before their users in the same block; users inside a
 * nested region keep reading the original (a copy there would run once per
 * iteration).
 * Requires: to run last (CSE would undo it). Keeps: every value's bits. */
#include "passes.h"

static bool in_memory_or_free(const Inst *x) {
  while (x->op == OP_broadcast || x->op == OP_reshape)
    x = x->args[0];
  return x->op == OP_param || x->op == OP_const || x->op == OP_count || x->op == OP_arg ||
         x->op == OP_proj ||
         ir_ops[x->op].shape == SH_MATMUL || ir_ops[x->op].shape == SH_REDUCE;
}

/* Users that read their operand from memory (codegen/cg_func.c gives it
 * some: the GEMM kernel reads arrays, transpose and reshape are views,
 * broadcast reads a stored value): a value with such a user is stored
 * anyway, so a copy per user would only store it twice. */
static bool reads_memory(const Inst *u) {
  return ir_ops[u->op].shape == SH_MATMUL || u->op == OP_transpose || u->op == OP_reshape ||
         u->op == OP_broadcast;
}

void pass_remat(Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    ir_count_uses(f);
    for (Inst *i = f->first; i; i = ir_walk_next(i))
      i->aux = NULL;
    for (Inst *u = f->first; u; u = ir_walk_next(u))
      if (reads_memory(u))
        for (int k = 0; k < u->nargs; k++)
          u->args[k]->aux = u;
    for (Inst *i = f->first; i; i = ir_walk_next(i)) {
      if (i->nuses < 2 || !ir_op_is(i->op, F_CHEAP) || i->aux)
        continue;
      bool ok = true;
      for (int k = 0; k < i->nargs; k++)
        ok &= in_memory_or_free(i->args[k]);
      if (!ok)
        continue;
      /* Give every user but the first its own copy, placed just before it. */
      bool first = true;
      for (Inst *u = i->next; u; u = u->next)
        for (int k = 0; k < u->nargs; k++) {
          if (u->args[k] != i)
            continue;
          if (first) {
            first = false;
            continue;
          }
          Builder b = {m, f, u, i->loc, NULL};
          u->args[k] = ir_clone_inst(&b, i, i->args);
        }
    }
  }
}
