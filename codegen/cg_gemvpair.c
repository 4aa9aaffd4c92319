/* Matrix-vector pairs: a product z = M @ v (M [n, d] in memory, v [d]) and,
 * later in the same body, the product of M's transpose with a vector g [n]
 * (M^T g, or g @ M: the adjoint of z, d_v) where g is computed by the loop
 * group over the n rows that reads z -- the shape of every gradient of a
 * loss of x @ w (logistic and linear regression, a linear layer with one
 * output). Computed apart, the two products read M twice; M is the largest
 * thing the gradient touches (64 MB of W2's 68), so the pair is fused:
 *
 *   for each chunk of rows (the thread pool's, a fixed split):
 *     zero this chunk's partial of d_v
 *     for each block of R rows (R * d elements of M: 8 KB, in L1):
 *       z[block] = M[block] @ v           (sg_rt_gemv_rows)
 *       the group's loop over the block   (g[block], the loss's sums ...)
 *       partial += M[block]^T g[block]    (sg_rt_gemv_acc: M read from L1)
 *
 * and where the adjoint product stood, d_v = the chunks' partials added in
 * chunk order (starting from 0). The chunks depend on n and d only, so the
 * bits do not depend on the number of threads; each element of z is
 * computed exactly as the unfused product computes it; a block adds its
 * rows into four accumulators (row i into i % 4, summed at the block's
 * end), under the zero rule when the adjoint is a matmulz (a row whose g
 * is 0 adds nothing, even where M is inf or NaN). The partials (at most
 * PAIR_MAX_CHUNKS x d elements) live after the temporaries, in the
 * thread's workspace.
 *
 * z, read only by the group's members, and g, read only by them and the
 * adjoint, need no memory: they live in a block scratch on the stack.
 *
 * A lone product (no adjoint: a forward function, adj and g NULL) runs
 * the same blocks with the loop group that first reads it (try_lone).
 *
 * Over a small M (small_known) the blocks' two products are inline code
 * (cg_matmul.c) instead of the runtime's row kernels.
 *
 * Taken in bodies without loops or branches, when z is not read before
 * the group and the adjoint product starts no sum of products (acc_into).
 *
 * Requires: plan and form_groups have run. Keeps: the groups (it may make
 * a lone flat g a group of one). */
#include <string.h>

#include "cg_internal.h"

enum {
  PAIR_MAX_CHUNKS = 64,      /* partials of d_v at most, per pair */
  /* of M per block of rows: with the next block, prefetched meanwhile, it
   * must stay in L1 (32 KB here; 16 KB blocks thrashed it: W2 1.14x
   * slower). An M of PAIR_STREAM_MIN bytes or more, read from memory, gets
   * half that: the requests for it go out more evenly between the
   * kernels' steps and the loop between them (bench W2 from cold memory,
   * both in one process: 2.33 -> 2.17 ns a row), while in cache the
   * larger blocks are 8% faster (fewer calls). */
  PAIR_BLOCK_BYTES = 8192,
  PAIR_STREAM_BLOCK_BYTES = 4096,
  PAIR_STREAM_MIN = 8 << 20,
  PAIR_MIN_ROWS = 16,
  PAIR_MAX_ROWS = 1024,
};

struct CgPair {
  Inst *fwd, *head, *adj, *mat, *vec, *g; /* adj, g: NULL for a lone product */
  LLVMValueRef part;    /* the partials' memory */
  LLVMValueRef nchunks; /* alloca: how many the group's loop filled */
};

/* Is every read of v in group gid's loop, or by `also` (through values
 * computed where used)? Then v need not outlive a block of rows. */
static bool block_local(Body *B, const Inst *v, int gid, const Inst *also, PtrVec *users) {
  PtrVec *us = &users[v->id];
  if (v->nuses != (int)us->len) /* a result */
    return false;
  for (int k = 0; k < us->len; k++) {
    const Inst *u = us->data[k];
    Slot *s = cg_slot(B, u);
    if (u == also)
      continue;
    if (s->has_buf ? s->group != gid : !block_local(B, u, gid, also, users))
      return false;
  }
  return true;
}

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

