/* Matrix products: matmul and matmulz (the zero rule's product, in
 * adjoints) as calls to the runtime's GEMM (sg_rt_gemm_f32/f64,
 * sg_rt_gemmz_*), reading a transposed operand in place; batched products
 * as one GEMM where the batch is contiguous rows, else one per batch
 * element; small matrix-vector products inline (emit_small_gemv, and
 * for the blocks of a small fused pair cg_gemv_inline and
 * cg_gemv_acc_inline); and products of small literal matrices written
 * out (emit_small_product).
 * A product in a loop lets the runtime pack a parameter it reads once
 * for the whole call (cg_gemm_keeps). The fused matrix-vector pairs of a
 * gradient are cg_gemvpair.c's.
 *
 * Requires: plan has given each operand memory (or its transposed
 * operand, cg_swaps_last2) and the result its buffer. */
#include <string.h>

#include "cg_internal.h"

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* A transpose that only swaps the last two axes: the GEMM kernel reads its
 * operand in place, transposed. */
bool cg_swaps_last2(const Inst *x) {
  int r = x->type.rank;
  if (x->op != OP_transpose || r < 2 || x->perm[r - 2] != r - 1 || x->perm[r - 1] != r - 2)
    return false;
  for (int k = 0; k < r - 2; k++)
    if (x->perm[k] != k)
      return false;
  return true;
}

/* Operand of a matmul: its memory and whether it is transposed there. */
static LLVMValueRef gemm_operand(Body *B, const Inst *x, int *trans) {
  *trans = 0;
  Slot *s = cg_slot(B, x);
  if (s->has_buf)
    return s->buf;
  if (cg_swaps_last2(x) && cg_slot(B, x->args[0])->has_buf) {
    *trans = 1;
    return cg_slot(B, x->args[0])->buf;
  }
  die("matmul operand %%%d has no memory", x->id);
}

/* The leading (batch) axes of a matrix type, as a type of their own. */
static Type batch_of(const Type *t) {
  Type b = *t;
  b.rank = t->rank > 2 ? t->rank - 2 : 0;
  return b;
}

/* The element offset of batch element `idx` (indices over the full batch
 * `full`) in a matrix operand of type t with `msize` elements per matrix: its
 * batch axes are right-aligned with the full batch, and an axis of size 1
 * (broadcast, or summed into) always reads index 0. */
static LLVMValueRef batch_offset(Body *B, const Type *t, const Type *full, LLVMValueRef *idx,
                                 LLVMValueRef msize) {
  Cg *g = B->g;
  Type bt = batch_of(t);
  LLVMValueRef off = i64c(g, 0);
  for (int e = 0; e < bt.rank; e++) {
    int d = e + full->rank - bt.rank;
    off = cg_mul64(g, off, cg_dim(B, bt.dim[e]));
    if (!ir_dim_is(bt.dim[e], 1))
      off = cg_add64(g, off, idx[d]);
  }
  return cg_mul64(g, off, msize);
}

static LLVMValueRef elem_ptr(Body *B, DType dt, LLVMValueRef buf, LLVMValueRef off) {
  return LLVMBuildInBoundsGEP2(B->g->b, cg_mem_type(B->g, dt), buf, &off, 1, "");
}

/* Matrices of at most SMALL_MAT rows and columns, literal sizes: a product
 * is a few dozen multiply-adds, which the GEMM's call, dispatch and
 * packing cost many times over (a batch of 16,384 2 x 2 products took 45x
 * an expert's loop). Such a product is written out, unrolled, one per
 * batch element; its terms with a zero factor are left out for matmulz
 * (the zero rule, like sg_rt_gemmz). Rows of 4 or more columns are
 * vectors (the whole of c one vector when it fits 64 bytes, whole_matrix),
 * the right operand's rows built once when it is read transposed;
 * such a row of matmulz is summed plainly and summed again by the rule only
 * when it comes out NaN (bench bmm8_grad: 3.7x -> 1.2x the expert's C); in
 * a batch, the whole batch is (checks_then_rules).
 * Summing plainly first is exact whenever no NaN comes out: a plain term
 * 0 * -3 is -0 where the rule's is +0, equal as 0 is (this holds for
 * checks_then_rules too). */
enum { SMALL_MAT = 8 };

static bool literal_small(Dim d, int64_t *size) {
  if (d.sym >= 0 || d.size > SMALL_MAT)
    return false;
  *size = d.size;
  return true;
}

/* The literal sizes m, k, n of v's matrices, if all are small. */
static bool small_product(const Inst *v, int64_t *m, int64_t *k, int64_t *n) {
  const Type *tx = &v->args[0]->type, *ty = &v->args[1]->type;
  *m = *n = 1;
  return (tx->rank < 2 || literal_small(tx->dim[tx->rank - 2], m)) &&
         literal_small(tx->dim[tx->rank - 1], k) &&
         (ty->rank < 2 || literal_small(ty->dim[ty->rank - 1], n));
}

/* Does v, a product inside a loop, read as its right operand a whole
 * parameter (or one read transposed)? Its elements are then the same at
 * every step, and the runtime packs them once per call (sg_rt_gemm's
 * kept): an RNN's weights were packed again at each step of both sweeps,
 * a quarter of bench rnn_lm's time. */
bool cg_gemm_keeps(const Inst *v) {
  const Inst *y = v->args[1], *p = cg_swaps_last2(y) ? y->args[0] : y;
  int64_t sm, sk, sn;
  if (p->op != OP_param || y->type.rank != 2 || small_product(v, &sm, &sk, &sn))
    return false;
  for (const Region *r = v->parent; r; r = r->owner->parent)
    if (r->owner->op == OP_for || r->owner->op == OP_while || r->owner->op == OP_unloop)
      return true;
  return false;
}

void cg_call_id_plan(Body *B) {
  bool any = false;
  for (Inst *i = B->f->first; i && !any; i = ir_walk_next(i))
    any = (i->op == OP_matmul || i->op == OP_matmulz) && cg_gemm_keeps(i);
  if (!any)
    return;
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(B->g, RT_call_id, &fty);
  B->call_id = LLVMBuildCall2(B->g->b, fty, fn, NULL, 0, "call_id");
}

