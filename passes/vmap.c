/* Vector mode: the batching transform (JAX's vmap), as an IR-to-IR
 * transformation.
 *
 * vmap_build makes, from a call-free function f and a choice of its
 * parameters, a function whose chosen parameters have a leading axis B and
 * whose results all get it: result[b] is f's result with argument[b] for
 * each chosen parameter. Only values that depend on a chosen parameter
 * (passes/activity.c, ad_depends) are batched; every other value is
 * computed once, as in f, and broadcast where it meets a batched one. That
 * is what makes a Jacobian one sweep: over jvp(f) with B basis tangents
 * (forward, by columns), or over vjp(f) with B basis seeds (reverse, by
 * rows), the primal computation runs once and the derivative code carries
 * B columns or rows side by side (passes/derive.c).
 *
 * Each op is batched by its shape rule (ir/shape.c): elementwise ops take
 * their unbatched operands broadcast to [B, ...]; reductions, argmax and
 * transpose shift their axes by one; broadcast and reshape prepend B to the
 * target; ops along one axis (indexing, and any other F_AXIS op) work one
 * axis further in, their float operands batched and an index unchanged;
 * matmul promotes vectors to matrices and puts B in front of the batch axes
 * (a batched GEMM, which folds into the rows when only one side is
 * batched). Loops and branches carry batched values where their initial
 * value or yield is batched (a fixpoint); an unloop follows its loop. A
 * condition, bound, index or random key must not depend on the batched
 * parameters (in the derivatives the compiler batches, they are primal
 * values): one that does is reported at the transform (vector mode cannot
 * take several branches at once). */
#include <string.h>

#include "ad_internal.h"

typedef struct VM {
  Builder b;
  Dim B;
  Loc at;      /* the transform, for errors */
  bool failed; /* an error was reported: stop emitting batched code */
} VM;

/* [B] + t */
static Type bt(VM *v, const Type *t) {
  Type r = *t;
  if (t->rank >= IR_MAX_RANK) {
    if (!v->failed)
      ir_error(v->b.m, v->at, "vector mode needs a value of rank %d, one more than the %d a "
                              "tensor may have; compute the derivative in pieces instead",
               t->rank + 1, IR_MAX_RANK);
    v->failed = true;
    return r;
  }
  r.rank = t->rank + 1;
  r.dim[0] = v->B;
  memcpy(&r.dim[1], t->dim, sizeof(Dim) * (size_t)t->rank);
  return r;
}

/* The copy of source value x, batched: as it is when it depends on the
 * batched parameters, else broadcast over B. */
static Inst *batched(VM *v, Inst *x) {
  Inst *c = x->aux;
  if (x->active || v->failed)
    return c;
  Type t = bt(v, &c->type);
  return v->failed ? c : ir_broadcast(&v->b, c, &t);
}

/* The mask of an indexed assignment, ne(unslice(...(ones)...), 0) (the
 * lowering's select(mask, update, old), codegen/cg_inplace.c), rebuilt over
 * [B, ...] with the same unslices one axis further in, rather than
 * broadcast: the batched update then still matches the in-place pattern
 * and writes only its box, not all of [B, ...] per loop iteration. NULL if
 * x is not such a mask. */
static Inst *batched_mask(VM *v, Inst *x) {
  if (x->op != OP_ne || x->args[1]->op != OP_broadcast || x->args[0]->op != OP_unslice)
    return NULL;
  Inst *chain[IR_MAX_RANK], *u = x->args[0];
  int n = 0;
  for (; u->op == OP_unslice && n < IR_MAX_RANK; u = u->args[0])
    chain[n++] = u;
  if (u->op == OP_unslice || u->active)
    return NULL;
  Type t = bt(v, &u->type);
  Inst *m = ir_broadcast(&v->b, u->aux, &t);
  for (int k = n - 1; k >= 0; k--) {
    Type ct = bt(v, &chain[k]->type);
    m = ir_index_op(&v->b, OP_unslice, m, chain[k]->args[1]->aux, __builtin_ctz(chain[k]->axes) + 1,
                    &ct);
  }
  Type zt = bt(v, &x->args[1]->type);
  return ir_binary(&v->b, OP_ne, m, ir_broadcast(&v->b, x->args[1]->aux, &zt));
}