static bool is_vec(const Inst *v) { return v->type.rank == 1; }

/* A transpose swapping the two axes of a matrix. */
static bool transposed(const Inst *t) {
  return t->op == OP_transpose && t->type.rank == 2 && t->perm[0] == 1 && t->perm[1] == 0;
}

/* Does v's value, computed where used, read `what`? */
static bool reads(Body *B, const Inst *v, const Inst *what) {
  for (int k = 0; k < v->nargs; k++) {
    const Inst *a = v->args[k];
    if (a == what)
      return true;
    if (a->op != OP_param && !cg_slot(B, a)->has_buf && reads(B, a, what))
      return true;
  }
  return false;
}

static bool plain_slot(Body *B, const Inst *v) {
  Slot *s = cg_slot(B, v);
  return s->has_buf && !s->view && !s->acc_into && !s->by_products && !s->inplace_of &&
         !s->inplace_old && s->rows < 0 && !s->pair;
}

/* The matrix M and vector g of an adjoint product M^T g (or g @ M). */
static bool adjoint_form(const Inst *a, Inst **mat, Inst **g) {
  Inst *x = a->args[0], *y = a->args[1];
  if (transposed(x) && is_vec(y)) {
    *mat = x->args[0];
    *g = y;
    return true;
  }
  if (is_vec(x) && y->type.rank == 2 && y->op != OP_transpose) {
    *mat = y;
    *g = x;
    return true;
  }
  return false;
}

/* Make a lone flat g (no group: its group had one member) a group. */
static bool in_group(Body *B, Inst *g) {
  Slot *s = cg_slot(B, g);
  if (s->group >= 0)
    return true;
  const Type *space;
  if (s->view || s->inplace_of || s->rows >= 0 || !cg_flat_member(B, g, &space) ||
      ir_ops[g->op].shape == SH_REDUCE)
    return false;
  s->group = g->id;
  s->group_last = g;
  return true;
}

static Inst *group_head(Body *B, Inst *g) {
  int gid = cg_slot(B, g)->group;
  Inst *h = g;
  while (h->prev && h->id != gid)
    h = h->prev;
  return h->id == gid ? h : NULL;
}

static void try_pair(Body *B, Inst *a) {
  Inst *mat, *g;
  if (a->op != OP_matmul && a->op != OP_matmulz)
    return;
  if (!is_vec(a) || !adjoint_form(a, &mat, &g) || !plain_slot(B, a) || !cg_slot(B, g)->has_buf)
    return;
  if (mat->op != OP_param && !cg_slot(B, mat)->has_buf)
    return;
  if (mat->type.dtype != DT_F32 && mat->type.dtype != DT_F64)
    return;
  /* the forward product: M @ v, before g */
  Inst *fwd = NULL;
  for (Inst *i = g->prev; i && !fwd; i = i->prev)
    if (i->op == OP_matmul && i->args[0] == mat && is_vec(i->args[1]) &&
        (i->args[1]->op == OP_param || cg_slot(B, i->args[1])->has_buf))
      fwd = i;
  if (!fwd || !plain_slot(B, fwd) || cg_slot(B, fwd)->group >= 0)
    return;
  if (!ir_shape_eq(&g->type, &fwd->type) || !in_group(B, g))
    return;
  Inst *head = group_head(B, g);
  if (!head || head->id < fwd->id || cg_slot(B, head)->pair)
    return;
  const Type *space = &head->type;
  if (ir_ops[head->op].shape == SH_REDUCE)
    space = &head->args[0]->type;
  if (!ir_shape_eq(space, &fwd->type))
    return;
  /* nothing emitted between the product and its group may read it */
  for (Inst *i = fwd->next; i != head; i = i->next)
    if (cg_slot(B, i)->has_buf && reads(B, i, fwd))
      return;
  int k = B->npairs++;
  B->pairs = xrealloc(B->pairs, sizeof(CgPair) * (size_t)B->npairs);
  B->pairs[k] = (CgPair){fwd, head, a, mat, fwd->args[1], g, NULL, NULL};
  cg_slot(B, fwd)->pair = cg_slot(B, head)->pair = cg_slot(B, a)->pair = k + 1;
}