static void call_gemm(Body *B, const Inst *v, int ta, int tb, LLVMValueRef m, LLVMValueRef n,
                      LLVMValueRef k, LLVMValueRef a, LLVMValueRef lda, LLVMValueRef b,
                      LLVMValueRef ldb, LLVMValueRef c, LLVMValueRef acc) {
  Cg *g = B->g;
  bool f64 = v->type.dtype == DT_F64;
  static const RtFunc gemm[2][2] = {{RT_gemm_f32, RT_gemm_f64}, {RT_gemmz_f32, RT_gemmz_f64}};
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(g, gemm[v->op == OP_matmulz][f64], &fty);
  LLVMValueRef kept = B->call_id && !B->par && cg_gemm_keeps(v) ? B->call_id : i64c(g, 0);
  LLVMValueRef args[13] = {LLVMConstInt(g->i32, (unsigned)ta, 0), LLVMConstInt(g->i32, (unsigned)tb, 0),
                           m, n, k, a, lda, b, ldb, c, n, acc, kept};
  LLVMBuildCall2(g->b, fty, fn, args, 13, "");
}

static LLVMValueRef row_load(Body *B, LLVMTypeRef vt, LLVMValueRef buf, int64_t at, unsigned align) {
  Cg *g = B->g;
  LLVMValueRef off = i64c(g, at);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(g->b, LLVMGetElementType(vt), cg_outer(B, buf), &off, 1, "");
  LLVMValueRef x = LLVMBuildLoad2(g->b, vt, p, "");
  LLVMSetAlignment(x, align);
  return x;
}

/* mul0's rule (cg_elem.c) for a term of a product; cg_batch.c shares it. */
LLVMValueRef cg_product_term(Cg *g, const Inst *v, LLVMValueRef x, LLVMValueRef y, LLVMValueRef zero) {
  LLVMValueRef t = LLVMBuildFMul(g->b, x, y, "");
  if (v->op != OP_matmulz)
    return t;
  LLVMValueRef z = LLVMBuildOr(g->b, LLVMBuildFCmp(g->b, LLVMRealOEQ, x, zero, ""),
                               LLVMBuildFCmp(g->b, LLVMRealOEQ, y, zero, ""), "");
  return LLVMBuildSelect(g->b, z, zero, t, "");
}

/* init + the sum over l of xs[l] * ys[l], each term by cg_product_term's rule
 * for `rule` (NULL: plain products); NULL for no term and no init. */
static LLVMValueRef row_sum(Body *B, const Inst *rule, const LLVMValueRef *xs,
                            const LLVMValueRef *ys, int64_t k, LLVMValueRef init, LLVMValueRef zero) {
  Cg *g = B->g;
  LLVMValueRef sum = init;
  for (int64_t l = 0; l < k; l++) {
    LLVMValueRef t = rule ? cg_product_term(g, rule, xs[l], ys[l], zero) : LLVMBuildFMul(g->b, xs[l], ys[l], "");
    sum = sum ? LLVMBuildFAdd(g->b, sum, t, "") : t;
  }
  return sum;
}

/* The plain sum of the vector terms xs[l] * ys[l] (after init); for
 * matmulz, its NaN lanes or-ed into `seen` (a mask of its lanes in
 * memory), or without `seen`, the sum again by the rule where one came
 * out. The zero rule changes a lane only where a term is 0 * inf or
 * 0 * NaN, which makes the plain sum NaN. */
static LLVMValueRef vector_sum(Body *B, const Inst *v, const LLVMValueRef *xs, const LLVMValueRef *ys,
                               int64_t k, LLVMValueRef init, LLVMValueRef vzero, LLVMValueRef seen) {
  Cg *g = B->g;
  LLVMValueRef sum = row_sum(B, NULL, xs, ys, k, init, vzero);
  if (!sum || v->op != OP_matmulz)
    return sum;
  LLVMTypeRef vt = LLVMTypeOf(sum);
  unsigned lanes = LLVMGetVectorSize(vt);
  LLVMValueRef nan = LLVMBuildFCmp(g->b, LLVMRealUNO, sum, sum, "");
  if (seen) {
    LLVMTypeRef mt = LLVMVectorType(g->i1, lanes);
    LLVMBuildStore(g->b, LLVMBuildOr(g->b, LLVMBuildLoad2(g->b, mt, seen, ""), nan, ""), seen);
    return sum;
  }
  LLVMTypeRef bits = LLVMIntTypeInContext(g->ctx, lanes);
  nan = LLVMBuildICmp(g->b, LLVMIntNE, LLVMBuildBitCast(g->b, nan, bits, ""), LLVMConstNull(bits), "");
  LLVMBasicBlockRef from = LLVMGetInsertBlock(g->b);
  LLVMBasicBlockRef rule = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "zero_rule");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "row_done");
  LLVMBuildCondBr(g->b, nan, rule, join);
  LLVMPositionBuilderAtEnd(g->b, rule);
  LLVMValueRef ruled = row_sum(B, v, xs, ys, k, init, vzero);
  LLVMBasicBlockRef rule_end = LLVMGetInsertBlock(g->b);
  LLVMBuildBr(g->b, join);
  LLVMPositionBuilderAtEnd(g->b, join);
  LLVMValueRef phi = LLVMBuildPhi(g->b, vt, "");
  LLVMValueRef vals[2] = {sum, ruled};
  LLVMBasicBlockRef bbs[2] = {from, rule_end};
  LLVMAddIncoming(phi, vals, bbs, 2);
  return phi;
}

/* Does a product of m x k by k x n matrices hold the whole of c in one
 * vector (at most 64 bytes, rows of 4 or more)? Each term l is then
 * a shuffle of a (a_il in lane (i, j)) times a shuffle of b (b_lj): for
 * 4 x 4 f32, four vector multiply-adds where rows take sixteen (bench
 * bmm4_grad 1.20x -> 1.11x the expert's C, which does the same). */
