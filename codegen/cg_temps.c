/* Temporaries: where each value that needs memory of its own (and is not
 * an output or a view) lives inside the one block a call takes from the
 * runtime's per-thread workspace.
 *
 * Liveness decides it. Values are computed in program order (a loop group
 * at its first member, see cg_func.c), so each temporary lives from the
 * point its loop writes it to the last point a loop reads it -- reading
 * through values computed where they are used (fused, transposed, reshaped)
 * counts as a read by that value's loop, and a result copied out at the end
 * is read at the end. Temporaries whose lifetimes do not overlap share
 * space: a linear scan over them in order of their start gives each a
 * "slot", preferring a free slot whose members have the same byte size (a
 * product of the same symbols and constant), then any free slot; a slot is
 * as large as its largest member (computed at run time, sizes may be
 * symbolic) and the block is the sum of the slots. With equal sizes that is
 * exactly the most bytes live at once. A slot is reused only when its last
 * reader came strictly before the new writer, so no loop ever reads and
 * writes the same bytes through different values.
 *
 * Requires: the plan (cg_plan.c: Slot.has_buf, internal, acc_into,
 * by_products, the kernels); results' Slot.buf set. Keeps:
 * nothing else. */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

static Slot *slot_of(Body *B, const Inst *v) {
  return v->op == OP_param ? &B->pslot[v->wrt] : &B->slot[v->id];
}

bool cg_needs_temp(Body *B, const Inst *v) {
  const Slot *s = slot_of(B, v);
  return s->has_buf && !s->buf && v->op != OP_reshape && v->op != OP_proj && !s->view &&
         !s->internal && !s->acc_into && !s->inplace_of;
}

/* The byte size of a value, as a symbolic product: c * syms... (sorted). */
typedef struct Key {
  int64_t c;
  int nsym;
  int sym[IR_MAX_RANK];
} Key;

typedef struct Temp {
  Inst *v;
  int start, end; /* program points of the first write and the last read */
  int cls;        /* index of its Key among the distinct ones */
  int slot;
} Temp;

static Key key_of(const Inst *v) {
  Key k = {cg_elem_size(v->type.dtype), 0, {0}};
  for (int d = 0; d < v->type.rank; d++) {
    Dim dim = v->type.dim[d];
    if (dim.sym < 0) {
      k.c *= dim.size; /* literal sizes are checked small (check_sizes) */
      continue;
    }
    int j = k.nsym++;
    while (j > 0 && k.sym[j - 1] > dim.sym) {
      k.sym[j] = k.sym[j - 1];
      j--;
    }
    k.sym[j] = dim.sym;
  }
  if (k.c == 0)
    k.nsym = 0;
  return k;
}

static bool key_eq(const Key *a, const Key *b) {
  return a->c == b->c && a->nsym == b->nsym &&
         memcmp(a->sym, b->sym, sizeof(int) * (size_t)a->nsym) == 0;
}

static uint64_t key_hash(const Key *k) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)k->c;
  for (int j = 0; j < k->nsym; j++)
    h = (h ^ (uint64_t)k->sym[j]) * 1099511628211ull;
  return (h ^ (h >> 29)) * 1099511628211ull;
}

static int by_start(const void *pa, const void *pb) {
  const Temp *a = pa, *b = pb;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  return a->v->id < b->v->id ? -1 : a->v->id > b->v->id;
}

/* Min-heap of active temporaries (indices into Temp[]) by end. */
typedef struct Heap {
  int *a;
  int n;
} Heap;

static void heap_push(Heap *h, const Temp *t, int x) {
  int i = h->n++;
  while (i > 0 && t[h->a[(i - 1) / 2]].end > t[x].end) {
    h->a[i] = h->a[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->a[i] = x;
}

static int heap_pop(Heap *h, const Temp *t) {
  int top = h->a[0], x = h->a[--h->n], i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && t[h->a[c + 1]].end < t[h->a[c]].end)
      c++;
    if (t[h->a[c]].end >= t[x].end)
      break;
    h->a[i] = h->a[c];
    i = c;
  }
  if (h->n)
    h->a[i] = x;
  return top;
}

