/* The textual IR (spec section 8), one instruction per line:
 *
 *   export func @f(%x: f32[n], %y: const f32) -> (out: f32, d_x: f32[n]) {
 *     %0 = exp %x : f32[n]
 *     %1 = sum %0 {axes=[0]} : f32
 *     ret %1, %0
 *   }
 *
 * Attributes follow the operands in braces. Region ops (ir.h) print their
 * result types as a tuple and their regions as nested blocks, each opening
 * with its block arguments and ending with its yields:
 *
 *   %5 = while %2 : (f32) {
 *   ^(%6: f32):
 *     %7 = lt %6, %2 : bool
 *     yield %7
 *   } do {
 *   ^(%8: f32):
 *     ...
 *     yield %10
 *   }
 *   %11 = proj %5 {index=0} : f32
 *
 * A function with derivative rules names them after its results,
 * `-> f32[n] rules(vjp=@g, jvp=@h) {`, and the custom op that inlines one
 * prints its three regions as `{ body } vjp { ... } jvp { ... }`.
 * A derived function not built yet (ir/derive.c) prints as its definition:
 *
 *   func @loss.grad.w = grad @loss {wrt=0}
 *
 * ir/parse.c reads this format back; printing what it parsed gives the same
 * text. */
#include <string.h>

#include "ir.h"

static void print_type(FILE *out, const Module *m, const Type *t) {
  char buf[512];
  fputs(ir_type_str(m, t, buf, sizeof buf), out);
}

static void print_value(FILE *out, const Inst *v) {
  if (v->op == OP_param)
    fprintf(out, "%%%s", v->name);
  else
    fprintf(out, "%%%d", v->id);
}

static void print_axes(FILE *out, unsigned axes) {
  fputs("{axes=[", out);
  const char *sep = "";
  for (int k = 0; k < IR_MAX_RANK; k++)
    if (axes & (1u << k)) {
      fprintf(out, "%s%d", sep, k);
      sep = ", ";
    }
  fputs("]}", out);
}

static void print_block(FILE *out, const Module *m, const Inst *first, int depth);

static void indent(FILE *out, int depth) {
  for (int k = 0; k < depth; k++)
    fputs("  ", out);
}

static void print_region(FILE *out, const Module *m, const Region *r, int depth) {
  if (r->nparams) {
    indent(out, depth - 1);
    fputs("^(", out);
    for (int k = 0; k < r->nparams; k++) {
      fprintf(out, "%s%%%d: ", k ? ", " : "", r->params[k]->id);
      print_type(out, m, &r->params[k]->type);
    }
    fputs("):\n", out);
  }
  print_block(out, m, r->first, depth);
  indent(out, depth);
  fputs("yield", out);
  for (int k = 0; k < r->nyields; k++) {
    fputs(k ? ", " : " ", out);
    print_value(out, r->yields[k]);
  }
  fputc('\n', out);
}

static void print_inst(FILE *out, const Module *m, const Inst *i, int depth) {
  indent(out, depth);
  fprintf(out, "%%%d = %s", i->id, ir_ops[i->op].name);
  if (i->op == OP_call)
    fprintf(out, " @%s", i->callee->name);
  if (i->op == OP_custom) /* the function it inlines, for messages */
    fprintf(out, " @%s", i->name);
  if (i->op == OP_const)
    fprintf(out, " %.17g", i->num);
  if (i->op == OP_count) {
    char buf[512];
    fprintf(out, " %s", ir_dims_str(m, &i->attr, buf, sizeof buf));
  }
  for (int k = 0; k < i->nargs; k++) {
    fputs(k ? ", " : " ", out);
    print_value(out, i->args[k]);
  }
  if (ir_op_is(i->op, F_AXIS) || ir_ops[i->op].shape == SH_REDUCE) {
    fputc(' ', out);
    print_axes(out, i->axes);
  }
  switch (ir_ops[i->op].shape) {
  case SH_TRANSPOSE:
    fputs(" {perm=[", out);
    for (int k = 0; k < i->type.rank; k++)
      fprintf(out, "%s%d", k ? ", " : "", i->perm[k]);
    fputs("]}", out);
    break;
  default:
    break;
  }
  if (i->op == OP_proj || i->op == OP_polygamma)
    fprintf(out, " {index=%d}", i->index);
  if (i->op == OP_custom)
    fprintf(out, " {rules=%d}", i->index);
  if (i->op == OP_call && i->wrt > 0)
    fprintf(out, " {result=%d}", i->wrt);
  fputs(" : ", out);
  if (ir_ops[i->op].shape == SH_REGION) {
    fputc('(', out);
    for (int k = 0; k < ir_num_results(i); k++) {
      Type t = ir_result_type(i, k);
      fputs(k ? ", " : "", out);
      print_type(out, m, &t);
    }
    fputs(") {", out);
  } else {
    print_type(out, m, &i->type);
  }
  if (m->show_activity && i->active)
    fputs("  # active", out);
  fputc('\n', out);
  for (int r = 0; r < i->nregions; r++) {
    print_region(out, m, &i->regions[r], depth + 1);
    indent(out, depth);
    if (r + 1 < i->nregions)
      fputs(i->op == OP_while ? "} do {\n" : i->op == OP_custom ? (r ? "} jvp {\n" : "} vjp {\n")
                                                              : "} else {\n", out);
    else
      fputs("}\n", out);
  }
}

static void print_block(FILE *out, const Module *m, const Inst *first, int depth) {
  for (const Inst *i = first; i; i = i->next)
    print_inst(out, m, i, depth);
}

void ir_print_func(FILE *out, Module *m, Function *f) {
  if (f->derive) { /* not built yet: its definition */
    fprintf(out, "func @%s = %s @%s {wrt=%d}\n", f->name, ir_derive_names[f->derive],
            f->base->name, f->wrt);
    return;
  }
  ir_renumber(f);
  fprintf(out, "%sfunc @%s(", f->exported ? "export " : "", f->name);
  for (int k = 0; k < f->nparams; k++) {
    Inst *p = f->params[k];
    fprintf(out, "%s%%%s: %s", k ? ", " : "", p->name, p->is_const ? "const " : "");
    print_type(out, m, &p->type);
  }
  fputs(") -> ", out);
  bool plain = f->nresults == 1 && strcmp(f->result_names[0], "out") == 0;
  if (!plain)
    fputc('(', out);
  for (int k = 0; k < f->nresults; k++) {
    if (!plain)
      fprintf(out, "%s%s: ", k ? ", " : "", f->result_names[k]);
    print_type(out, m, &f->results[k]->type);
  }
  if (!plain)
    fputc(')', out);
  if (f->vjp_rule || f->jvp_rule) { /* spec 6b's rules */
    fputs(" rules(", out);
    if (f->vjp_rule)
      fprintf(out, "vjp=@%s%s", f->vjp_rule->name, f->jvp_rule ? ", " : "");
    if (f->jvp_rule)
      fprintf(out, "jvp=@%s", f->jvp_rule->name);
    fputc(')', out);
  }
  fputs(" {\n", out);
  print_block(out, m, f->first, 1);
  fputs("  ret", out);
  for (int k = 0; k < f->nresults; k++) {
    fputs(k ? ", " : " ", out);
    print_value(out, f->results[k]);
  }
  fputs("\n}\n", out);
}

void ir_print_module(FILE *out, Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    ir_print_func(out, m, f);
    if (f->next)
      fputc('\n', out);
  }
}