static bool whole_matrix(DType dt, int64_t m, int64_t n) {
  return n >= 4 && m >= 2 && m * n * cg_elem_size(dt) <= 64;
}

static LLVMValueRef shuffle_lanes(Cg *g, LLVMValueRef x, const unsigned *idx, int64_t n) {
  LLVMValueRef c[64];
  for (int64_t l = 0; l < n; l++)
    c[l] = LLVMConstInt(g->i32, idx[l], 0);
  return LLVMBuildShuffleVector(g->b, x, LLVMGetUndef(LLVMTypeOf(x)), LLVMConstVector(c, (unsigned)n), "");
}

/* c (+)= a @ b for one m x k by k x n product at pa, pb, pc; a operand
 * read transposed in place (ta) has its element (i, j) at j * m + i. With
 * `seen` (in memory: an i1 in the scalar form, a mask of a row's lanes in
 * the vector form; checks_then_rules) the terms are plain products and a
 * NaN result sets it. */
static void emit_small_product(Body *B, const Inst *v, int ta, int tb, int64_t m, int64_t k,
                               int64_t n, LLVMValueRef pa, LLVMValueRef pb, LLVMValueRef pc,
                               bool accumulate, LLVMValueRef seen) {
  Cg *g = B->g;
  DType dt = v->type.dtype;
  LLVMTypeRef et = cg_elem_type(g, dt);
  LLVMValueRef zero = LLVMConstReal(et, 0);
  if (whole_matrix(dt, m, n)) {
    unsigned align = (unsigned)cg_elem_size(dt);
    LLVMTypeRef vt = LLVMVectorType(et, (unsigned)(m * n));
    LLVMValueRef wa = row_load(B, LLVMVectorType(et, (unsigned)(m * k)), pa, 0, align);
    LLVMValueRef wb = row_load(B, LLVMVectorType(et, (unsigned)(k * n)), pb, 0, align);
    LLVMValueRef xs[SMALL_MAT], ys[SMALL_MAT];
    for (int64_t l = 0; l < k; l++) {
      unsigned ia[64], ib[64];
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          ia[i * n + j] = (unsigned)(ta ? l * m + i : i * k + l);
          ib[i * n + j] = (unsigned)(tb ? j * k + l : l * n + j);
        }
      xs[l] = shuffle_lanes(g, wa, ia, m * n);
      ys[l] = shuffle_lanes(g, wb, ib, m * n);
    }
    LLVMValueRef init = accumulate ? row_load(B, vt, pc, 0, align) : NULL;
    LLVMValueRef sum = vector_sum(B, v, xs, ys, k, init, LLVMConstNull(vt), seen);
    LLVMValueRef at = i64c(g, 0);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(g->b, et, cg_outer(B, pc), &at, 1, "");
    LLVMSetAlignment(LLVMBuildStore(g->b, sum ? sum : LLVMConstNull(vt), p), align);
    return;
  }
  if (n >= 4) { /* rows of c as vectors: c_i = sum over l of a_il x_l (narrower
                 * rows vectorize better across the batch, as scalars) */
    LLVMTypeRef vt = LLVMVectorType(et, (unsigned)n);
    LLVMValueRef vzero = LLVMConstNull(vt);
    unsigned align = (unsigned)cg_elem_size(dt);
    /* the rows x_l of b, built once when it is read transposed (an
     * adjoint's a @ x^T), shared by c's m rows: shuffles of the whole
     * matrix, loaded at once (n loads per row became a gather each,
     * bench bmm8_grad 1.55x -> 1.22x the expert's C) */
    LLVMValueRef rows[SMALL_MAT];
    if (tb && k > 0) {
      LLVMValueRef whole = row_load(B, LLVMVectorType(et, (unsigned)(n * k)), pb, 0, align);
      for (int64_t l = 0; l < k; l++) {
        LLVMValueRef mask[SMALL_MAT];
        for (int64_t j = 0; j < n; j++)
          mask[j] = LLVMConstInt(g->i32, (unsigned long long)(j * k + l), 0);
        rows[l] = LLVMBuildShuffleVector(g->b, whole, LLVMGetUndef(LLVMTypeOf(whole)),
                                         LLVMConstVector(mask, (unsigned)n), "");
      }
    }
    for (int64_t l = 0; l < k && !tb; l++)
      rows[l] = row_load(B, vt, pb, l * n, align);
    for (int64_t i = 0; i < m; i++) {
      LLVMValueRef init = accumulate ? row_load(B, vt, pc, i * n, align) : NULL, xs[SMALL_MAT];
      for (int64_t l = 0; l < k; l++) {
        LLVMValueRef x = cg_load(B, dt, pa, i64c(g, ta ? l * m + i : i * k + l));
        xs[l] = LLVMBuildShuffleVector(
            g->b, LLVMBuildInsertElement(g->b, LLVMGetUndef(vt), x, i64c(g, 0), ""),
            LLVMGetUndef(vt), LLVMConstNull(LLVMVectorType(g->i32, (unsigned)n)), "");
      }
      LLVMValueRef sum = vector_sum(B, v, xs, rows, k, init, vzero, seen);
      LLVMValueRef at = i64c(g, i * n);
      LLVMValueRef p = LLVMBuildInBoundsGEP2(g->b, et, cg_outer(B, pc), &at, 1, "");
      LLVMSetAlignment(LLVMBuildStore(g->b, sum ? sum : vzero, p), align);
    }
    return;
  }
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      LLVMValueRef sum = accumulate ? cg_load(B, dt, pc, i64c(g, i * n + j)) : NULL;
      for (int64_t l = 0; l < k; l++) {
        LLVMValueRef x = cg_load(B, dt, pa, i64c(g, ta ? l * m + i : i * k + l));
        LLVMValueRef y = cg_load(B, dt, pb, i64c(g, tb ? j * k + l : l * n + j));
        LLVMValueRef t = seen ? LLVMBuildFMul(g->b, x, y, "") : cg_product_term(g, v, x, y, zero);
        sum = sum ? LLVMBuildFAdd(g->b, sum, t, "") : t;
      }
      if (seen && sum) {
        LLVMValueRef nan = LLVMBuildFCmp(g->b, LLVMRealUNO, sum, sum, "");
        LLVMBuildStore(g->b, LLVMBuildOr(g->b, LLVMBuildLoad2(g->b, g->i1, seen, ""), nan, ""), seen);
      }
      cg_store(B, dt, pc, i64c(g, i * n + j), sum ? sum : zero);
    }
}

