/* A custom op (a call of a function with derivative rules, ir.h) is its
 * body once every derivative is built: put the body in its place and drop
 * the rules, so the optimizer and code generator never see one.
 * Requires: the AD passes have run (before them, the rules carry meaning).
 * Keeps: every value's type and bits. */
#include "passes.h"

void pass_strip_custom(Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    PtrVec ops = {0};
    for (Inst *i = f->first; i; i = ir_walk_next(i))
      if (i->op == OP_custom)
        vec_push(&ops, i);
    /* outer ones first: an inner op moves out with its body, then its own
     * body moves to where it went */
    for (int k = 0; k < ops.len; k++) {
      Inst *op = ops.data[k];
      Region *body = &op->regions[0];
      for (Inst *i = body->first, *next; i; i = next) {
        next = i->next;
        ir_unlink(f, i);
        ir_insert_before(f, op, i);
      }
      body->first = body->last = NULL;
      while (op->next && op->next->op == OP_proj && op->next->args[0] == op) {
        Inst *p = op->next;
        ir_forward(p, body->yields[p->index]);
        ir_unlink(f, p);
      }
      ir_unlink(f, op);
    }
    vec_free(&ops);
    ir_resolve_func(f);
  }
}