/* Stacks of free slots: one per size class and one for any size. Entries
 * go stale when the slot is taken again; a slot's stamp tells. */
typedef struct Entry {
  int slot, stamp;
} Entry;
typedef struct Stack {
  Entry *e;
  int n, cap;
} Stack;

static void stack_push(Stack *s, Entry x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 4;
    s->e = xrealloc(s->e, sizeof(Entry) * (size_t)s->cap);
  }
  s->e[s->n++] = x;
}

/* The most recently freed slot still free, or -1. */
static int stack_take(Stack *s, const int *stamp, const bool *busy) {
  while (s->n > 0) {
    Entry x = s->e[--s->n];
    if (!busy[x.slot] && stamp[x.slot] == x.stamp)
      return x.slot;
  }
  return -1;
}

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* Bytes of v rounded up to whole cache lines. */
static LLVMValueRef temp_bytes(Body *B, const Inst *v) {
  Cg *g = B->g;
  int64_t c = cg_elem_size(v->type.dtype);
  LLVMValueRef n = NULL;
  for (int d = 0; d < v->type.rank; d++) {
    Dim dim = v->type.dim[d];
    if (dim.sym < 0) {
      c *= dim.size;
      continue;
    }
    if (!B->symv[dim.sym])
      die("symbol %s not bound in @%s", g->m->syms[dim.sym], B->f->name);
    n = n ? LLVMBuildNSWMul(g->b, n, B->symv[dim.sym], "") : B->symv[dim.sym];
  }
  if (!n)
    return i64c(g, (c + 63) & ~(int64_t)63);
  LLVMValueRef bytes = c == 1 ? n : LLVMBuildNSWMul(g->b, n, i64c(g, c), "");
  return LLVMBuildAnd(g->b, LLVMBuildNSWAdd(g->b, bytes, i64c(g, 63), ""), i64c(g, ~(int64_t)63), "");
}

static LLVMValueRef umax(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  if (LLVMIsAConstantInt(a) && LLVMIsAConstantInt(b))
    return LLVMConstIntGetSExtValue(a) >= LLVMConstIntGetSExtValue(b) ? a : b;
  LLVMValueRef args[2] = {a, b};
  return cg_intrinsic(g, "llvm.umax", g->i64, args, 2);
}

