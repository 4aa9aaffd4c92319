/* Forward-mode AD of loops and branches: the tangent of a region op is the
 * same region op carrying tangents beside its values (spec section 7: the
 * derivative of the program with each loop unrolled as often as it ran and
 * each `if` replaced by the branch that ran; conditions have zero
 * derivative).
 *
 *  - `if c {A} else {B}`: `if c {A+} else {B+}`, each branch its primal copy
 *    followed by its tangents, yielding its values then the tangents of the
 *    varied results (zeros from a branch where one is constant).
 *  - `for`/`while` carrying c...: a loop carrying c... then dc... for the
 *    varied carried values (a fixpoint of passes/activity.c: varied if the
 *    initial value or the yield is); the while's condition is primal.
 *  - `unloop` (the adjoint of a loop, made by reverse mode): an unloop of
 *    the tangent-augmented loop, so the code generator records c and dc
 *    (with --ad-memory, recomputes both from snapshots: the same bits), and
 *    its body, recomputing an iteration from them, carries the accumulators
 *    and their tangents. This is what makes forward over reverse
 *    (jvp(grad(f)), hessian, f_hvp) exact through for and while loops.
 * In every case the new op's results are the old results, then the
 * tangents; the old projs map to the first, their tangents to the second. */
#include "tangent_internal.h"

/* The block argument of region r holding state value k (see activity.c). */
static Inst *state_param(Inst *op, Region *r, int k) {
  if (op->op == OP_unloop)
    return r->params[1 + ir_num_results(op->args[0]) + k];
  return r->params[(op->op == OP_for) + k];
}

static Region *loop_body(Inst *op) { return &op->regions[op->op == OP_while ? 1 : 0]; }

/* Which results of op carry a tangent: the varied float ones. */
static int varied_results(Inst *op, int *K) {
  int n = ir_num_results(op), nk = 0;
  for (int k = 0; k < n; k++) {
    bool v = op->op == OP_if ? op->regions[0].yields[k]->active || op->regions[1].yields[k]->active
                             : state_param(op, loop_body(op), k)->active;
    if (v && ir_is_float(ir_result_type(op, k).dtype))
      K[nk++] = k;
  }
  return nk;
}

/* Fill region `to` from region `from`: primal copies and tangents, then
 * the yields: each value, then the tangents of yields K[0..nk). For a
 * while's condition, the value alone. */
static void fill(TG *t, Region *from, Region *to, const int *K, int nk, bool cond) {
  Builder saved = t->b;
  t->b.before = NULL;
  t->b.r = to;
  tg_block(t, from->first);
  int n = cond ? from->nyields : from->nyields + nk;
  Inst **ys = xmalloc(sizeof(Inst *) * (size_t)(n + 1));
  for (int k = 0; k < from->nyields; k++)
    ys[k] = from->yields[k]->aux;
  for (int j = 0; j < nk && !cond; j++)
    ys[from->nyields + j] = tg_tangent_or_zero(t, from->yields[K[j]]);
  ir_set_yields(t->b.m, to, ys, n);
  free(ys);
  t->b = saved;
}

/* The projs after op: each old one mapped to the new op's result, and its
 * tangent (if it has one) to the tangent result `base + j`. */
static void map_projs(TG *t, Inst *op, Inst *nop, const int *K, int nk, int base) {
  Inst *p;
  for (p = op->next; p && p->op == OP_proj && p->args[0] == op; p = p->next)
    p->aux = ir_proj(&t->b, nop, p->index);
  for (p = op->next; p && p->op == OP_proj && p->args[0] == op; p = p->next)
    for (int j = 0; j < nk; j++)
      if (K[j] == p->index)
        *ptrmap_slot(&t->tan, p) = ir_proj(&t->b, nop, base + j);
  op->aux = nop;
}

static void tangent_if(TG *t, Inst *op) {
  int n = ir_num_results(op);
  int *K = xmalloc(sizeof(int) * (size_t)(n + 1)), nk = varied_results(op, K);
  Inst *cond = op->args[0]->aux;
  Inst *nop = ir_region_op(&t->b, OP_if, &cond, 1, 2);
  for (int r = 0; r < 2; r++)
    fill(t, &op->regions[r], &nop->regions[r], K, nk, false);
  map_projs(t, op, nop, K, nk, n);
  free(K);
}

/* for and while: the new loop's arguments are the old ones' copies, then
 * the tangents of the initial values of the varied carried values. */