static void unbatchable(VM *v, const Inst *i, const char *what) {
  if (!v->failed)
    ir_error(v->b.m, v->at, "vector mode cannot compute several derivatives at once through "
                            "this %s: %s (at line %d) depends on the derivative's direction; "
                            "compute one direction at a time with jvp or vjp instead",
             ir_ops[i->op].name, what, i->loc.src_line ? i->loc.src_line : i->loc.line);
  v->failed = true;
}

/* A copy of i with operands `args` and type t. */
static Inst *retyped(VM *v, const Inst *i, Inst **args, const Type *t) {
  Inst *c = ir_clone_inst(&v->b, i, args);
  c->type = *t;
  return c;
}

/* a @ b with B in front: vectors promoted to matrices ([k] to [1, k] on
 * the left, [k, 1] on the right), the batched side given 1s after B until
 * its batch axes outnumber the other's, then the product reshaped to
 * [B] + the result's dims. A product that sums over broadcast batch axes
 * (an adjoint's) keeps them as 1s, then loses them in the reshape. */
static Inst *batch_matmul(VM *v, Inst *i) {
  Inst *src[2] = {i->args[0], i->args[1]}, *op[2];
  Type u[2];
  for (int s = 0; s < 2; s++) {
    u[s] = src[s]->type;
    if (u[s].rank == 1) { /* promote */
      u[s].rank = 2;
      u[s].dim[s == 0 ? 1 : 0] = src[s]->type.dim[0];
      u[s].dim[s == 0 ? 0 : 1] = ir_lit(1);
    }
  }
  int nb = u[0].rank > u[1].rank ? u[0].rank - 2 : u[1].rank - 2; /* batch axes */
  for (int s = 0; s < 2; s++) {
    Type t = u[s];
    if (src[s]->active) {
      t = ir_scalar(u[s].dtype);
      t.rank = 1 + nb + 2;
      t.dim[0] = v->B;
      int pad = nb - (u[s].rank - 2);
      for (int k = 0; k < pad; k++)
        t.dim[1 + k] = ir_lit(1);
      memcpy(&t.dim[1 + pad], u[s].dim, sizeof(Dim) * (size_t)u[s].rank);
    }
    op[s] = ir_reshape(&v->b, src[s]->aux, &t);
  }
  Type full, want = bt(v, &i->type);
  char err[256];
  if (!ir_matmul_type(v->b.m, &op[0]->type, &op[1]->type, &full, err, sizeof err))
    die("vmap: %s", err);
  Type plain;
  if (!ir_matmul_type(v->b.m, &src[0]->type, &src[1]->type, &plain, err, sizeof err))
    die("vmap: %s", err);
  if (!ir_shape_eq(&plain, &i->type)) { /* sums over batch axes: keep them as 1s */
    Type t = full;
    int ybatch = i->type.rank - 2, pad = nb - ybatch;
    for (int k = 0; k < nb; k++)
      t.dim[1 + k] = k < pad ? ir_lit(1) : i->type.dim[k - pad];
    full = t;
  }
  Inst *c = retyped(v, i, op, &full);
  Type chk;
  if (!ir_infer_type(v->b.m, c, &chk, err, sizeof err) || !ir_type_eq(&chk, &c->type))
    die("vmap: a batched product does not type: %s", err);
  return ir_reshape(&v->b, c, &want);
}

/* An op along one axis (indexing, prod, cumsum, concat, ...), one axis
 * further in: the data batched, an index as it is. */
static Inst *batch_along(VM *v, Inst *i, const Type *t) {
  Inst **args = xmalloc(sizeof(Inst *) * (size_t)(i->nargs + 1));
  for (int k = 0; k < i->nargs; k++) {
    Inst *x = i->args[k];
    if (ir_is_float(x->type.dtype)) {
      args[k] = batched(v, x);
      continue;
    }
    if (x->active)
      unbatchable(v, i, "its index");
    args[k] = x->aux;
    if (i->op == OP_take_along || i->op == OP_scatter_along) { /* the index has data's rank */
      Type it = bt(v, &x->type);
      args[k] = ir_broadcast(&v->b, args[k], &it);
    }
  }
  Inst *c = retyped(v, i, args, t);
  c->axes = i->axes << 1;
  free(args);
  return c;
}