/* A lone product z = M @ v (a forward: no adjoint after it) and the loop
 * group that first reads it -- or, if that reader is alone, say the
 * loss's sum(softplus(z) - y * z), a group of one made for it: the same
 * blocks of rows without the adjoint, so z is computed a block at a time
 * next to the loop that reads it (in the block scratch, if nothing else
 * reads it), on the pool, instead of by the whole GEMM into n elements of
 * memory that the loop then reads back. */
static void try_lone(Body *B, Inst *fwd) {
  Inst *mat = fwd->args[0], *vec = fwd->args[1];
  if (fwd->op != OP_matmul || !is_vec(fwd) || mat->type.rank != 2 || !is_vec(vec))
    return;
  /* a matrix of a few literal elements: the product inline is faster than
   * any blocks (bench W5 with literal sizes, 10 x 20: 163 -> 126 ns) */
  int64_t literal = ir_static_numel(&mat->type);
  if (literal >= 0 && literal <= CG_SMALL_GEMV)
    return;
  /* (computed later, at the group: no update in place may overwrite M or v) */
  if (!(mat->op == OP_param || plain_slot(B, mat)) ||
      !(vec->op == OP_param || (cg_slot(B, vec)->has_buf && !cg_slot(B, vec)->inplace_old)))
    return;
  if ((mat->type.dtype != DT_F32 && mat->type.dtype != DT_F64) || !plain_slot(B, fwd) ||
      cg_slot(B, fwd)->group >= 0)
    return;
  Inst *reader = fwd->next;
  while (reader && !(cg_slot(B, reader)->has_buf && reads(B, reader, fwd)))
    reader = reader->next;
  if (!reader)
    return;
  Slot *rs = cg_slot(B, reader);
  if (rs->rows >= 0 || rs->online >= 0 || rs->pair || rs->view || rs->inplace_of)
    return;
  const Type *space;
  Inst *head = rs->group >= 0 ? group_head(B, reader) : reader;
  /* (one product per group: a second one read by it keeps its own loop) */
  if (!head || head->id < fwd->id || cg_slot(B, head)->pair || !cg_flat_member(B, head, &space) ||
      !ir_shape_eq(space, &fwd->type))
    return;
  if (rs->group < 0) {
    rs->group = reader->id;
    rs->group_last = reader;
  }
  int k = B->npairs++;
  B->pairs = xrealloc(B->pairs, sizeof(CgPair) * (size_t)B->npairs);
  B->pairs[k] = (CgPair){fwd, head, NULL, mat, vec, NULL, NULL, NULL};
  cg_slot(B, fwd)->pair = cg_slot(B, head)->pair = k + 1;
}

