/* cg_batch.c -- batch groups (cg_batch_strategy): a chain over a batch of
 * small matrices -- products, elementwise values and their sums -- computed
 * one batch element at a time, in one loop over the batch.
 *
 * A batched product of small literal matrices is written out per batch
 * element (cg_matmul.c), but each product and each value around it was a
 * loop over the batch of its own: sum(square(a @ x))'s gradient, a product,
 * a loss with 2c, and two adjoint products, made four passes over the
 * batch (bench bmm3: 2.1x an expert's one pass). Here values of rank 3
 * over the same batch axis with small literal matrices, and their sums to
 * a scalar, are members of one loop over the batch axis; for each batch
 * element every member is computed whole, in order, element by element
 * written out, into a scratch of its own (registers, once LLVM has
 * promoted it: every index into it is a literal). A later member reads an
 * earlier one at any position of the same batch element -- a product its
 * operands' rows and columns -- which a loop or nest group cannot do.
 *
 * A product's element is its terms added in order (for matmulz, a term with
 * a zero factor is 0, as in cg_matmul.c). A member read by nothing outside
 * the group gets no memory; sums are combined as a loop group's are
 * (cg_groups.c), on the pool in chunks of batch elements.
 *
 * Requires: has_buf; the row and online groups (they take what they
 * can first). Keeps: a member's operands with memory are computed before
 * the group's first member. */
#include "cg_internal.h"

/* Matrices of at most BATCH_COLS columns and BATCH_ELEMS elements, and at
 * most BATCH_WORK terms of products and elements of the rest per batch
 * element for the whole group: straight-line code per batch element,
 * which LLVM vectorizes across the batch. Rows of 4 columns or more are
 * vectors in cg_matmul.c's products, faster than lanes across the batch
 * (bench bmm4's gradient: 1.0x the expert's C so, 2.8x as a group). */
enum { BATCH_COLS = 3, BATCH_ELEMS = 64, BATCH_WORK = 256, BATCH_MAX_MEMBERS = 16 };

static bool small_matrix(const Type *t, const Dim *batch) {
  if (t->rank != 3 || !ir_dim_eq(t->dim[0], *batch) || t->dim[1].sym >= 0 || t->dim[2].sym >= 0)
    return false;
  return t->dim[2].size <= BATCH_COLS && t->dim[1].size * t->dim[2].size <= BATCH_ELEMS;
}

static bool is_product(const Inst *i) { return i->op == OP_matmul || i->op == OP_matmulz; }

/* The work of member i per batch element (0: not a member over batch). */
static int64_t member_work(Body *B, const Inst *i, const Dim *batch) {
  Slot *s = cg_slot(B, i);
  if (s->by_products || s->acc_into || s->inplace_of || s->inplace_old || s->view || i->nregions ||
      i->op == OP_reshape || i->op == OP_proj || s->kernel >= 0 || s->group >= 0)
    return 0;
  if (ir_ops[i->op].shape == SH_REDUCE) {
    const Type *t = &i->args[0]->type;
    return i->type.rank == 0 && small_matrix(t, batch) ? t->dim[1].size * t->dim[2].size : 0;
  }
  if (!small_matrix(&i->type, batch))
    return 0;
  int64_t n = i->type.dim[1].size * i->type.dim[2].size;
  if (is_product(i)) {
    const Type *a = &i->args[0]->type, *x = &i->args[1]->type;
    if (!small_matrix(a, batch) || !small_matrix(x, batch))
      return 0;
    return n * a->dim[2].size;
  }
  return cg_fills(i) ? n : 0;
}

/* Does v keep axis 0 where it is (a member read through it is read at its
 * own batch element)? */
static bool keeps_batch(const Inst *v) {
  if (v->op == OP_broadcast)
    return v->args[0]->type.rank == v->type.rank && ir_dim_eq(v->args[0]->type.dim[0], v->type.dim[0]);
  return ir_op_is(v->op, F_ELEM) || ir_ops[v->op].shape == SH_REDUCE || is_product(v) ||
         (v->op == OP_transpose && v->perm[0] == 0);
}

/* Marks the groups of a block (Slot.group, group_last), as nest groups
 * do: a value with memory between members that cannot be one is stepped
 * over, and no later member may read it. A group without a product is
 * left to the loop and nest groups. */