/* Does a batch of v's small products, written over the result, take the
 * zero rule in a second pass? The batch is computed plainly, noting a NaN,
 * which a term 0 * inf or 0 * NaN makes, and computed again by the rule
 * only if one came out. The scalar form's loop across the batch
 * vectorizes with one compare an element instead of three a term. In the
 * vector form a row's NaN lanes join a mask, with no branch: a branch per
 * row to its rule kept the row's splats live across it (bench bmm8_grad
 * 1.52x the expert's C so, 1.16x this way). The rule's pass is for the
 * rare call that meets an infinity. */
static bool checks_then_rules(const Inst *v, bool adds) { return v->op == OP_matmulz && !adds; }

/* A product of rank above 2: one GEMM per element of the operands'
 * broadcast batch, reading each operand's matrix at its (broadcast) batch
 * position and writing, or adding where the result sums over a batch axis,
 * into the result's. Two common shapes need no batch loop: [.., m, k] @
 * [k, n] is one GEMM with m' = batch * m, and its weight adjoint
 * ([.., m, k] read transposed @ [.., m, n] into [k, n]) one GEMM with
 * k' = batch * m, as both batches are contiguous rows. */
static void emit_batched_matmul(Body *B, const Inst *v, LLVMValueRef out, bool accumulate) {
  Cg *g = B->g;
  const Inst *x = v->args[0], *y = v->args[1];
  int ta, tb;
  LLVMValueRef a = gemm_operand(B, x, &ta), b = gemm_operand(B, y, &tb);
  const Type *tx = &x->type, *ty = &y->type;
  LLVMValueRef m = cg_dim(B, tx->dim[tx->rank - 2]), k = cg_dim(B, tx->dim[tx->rank - 1]);
  LLVMValueRef n = cg_dim(B, ty->dim[ty->rank - 1]);
  LLVMValueRef lda = ta ? m : k, ldb = tb ? k : n;
  Type full;
  char err[256];
  if (!ir_matmul_type(g->m, tx, ty, &full, err, sizeof err))
    die("batched matmul %%%d: %s", v->id, err);
  Type fb = batch_of(&full), bx = batch_of(tx), by = batch_of(ty), bv = batch_of(&v->type);
  LLVMValueRef nb = cg_numel(B, &fb);
  LLVMValueRef acc = LLVMConstInt(g->i32, accumulate, 0);
  int64_t sm, sk, sn;
  bool small = small_product(v, &sm, &sk, &sn);
  if (small) { /* the loop below, unrolled products */
  } else if (!ta && by.rank == 0 && ir_shape_eq(&bx, &fb) && ir_shape_eq(&bv, &fb)) {
    call_gemm(B, v, ta, tb, cg_mul64(g, nb, m), n, k, a, lda, b, ldb, out, acc);
    return;
  } else if (ta && !tb && bv.rank == 0 && ir_shape_eq(&bx, &fb) && ir_shape_eq(&by, &fb)) {
    call_gemm(B, v, ta, tb, m, n, cg_mul64(g, nb, k), a, lda, b, ldb, out, acc);
    return;
  }
  bool adds = accumulate;
  if (!ir_shape_eq(&bv, &fb)) { /* products add up: start from zero */
    if (!accumulate)
      LLVMBuildMemSet(g->b, out, LLVMConstInt(g->i8, 0, 0), cg_bytes(B, &v->type),
                      (unsigned)cg_elem_size(v->type.dtype));
    acc = LLVMConstInt(g->i32, 1, 0);
    adds = true;
  }
  /* a NaN seen: one flag, or one per lane of a row in the vector form */
  int64_t lanes = whole_matrix(v->type.dtype, sm, sn) ? sm * sn : sn;
  LLVMTypeRef seen_t = sn >= 4 ? LLVMVectorType(g->i1, (unsigned)lanes) : g->i1;
  LLVMValueRef seen = small && checks_then_rules(v, adds) ? cg_entry_alloca(B, seen_t) : NULL;
  LLVMBasicBlockRef done = NULL;
  if (seen)
    LLVMBuildStore(g->b, LLVMConstNull(seen_t), seen);
  for (int pass = 0; pass < (seen ? 2 : 1); pass++) {
    if (pass == 1) { /* again by the rule, if the plain products met a NaN */
      LLVMBasicBlockRef rule = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "zero_rule");
      done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "products_done");
      LLVMValueRef any = LLVMBuildLoad2(g->b, seen_t, seen, "");
      if (sn >= 4)
        any = cg_intrinsic(g, "llvm.vector.reduce.or", seen_t, &any, 1);
      LLVMBuildCondBr(g->b, any, rule, done);
      LLVMPositionBuilderAtEnd(g->b, rule);
    }
    void *L;
    LLVMValueRef j = cg_loop_begin(B, nb, &L), idx[IR_MAX_RANK];
    for (int d = fb.rank - 1; d >= 0; d--) {
      LLVMValueRef size = cg_dim(B, fb.dim[d]);
      idx[d] = d ? LLVMBuildSRem(g->b, j, size, "") : j;
      if (d)
        j = LLVMBuildSDiv(g->b, j, size, "");
    }
    DType dt = v->type.dtype;
    LLVMValueRef pa = elem_ptr(B, dt, a, batch_offset(B, tx, &fb, idx, cg_mul64(g, m, k)));
    LLVMValueRef pb = elem_ptr(B, dt, b, batch_offset(B, ty, &fb, idx, cg_mul64(g, k, n)));
    LLVMValueRef pc = elem_ptr(B, dt, out, batch_offset(B, &v->type, &fb, idx, cg_mul64(g, m, n)));
    if (small)
      emit_small_product(B, v, ta, tb, sm, sk, sn, pa, pb, pc, adds, pass == 0 ? seen : NULL);
    else
      call_gemm(B, v, ta, tb, m, n, k, pa, lda, pb, ldb, pc, acc);
    cg_loop_end(B, L);
  }
  if (done) {
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
  }
}