static void cg_pairs_form(Body *B, int n) {
  if (B->has_regions)
    return;
  for (Inst *i = B->f->first; i; i = i->next)
    if (ir_ops[i->op].shape == SH_MATMUL && cg_slot(B, i)->has_buf)
      try_pair(B, i);
  for (Inst *i = B->f->first; i; i = i->next)
    if (ir_ops[i->op].shape == SH_MATMUL && cg_slot(B, i)->has_buf && !cg_slot(B, i)->pair)
      try_lone(B, i);
  if (!B->npairs)
    return;
  /* z read only by the group, g only by the group and the adjoint: both
   * live in a block scratch (no memory, no store to it and load back) */
  PtrVec *users = xmalloc(sizeof(PtrVec) * (size_t)(n + 1));
  memset(users, 0, sizeof(PtrVec) * (size_t)(n + 1));
  for (Inst *i = B->f->first; i; i = i->next)
    for (int k = 0; k < i->nargs; k++)
      if (i->args[k]->op != OP_param)
        vec_push(&users[i->args[k]->id], i);
  for (int k = 0; k < B->npairs; k++) {
    CgPair *p = &B->pairs[k];
    int gid = cg_slot(B, p->head)->group;
    Slot *zs = cg_slot(B, p->fwd);
    if (block_local(B, p->fwd, gid, NULL, users))
      zs->pair_block = zs->internal = true;
    if (p->g && block_local(B, p->g, gid, p->adj, users) && p->g != p->fwd)
      cg_slot(B, p->g)->pair_block = cg_slot(B, p->g)->internal = true;
  }
  for (int k = 0; k <= n; k++)
    vec_free(&users[k]);
  free(users);
}

CgPair *cg_pair_of(Body *B, const Inst *head) {
  int k = cg_slot(B, head)->pair;
  return k && B->pairs[k - 1].head == head ? &B->pairs[k - 1] : NULL;
}

static LLVMValueRef dim(Body *B, const Inst *v, int axis) { return cg_dim(B, v->type.dim[axis]); }

static LLVMValueRef smax(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, a, b, ""), a, b, "");
}

static LLVMValueRef smin(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, a, b, ""), a, b, "");
}

/* max(1, min(PAIR_MAX_CHUNKS, 65536 / d)): d partials of at most 256 KB. */
LLVMValueRef cg_pair_max_chunks(Body *B, CgPair *p) {
  Cg *g = B->g;
  LLVMValueRef d = smax(g, dim(B, p->mat, 1), i64c(g, 1));
  LLVMValueRef c = LLVMBuildSDiv(g->b, i64c(g, 65536), d, "");
  return smax(g, smin(g, c, i64c(g, PAIR_MAX_CHUNKS)), i64c(g, 1));
}

/* A pair's partials of d_v after the temporaries (total grows; an
 * offset until bound). */
static LLVMValueRef pair_reserve_one(Body *B, CgPair *p, LLVMValueRef total) {
  Cg *g = B->g;
  p->nchunks = cg_entry_alloca(B, g->i64);
  p->part = total;
  if (!p->adj)
    return total;
  LLVMValueRef d = dim(B, p->mat, 1);
  LLVMValueRef elems = LLVMBuildNSWMul(g->b, cg_pair_max_chunks(B, p), d, "");
  LLVMValueRef bytes = LLVMBuildNSWMul(g->b, elems, i64c(g, cg_elem_size(p->adj->type.dtype)), "");
  bytes = LLVMBuildAnd(g->b, LLVMBuildNSWAdd(g->b, bytes, i64c(g, 63), ""), i64c(g, ~(int64_t)63), "");
  return LLVMBuildNSWAdd(g->b, total, bytes, "");
}

/* Rows per block: PAIR_BLOCK_BYTES of M (PAIR_STREAM_BLOCK_BYTES for a
 * large M), a multiple of 16 rows within [PAIR_MIN_ROWS, PAIR_MAX_ROWS]. */
LLVMValueRef cg_pair_block_rows(Body *B, CgPair *p) {
  Cg *g = B->g;
  LLVMValueRef row = LLVMBuildNSWMul(g->b, smax(g, dim(B, p->mat, 1), i64c(g, 1)),
                                     i64c(g, cg_elem_size(p->mat->type.dtype)), "");
  LLVMValueRef large = LLVMBuildICmp(g->b, LLVMIntSGE, LLVMBuildNSWMul(g->b, dim(B, p->mat, 0), row, ""),
                                     i64c(g, PAIR_STREAM_MIN), "");
  LLVMValueRef bytes = LLVMBuildSelect(g->b, large, i64c(g, PAIR_STREAM_BLOCK_BYTES),
                                       i64c(g, PAIR_BLOCK_BYTES), "");
  LLVMValueRef r = LLVMBuildSDiv(g->b, bytes, row, "");
  r = LLVMBuildAnd(g->b, r, i64c(g, ~(int64_t)15), "");
  return smin(g, smax(g, r, i64c(g, PAIR_MIN_ROWS)), i64c(g, PAIR_MAX_ROWS));
}

