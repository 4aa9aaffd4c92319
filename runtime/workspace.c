/* workspace.c: the per-thread workspace behind generated functions'
 * temporaries (spec section 9: "temporaries are kept per thread between
 * calls").
 *
 * A generated function asks once per call for one block holding all its
 * temporaries (codegen lays them out in it, reusing the space of dead ones).
 * The block is kept in the calling thread's workspace after the call, so a
 * repeated call with the same shapes allocates nothing and touches no fresh
 * page: glibc would otherwise unmap a large block on free and the next call
 * would page-fault all of it again. The block only grows (to the largest
 * request seen); sg_release_workspace() gives it back, and so does the
 * thread's exit (a pthread key destructor; for the thread that calls exit(),
 * an atexit handler, since key destructors do not run there).
 *
 * A second cached block, the packing buffer, serves sg_rt_gemm on whatever
 * thread runs it (pool workers included), and a few more the tapes of
 * loops whose gradient is taken (runtime/tape.c), for the same reason.
 * The kept blocks hold GEMM operands packed once for a whole generated
 * call (a loop's weights, read at every step): sg_rt_ws_kept.
 *
 * Reentrancy: the block is marked busy while a call uses it; a nested
 * request on the same thread (nothing in sgc does that today, but a signal
 * handler or a future runtime callback could) gets a fresh allocation that
 * sg_rt_ws_release frees, so correctness never depends on nesting. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "rt_internal.h"
#include "sgrt.h"

typedef struct Block {
  void *p;
  int64_t cap;
} Block;

enum { WS_TAPES = 4 }; /* a gradient with more loops reallocates the rest */

/* Kept operands: an RNN's gradient reads six (three weights, each also
 * transposed). One larger than KEPT_MAX_BYTES is packed as usual: keeping
 * it would double the memory of a large model's weights. */
enum { WS_KEPT = 8 };
#define KEPT_MAX_BYTES ((int64_t)64 << 20)

typedef struct Kept {
  Block mem;
  SgKeptKey key;  /* key.call == 0: holds nothing */
  uint64_t used;  /* when last asked for (the thread's count of asks) */
} Kept;

typedef struct Workspace {
  Block temps, pack;
  Block tapes[WS_TAPES];
  Kept kept[WS_KEPT];
  uint64_t kept_asks;
  int busy;       /* temps handed out and not yet released */
  int registered; /* the key holds this thread's workspace */
} Workspace;

static _Thread_local Workspace ws;
static pthread_key_t ws_key;
static pthread_once_t ws_once = PTHREAD_ONCE_INIT;

static void drop(Block *b) {
  free(b->p);
  b->p = NULL;
  b->cap = 0;
}

static void drop_kept(Workspace *w) {
  for (int k = 0; k < WS_KEPT; k++) {
    drop(&w->kept[k].mem);
    w->kept[k].key.call = 0;
  }
}

static void release_all(Workspace *w) {
  drop(&w->temps);
  drop(&w->pack);
  for (int k = 0; k < WS_TAPES; k++)
    drop(&w->tapes[k]);
  drop_kept(w);
}

static void on_thread_exit(void *p) { release_all(p); }

static void on_process_exit(void) { release_all(&ws); }

static void init_once(void) {
  pthread_key_create(&ws_key, on_thread_exit);
  atexit(on_process_exit);
}

/* Makes the thread's exit free its blocks (once per thread). */
static void register_thread(Workspace *w) {
  if (w->registered)
    return;
  pthread_once(&ws_once, init_once);
  pthread_setspecific(ws_key, w);
  w->registered = 1;
}

/* b grown to at least `bytes` (contents not kept); NULL if that fails. */
static void *grow(Block *b, int64_t bytes) {
  if (bytes <= b->cap)
    return b->p;
  drop(b);
  void *p = sg_rt_alloc_raw(bytes);
  if (!p)
    return NULL;
  b->p = p;
  b->cap = bytes;
  register_thread(&ws);
  return p;
}

void *sg_rt_ws_acquire(int64_t bytes) {
  if (sg_rt_injected_failure())
    return NULL;
  if (bytes < 0)
    return NULL;
  if (bytes == 0)
    bytes = 1;
  Workspace *w = &ws;
  if (w->busy)
    return sg_rt_alloc_raw(bytes);
  void *p = grow(&w->temps, bytes);
  if (p)
    w->busy = 1;
  return p;
}

void sg_rt_ws_release(void *p) {
  Workspace *w = &ws;
  if (w->busy && p == w->temps.p)
    w->busy = 0;
  else
    free(p);
}

void *sg_rt_pack_buffer(int64_t bytes) { return grow(&ws.pack, bytes); }

void *sg_rt_ws_take_tape(int64_t *cap) {
  Block *best = NULL;
  for (int k = 0; k < WS_TAPES; k++)
    if (ws.tapes[k].p && (!best || ws.tapes[k].cap > best->cap))
      best = &ws.tapes[k];
  *cap = best ? best->cap : 0;
  if (!best)
    return NULL;
  void *p = best->p;
  best->p = NULL;
  best->cap = 0;
  return p;
}

void sg_rt_ws_keep_tape(void *p, int64_t cap) {
  if (!p)
    return;
  Block *least = &ws.tapes[0];
  for (int k = 0; k < WS_TAPES; k++)
    if (!ws.tapes[k].p || ws.tapes[k].cap < least->cap)
      least = &ws.tapes[k];
  if (least->p && least->cap >= cap) {
    free(p);
    return;
  }
  drop(least);
  least->p = p;
  least->cap = cap;
  register_thread(&ws);
}

int64_t sg_rt_call_id(void) {
  static atomic_llong last; /* shared by all threads: a number is never given twice */
  return (int64_t)atomic_fetch_add_explicit(&last, 1, memory_order_relaxed) + 1;
}

static int same_key(const SgKeptKey *a, const SgKeptKey *b) {
  return a->call == b->call && a->p == b->p && a->ld == b->ld && a->rows == b->rows &&
         a->cols == b->cols && a->form == b->form;
}

void *sg_rt_ws_kept(const SgKeptKey *key, int64_t bytes, int *fresh) {
  Workspace *w = &ws;
  if (bytes > KEPT_MAX_BYTES)
    return NULL;
  Kept *e = NULL;
  for (int k = 0; k < WS_KEPT && !e; k++)
    if (w->kept[k].key.call && same_key(&w->kept[k].key, key))
      e = &w->kept[k];
  *fresh = !e;
  if (!e) { /* the least recently used block (an empty one first) */
    e = &w->kept[0];
    for (int k = 1; k < WS_KEPT; k++)
      if (w->kept[k].used < e->used)
        e = &w->kept[k];
    e->key.call = 0;
    if (!grow(&e->mem, bytes))
      return NULL;
    e->key = *key;
  }
  e->used = ++w->kept_asks;
  return e->mem.p;
}

int64_t sg_rt_ws_bytes(void) { return ws.temps.cap; }

void sg_release_workspace(void) {
  Workspace *w = &ws;
  /* A call in progress on this thread keeps its block (only possible from a
   * signal handler); the rest goes. */
  if (!w->busy)
    drop(&w->temps);
  drop(&w->pack);
  for (int k = 0; k < WS_TAPES; k++)
    drop(&w->tapes[k]);
  drop_kept(w);
}
