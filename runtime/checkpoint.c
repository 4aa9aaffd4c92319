/* Checkpointing for --ad-memory (spec section 7): the schedule that lets a
 * loop's adjoint run in bounded memory by recomputing iterations from
 * snapshots of the loop state instead of keeping every iteration's state.
 *
 * The generated code (codegen/cg_region.c) owns the loop state and the
 * code: "advance one step" (the loop body, emitted a second time inside the
 * reverse loop) and "reverse one step" (the reverse loop's body). This file
 * only decides what to do next:
 *
 *  - forward, while the loop runs: sg_rt_ckpt_fwd says, at the start of
 *    each iteration, whether to copy the entering state into a snapshot.
 *    A `for` loop (trip count n known at entry) stores the snapshots of the
 *    first sweep of binomial checkpointing (Griewank and Walther's Revolve):
 *    0, then each split point of the remaining range. A `while` loop, whose
 *    trip count is unknown, keeps snapshots every d iterations and, when
 *    they are all in use, frees every other one and doubles d (an online
 *    scheme: at the end the snapshots split the run into equal segments);
 *  - backward: sg_rt_ckpt_next hands out actions (restore a snapshot,
 *    advance one step, store a snapshot, reverse one step) that reverse the
 *    segments between the forward snapshots, last first, each by binomial
 *    recursion with the snapshots the later segments freed.
 * Every step the adjoint sees is computed by the same code from the same
 * bits, so the gradient is bit-identical to the one from the full tape.
 *
 * Memory: at most `limit` snapshots of `stride` bytes each, plus a few
 * words of bookkeeping per snapshot (counted against the budget too); the
 * snapshots are allocated as they are first needed, never past the limit. */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"
#include "sgrt.h"

/* One segment [s, e) to reverse, the state at s being in snapshot `slot`
 * (owned: freed when the segment is done), `nfree` more snapshots free. */
typedef struct Seg {
  int64_t s, e, slot, nfree, t; /* t: next step to reverse once nfree is 0 */
  int plain;                    /* reversing t = e-1 .. s from the one snapshot */
} Seg;

struct sg_rt_ckpt {
  char *data;            /* snapshots, stride bytes each */
  int64_t stride, limit; /* bytes of one state; snapshots allowed */
  int64_t have;          /* snapshots allocated */
  int64_t trips;         /* for: the trip count; -1: a while loop */
  int64_t n;             /* iterations run so far */
  /* forward: the snapshots held, by position */
  int64_t *pos, *slot, nheld;
  int64_t next;          /* the next position to store (for), or the spacing d (while) */
  /* backward */
  int64_t *free_slots, nfree; /* a stack of free snapshot indices */
  Seg *segs;
  int64_t nsegs;
  int64_t cur;           /* the position whose state the current buffers hold, -1: none */
  int64_t advance;       /* steps to advance before the next decision */
  int64_t store;         /* snapshot to store after them, -1: none */
  int64_t bytes;         /* bookkeeping and snapshots, for the peak counter */
  const char *func, *where; /* for messages: the generated function, the loop */
};

/* Bookkeeping per snapshot: pos, slot, a free-list entry and a segment. */
enum { PER_SLOT = 3 * sizeof(int64_t) + sizeof(Seg) };

int64_t sg_rt_ckpt_overhead(void) { return PER_SLOT; }

/* Revolve's choice of the next snapshot position within [s, e) with `snaps`
 * snapshots (the one at s included): the split that keeps the number of
 * recomputed steps minimal (Griewank and Walther, ACM TOMS 26(1), 2000). */
static int64_t split(int64_t s, int64_t e, int64_t snaps) {
  int64_t steps = e - s, reps = 0, range = 1;
  while (range < steps) {
    reps++;
    range = range * (reps + snaps) / reps;
  }
  int64_t bino1 = range * reps / (snaps + reps);
  int64_t bino2 = snaps > 1 ? bino1 * snaps / (snaps + reps - 1) : 1;
  int64_t bino3 = snaps == 1 ? 0 : snaps > 2 ? bino2 * (snaps - 1) / (snaps + reps - 2) : 1;
  int64_t bino4 = bino2 * (reps - 1) / snaps;
  int64_t bino5 = snaps < 3 ? 0 : snaps > 3 ? bino3 * (snaps - 2) / reps : 1;
  int64_t m;
  if (steps <= bino1 + bino3)
    m = s + bino4;
  else if (steps >= range - bino5)
    m = s + bino1;
  else
    m = e - bino5 - bino3;
  if (m <= s)
    m = s + 1;
  if (m >= e)
    m = e - 1;
  return m;
}