static LLVMValueRef buf_of(Body *B, const Inst *v) { return cg_outer(B, cg_slot(B, v)->buf); }

static LLVMValueRef at(Body *B, DType dt, LLVMValueRef buf, LLVMValueRef off) {
  return LLVMBuildInBoundsGEP2(B->g->b, cg_mem_type(B->g, dt), buf, &off, 1, "");
}

static LLVMValueRef call(Body *B, RtFunc f, LLVMValueRef *args, int n) {
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(B->g, f, &fty);
  return LLVMBuildCall2(B->g->b, fty, fn, args, (unsigned)n, "");
}

/* This chunk's partial of d_v (chunk: NULL when the loop runs inline). */
static LLVMValueRef partial(Body *B, CgPair *p, LLVMValueRef chunk) {
  Cg *g = B->g;
  LLVMValueRef base = cg_outer(B, p->part);
  if (!chunk)
    return base;
  LLVMValueRef off = LLVMBuildNSWMul(g->b, chunk, dim(B, p->mat, 1), "");
  return at(B, p->adj->type.dtype, base, off);
}

void cg_pair_chunk_begin(Body *B, CgPair *p, LLVMValueRef chunk) {
  Cg *g = B->g;
  const Inst *scratch[2] = {p->fwd, p->g};
  for (int k = 0; k < 2 && scratch[k]; k++) {
    Slot *s = cg_slot(B, scratch[k]);
    if (s->pair_block) {
      s->pairbuf = cg_block_alloca(B, cg_mem_type(g, scratch[k]->type.dtype), PAIR_MAX_ROWS);
      LLVMSetValueName2(s->pairbuf, k ? "g.block" : "z.block", 7);
    }
  }
  if (!p->adj)
    return;
  LLVMValueRef bytes = LLVMBuildNSWMul(g->b, dim(B, p->mat, 1),
                                       i64c(g, cg_elem_size(p->adj->type.dtype)), "");
  LLVMBuildMemSet(g->b, partial(B, p, chunk), LLVMConstInt(g->i8, 0, 0), bytes,
                  (unsigned)cg_elem_size(p->adj->type.dtype));
}

/* Is M small, at most CG_SMALL_GEMV elements, with rows other than one
 * vector long? Then a block's products run inline (cg_gemv_inline,
 * cg_gemv_acc_inline): the runtime's row kernels, built for W2's million
 * rows, spent 120 of the 198 ns of a 10 x 20 logistic regression's
 * gradient in their calls and set-up. The logistic regression's gradient
 * at one thread, runtime -> inline: 10 x 20 195 -> 117 ns, 200 x 20
 * 1787 -> 825, 64 x 32 408 -> 264, 16 x 100 357 -> 277; but rows of
 * exactly one vector (16 f32 columns) have the runtime's own kernels
 * (W2's), faster than these: 32 x 16 121 -> 128, 256 x 16 559 -> 658.
 * 1 or 0 when M's sizes say so at compile time, -1 when the call decides. */
static int small_known(const CgPair *p) {
  const Type *t = &p->mat->type;
  int64_t vec = 64 / cg_elem_size(t->dtype);
  if (t->dim[1].sym < 0 && t->dim[1].size == vec)
    return 0;
  int64_t numel = ir_static_numel(t);
  if (numel >= 0)
    return numel <= CG_SMALL_GEMV;
  for (int k = 0; k < 2; k++)
    if (t->dim[k].sym < 0 && t->dim[k].size > CG_SMALL_GEMV)
      return 0;
  return -1;
}