static void group_block(Body *B, Inst *first) {
  int g = -1, members = 0;
  int64_t work = 0;
  bool product = false;
  Dim batch = {0};
  Inst *head = NULL;
  for (Inst *i = first;; i = i->next) {
    Slot *s = i ? cg_slot(B, i) : NULL;
    if (i && !s->has_buf)
      continue;
    int64_t w = 0;
    if (i && g >= 0 && members < BATCH_MAX_MEMBERS && (w = member_work(B, i, &batch)) > 0 &&
        work + w <= BATCH_WORK && !cg_group_reads_reduction(B, i, g) &&
        !cg_reads_member_moved(B, i, g, keeps_batch, false) && !cg_reads_skipped(B, i, g)) {
      s->group = g;
      cg_slot(B, head)->group_last = i;
      members++;
      work += w;
      product |= is_product(i);
      continue;
    }
    if (g >= 0 && !product) /* no product: not ours */
      for (Inst *j = head; j != i; j = j->next) {
        cg_slot(B, j)->group = cg_slot(B, j)->group == g ? -1 : cg_slot(B, j)->group;
        B->stepped_over[j->id] = B->stepped_over[j->id] == g ? -1 : B->stepped_over[j->id];
      }
    if (!i)
      return;
    if (s->kernel >= 0 || s->group >= 0 || i->nregions) {
      g = -1;
      continue;
    }
    if (g >= 0 && member_work(B, i, &batch) == 0) {
      B->stepped_over[i->id] = g;
      continue;
    }
    const Type *t = ir_ops[i->op].shape == SH_REDUCE ? &i->args[0]->type : &i->type;
    batch = t->rank == 3 ? t->dim[0] : (Dim){0};
    w = t->rank == 3 ? member_work(B, i, &batch) : 0;
    g = w > 0 && ir_ops[i->op].shape != SH_REDUCE ? i->id : -1;
    if (g < 0)
      continue;
    members = 1;
    work = w;
    product = is_product(i);
    s->group = g;
    head = i;
    s->group_last = i;
  }
}

static void batch_recognize(Body *B, Inst *first) {
  group_block(B, first);
  cg_group_kernels(B, first, &cg_batch_strategy);
  for (Inst *i = first; i; i = i->next) /* a product's role */
    if (cg_slot(B, i)->kernel >= 0 && B->kernels[cg_slot(B, i)->kernel].st == &cg_batch_strategy &&
        is_product(i))
      B->member[i->id].role = 2;
}

typedef struct Batch {
  Inst *first, *end; /* members are in [first, end) */
  int gid;
  CgAcc *acc; /* the running value of each sum */
} Batch;

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

LLVMValueRef cg_batch_load(Body *B, const Inst *v, Idx *x) {
  Cg *g = B->g;
  int64_t cols = v->type.dim[2].size;
  LLVMValueRef at;
  if (x->rank == 3) {
    at = cg_add64(g, cg_mul64(g, x->i[1], i64c(g, cols)), x->i[2]);
  } else { /* a flat index: its place in the batch element */
    at = LLVMBuildSRem(g->b, x->lin, i64c(g, v->type.dim[1].size * cols), "");
  }
  return LLVMBuildLoad2(g->b, cg_elem_type(g, v->type.dtype),
                        LLVMBuildInBoundsGEP2(g->b, cg_elem_type(g, v->type.dtype),
                                              cg_slot(B, v)->batchbuf, &at, 1, ""),
                        "");
}

/* Element (m, i, j) of product v: its terms in order. */
static LLVMValueRef product_at(Body *B, const Inst *v, LLVMValueRef m, int64_t i, int64_t j) {
  Cg *g = B->g;
  int64_t k = v->args[0]->type.dim[2].size;
  LLVMTypeRef t = cg_elem_type(g, v->type.dtype);
  LLVMValueRef zero = LLVMConstReal(t, 0.0), sum = NULL;
  for (int64_t p = 0; p < k; p++) {
    Idx xa = {3, {m, i64c(g, i), i64c(g, p)}, NULL}, xb = {3, {m, i64c(g, p), i64c(g, j)}, NULL};
    LLVMValueRef a = cg_eval(B, v->args[0], &xa), b = cg_eval(B, v->args[1], &xb);
    LLVMValueRef term = cg_product_term(g, v, a, b, zero);
    sum = sum ? LLVMBuildFAdd(g->b, sum, term, "") : term;
  }
  return sum ? sum : zero;
}