/* The batched copy of a non-region instruction that depends on the batched
 * parameters. */
static Inst *batch_inst(VM *v, Inst *i) {
  Inst *a[3] = {NULL, NULL, NULL};
  Type t = bt(v, &i->type);
  const OpInfo *info = &ir_ops[i->op];
  if (ir_op_is(i->op, F_AXIS)) /* before the shape rule: cumsum is SH_SAME, yet not elementwise */
    return batch_along(v, i, &t);
  switch (info->shape) {
  case SH_SAME:
  case SH_CMP:
  case SH_SELECT:
  case SH_LOGIC:
    if (i->op == OP_select && !i->args[0]->active && !v->failed)
      a[0] = batched_mask(v, i->args[0]);
    for (int k = 0; k < i->nargs; k++)
      a[k] = a[k] ? a[k] : batched(v, i->args[k]);
    return retyped(v, i, a, &t);
  case SH_REDUCE:
  case SH_ARG: {
    a[0] = i->args[0]->aux;
    Inst *c = retyped(v, i, a, &t);
    c->axes = i->axes << 1;
    return c;
  }
  case SH_TRANSPOSE: {
    a[0] = i->args[0]->aux;
    Inst *c = retyped(v, i, a, &t);
    c->perm[0] = 0;
    for (int k = 0; k < i->type.rank; k++)
      c->perm[k + 1] = i->perm[k] + 1;
    return c;
  }
  case SH_MATMUL:
    return batch_matmul(v, i);
  default:
    break;
  }
  if (ir_op_is(i->op, F_RANDOM)) {
    unbatchable(v, i, "its key");
    return ir_copy_inst(&v->b, i, NULL, NULL);
  }
  switch (i->op) {
  case OP_convert:
    a[0] = i->args[0]->aux;
    return retyped(v, i, a, &t);
  case OP_reshape:
    return ir_reshape(&v->b, i->args[0]->aux, &t);
  case OP_broadcast: { /* x [B, xs...] to [B, 1..., xs...], then to [B, t...] */
    Inst *x = i->args[0]->aux;
    Type lift = ir_scalar(x->type.dtype);
    lift.rank = 1 + i->type.rank;
    lift.dim[0] = v->B;
    int pad = i->type.rank - i->args[0]->type.rank;
    for (int k = 0; k < pad; k++)
      lift.dim[1 + k] = ir_lit(1);
    memcpy(&lift.dim[1 + pad], i->args[0]->type.dim, sizeof(Dim) * (size_t)i->args[0]->type.rank);
    return ir_broadcast(&v->b, ir_reshape(&v->b, x, &lift), &t);
  }
  default:
    die("vmap: no batching rule for %s", info->name);
  }
}

static void vm_block(VM *v, Inst *first);

/* The block argument of loop body r holding state value k (activity.c). */
static Inst *state_param(Inst *op, Region *r, int k) {
  if (op->op == OP_unloop)
    return r->params[1 + ir_num_results(op->args[0]) + k];
  return r->params[(op->op == OP_for) + k];
}

static Region *loop_body(Inst *op) { return &op->regions[op->op == OP_while ? 1 : 0]; }

static bool state_batched(Inst *op, int k) {
  if (op->op == OP_if)
    return op->regions[0].yields[k]->active || op->regions[1].yields[k]->active;
  return state_param(op, loop_body(op), k)->active;
}

/* Fill region `to` from `from`; yield k batched where the op's state k is
 * (a while's condition: as it is, which must not be batched). */