static void count_bytes(sg_rt_ckpt *c, int64_t bytes) {
  sg_rt_saved_bytes_add(bytes - c->bytes);
  c->bytes = bytes;
}

/* Room for snapshots 0..k-1. */
static int ensure(sg_rt_ckpt *c, int64_t k) {
  if (k <= c->have)
    return 1;
  int64_t want = c->have ? c->have : 1;
  while (want < k)
    want *= 2;
  if (want > c->limit)
    want = c->limit;
  if (sg_rt_injected_failure())
    return 0;
  size_t bytes = (size_t)(want * c->stride);
  char *d = realloc(c->data, bytes ? bytes : 1);
  if (!d)
    return 0;
  c->data = d;
  c->have = want;
  count_bytes(c, want * c->stride + c->limit * (int64_t)PER_SLOT);
  return 1;
}

static void *slot_at(sg_rt_ckpt *c, int64_t k) { return c->data + k * c->stride; }

static int too_big(const char *func, const char *where, int64_t stride, int64_t budget) {
  sg_rt_set_error("%s: %s: one iteration of the loop saves %lld bytes (and %d of bookkeeping), "
                  "more than its share of --ad-memory, %lld bytes",
                  func, where, (long long)stride, (int)PER_SLOT, (long long)budget);
  return SG_ERR_ALLOC;
}

static int no_memory(const char *func, const char *where, int64_t bytes) {
  sg_rt_set_error("%s: %s: cannot allocate %lld bytes for the loop's checkpoints", func, where,
                  (long long)bytes);
  return SG_ERR_ALLOC;
}

int sg_rt_ckpt_begin(sg_rt_ckpt **cp, int64_t stride, int64_t budget, int64_t trips,
                     const char *func, const char *where) {
  if (stride + (int64_t)PER_SLOT > budget)
    return too_big(func, where, stride, budget);
  int64_t limit = budget / (stride + (int64_t)PER_SLOT);
  if (trips >= 0 && limit > trips)
    limit = trips > 0 ? trips : 1;
  sg_rt_ckpt *c = *cp;
  if (!c) {
    if (sg_rt_injected_failure() || !(c = calloc(1, sizeof *c)))
      return no_memory(func, where, (int64_t)sizeof *c);
    *cp = c;
  }
  if (c->stride != stride || c->limit < limit) { /* a new shape: start afresh */
    free(c->data);
    free(c->pos);
    c->data = NULL;
    c->have = 0;
    c->pos = NULL;
    count_bytes(c, 0);
  }
  c->stride = stride;
  if (!c->pos) {
    /* pos, slot and the free stack in one block; the segments after them */
    if (sg_rt_injected_failure() || !(c->pos = malloc((size_t)limit * PER_SLOT)))
      return no_memory(func, where, limit * (int64_t)PER_SLOT);
    c->slot = c->pos + limit;
    c->free_slots = c->slot + limit;
    c->segs = (Seg *)(c->free_slots + limit);
    c->limit = limit;
    count_bytes(c, c->have * stride + limit * (int64_t)PER_SLOT);
  }
  c->func = func;
  c->where = where;
  c->trips = trips;
  c->n = 0;
  c->nheld = 0;
  c->next = trips >= 0 ? 0 : 1;
  return SG_OK;
}

/* A while loop's snapshots: keep those at multiples of 2d, free the rest. */
static void thin(sg_rt_ckpt *c) {
  int64_t kept = 0;
  c->nfree = 0;
  for (int64_t k = 0; k < c->nheld; k++)
    if (c->pos[k] % (2 * c->next) == 0) {
      c->pos[kept] = c->pos[k];
      c->slot[kept++] = c->slot[k];
    } else {
      c->free_slots[c->nfree++] = c->slot[k];
    }
  c->nheld = kept;
  c->next *= 2;
}