static void tangent_loop(TG *t, Inst *op) {
  int n = ir_num_results(op), lead = op->op == OP_for, first = lead ? 2 : 0;
  int *K = xmalloc(sizeof(int) * (size_t)(n + 1)), nk = varied_results(op, K);
  Inst **args = xmalloc(sizeof(Inst *) * (size_t)(op->nargs + nk));
  for (int k = 0; k < op->nargs; k++)
    args[k] = op->args[k]->aux;
  for (int j = 0; j < nk; j++)
    args[op->nargs + j] = tg_tangent_or_zero(t, op->args[first + K[j]]);
  Inst *nop = ir_region_op(&t->b, op->op, args, op->nargs + nk, op->nregions);
  free(args);
  for (int r = 0; r < op->nregions; r++) {
    Region *from = &op->regions[r], *to = &nop->regions[r];
    if (lead)
      from->params[0]->aux = ir_add_region_param(t->b.m, to, from->params[0]->type);
    for (int k = 0; k < n; k++) {
      Inst *p = state_param(op, from, k);
      p->aux = ir_add_region_param(t->b.m, to, p->type);
    }
    for (int j = 0; j < nk; j++) {
      Inst *p = state_param(op, from, K[j]);
      *ptrmap_slot(&t->tan, p) = ir_add_region_param(t->b.m, to, p->type);
    }
    fill(t, from, to, K, nk, op->op == OP_while && r == 0);
  }
  map_projs(t, op, nop, K, nk, n);
  free(K);
}

/* The unloop of the loop's copy (loop->aux, augmented if the loop was
 * varied): block arguments [i, c..., dc..., acc..., dacc...]. */
static void tangent_unloop(TG *t, Inst *op) {
  Inst *loop = op->args[0], *nloop = loop->aux;
  int n = ir_num_results(op), nc = ir_num_results(loop), ncn = ir_num_results(nloop);
  int *K = xmalloc(sizeof(int) * (size_t)(n + 1)), nk = varied_results(op, K);
  int *L = xmalloc(sizeof(int) * (size_t)(nc + 1)), nl = 0;
  for (int k = 0; k < nc; k++)
    if (op->regions[0].params[1 + k]->active && ir_is_float(ir_result_type(loop, k).dtype))
      L[nl++] = k;
  if (ncn != nc + (loop->active ? nl : 0))
    die("unloop: the loop's copy carries %d values, expected %d", ncn, nc + nl);
  Inst **args = xmalloc(sizeof(Inst *) * (size_t)(1 + n + nk));
  args[0] = nloop;
  for (int k = 0; k < n; k++)
    args[1 + k] = op->args[1 + k]->aux;
  for (int j = 0; j < nk; j++)
    args[1 + n + j] = tg_tangent_or_zero(t, op->args[1 + K[j]]);
  Inst *nop = ir_region_op(&t->b, OP_unloop, args, 1 + n + nk, 1);
  free(args);
  Region *from = &op->regions[0], *to = &nop->regions[0];
  from->params[0]->aux = ir_add_region_param(t->b.m, to, from->params[0]->type);
  for (int k = 0; k < nc; k++)
    from->params[1 + k]->aux = ir_add_region_param(t->b.m, to, from->params[1 + k]->type);
  for (int j = 0; j < nl && loop->active; j++) {
    Inst *p = from->params[1 + L[j]];
    *ptrmap_slot(&t->tan, p) = ir_add_region_param(t->b.m, to, p->type);
  }
  for (int k = 0; k < n; k++) {
    Inst *p = state_param(op, from, k);
    p->aux = ir_add_region_param(t->b.m, to, p->type);
  }
  for (int j = 0; j < nk; j++) {
    Inst *p = state_param(op, from, K[j]);
    *ptrmap_slot(&t->tan, p) = ir_add_region_param(t->b.m, to, p->type);
  }
  fill(t, from, to, K, nk, false);
  map_projs(t, op, nop, K, nk, n);
  free(K);
  free(L);
}

/* A custom op (a call of a function with rules, ir.h): the op itself, rules
 * and all (a later reverse sweep over this code uses its vjp rule), then its
 * jvp rule's code on the tangents of the differentiable arguments, whose
 * yields are the tangents of the float results. */
static void tangent_custom(TG *t, Inst *op) {
  ir_copy_inst(&t->b, op, NULL, NULL);
  for (Inst *p = op->next; p && p->op == OP_proj && p->args[0] == op; p = p->next)
    ir_copy_inst(&t->b, p, NULL, NULL);
  if (!(op->index & CUSTOM_JVP)) {
    ir_error(t->b.m, op->loc, "'%s' has a custom vjp but no jvp rule, and forward mode needs "
                              "one here", op->name);
    return;
  }
  Region *r = &op->regions[2];
  for (int k = 0; k < op->nargs; k++)
    r->params[k]->aux = tg_tangent_or_zero(t, op->args[k]);
  for (Inst *i = r->first; i; i = i->next)
    ir_copy_inst(&t->b, i, NULL, NULL);
  for (Inst *p = op->next; p && p->op == OP_proj && p->args[0] == op; p = p->next) {
    int y = 0;
    for (int k = 0; k < p->index; k++)
      y += ir_is_float(ir_result_type(op, k).dtype);
    if (ir_is_float(p->type.dtype))
      *ptrmap_slot(&t->tan, p) = r->yields[y]->aux;
  }
}

void tg_region(TG *t, Inst *op) {
  switch (op->op) {
  case OP_custom: tangent_custom(t, op); break;
  case OP_if: tangent_if(t, op); break;
  case OP_for:
  case OP_while: tangent_loop(t, op); break;
  case OP_unloop: tangent_unloop(t, op); break;
  default: die("no tangent for region op %s", ir_ops[op->op].name);
  }
}