static void vm_fill(VM *v, Inst *op, Region *from, Region *to, bool cond) {
  Builder saved = v->b;
  v->b.before = NULL;
  v->b.r = to;
  vm_block(v, from->first);
  Inst **ys = xmalloc(sizeof(Inst *) * (size_t)(from->nyields + 1));
  for (int k = 0; k < from->nyields; k++) {
    if (cond && from->yields[k]->active)
      unbatchable(v, op, "its condition");
    ys[k] = !cond && state_batched(op, k) ? batched(v, from->yields[k]) : from->yields[k]->aux;
  }
  ir_set_yields(v->b.m, to, ys, from->nyields);
  free(ys);
  v->b = saved;
}

/* A region op some of whose state depends on the batched parameters: the
 * same op with that state batched; its projs mapped. */
static void vm_region(VM *v, Inst *op) {
  if (op->op == OP_custom) { /* its rules would need batching too */
    unbatchable(v, op, "its rules");
    ir_copy_inst(&v->b, op, NULL, NULL);
    for (Inst *p = op->next; p && p->op == OP_proj && p->args[0] == op; p = p->next)
      ir_copy_inst(&v->b, p, NULL, NULL);
    return;
  }
  int first = op->op == OP_for ? 2 : op->op == OP_unloop ? 1 : 0;
  for (int k = 0; k < first || (op->op == OP_if && k < 1); k++)
    if (op->op != OP_unloop && op->args[k]->active)
      unbatchable(v, op, op->op == OP_if ? "its condition" : "its bounds");
  Inst **args = xmalloc(sizeof(Inst *) * (size_t)(op->nargs + 1));
  for (int k = 0; k < op->nargs; k++)
    args[k] = k >= first && op->op != OP_if && state_batched(op, k - first)
                  ? batched(v, op->args[k])
                  : op->args[k]->aux;
  Inst *nop = ir_region_op(&v->b, op->op, args, op->nargs, op->nregions);
  free(args);
  for (int r = 0; r < op->nregions; r++) {
    Region *from = &op->regions[r], *to = &nop->regions[r];
    for (int k = 0; k < from->nparams; k++) {
      Inst *p = from->params[k];
      Type t = p->type;
      if (op->op == OP_unloop && k >= 1 && k <= ir_num_results(op->args[0]))
        t = ir_result_type(nop->args[0], k - 1); /* the loop's state, as batched there */
      else if (p->active)
        t = bt(v, &p->type);
      p->aux = ir_add_region_param(v->b.m, to, t);
    }
    vm_fill(v, op, from, to, op->op == OP_while && r == 0);
  }
  for (Inst *p = op->next; p && p->op == OP_proj && p->args[0] == op; p = p->next)
    p->aux = ir_proj(&v->b, nop, p->index);
  op->aux = nop;
}

static void vm_block(VM *v, Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    v->b.loc = i->loc;
    bool loop_batched = i->op == OP_unloop && i->args[0]->active;
    if (i->nregions && (i->active || loop_batched) && !v->failed) {
      vm_region(v, i);
      for (Inst *op = i; i->next && i->next->op == OP_proj && i->next->args[0] == op;)
        i = i->next; /* vm_region mapped the projs */
      continue;
    }
    if (!i->active || i->nregions || v->failed) {
      ir_copy_inst(&v->b, i, NULL, NULL);
      continue;
    }
    i->aux = batch_inst(v, i);
  }
}

Function *vmap_build(Module *m, Function *f, const char *name, const bool *batch, Dim B, Loc at) {
  Function *g = ir_func_new(m, name);
  g->loc = f->loc;
  ad_depends(f, batch);
  VM v = {.b = {m, g, NULL, f->loc, NULL}, .B = B, .at = at};
  for (int k = 0; k < f->nparams; k++) {
    Inst *p = f->params[k];
    Type t = p->active ? bt(&v, &p->type) : p->type;
    p->aux = ir_add_param(m, g, p->name, t, p->is_const);
  }
  vm_block(&v, f->first);
  Inst **res = xmalloc(sizeof(Inst *) * (size_t)(f->nresults + 1));
  for (int r = 0; r < f->nresults; r++)
    res[r] = batched(&v, f->results[r]);
  ir_set_results(m, g, res, f->result_names, f->nresults);
  free(res);
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  ad_clear_aux(f->first);
  return g;
}