int sg_rt_ckpt_fwd(sg_rt_ckpt *c, void **slot) {
  int64_t i = c->n++;
  *slot = NULL;
  if (c->trips >= 0) {
    /* Revolve's first sweep: snapshot k at the split of what remains with
     * limit - k snapshots */
    if (i != c->next || c->nheld == c->limit)
      return SG_OK;
    int64_t k = c->nheld++;
    if (!ensure(c, k + 1))
      return no_memory(c->func, c->where, (k + 1) * c->stride);
    c->pos[k] = i;
    c->slot[k] = k;
    *slot = slot_at(c, k);
    int64_t snaps = c->limit - k;
    c->next = snaps > 1 && c->trips - i > 1 ? split(i, c->trips, snaps) : -1;
    return SG_OK;
  }
  if (i % c->next)
    return SG_OK;
  if (c->nheld == c->limit) {
    thin(c);
    if (i % c->next)
      return SG_OK;
  }
  int64_t s = c->nfree > 0 ? c->free_slots[--c->nfree] : c->nheld;
  if (!ensure(c, s + 1))
    return no_memory(c->func, c->where, (s + 1) * c->stride);
  c->pos[c->nheld] = i;
  c->slot[c->nheld++] = s;
  *slot = slot_at(c, s);
  return SG_OK;
}

int sg_rt_ckpt_reverse(sg_rt_ckpt *c, const char *func, const char *where) {
  int64_t n = c->n;
  c->nsegs = 0;
  c->cur = -1;
  c->advance = 0;
  c->store = -1;
  if (n == 0)
    return SG_OK;
  /* A while loop's last segments would be reversed with no snapshot
   * free (quadratic): keep at most half of them for the segments, the
   * rest for the recursion inside each. */
  while (c->trips < 0 && c->nheld > 1 && 2 * c->nheld > c->limit)
    thin(c);
  int64_t need = n < c->limit ? n : c->limit;
  if (!ensure(c, need))
    return no_memory(func, where, need * c->stride);
  /* the free stack: every snapshot not held, the lowest on top, so that the
   * highest index ever used is below the number held at once */
  char *held = calloc((size_t)c->limit, 1);
  if (!held)
    return no_memory(func, where, c->limit);
  for (int64_t k = 0; k < c->nheld; k++)
    held[c->slot[k]] = 1;
  c->nfree = 0;
  for (int64_t s = c->limit - 1; s >= 0; s--)
    if (!held[s])
      c->free_slots[c->nfree++] = s;
  free(held);
  /* the forward segments, the last on top; segment k has the snapshots of
   * the segments after it free */
  for (int64_t k = 0; k < c->nheld; k++) {
    Seg *g = &c->segs[c->nsegs++];
    g->s = c->pos[k];
    g->e = k + 1 < c->nheld ? c->pos[k + 1] : n;
    g->slot = c->slot[k];
    g->nfree = c->limit - (k + 1);
    g->plain = 0;
  }
  return SG_OK;
}

int sg_rt_ckpt_next(sg_rt_ckpt *c, int64_t *pos, void **slot) {
  for (;;) {
    if (c->advance > 0) {
      c->advance--;
      *pos = c->cur++;
      return SG_RT_CK_ADVANCE;
    }
    if (c->store >= 0) {
      *slot = slot_at(c, c->store);
      c->store = -1;
      return SG_RT_CK_STORE;
    }
    if (c->nsegs == 0)
      return SG_RT_CK_DONE;
    Seg *g = &c->segs[c->nsegs - 1];
    if (!g->plain && (g->e - g->s == 1 || g->nfree == 0 || c->nfree == 0)) {
      g->plain = 1;
      g->t = g->e - 1;
    }
    if (g->plain) {
      if (g->t < g->s) { /* done: its snapshot is free again */
        c->free_slots[c->nfree++] = g->slot;
        c->nsegs--;
        continue;
      }
      if (c->cur != g->t) {
        if (c->cur < g->s || c->cur > g->t) {
          c->cur = g->s;
          *slot = slot_at(c, g->slot);
          return SG_RT_CK_RESTORE;
        }
        c->advance = g->t - c->cur;
        continue;
      }
      *pos = g->t--;
      return SG_RT_CK_REVERSE;
    }
    if (c->cur != g->s) {
      c->cur = g->s;
      *slot = slot_at(c, g->slot);
      return SG_RT_CK_RESTORE;
    }
    /* advance to the split point, store it there, reverse [m, e) with one
     * snapshot fewer, then [s, m) with them all again */
    int64_t m = split(g->s, g->e, g->nfree + 1);
    int64_t s = c->free_slots[--c->nfree];
    Seg right = {m, g->e, s, g->nfree - 1, 0, 0};
    g->e = m;
    c->segs[c->nsegs++] = right;
    c->advance = m - g->s;
    c->store = s;
  }
}

void sg_rt_ckpt_free(sg_rt_ckpt **cp) {
  sg_rt_ckpt *c = *cp;
  if (!c)
    return;
  count_bytes(c, 0);
  free(c->data);
  free(c->pos);
  free(c);
  *cp = NULL;
}