static LLVMValueRef small_matrix(Body *B, CgPair *p) {
  Cg *g = B->g;
  int known = small_known(p);
  if (known >= 0)
    return LLVMConstInt(g->i1, (unsigned long long)known, 0);
  LLVMValueRef n = dim(B, p->mat, 0), d = dim(B, p->mat, 1);
  /* (n <= limit and d <= limit first: their product cannot overflow) */
  LLVMValueRef lim = i64c(g, CG_SMALL_GEMV);
  LLVMValueRef each = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntSLE, n, lim, ""),
                                   LLVMBuildICmp(g->b, LLVMIntSLE, d, lim, ""), "");
  LLVMValueRef prod = LLVMBuildICmp(g->b, LLVMIntSLE, cg_mul64(g, n, d), lim, "");
  LLVMValueRef vec = i64c(g, 64 / cg_elem_size(p->mat->type.dtype));
  LLVMValueRef other = LLVMBuildICmp(g->b, LLVMIntNE, d, vec, "");
  return LLVMBuildAnd(g->b, LLVMBuildAnd(g->b, each, prod, ""), other, "small");
}

/* A block's operands: its rows of M, their count, z (forward) or g and
 * the chunk's partial (adjoint). */
typedef struct BlockArgs {
  DType dt;
  LLVMValueRef rows, d, m, vec, out;
} BlockArgs;

typedef void PairPart(Body *B, CgPair *p, const BlockArgs *a, bool inline_);

/* part inline when M is small, else through the runtime: one of them when
 * that is known at compile time, both behind a test otherwise (the
 * operands computed before it, once). */
static void either_way(Body *B, CgPair *p, const BlockArgs *a, PairPart *part) {
  Cg *g = B->g;
  LLVMValueRef small = small_matrix(B, p);
  if (LLVMIsAConstantInt(small)) {
    part(B, p, a, LLVMConstIntGetZExtValue(small) != 0);
    return;
  }
  LLVMBasicBlockRef inl = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "pair.inline");
  LLVMBasicBlockRef rt = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "pair.call");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, B->fn, "pair.done");
  LLVMBuildCondBr(g->b, small, inl, rt);
  LLVMPositionBuilderAtEnd(g->b, inl);
  part(B, p, a, true);
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, rt);
  part(B, p, a, false);
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, done);
}

static void forward_part(Body *B, CgPair *p, const BlockArgs *a, bool inline_) {
  Cg *g = B->g;
  if (inline_) {
    cg_gemv_inline(B, a->dt, a->m, a->vec, a->rows, a->d, a->out);
    return;
  }
  LLVMValueRef args[7] = {a->rows, a->d, a->m, a->d, a->vec, a->out, LLVMConstInt(g->i32, p->adj != NULL, 0)};
  call(B, a->dt == DT_F64 ? RT_gemv_rows_f64 : RT_gemv_rows_f32, args, 7);
}

void cg_pair_forward(Body *B, CgPair *p, LLVMValueRef i0, LLVMValueRef rows) {
  Cg *g = B->g;
  BlockArgs a = {.dt = p->fwd->type.dtype, .rows = rows, .d = dim(B, p->mat, 1)};
  a.m = at(B, a.dt, buf_of(B, p->mat), LLVMBuildNSWMul(g->b, i0, a.d, ""));
  a.vec = buf_of(B, p->vec);
  Slot *zs = cg_slot(B, p->fwd);
  a.out = zs->pairbuf ? zs->pairbuf : at(B, a.dt, buf_of(B, p->fwd), i0);
  B->pair_i0 = i0;
  either_way(B, p, &a, forward_part);
}

static void adjoint_part(Body *B, CgPair *p, const BlockArgs *a, bool inline_) {
  Cg *g = B->g;
  bool zero_rule = p->adj->op == OP_matmulz;
  if (inline_) {
    cg_gemv_acc_inline(B, a->dt, a->vec, a->m, a->rows, a->d, a->out, zero_rule);
    return;
  }
  LLVMValueRef args[7] = {a->rows, a->d, a->vec, a->m, a->d, a->out, LLVMConstInt(g->i32, zero_rule, 0)};
  call(B, a->dt == DT_F64 ? RT_gemv_acc_f64 : RT_gemv_acc_f32, args, 7);
}