/* Lifetimes of f's temporaries; returns how many (in *out, by start). */
static int lifetimes(Body *B, int n, Temp **out) {
  Function *f = B->f;
  int *pos = xmalloc(sizeof(int) * (size_t)(n + 1));
  int *last = xmalloc(sizeof(int) * (size_t)(n + 1));
  int *start = xmalloc(sizeof(int) * (size_t)(n + 1));
  int p = 0;
  for (Inst *i = f->first; i; i = i->next) {
    pos[i->id] = ++p;
    last[i->id] = 0;
  }
  int end = p + 1;
  /* Where each value with a loop of its own is computed: at its kernel's
   * head (a group's first member; a matrix-vector pair's forward product
   * with its group), or a sum of products where its first product writes
   * it. */
  for (Inst *i = f->first; i; i = i->next) {
    const CgKernel *k = cg_kernel_of(B, i);
    start[i->id] = pos[k ? k->head->id : i->id];
  }
  /* A sum of products comes after both of them: only now that its own
   * start is set can the first product move it earlier. (Moving it in the
   * loop above, which sets the sum's start after its products', lost it:
   * the sum's bytes were handed to another temporary between the first
   * product and the sum, and d_w of split_gradient.test came out wrong.) */
  for (Inst *i = f->first; i; i = i->next) {
    Slot *s = slot_of(B, i);
    if (s->acc_into && !slot_of(B, s->acc_into)->inplace_of && start[s->acc_into->id] > start[i->id])
      start[s->acc_into->id] = start[i->id];
  }
  /* (A product added in place into an old value, cg_inplace.c, is
   * computed where that update stands: its operands are read there, as a
   * fused value's are where its reader runs.) */
  for (int k = 0; k < f->nresults; k++)
    if (f->results[k]->op != OP_param)
      last[f->results[k]->id] = end;
  /* Users come later: in reverse order, a value's read time is final
   * when it is reached. A value with a loop reads its operands there;
   * one without (fused, a view) wherever its own readers run. */
  for (Inst *i = f->last; i; i = i->prev) {
    Slot *s = slot_of(B, i);
    /* an update in place (cg_inplace.c) lives in its old value's memory */
    if (s->inplace_of && last[s->inplace_of->id] < last[i->id])
      last[s->inplace_of->id] = last[i->id];
    bool own_loop = s->has_buf && i->op != OP_reshape && !s->view;
    int when = own_loop ? start[i->id] : last[i->id];
    /* A kernel's members read anywhere from its first to its last (a row
     * group's fallback runs them one after another). */
    const CgKernel *kn = cg_kernel_of(B, i);
    if (own_loop && kn)
      when = pos[kn->last->id];
    for (int k = 0; k < i->nargs; k++) {
      Inst *a = i->args[k];
      if (a->op != OP_param && last[a->id] < when)
        last[a->id] = when;
    }
  }
  int nt = 0;
  Temp *t = xmalloc(sizeof(Temp) * (size_t)(n + 1));
  for (Inst *i = f->first; i; i = i->next) {
    Slot *s = slot_of(B, i);
    if (!cg_needs_temp(B, i))
      continue;
    s->temp = i->id;
    int st = start[i->id], en = last[i->id] < st ? st : last[i->id];
    t[nt++] = (Temp){i, st, en, -1, -1};
  }
  free(pos);
  free(last);
  free(start);
  qsort(t, (size_t)nt, sizeof(Temp), by_start);
  *out = t;
  return nt;
}

/* Numbers the distinct size keys; returns how many. */
static int classify(Temp *t, int nt) {
  int cap = 16;
  while (cap < 2 * nt)
    cap *= 2;
  int *table = xmalloc(sizeof(int) * (size_t)cap); /* index of a temp with that key */
  for (int k = 0; k < cap; k++)
    table[k] = -1;
  Key *keys = xmalloc(sizeof(Key) * (size_t)(nt + 1));
  int ncls = 0;
  for (int k = 0; k < nt; k++) {
    keys[k] = key_of(t[k].v);
    size_t h = (size_t)key_hash(&keys[k]) & (size_t)(cap - 1);
    while (table[h] >= 0 && !key_eq(&keys[table[h]], &keys[k]))
      h = (h + 1) & (size_t)(cap - 1);
    if (table[h] < 0) {
      table[h] = k;
      t[k].cls = ncls++;
    } else {
      t[k].cls = t[table[h]].cls;
    }
  }
  free(table);
  free(keys);
  return ncls;
}