/* A matrix-vector product M @ v (M [m, k] in memory as it is) of at most
 * CG_SMALL_GEMV elements of M, inline. The runtime's call, dispatch and
 * set-up were 50 ns of a 170 ns call at 10 x 20 (bench W5: 167 -> 133 ns
 * inline); above this size its kernel (several rows per pass, threads) is
 * worth its set-up.
 *
 * The way an expert writes it: GEMV_ROWS rows at a time (one vector's
 * lanes), each row's products summed across the columns in a vector of
 * its own, the columns' tail by masked loads (one step, not a scalar
 * loop), and the rows' vectors then added across by a tree of shuffles
 * that leaves row i's dot product in lane i (gemv_lanes). One dot product
 * per row, summed across its lanes at the end, spent most of W5's product
 * in the 4 scalar steps of each 20-long row and the 16 horizontal sums.
 * The rows left over (fewer than a group) go by smaller trees, one for
 * each power of two in their count (10 rows: 8, then 2), each row's lanes
 * added in the same order as in a group, so its bits do not depend on
 * where it falls. One dot product per row summed across by halves took
 * 8 instructions of horizontal sum per row (10 x 20 alone: 27 -> 23.5
 * ns, 15 x 32: 35 -> 27.5); a last group reading copies of the last row
 * for its missing ones was slower still (bench W5: 147 -> 165 ns).
 * Measured at one thread against the loop by rows: 16 x 20 50 -> 32 ns,
 * 100 x 40 290 -> 198. */
enum { GEMV_BYTES = 64 };

static LLVMValueRef lane_consts(Cg *g, const int *idx, int n) {
  LLVMValueRef c[2 * GEMV_BYTES];
  for (int l = 0; l < n; l++)
    c[l] = LLVMConstInt(g->i32, (unsigned)idx[l], 0);
  return LLVMConstVector(c, (unsigned)n);
}

/* The vector of n lanes whose lane i is the sum of acc[i]'s vf lanes (n a
 * power of two, at most vf). Each level adds pairs of vectors: in every
 * block of 2h lanes, the first h take a's block folded in half, the next
 * h b's; once one vector is left it is paired with itself. rows[] follows
 * which row each lane holds, and one shuffle at the end puts row i in
 * lane i. Every row is folded by halves, h = vf/2 first, whatever n is. */
static LLVMValueRef gemv_lanes(Cg *g, LLVMValueRef *acc, int n, int vf) {
  const int nrows = n;
  int rows[GEMV_BYTES][GEMV_BYTES];
  for (int v = 0; v < n; v++)
    for (int l = 0; l < vf; l++)
      rows[v][l] = v;
  for (int h = vf / 2; h >= 1; h /= 2) {
    int lo[GEMV_BYTES], hi[GEMV_BYTES];
    for (int o = 0; o < vf; o += 2 * h)
      for (int l = 0; l < h; l++) {
        lo[o + l] = o + l, lo[o + h + l] = vf + o + l;
        hi[o + l] = o + h + l, hi[o + h + l] = vf + o + h + l;
      }
    int pairs = n > 1 ? n / 2 : 1;
    for (int t = 0; t < pairs; t++) {
      int ia = n > 1 ? 2 * t : 0, ib = n > 1 ? 2 * t + 1 : 0;
      LLVMValueRef a = acc[ia], b = acc[ib];
      acc[t] = LLVMBuildFAdd(g->b, LLVMBuildShuffleVector(g->b, a, b, lane_consts(g, lo, vf), ""),
                             LLVMBuildShuffleVector(g->b, a, b, lane_consts(g, hi, vf), ""), "");
      int merged[GEMV_BYTES];
      for (int o = 0; o < vf; o += 2 * h)
        for (int l = 0; l < h; l++)
          merged[o + l] = rows[ia][o + l], merged[o + h + l] = rows[ib][o + l];
      memcpy(rows[t], merged, sizeof merged);
    }
    n = pairs;
  }
  int perm[GEMV_BYTES];
  for (int l = vf - 1; l >= 0; l--) /* a row's first lane */
    perm[rows[0][l]] = l;
  return LLVMBuildShuffleVector(g->b, acc[0], LLVMGetUndef(LLVMTypeOf(acc[0])), lane_consts(g, perm, nrows), "");
}

static LLVMValueRef vec_ptr(Body *B, LLVMTypeRef et, LLVMValueRef buf, LLVMValueRef at) {
  return LLVMBuildInBoundsGEP2(B->g->b, et, cg_outer(B, buf), &at, 1, "");
}

static LLVMValueRef masked_load(Cg *g, LLVMTypeRef vt, LLVMValueRef p, LLVMValueRef mask, unsigned align) {
  LLVMValueRef args[4] = {p, LLVMConstInt(g->i32, align, 0), mask, LLVMConstNull(vt)};
  unsigned id = LLVMLookupIntrinsicID("llvm.masked.load", 16);
  LLVMTypeRef tys[2] = {vt, g->ptr};
  return LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->ctx, id, tys, 2),
                        LLVMGetIntrinsicDeclaration(g->mod, id, tys, 2), args, 4, "");
}

/* lanes < n as a mask of vf lanes */
static LLVMValueRef lanes_below(Cg *g, LLVMValueRef n, int vf) {
  int iota[GEMV_BYTES];
  for (int l = 0; l < vf; l++)
    iota[l] = l;
  LLVMTypeRef it = LLVMVectorType(g->i32, (unsigned)vf);
  LLVMValueRef n32 = LLVMBuildTrunc(g->b, n, g->i32, "");
  LLVMValueRef splat = LLVMBuildShuffleVector(g->b, LLVMBuildInsertElement(g->b, LLVMGetUndef(it), n32, i64c(g, 0), ""),
                                              LLVMGetUndef(it), LLVMConstNull(it), "");
  return LLVMBuildICmp(g->b, LLVMIntULT, lane_consts(g, iota, vf), splat, "");
}