void cg_pair_adjoint(Body *B, CgPair *p, LLVMValueRef i0, LLVMValueRef rows, LLVMValueRef chunk) {
  if (!p->adj)
    return;
  Cg *g = B->g;
  BlockArgs a = {.dt = p->adj->type.dtype, .rows = rows, .d = dim(B, p->mat, 1)};
  a.m = at(B, a.dt, buf_of(B, p->mat), LLVMBuildNSWMul(g->b, i0, a.d, ""));
  Slot *gs = cg_slot(B, p->g);
  a.vec = gs->pairbuf ? gs->pairbuf : at(B, a.dt, buf_of(B, p->g), i0);
  a.out = partial(B, p, chunk);
  either_way(B, p, &a, adjoint_part);
}

void cg_pair_group_end(Body *B, CgPair *p) {
  cg_slot(B, p->fwd)->pairbuf = NULL;
  if (p->g)
    cg_slot(B, p->g)->pairbuf = NULL;
  B->pair_i0 = NULL;
}

static LLVMValueRef in_block(Body *B, LLVMValueRef i) {
  return LLVMBuildNSWSub(B->g->b, i, B->pair_i0, "");
}

LLVMValueRef cg_pair_load(Body *B, const Inst *v, Idx *x) {
  return cg_load(B, v->type.dtype, cg_slot(B, v)->pairbuf, in_block(B, cg_lin(B, x, &v->type)));
}

void cg_pair_store(Body *B, const Inst *v, LLVMValueRef iv, LLVMValueRef e) {
  cg_store(B, v->type.dtype, cg_slot(B, v)->pairbuf, in_block(B, iv), e);
}

void cg_pair_set_chunks(Body *B, CgPair *p, LLVMValueRef nchunks) {
  LLVMBuildStore(B->g->b, nchunks, p->nchunks);
}

/* Where the adjoint product stood: out[j] = 0 + part[0][j] + part[1][j] ... */
static void finish(Body *B, CgPair *p) {
  Cg *g = B->g;
  DType dt = p->adj->type.dtype;
  LLVMTypeRef t = cg_elem_type(g, dt);
  LLVMValueRef d = dim(B, p->mat, 1);
  LLVMValueRef nch = LLVMBuildLoad2(g->b, g->i64, p->nchunks, "");
  LLVMValueRef out = cg_slot(B, p->adj)->buf;
  void *lj, *lc;
  LLVMValueRef j = cg_loop_begin(B, d, &lj);
  LLVMValueRef acc = cg_entry_alloca(B, t);
  LLVMBuildStore(g->b, LLVMConstReal(t, 0.0), acc);
  LLVMValueRef c = cg_loop_begin(B, nch, &lc);
  LLVMValueRef x = cg_load(B, dt, p->part, LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, c, d, ""), j, ""));
  LLVMBuildStore(g->b, LLVMBuildFAdd(g->b, LLVMBuildLoad2(g->b, t, acc, ""), x, ""), acc);
  cg_loop_end(B, lc);
  cg_store(B, dt, out, j, LLVMBuildLoad2(g->b, t, acc, ""));
  cg_loop_end(B, lj);
}

static bool cg_pair_emit(Body *B, Inst *i) {
  int k = cg_slot(B, i)->pair;
  if (!k || B->pairs[k - 1].head == i)
    return false;
  CgPair *p = &B->pairs[k - 1];
  cg_slot(B, i)->computed = true;
  if (p->adj == i)
    finish(B, p);
  return true; /* the forward product: computed with the group */
}

/* ---- the strategy ---- */