LLVMValueRef cg_temp_layout(Body *B, int n, LLVMValueRef *offset) {
  Cg *g = B->g;
  Temp *t;
  int nt = lifetimes(B, n, &t);
  if (nt == 0) {
    free(t);
    return NULL;
  }
  int ncls = classify(t, nt);
  Stack *by_cls = xmalloc(sizeof(Stack) * (size_t)ncls);
  memset(by_cls, 0, sizeof(Stack) * (size_t)ncls);
  Stack any = {0};
  Heap active = {xmalloc(sizeof(int) * (size_t)nt), 0};
  int *stamp = xmalloc(sizeof(int) * (size_t)nt);
  bool *busy = xmalloc(sizeof(bool) * (size_t)nt);
  LLVMValueRef *size = xmalloc(sizeof(LLVMValueRef) * (size_t)nt);
  int nslots = 0;
  for (int k = 0; k < nt; k++) {
    while (active.n && t[active.a[0]].end < t[k].start) {
      int done = heap_pop(&active, t);
      int s = t[done].slot;
      busy[s] = false;
      stamp[s]++;
      stack_push(&by_cls[t[done].cls], (Entry){s, stamp[s]});
      stack_push(&any, (Entry){s, stamp[s]});
    }
    int s = stack_take(&by_cls[t[k].cls], stamp, busy);
    if (s < 0)
      s = stack_take(&any, stamp, busy);
    LLVMValueRef bytes = temp_bytes(B, t[k].v);
    if (s < 0) {
      s = nslots++;
      stamp[s] = 0;
      size[s] = bytes;
    } else {
      size[s] = umax(g, size[s], bytes);
    }
    busy[s] = true;
    t[k].slot = s;
    heap_push(&active, t, k);
  }
  LLVMValueRef *at = xmalloc(sizeof(LLVMValueRef) * (size_t)nslots);
  LLVMValueRef total = i64c(g, 0);
  for (int s = 0; s < nslots; s++) {
    at[s] = total;
    total = LLVMIsAConstantInt(total) && LLVMIsAConstantInt(size[s])
                ? i64c(g, LLVMConstIntGetSExtValue(total) + LLVMConstIntGetSExtValue(size[s]))
                : LLVMBuildNSWAdd(g->b, total, size[s], "");
  }
  for (int k = 0; k < nt; k++)
    offset[t[k].v->id] = at[t[k].slot];
  free(at);
  free(size);
  free(busy);
  free(stamp);
  free(active.a);
  free(any.e);
  for (int c = 0; c < ncls; c++)
    free(by_cls[c].e);
  free(by_cls);
  free(t);
  return total;
}

/* Temporaries of a few literal elements (a 3-vector, a 2 x 15 block) in a
 * loop or branch body live in the function's frame, each an alloca of its
 * own, rather than in the workspace: once LLVM has unrolled their loops it
 * keeps them in registers (SROA), which it cannot do for memory behind a
 * pointer the runtime returned. A loop body made of such values (a
 * Jacobian per observation) then runs in registers, as an expert's C
 * would; cg_split.c keeps such a body in one function. The frame stays
 * within FRAME_MAX bytes, so that thousands of small values do not need a
 * large stack (each alloca has bytes of its own: no sharing by liveness).
 * The plan prints them as `frame`. */
enum { FRAME_TEMP_MAX = 256, FRAME_MAX = 16384 }; /* bytes */

static int64_t frame_bytes(const Inst *v) { return (key_of(v).c + 15) & ~(int64_t)15; }

void cg_frame_plan(Body *B) {
  int64_t used = 0;
  for (Inst *i = B->f->first; i; i = ir_walk_next(i)) {
    Slot *s = cg_slot(B, i);
    if (!i->parent || !cg_needs_temp(B, i) || i->nregions || cg_region_computes_into(B, i))
      continue;
    Key k = key_of(i);
    int64_t bytes = frame_bytes(i);
    if (k.nsym > 0 || k.c == 0 || k.c > FRAME_TEMP_MAX || used + bytes > FRAME_MAX)
      continue;
    used += bytes;
    s->in_frame = true;
    if (B->member[i->id].lives == CG_IN_MEMORY)
      B->member[i->id].lives = CG_IN_FRAME;
  }
}

void cg_frame_bind(Body *B) {
  for (Inst *i = B->f->first; i; i = ir_walk_next(i)) {
    Slot *s = cg_slot(B, i);
    if (!s->in_frame || s->buf)
      continue;
    int64_t bytes = frame_bytes(i);
    LLVMValueRef a = cg_alloca_at(B->g, B->entry, LLVMArrayType(B->g->i8, (unsigned)bytes), "small");
    LLVMSetAlignment(a, bytes >= 64 ? 64 : 16);
    s->buf = a;
    *ptrmap_slot(&B->g->frame_temps, a) = a;
  }
}