typedef struct Gemv {
  DType dt;
  LLVMTypeRef et, vt;
  int vf;
  unsigned align;
  LLVMValueRef a, b, out, m, k, kfull, colmask;
  bool accumulate;
} Gemv;

/* The products of n rows of a (row i from a's element at[i]) with b, each
 * row's summed in a vector of its own: whole vectors, then the columns'
 * tail by masked loads when there is one. The vectors are left in acc. */
static void row_vectors(Body *B, const Gemv *G, const LLVMValueRef *at, int n, LLVMValueRef *acc) {
  Cg *g = B->g;
  LLVMValueRef sums[GEMV_BYTES];
  for (int i = 0; i < n; i++) {
    sums[i] = cg_entry_alloca(B, G->vt);
    LLVMBuildStore(g->b, LLVMConstNull(G->vt), sums[i]);
  }
  void *C;
  LLVMValueRef c = cg_loop_begin(B, LLVMBuildUDiv(g->b, G->kfull, i64c(g, G->vf), ""), &C);
  LLVMValueRef j = cg_mul64(g, c, i64c(g, G->vf));
  LLVMValueRef x = LLVMBuildLoad2(g->b, G->vt, vec_ptr(B, G->et, G->b, j), "");
  LLVMSetAlignment(x, G->align);
  for (int i = 0; i < n; i++) {
    LLVMValueRef w = LLVMBuildLoad2(g->b, G->vt, vec_ptr(B, G->et, G->a, cg_add64(g, at[i], j)), "");
    LLVMSetAlignment(w, G->align);
    LLVMValueRef args[3] = {w, x, LLVMBuildLoad2(g->b, G->vt, sums[i], "")};
    LLVMBuildStore(g->b, cg_intrinsic(g, "llvm.fmuladd", G->vt, args, 3), sums[i]);
  }
  cg_loop_end(B, C);
  LLVMBasicBlockRef tail = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.tail");
  LLVMBasicBlockRef sum = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.sum");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, G->kfull, G->k, ""), tail, sum);
  LLVMPositionBuilderAtEnd(g->b, tail);
  x = masked_load(g, G->vt, vec_ptr(B, G->et, G->b, G->kfull), G->colmask, G->align);
  for (int i = 0; i < n; i++) {
    LLVMValueRef w = masked_load(g, G->vt, vec_ptr(B, G->et, G->a, cg_add64(g, at[i], G->kfull)),
                                 G->colmask, G->align);
    LLVMValueRef args[3] = {w, x, LLVMBuildLoad2(g->b, G->vt, sums[i], "")};
    LLVMBuildStore(g->b, cg_intrinsic(g, "llvm.fmuladd", G->vt, args, 3), sums[i]);
  }
  LLVMBuildBr(g->b, sum);
  LLVMPositionBuilderAtEnd(g->b, sum);
  for (int i = 0; i < n; i++)
    acc[i] = LLVMBuildLoad2(g->b, G->vt, sums[i], "");
}

/* The rows [r0, r0 + n): their vectors added across by gemv_lanes, and
 * stored as one vector of n lanes. */
static void gemv_group(Body *B, const Gemv *G, LLVMValueRef r0, int n) {
  Cg *g = B->g;
  LLVMValueRef acc[GEMV_BYTES], at[GEMV_BYTES];
  for (int i = 0; i < n; i++)
    at[i] = cg_mul64(g, cg_add64(g, r0, i64c(g, i)), G->k);
  row_vectors(B, G, at, n, acc);
  LLVMValueRef dots = gemv_lanes(g, acc, n, G->vf), p = vec_ptr(B, G->et, G->out, r0);
  LLVMTypeRef nt = LLVMVectorType(G->et, (unsigned)n);
  if (G->accumulate) {
    LLVMValueRef old = LLVMBuildLoad2(g->b, nt, p, "");
    LLVMSetAlignment(old, G->align);
    dots = LLVMBuildFAdd(g->b, old, dots, "");
  }
  LLVMSetAlignment(LLVMBuildStore(g->b, dots, p), G->align);
}

static void emit_small_gemv(Body *B, DType dt, LLVMValueRef a, LLVMValueRef b, LLVMValueRef m,
                            LLVMValueRef k, LLVMValueRef out, bool accumulate) {
  Cg *g = B->g;
  Gemv G = {.dt = dt, .a = a, .b = b, .out = out, .m = m, .k = k, .accumulate = accumulate};
  G.et = cg_elem_type(g, G.dt);
  G.align = (unsigned)cg_elem_size(G.dt);
  G.vf = GEMV_BYTES / (int)G.align;
  G.vt = LLVMVectorType(G.et, (unsigned)G.vf);
  LLVMValueRef vf = i64c(g, G.vf);
  G.kfull = cg_mul64(g, LLVMBuildUDiv(g->b, k, vf, ""), vf);
  G.colmask = lanes_below(g, LLVMBuildSub(g->b, k, G.kfull, ""), G.vf);
  void *R;
  LLVMValueRef groups = LLVMBuildUDiv(g->b, m, vf, "");
  LLVMValueRef whole = cg_mul64(g, groups, vf);
  LLVMValueRef r0 = cg_mul64(g, cg_loop_begin(B, groups, &R), vf);
  gemv_group(B, &G, r0, G.vf);
  cg_loop_end(B, R);
  /* The rows left, fewer than a group: a group of each power of two in
   * their count, largest first (10 rows of f32: 8, then 2). */
  LLVMValueRef left = LLVMBuildSub(g->b, m, whole, "");
  for (int n = G.vf / 2; n >= 1; n /= 2) {
    LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.rows");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.rows.done");
    LLVMValueRef has = LLVMBuildAnd(g->b, left, i64c(g, n), "");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, has, i64c(g, 0), ""), run, next);
    LLVMPositionBuilderAtEnd(g->b, run);
    /* the rows of the larger groups come first */
    LLVMValueRef from = cg_add64(g, whole, LLVMBuildAnd(g->b, left, i64c(g, -2 * n), ""));
    gemv_group(B, &G, from, n);
    LLVMBuildBr(g->b, next);
    LLVMPositionBuilderAtEnd(g->b, next);
  }
}