/* Batch element x->i[0]: every member whole, in order. */
static void batch_element(Body *B, Idx *x, void *ctx) {
  Batch *n = ctx;
  Cg *g = B->g;
  LLVMValueRef m = x->i[0];
  int r = 0;
  for (Inst *i = n->first; i != n->end; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->group != n->gid)
      continue;
    cg_debug_at(g, i);
    bool sum = ir_ops[i->op].shape == SH_REDUCE;
    const Type *t = sum ? &i->args[0]->type : &i->type;
    for (int64_t p = 0; p < t->dim[1].size; p++)
      for (int64_t q = 0; q < t->dim[2].size; q++) {
        Idx y = {3, {m, i64c(g, p), i64c(g, q)}, NULL};
        if (sum) {
          cg_acc_add(g, &n->acc[r], cg_eval(B, i->args[0], &y));
          continue;
        }
        LLVMValueRef e = is_product(i) ? product_at(B, i, m, p, q) : cg_eval_def(B, i, &y);
        LLVMValueRef at = i64c(g, p * t->dim[2].size + q);
        LLVMBuildStore(g->b, e, LLVMBuildInBoundsGEP2(g->b, cg_elem_type(g, i->type.dtype), s->batchbuf, &at, 1, ""));
        if (!s->internal)
          cg_store(B, i->type.dtype, s->buf, cg_lin(B, &y, &i->type), e);
      }
    r += sum;
  }
}

/* Each member's scratch, in the function that runs the loop. */
static void scratch(Body *B, Batch *n, bool on) {
  for (Inst *i = n->first; i != n->end; i = i->next) {
    Slot *s = cg_slot(B, i);
    if (s->group != n->gid || ir_ops[i->op].shape == SH_REDUCE)
      continue;
    s->batchbuf = on ? cg_entry_alloca(B, LLVMArrayType2(cg_elem_type(B->g, i->type.dtype),
                                                         (uint64_t)(i->type.dim[1].size * i->type.dim[2].size)))
                     : NULL;
  }
}

static void batch_emit(Body *B, CgKernel *k) {
  Inst *first = k->head;
  int gid = first->id;
  Batch n = {first, cg_slot(B, first)->group_last->next, gid, NULL};
  const Type *t = &first->type;
  for (Inst *i = first; i != n.end; i = i->next)
    if (cg_slot(B, i)->group == gid && ir_ops[i->op].shape != SH_REDUCE)
      cg_check_slice_once(B, i);
  LLVMValueRef *fin = cg_group_fin(B, first, n.end, gid);
  int nred = cg_group_reductions(B, first, n.end, gid);
  LLVMValueRef *part = xmalloc(sizeof(LLVMValueRef) * (size_t)(nred + 1));
  n.acc = xmalloc(sizeof(CgAcc) * (size_t)(nred + 1));
  bool on = cg_par_rows_worth(B, cg_numel(B, t));
  Par par;
  Idx x = {3, {0}, NULL};
  if (on)
    cg_par_begin_rows(B, cg_numel_span(B, t, 0, 1), cg_numel(B, t), &par);
  cg_group_acc_begin(B, first, n.end, gid, on ? &par : NULL, n.acc, part);
  scratch(B, &n, true);
  cg_alias_begin(B);
  CgLoop L;
  x.i[0] = cg_loop_range(B, on ? par.begin : i64c(B->g, 0), on ? par.end : cg_numel_span(B, t, 0, 1), &L);
  batch_element(B, &x, &n);
  cg_loop_close(B, &L);
  cg_alias_end(B);
  scratch(B, &n, false);
  cg_group_acc_end(B, first, n.end, gid, on ? &par : NULL, n.acc, part, fin);
  if (on) {
    cg_par_end(B, &par);
    cg_group_acc_combine(B, first, n.end, gid, &par, part, fin);
  }
  cg_group_done(B, first, n.end, gid, fin);
  free(part);
  free(n.acc);
}

static const char *const batch_roles[] = {"elem", "sum", "product"};

/* "batch [b, 3, 3], pool: %0 product reg %2 sum mem ..." */
static void batch_describe(Body *B, const CgKernel *k, FILE *out) {
  cg_plan_group(B, k, &k->head->type, cg_par_rows_planned(k->head, &k->head->type), out);
}

const CgStrategy cg_batch_strategy = {"batch", batch_roles, batch_recognize, NULL, NULL, batch_emit,
                                      batch_describe};