enum { PR_ELEM, PR_SUM, PR_FWD, PR_ADJ };

static void pair_recognize(Body *B, Inst *first) {
  if (first != B->f->first)
    return;
  cg_pairs_form(B, B->n);
  for (int j = 0; j < B->npairs; j++) {
    CgPair *p = &B->pairs[j];
    CgKernel *gk = cg_kernel_of(B, p->head);
    int k;
    if (gk && gk->head == p->head) { /* the loop group becomes the pair's */
      gk->st = &cg_pair_strategy;
      k = (int)(gk - B->kernels);
    } else { /* a group of one made for it */
      k = cg_kernel_new(B, &cg_pair_strategy, p->head);
      cg_kernel_add(B, k, p->head, ir_ops[p->head->op].shape == SH_REDUCE, CG_IN_MEMORY);
    }
    Slot *zs = cg_slot(B, p->fwd);
    zs->kernel = k;
    B->member[p->fwd->id] = (CgMember){PR_FWD, 0, zs->pair_block ? CG_IN_SCRATCH : CG_IN_MEMORY};
    if (p->g && cg_slot(B, p->g)->pair_block)
      B->member[p->g->id].lives = CG_IN_SCRATCH;
    if (p->adj)
      cg_kernel_add(B, cg_kernel_new(B, &cg_pair_strategy, p->adj), p->adj, PR_ADJ, CG_IN_MEMORY);
  }
}

static CgPair *pair_of_kernel(Body *B, const CgKernel *k) {
  return &B->pairs[cg_slot(B, k->head)->pair - 1];
}

static LLVMValueRef pair_reserve(Body *B, CgKernel *k, LLVMValueRef total) {
  CgPair *p = pair_of_kernel(B, k);
  return k->head == p->adj ? total : pair_reserve_one(B, p, total);
}

static void pair_bind(Body *B, CgKernel *k, LLVMValueRef base) {
  CgPair *p = pair_of_kernel(B, k);
  if (k->head != p->adj)
    p->part = LLVMBuildInBoundsGEP2(B->g->b, B->g->i8, base, &p->part, 1, "partials");
}

static void pair_emit(Body *B, CgKernel *k) {
  CgPair *p = pair_of_kernel(B, k);
  if (k->head == p->adj) {
    cg_pair_emit(B, k->head);
    return;
  }
  cg_group_emit(B, k->head);
  cg_slot(B, p->fwd)->computed = true;
}

static const char *const pair_roles[] = {"elem", "sum", "fwd", "adj"};

/* "gemv-pair [n, d], pool: per block of rows (products inline if M is
 * small) %z = %M @ %v scratch, then ..., then the rows of %M weighted by
 * %g into chunk partials" */
static void pair_describe(Body *B, const CgKernel *k, FILE *out) {
  CgPair *p = pair_of_kernel(B, k);
  if (k->head == p->adj) {
    fprintf(out, "pair sum: the partials of %%%d's chunks added in chunk order", p->head->id);
    return;
  }
  fputs("gemv-pair", out);
  cg_plan_shape(B, &p->mat->type, out);
  int small = small_known(p);
  fprintf(out, ", pool: per block of rows%s %%%d = ",
          small > 0 ? " (products inline)" : small < 0 ? " (products inline if M is small)" : "", p->fwd->id);
  cg_plan_value(p->mat, out);
  fputs(" @ ", out);
  cg_plan_value(p->vec, out);
  fprintf(out, " %s, then", B->member[p->fwd->id].lives == CG_IN_SCRATCH ? "scratch" : "mem");
  cg_plan_members(B, k, out);
  if (p->adj) {
    fputs(", then the rows of ", out);
    cg_plan_value(p->mat, out);
    fprintf(out, " weighted by %%%d into chunk partials", p->g->id);
  }
}

const CgStrategy cg_pair_strategy = {"pair", pair_roles, pair_recognize, pair_reserve, pair_bind,
                                     pair_emit, pair_describe};