void cg_gemv_inline(Body *B, DType dt, LLVMValueRef a, LLVMValueRef b, LLVMValueRef m, LLVMValueRef k,
                    LLVMValueRef out) {
  emit_small_gemv(B, dt, a, b, m, k, out, false);
}

static void masked_store(Cg *g, LLVMValueRef x, LLVMValueRef p, LLVMValueRef mask, unsigned align) {
  LLVMValueRef args[4] = {x, p, LLVMConstInt(g->i32, align, 0), mask};
  unsigned id = LLVMLookupIntrinsicID("llvm.masked.store", 17);
  LLVMTypeRef tys[2] = {LLVMTypeOf(x), g->ptr};
  LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->ctx, id, tys, 2), LLVMGetIntrinsicDeclaration(g->mod, id, tys, 2),
                 args, 4, "");
}

/* Row r's weighted vector of columns (at column c) added to *sum. */
static void acc_row(Body *B, const Gemv *G, LLVMValueRef w, LLVMValueRef r, LLVMValueRef c, LLVMValueRef mask,
                    bool zero_rule, LLVMValueRef sum) {
  Cg *g = B->g;
  LLVMValueRef wr = cg_load(B, G->dt, cg_outer(B, w), r);
  LLVMValueRef p = vec_ptr(B, G->et, G->a, cg_add64(g, cg_mul64(g, r, G->k), c));
  LLVMValueRef x = mask ? masked_load(g, G->vt, p, mask, G->align) : LLVMBuildLoad2(g->b, G->vt, p, "");
  if (!mask)
    LLVMSetAlignment(x, G->align);
  LLVMValueRef one = LLVMBuildInsertElement(g->b, LLVMGetUndef(G->vt), wr, i64c(g, 0), "");
  LLVMValueRef splat =
      LLVMBuildShuffleVector(g->b, one, LLVMGetUndef(G->vt), LLVMConstNull(LLVMVectorType(g->i32, (unsigned)G->vf)), "");
  LLVMValueRef old = LLVMBuildLoad2(g->b, G->vt, sum, "");
  LLVMValueRef args[3] = {splat, x, old};
  LLVMValueRef t = cg_intrinsic(g, "llvm.fmuladd", G->vt, args, 3);
  if (zero_rule) { /* a term with a factor 0 adds nothing, even times inf or NaN */
    LLVMValueRef zero = LLVMConstNull(G->vt);
    LLVMValueRef skip = LLVMBuildOr(g->b, LLVMBuildFCmp(g->b, LLVMRealOEQ, splat, zero, ""),
                                    LLVMBuildFCmp(g->b, LLVMRealOEQ, x, zero, ""), "");
    t = LLVMBuildSelect(g->b, skip, old, t, "");
  }
  LLVMBuildStore(g->b, t, sum);
}

/* One vector of out's columns (at column c; mask: the tail's lanes, or
 * NULL for a whole vector) over all the rows, in registers: row r into
 * accumulator r % 4 (four chains of FMAs, not one: W2-like 16-column rows
 * waited on one chain's latency), the four added at the end. */
static void acc_columns(Body *B, const Gemv *G, LLVMValueRef w, LLVMValueRef c, LLVMValueRef mask,
                        bool zero_rule) {
  Cg *g = B->g;
  LLVMValueRef sum[4];
  for (int q = 0; q < 4; q++) {
    sum[q] = cg_entry_alloca(B, G->vt);
    LLVMBuildStore(g->b, LLVMConstNull(G->vt), sum[q]);
  }
  void *R;
  LLVMValueRef quads = LLVMBuildUDiv(g->b, G->m, i64c(g, 4), "");
  LLVMValueRef r0 = cg_mul64(g, cg_loop_begin(B, quads, &R), i64c(g, 4));
  for (int q = 0; q < 4; q++)
    acc_row(B, G, w, cg_add64(g, r0, i64c(g, q)), c, mask, zero_rule, sum[q]);
  cg_loop_end(B, R);
  LLVMValueRef rest = cg_mul64(g, quads, i64c(g, 4));
  void *T;
  LLVMValueRef r = cg_add64(g, rest, cg_loop_begin(B, LLVMBuildSub(g->b, G->m, rest, ""), &T));
  acc_row(B, G, w, r, c, mask, zero_rule, sum[0]);
  cg_loop_end(B, T);
  LLVMValueRef at = vec_ptr(B, G->et, G->out, c);
  LLVMValueRef start = mask ? masked_load(g, G->vt, at, mask, G->align) : LLVMBuildLoad2(g->b, G->vt, at, "");
  if (!mask)
    LLVMSetAlignment(start, G->align);
  LLVMValueRef s01 = LLVMBuildFAdd(g->b, LLVMBuildLoad2(g->b, G->vt, sum[0], ""), LLVMBuildLoad2(g->b, G->vt, sum[1], ""), "");
  LLVMValueRef s23 = LLVMBuildFAdd(g->b, LLVMBuildLoad2(g->b, G->vt, sum[2], ""), LLVMBuildLoad2(g->b, G->vt, sum[3], ""), "");
  LLVMValueRef v = LLVMBuildFAdd(g->b, start, LLVMBuildFAdd(g->b, s01, s23, ""), "");
  if (mask)
    masked_store(g, v, at, mask, G->align);
  else
    LLVMSetAlignment(LLVMBuildStore(g->b, v, at), G->align);
}

/* Is every weight w[0, m) finite and not 0? Then no term of theirs meets
 * the zero rule (a finite nonzero weight times 0 adds a zero). */
static LLVMValueRef weights_plain(Body *B, const Gemv *G, LLVMValueRef w) {
  Cg *g = B->g;
  LLVMValueRef bad = cg_entry_alloca(B, g->i32);
  LLVMBuildStore(g->b, LLVMConstInt(g->i32, 0, 0), bad);
  void *R;
  LLVMValueRef x = cg_load(B, G->dt, cg_outer(B, w), cg_loop_begin(B, G->m, &R));
  LLVMValueRef fabs = cg_intrinsic(g, "llvm.fabs", G->et, &x, 1);
  LLVMValueRef ok = LLVMBuildAnd(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, fabs, LLVMConstReal(G->et, __builtin_inf()), ""),
                                 LLVMBuildFCmp(g->b, LLVMRealONE, x, LLVMConstReal(G->et, 0), ""), "");
  LLVMValueRef flag = LLVMBuildZExt(g->b, LLVMBuildNot(g->b, ok, ""), g->i32, "");
  LLVMBuildStore(g->b, LLVMBuildOr(g->b, LLVMBuildLoad2(g->b, g->i32, bad, ""), flag, ""), bad);
  cg_loop_end(B, R);
  return LLVMBuildICmp(g->b, LLVMIntEQ, LLVMBuildLoad2(g->b, g->i32, bad, ""), LLVMConstInt(g->i32, 0, 0), "plain");
}

static void acc_all_columns(Body *B, const Gemv *G, LLVMValueRef w, bool zero_rule) {
  Cg *g = B->g;
  LLVMValueRef vf = i64c(g, G->vf);
  void *C;
  LLVMValueRef c = cg_mul64(g, cg_loop_begin(B, LLVMBuildUDiv(g->b, G->k, vf, ""), &C), vf);
  acc_columns(B, G, w, c, NULL, zero_rule);
  cg_loop_end(B, C);
  LLVMBasicBlockRef tail = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.acc.tail");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.acc.done");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, G->kfull, G->k, ""), tail, done);
  LLVMPositionBuilderAtEnd(g->b, tail);
  acc_columns(B, G, w, G->kfull, lanes_below(g, LLVMBuildSub(g->b, G->k, G->kfull, ""), G->vf), zero_rule);
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, done);
}

/* Under the zero rule, weights all finite and nonzero (the usual case)
 * take the loops without its per-term test, as the runtime's gemv_acc
 * does: 10 x 20 logistic regression 126 -> 117 ns a gradient. */
void cg_gemv_acc_inline(Body *B, DType dt, LLVMValueRef w, LLVMValueRef a, LLVMValueRef m, LLVMValueRef k,
                        LLVMValueRef out, bool zero_rule) {
  Cg *g = B->g;
  Gemv G = {.dt = dt, .a = a, .out = out, .m = m, .k = k};
  G.et = cg_elem_type(g, dt);
  G.align = (unsigned)cg_elem_size(dt);
  G.vf = GEMV_BYTES / (int)G.align;
  G.vt = LLVMVectorType(G.et, (unsigned)G.vf);
  LLVMValueRef vf = i64c(g, G.vf);
  G.kfull = cg_mul64(g, LLVMBuildUDiv(g->b, k, vf, ""), vf);
  if (!zero_rule) {
    acc_all_columns(B, &G, w, false);
    return;
  }
  LLVMBasicBlockRef plain = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.acc.plain");
  LLVMBasicBlockRef rule = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.acc.rule");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.acc.joined");
  LLVMBuildCondBr(g->b, weights_plain(B, &G, w), plain, rule);
  LLVMPositionBuilderAtEnd(g->b, plain);
  acc_all_columns(B, &G, w, false);
  LLVMBuildBr(g->b, join);
  LLVMPositionBuilderAtEnd(g->b, rule);
  acc_all_columns(B, &G, w, true);
  LLVMBuildBr(g->b, join);
  LLVMPositionBuilderAtEnd(g->b, join);
}

void cg_emit_matmul(Body *B, const Inst *v, LLVMValueRef out, bool accumulate) {
  Cg *g = B->g;
  const Inst *x = v->args[0], *y = v->args[1];
  if (x->type.rank > 2 || y->type.rank > 2 || v->type.rank > 2) {
    emit_batched_matmul(B, v, out, accumulate);
    return;
  }
  int ta, tb;
  LLVMValueRef a = gemm_operand(B, x, &ta), b = gemm_operand(B, y, &tb);
  LLVMValueRef one = i64c(g, 1);
  LLVMValueRef m = x->type.rank == 2 ? cg_dim(B, x->type.dim[0]) : one;
  LLVMValueRef k = cg_dim(B, x->type.dim[x->type.rank - 1]);
  LLVMValueRef n = y->type.rank == 2 ? cg_dim(B, y->type.dim[1]) : one;
  LLVMValueRef lda = ta ? m : k, ldb = y->type.rank == 2 ? (tb ? k : n) : one;
  LLVMValueRef acc = LLVMConstInt(g->i32, accumulate, 0);
  int64_t sm, sk, sn;
  if (small_product(v, &sm, &sk, &sn)) { /* one product: the rule's terms as they come */
    emit_small_product(B, v, ta, tb, sm, sk, sn, a, b, out, accumulate, NULL);
    return;
  }
  if (v->op != OP_matmul || x->type.rank != 2 || y->type.rank != 1 || ta) {
    call_gemm(B, v, ta, tb, m, n, k, a, lda, b, ldb, out, acc);
    return;
  }
  LLVMValueRef small = LLVMBuildICmp(g->b, LLVMIntSLE, cg_mul64(g, m, k), i64c(g, CG_SMALL_GEMV), "");
  if (LLVMIsAConstantInt(small)) {
    if (LLVMConstIntGetZExtValue(small))
      emit_small_gemv(B, v->type.dtype, a, b, m, k, out, accumulate);
    else
      call_gemm(B, v, ta, tb, m, n, k, a, lda, b, ldb, out, acc);
    return;
  }
  LLVMBasicBlockRef inl = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.inline");
  LLVMBasicBlockRef rt = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.call");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "gemv.done");
  LLVMBuildCondBr(g->b, small, inl, rt);
  LLVMPositionBuilderAtEnd(g->b, inl);
  emit_small_gemv(B, v->type.dtype, a, b, m, k, out, accumulate);
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, rt);
  call_gemm(B, v, ta, tb, m, n, k, a, lda, b, ldb, out, acc);
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, done);
}
