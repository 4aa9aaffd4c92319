/* workloads_main.c: the second half of `make bench` (see bench/README.md):
 * sgc's gradients against an expert's C on workloads where the work is not
 * a large matrix product --
 *   W1-W6 and W2n  bench/workloads.sg against bench/hand/workloads.c (the
 *                  expert's AVX-512 forms, workloads_avx512.c, where the CPU
 *                  has them); W2n is W2's program on 4M rows of 4 columns
 *   rnn            the RNN language model of bench/rnn_lm.sg (a 32-step
 *                  loop) against bench/hand/rnn.c
 *   xloop          the softmax cross-entropy inside a 32-step loop of
 *                  bench/xent_loop.sg, with its straight-line twin
 *                  (bench/unroll_xent.py) timed in the same rounds
 *   take3, bmmD    the small gather and the batches of D x D products of
 *                  bench/small.sg against bench/hand/small.c
 *
 * Per workload: sgc's gradient and the expert's C gradient timed in
 * alternating rounds (thread CPU time, median; sgc/C is the median of the
 * per-round ratios, as in bench_main.c, with their spread), sgc's forward
 * function in the same rounds (grad/forward), the minor page faults per
 * call of each side after warm-up (getrusage), the agreement of every
 * output, and for the streaming workloads (W2, W2n, W3) the time of the
 * least traffic any algorithm needs, as bare loops timed in every round
 * beside its times (W2: the bound's wide read of x and y; W3: a read of z
 * and y, then a read of both streaming dz out; forwards: one read), over
 * the time taken: the median of the rounds, as sgc/C is. This host's
 * bandwidth drifts by up to 2x within minutes; against one bound measured
 * at the start, the same code read 61% and 117% in two runs.
 * (bound_bandwidth, at the start, prints the reads and a triad.) A line
 * after the table gives W3's grad/fwd beside that of its bare loops.
 *
 * sgc runs on one thread (sg_set_num_threads(1), whatever SG_NUM_THREADS
 * says), like the C: the times are the calling thread's CPU time, which
 * would not count the work of the pool's other threads.
 *
 * Usage: workloads_main [--budget S] [--data DIR] [--only ID] [--smoke] [--scaling]
 *                       [--portable]
 *   --smoke     small sizes, no timing: only check that sgc, the expert's C
 *               and the portable C agree (test/bench/workloads_smoke.test);
 *               the smoke test also runs W3 on logits whose max grows.
 *   --data DIR  write DIR/workloads.tsv and per workload DIR/ID.txt (the
 *               arrays: role, name, dtype, shape) and DIR/ID.bin (inputs and
 *               sgc's outputs in that order, native dtype) for report.py.
 *   --scaling   instead: the read bandwidth on 1 and on 2 threads (how far
 *               memory lets a streaming workload scale), then W1-W6's
 *               gradients alone on 1 thread and on the default (every core)
 *               in alternating rounds, wall-clock median of each, the
 *               speedup (the median of the rounds' ratios), the same again
 *               with two busy processes of ours beside them (not with
 *               --smoke), and whether the outputs are bit-identical;
 *               with --data, DIR/scaling.tsv.
 *   --portable  instead: W1-W6's portable C (the baselines before issue 30)
 *               against the expert's, alternated; with --data,
 *               DIR/portable.tsv.
 * Exit status 1 if some output differs by more than 1e-3 (relative to the
 * output's largest magnitude). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "hand/hand.h"
#include "sg_runtime.h"

#define T const sg_tensor *
int w1_xent(T, T, T, sg_tensor *);
int w1_xent_grad(T, T, T, sg_tensor *, sg_tensor *);
int w1_xent_ls_grad(T, T, T, sg_tensor *, sg_tensor *);
int w2_logreg(T, T, T, sg_tensor *);
int w2_logreg_grad(T, T, T, sg_tensor *, sg_tensor *);
int w3_xent(T, T, sg_tensor *);
int w3_xent_grad(T, T, sg_tensor *, sg_tensor *);
int w3_xent_lse_grad(T, T, sg_tensor *, sg_tensor *);
int w4_mlp(T, T, T, T, T, T, sg_tensor *);
int w4_mlp_grad(T, T, T, T, T, T, sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *,
                sg_tensor *);
int w5_tiny(T, T, T, sg_tensor *);
int w5_tiny_grad(T, T, T, sg_tensor *, sg_tensor *);
int w6_mstep(T, T, sg_tensor *);
int w6_mstep_grad(T, T, sg_tensor *, sg_tensor *);
/* bench/rnn_lm.sg, bench/xent_loop.sg and its unrolled twin, bench/small.sg */
int rnn_lm(T, T, T, T, T, T, T, T, sg_tensor *);
int rnn_lm_grad(T, T, T, T, T, T, T, T, sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *,
                sg_tensor *, sg_tensor *, sg_tensor *);
int xent_loop(T, T, sg_tensor *);
int xent_loop_grad(T, T, sg_tensor *, sg_tensor *);
int xent_unrolled_grad(T, T, sg_tensor *, sg_tensor *);
int take3(T, T, sg_tensor *);
int take3_grad(T, T, sg_tensor *, sg_tensor *);
#define BMM_DECL(D)                                                                         \
  int bmm##D(T, T, sg_tensor *);                                                            \
  int bmm##D##_grad(T, T, sg_tensor *, sg_tensor *, sg_tensor *);
BMM_DECL(2)
BMM_DECL(3)
BMM_DECL(4)
BMM_DECL(8)
#undef T

enum { MAX_ARR = 8, MAX_SAMPLES = 400 };

/* Element types of the arrays (the 0 and 1 of add()'s dt argument). */
enum { F32, F64, I32 };

typedef struct arr {
  const char *name;
  int dt, rank; /* F32, F64 or I32 */
  int64_t dims[3];
  void *data, *hand; /* inputs: data; outputs: sgc's and the C's */
} arr;

typedef struct wcase {
  const char *id, *func;
  char sizes[64];
  int nin, nout;
  arr in[MAX_ARR], out[MAX_ARR];
  int64_t sym[5];
  /* Streaming workloads: the least traffic any algorithm needs, as bare
   * loops timed in each round (time_case): min_bytes read as the bound
   * reads two arrays, and with two_pass one more bare loop reading z and y
   * and streaming dz out (W3's second pass, at W3's size); fwd_min_bytes:
   * the forward function's reads. */
  double min_bytes, fwd_min_bytes;
  int two_pass;
  int (*grad)(struct wcase *);
  int (*fwd)(struct wcase *);
  int (*hand)(struct wcase *);
  /* sgc's gradient of the same work written another way, timed in the
   * same rounds (grad / twin): xent_loop against its straight-line copies,
   * W1 and W3 against their v3 forms (log_softmax, logsumexp); twin_what
   * says which, in the note after the table */
  int (*twin)(struct wcase *);
  const char *twin_what;
  sg_tensor t[MAX_ARR * 2 + 1]; /* descriptors, inputs then outputs */
  sg_tensor fwd_out;
  double fwd_val;
} wcase;

static uint64_t rng = 0x9e3779b97f4a7c15u;
static double urand(double lo, double hi) {
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return lo + (hi - lo) * (double)((rng * 2685821657736338717u) >> 11) * (1.0 / 9007199254740992.0);
}

static int64_t count(const arr *a) {
  int64_t n = 1;
  for (int i = 0; i < a->rank; i++)
    n *= a->dims[i];
  return n;
}

static size_t elem_bytes(int dt) { return dt == F64 ? 8 : 4; }

static void *alloc(int64_t n, int dt) {
  void *p = NULL;
  if (posix_memalign(&p, 64, (size_t)(n ? n : 1) * elem_bytes(dt)) != 0) {
    fprintf(stderr, "workloads: out of memory\n");
    exit(2);
  }
  memset(p, 0, (size_t)(n ? n : 1) * elem_bytes(dt));
  return p;
}

static double get(const arr *a, const void *p, int64_t i) {
  return a->dt == F64   ? ((const double *)p)[i]
         : a->dt == I32 ? ((const int32_t *)p)[i]
                        : ((const float *)p)[i];
}
static void set(const arr *a, void *p, int64_t i, double v) {
  if (a->dt == F64)
    ((double *)p)[i] = v;
  else if (a->dt == I32)
    ((int32_t *)p)[i] = (int32_t)floor(v);
  else
    ((float *)p)[i] = (float)v;
}

static arr *add3(wcase *c, int out, const char *name, int dt, int rank, int64_t d0, int64_t d1,
                 int64_t d2) {
  arr *a = out ? &c->out[c->nout++] : &c->in[c->nin++];
  *a = (arr){name, dt, rank, {d0, d1, d2}, NULL, NULL};
  a->data = alloc(count(a), dt);
  if (out)
    a->hand = alloc(count(a), dt);
  return a;
}
static arr *add(wcase *c, int out, const char *name, int dt, int rank, int64_t d0, int64_t d1) {
  return add3(c, out, name, dt, rank, d0, d1, 0);
}
/* An input of uniform random values on [lo, hi) (I32: their floors). */
static arr *add_in3(wcase *c, const char *name, int dt, int rank, int64_t d0, int64_t d1,
                    int64_t d2, double lo, double hi) {
  arr *a = add3(c, 0, name, dt, rank, d0, d1, d2);
  for (int64_t i = 0; i < count(a); i++)
    set(a, a->data, i, urand(lo, hi));
  return a;
}
static arr *add_in(wcase *c, const char *name, int dt, int rank, int64_t d0, int64_t d1,
                   double lo, double hi) {
  arr *a = add(c, 0, name, dt, rank, d0, d1);
  for (int64_t i = 0; i < count(a); i++)
    set(a, a->data, i, urand(lo, hi));
  return a;
}
/* Rows of a [rows, cols] probability table (each row sums to 1). */
static void normalize_rows(arr *a, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; r++) {
    double s = 0;
    for (int64_t j = 0; j < cols; j++)
      s += get(a, a->data, r * cols + j);
    for (int64_t j = 0; j < cols; j++)
      set(a, a->data, r * cols + j, get(a, a->data, r * cols + j) / s);
  }
}

static void descs(wcase *c) {
  for (int i = 0; i < c->nin + c->nout; i++) {
    arr *a = i < c->nin ? &c->in[i] : &c->out[i - c->nin];
    sg_tensor t = {a->data, {0}, a->rank, a->dt == F64 ? SG_F64 : a->dt == I32 ? SG_I32 : SG_F32};
    for (int k = 0; k < a->rank; k++)
      t.shape[k] = a->dims[k];
    c->t[i] = t;
  }
  c->fwd_out = (sg_tensor){&c->fwd_val, {0}, 0, c->out[0].dt == F64 ? SG_F64 : SG_F32};
}

#define IN(k) (c->in[k].data)
#define HO(k) (c->out[k].hand)
#define TT(k) (&c->t[k])

/* ---- the workloads ---- */

static int g1(wcase *c) { return w1_xent_grad(TT(0), TT(1), TT(2), TT(3), TT(4)); }
static int f1(wcase *c) { return w1_xent(TT(0), TT(1), TT(2), &c->fwd_out); }
static int h1(wcase *c) {
  return hand_w1_xent_grad(c->sym[0], c->sym[1], c->sym[2], IN(0), IN(1), IN(2), HO(0), HO(1));
}
static int t1(wcase *c) { return w1_xent_ls_grad(TT(0), TT(1), TT(2), TT(3), TT(4)); }
static wcase mk1(int64_t n, int64_t d, int64_t k) {
  wcase c = {.id = "w1", .func = "w1_xent_grad", .sym = {n, d, k}, .grad = g1, .fwd = f1, .hand = h1,
             .twin = t1, .twin_what = "written out / with log_softmax"};
  snprintf(c.sizes, sizeof c.sizes, "n=%lld d=%lld k=%lld", (long long)n, (long long)d, (long long)k);
  double s = 4.0 / sqrt((double)d);
  add_in(&c, "w", 0, 2, d, k, -s, s);
  add_in(&c, "x", 0, 2, n, d, -1, 1);
  normalize_rows(add_in(&c, "y", 0, 2, n, k, 0, 1), n, k);
  add(&c, 1, "out", 0, 0, 0, 0);
  add(&c, 1, "d_w", 0, 2, d, k);
  return c;
}

static int g2(wcase *c) { return w2_logreg_grad(TT(0), TT(1), TT(2), TT(3), TT(4)); }
static int f2(wcase *c) { return w2_logreg(TT(0), TT(1), TT(2), &c->fwd_out); }
static int h2(wcase *c) {
  return hand_w2_logreg_grad(c->sym[0], c->sym[1], IN(0), IN(1), IN(2), HO(0), HO(1));
}
static wcase mk2(const char *id, int64_t n, int64_t d) {
  wcase c = {.id = id, .func = "w2_logreg_grad", .sym = {n, d}, .grad = g2, .fwd = f2, .hand = h2};
  snprintf(c.sizes, sizeof c.sizes, "n=%lld d=%lld", (long long)n, (long long)d);
  add_in(&c, "w", 0, 1, d, 0, -0.5, 0.5);
  add_in(&c, "x", 0, 2, n, d, -1, 1);
  arr *y = add_in(&c, "y", 0, 1, n, 0, 0, 1);
  for (int64_t i = 0; i < n; i++)
    set(y, y->data, i, get(y, y->data, i) < 0.5 ? 0 : 1);
  add(&c, 1, "out", 0, 0, 0, 0);
  add(&c, 1, "d_w", 0, 1, d, 0);
  c.min_bytes = c.fwd_min_bytes = 4.0 * (double)(n * d + n); /* x and y, read once */
  return c;
}

static int g3(wcase *c) { return w3_xent_grad(TT(0), TT(1), TT(2), TT(3)); }
static int f3(wcase *c) { return w3_xent(TT(0), TT(1), &c->fwd_out); }
static int h3(wcase *c) { return hand_w3_xent_grad(c->sym[0], IN(0), IN(1), HO(0), HO(1)); }
static int t3(wcase *c) { return w3_xent_lse_grad(TT(0), TT(1), TT(2), TT(3)); }
/* W3's logits are uniform on [-4, 4]; with `ramp` (the smoke test's last
 * two W3s) ramp (i/n)^2 is added to z_i, so that the running max of an
 * online pass keeps growing from chunk to chunk (2048 elements in
 * bench/hand/workloads_avx512.c): with ramp 10 over 10,000 elements by
 * about 1-3 (the running sum rescaled), with ramp 400 by 50-130 (past the
 * slack of 64: the chunk's sum taken again with its own max). */
static wcase mk3(const char *id, int64_t n, double ramp) {
  wcase c = {.id = id, .func = "w3_xent_grad", .sym = {n}, .grad = g3, .fwd = f3, .hand = h3,
             .twin = t3, .twin_what = "written out / with logsumexp"};
  snprintf(c.sizes, sizeof c.sizes, ramp > 0 ? "n=%lld ramp=%g" : "n=%lld", (long long)n, ramp);
  arr *z = add_in(&c, "z", 0, 1, n, 0, -4, 4);
  for (int64_t i = 0; ramp > 0 && i < n; i++)
    set(z, z->data, i, get(z, z->data, i) + ramp * ((double)i / (double)n) * ((double)i / (double)n));
  normalize_rows(add_in(&c, "y", 0, 1, n, 0, 0, 1), 1, n);
  add(&c, 1, "out", 0, 0, 0, 0);
  add(&c, 1, "d_z", 0, 1, n, 0);
  /* Two passes are the minimum (dz needs the normalizer, and z and y do
   * not fit in cache): z and y read, then read again with dz streamed out.
   * The forward reads them once. */
  c.min_bytes = c.fwd_min_bytes = 4.0 * (double)n * 2;
  c.two_pass = 1;
  return c;
}

static int g4(wcase *c) {
  return w4_mlp_grad(TT(0), TT(1), TT(2), TT(3), TT(4), TT(5), TT(6), TT(7), TT(8), TT(9), TT(10));
}
static int f4(wcase *c) { return w4_mlp(TT(0), TT(1), TT(2), TT(3), TT(4), TT(5), &c->fwd_out); }
static int h4(wcase *c) {
  return hand_w4_mlp_grad(c->sym[0], c->sym[1], c->sym[2], c->sym[3], IN(0), IN(1), IN(2), IN(3),
                          IN(4), IN(5), HO(0), HO(1), HO(2), HO(3), HO(4));
}
static wcase mk4(int64_t n, int64_t d, int64_t h, int64_t o) {
  wcase c = {.id = "w4", .func = "w4_mlp_grad", .sym = {n, d, h, o}, .grad = g4, .fwd = f4, .hand = h4};
  snprintf(c.sizes, sizeof c.sizes, "n=%lld d=%lld h=%lld c=%lld", (long long)n, (long long)d,
           (long long)h, (long long)o);
  double s1 = 1 / sqrt((double)d), s2 = 1 / sqrt((double)h);
  add_in(&c, "w1", 0, 2, d, h, -s1, s1);
  add_in(&c, "b1", 0, 1, h, 0, -0.1, 0.1);
  add_in(&c, "w2", 0, 2, h, o, -s2, s2);
  add_in(&c, "b2", 0, 1, o, 0, -0.1, 0.1);
  add_in(&c, "x", 0, 2, n, d, 0, 1);
  normalize_rows(add_in(&c, "y", 0, 2, n, o, 0, 1), n, o);
  add(&c, 1, "out", 0, 0, 0, 0);
  add(&c, 1, "d_w1", 0, 2, d, h);
  add(&c, 1, "d_b1", 0, 1, h, 0);
  add(&c, 1, "d_w2", 0, 2, h, o);
  add(&c, 1, "d_b2", 0, 1, o, 0);
  return c;
}

static int g5(wcase *c) { return w5_tiny_grad(TT(0), TT(1), TT(2), TT(3), TT(4)); }
static int f5(wcase *c) { return w5_tiny(TT(0), TT(1), TT(2), &c->fwd_out); }
static int h5(wcase *c) {
  return hand_w5_tiny_grad(c->sym[0], c->sym[1], IN(0), IN(1), IN(2), HO(0), HO(1));
}
static wcase mk5(int64_t k, int64_t d) {
  wcase c = {.id = "w5", .func = "w5_tiny_grad", .sym = {k, d}, .grad = g5, .fwd = f5, .hand = h5};
  snprintf(c.sizes, sizeof c.sizes, "k=%lld d=%lld", (long long)k, (long long)d);
  add_in(&c, "w", 0, 2, k, d, -1, 1);
  add_in(&c, "x", 0, 1, d, 0, -1, 1);
  normalize_rows(add_in(&c, "y", 0, 1, k, 0, 0, 1), 1, k);
  add(&c, 1, "out", 0, 0, 0, 0);
  add(&c, 1, "d_w", 0, 2, k, d);
  return c;
}

static int g6(wcase *c) { return w6_mstep_grad(TT(0), TT(1), TT(2), TT(3)); }
static int f6(wcase *c) { return w6_mstep(TT(0), TT(1), &c->fwd_out); }
static int h6(wcase *c) { return hand_w6_mstep_grad(c->sym[0], c->sym[1], IN(0), IN(1), HO(0), HO(1)); }
static wcase mk6(int64_t n, int64_t k) {
  wcase c = {.id = "w6", .func = "w6_mstep_grad", .sym = {n, k}, .grad = g6, .fwd = f6, .hand = h6};
  snprintf(c.sizes, sizeof c.sizes, "n=%lld k=%lld f64", (long long)n, (long long)k);
  add_in(&c, "mu", 1, 1, k, 0, -2, 2);
  add_in(&c, "x", 1, 1, n, 0, -3, 3);
  add(&c, 1, "out", 1, 0, 0, 0);
  add(&c, 1, "d_mu", 1, 1, k, 0);
  return c;
}

/* The RNN language model (issue 30, item 3): vocabulary v, embedding e,
 * hidden h, t steps of a batch of b. */
static int grnn(wcase *c) {
  return rnn_lm_grad(TT(0), TT(1), TT(2), TT(3), TT(4), TT(5), TT(6), TT(7), TT(8), TT(9), TT(10),
                     TT(11), TT(12), TT(13), TT(14));
}
static int frnn(wcase *c) {
  return rnn_lm(TT(0), TT(1), TT(2), TT(3), TT(4), TT(5), TT(6), TT(7), &c->fwd_out);
}
static int hrnn(wcase *c) {
  int64_t *s = c->sym;
  return hand_rnn_lm_grad(s[0], s[1], s[2], s[3], s[4], IN(0), IN(1), IN(2), IN(3), IN(4), IN(5),
                          IN(6), IN(7), HO(0), HO(1), HO(2), HO(3), HO(4), HO(5), HO(6));
}
static wcase mk_rnn(int64_t v, int64_t e, int64_t h, int64_t t, int64_t b) {
  wcase c = {.id = "rnn", .func = "rnn_lm_grad", .sym = {v, e, h, t, b}, .grad = grnn,
             .fwd = frnn, .hand = hrnn};
  snprintf(c.sizes, sizeof c.sizes, "v=%lld e=%lld h=%lld t=%lld b=%lld", (long long)v,
           (long long)e, (long long)h, (long long)t, (long long)b);
  double su = 1 / sqrt((double)(e + h)), sv = 1 / sqrt((double)h);
  add_in(&c, "emb", F32, 2, v, e, -1, 1);
  add_in(&c, "u", F32, 2, e, h, -su, su);
  add_in(&c, "w", F32, 2, h, h, -su, su);
  add_in(&c, "bh", F32, 1, h, 0, -0.1, 0.1);
  add_in(&c, "vo", F32, 2, h, v, -sv, sv);
  add_in(&c, "bo", F32, 1, v, 0, -0.1, 0.1);
  add_in(&c, "tokens", I32, 2, t, b, 0, (double)v);
  add_in(&c, "targets", I32, 2, t, b, 0, (double)v);
  add(&c, 1, "out", F32, 0, 0, 0);
  add(&c, 1, "d_emb", F32, 2, v, e);
  add(&c, 1, "d_u", F32, 2, e, h);
  add(&c, 1, "d_w", F32, 2, h, h);
  add(&c, 1, "d_bh", F32, 1, h, 0);
  add(&c, 1, "d_vo", F32, 2, h, v);
  add(&c, 1, "d_bo", F32, 1, v, 0);
  return c;
}

/* Softmax cross-entropy in a 32-step loop, and its unrolled twin. */
static int gxl(wcase *c) { return xent_loop_grad(TT(0), TT(1), TT(2), TT(3)); }
static int fxl(wcase *c) { return xent_loop(TT(0), TT(1), &c->fwd_out); }
static int txl(wcase *c) { return xent_unrolled_grad(TT(0), TT(1), TT(2), TT(3)); }
static int hxl(wcase *c) {
  return hand_xent_rows_grad(32 * c->sym[0], c->sym[1], IN(0), IN(1), HO(0), HO(1));
}
static wcase mk_xloop(int64_t n, int64_t k) {
  wcase c = {.id = "xloop", .func = "xent_loop_grad", .sym = {n, k}, .grad = gxl, .fwd = fxl,
             .hand = hxl, .twin = txl, .twin_what = "in the loop / the same steps unrolled"};
  snprintf(c.sizes, sizeof c.sizes, "32 steps of n=%lld k=%lld", (long long)n, (long long)k);
  add_in3(&c, "z", F32, 3, 32, n, k, -4, 4);
  normalize_rows(add_in3(&c, "y", F32, 3, 32, n, k, 0, 1), 32 * n, k);
  add(&c, 1, "out", F32, 0, 0, 0);
  add3(&c, 1, "d_z", F32, 3, 32, n, k);
  return c;
}

/* take with a short constant index, and batches of tiny products. */
static int gt3(wcase *c) { return take3_grad(TT(0), TT(1), TT(2), TT(3)); }
static int ft3(wcase *c) { return take3(TT(0), TT(1), &c->fwd_out); }
static int ht3(wcase *c) { return hand_take3_grad(c->sym[0], IN(0), IN(1), HO(0), HO(1)); }
static wcase mk_take3(int64_t n) {
  wcase c = {.id = "take3", .func = "take3_grad", .sym = {n}, .grad = gt3, .fwd = ft3,
             .hand = ht3};
  snprintf(c.sizes, sizeof c.sizes, "n=%lld", (long long)n);
  add_in(&c, "a", F32, 2, n, 3, -1, 1);
  add_in(&c, "w", F32, 2, n, 3, 0, 1);
  add(&c, 1, "out", F32, 0, 0, 0);
  add(&c, 1, "d_a", F32, 2, n, 3);
  return c;
}

#define BMM_CASE(D)                                                                          \
  static int gbmm##D(wcase *c) { return bmm##D##_grad(TT(0), TT(1), TT(2), TT(3), TT(4)); }  \
  static int fbmm##D(wcase *c) { return bmm##D(TT(0), TT(1), &c->fwd_out); }                \
  static int hbmm##D(wcase *c) {                                                             \
    return hand_bmm_grad(c->sym[0], D, IN(0), IN(1), HO(0), HO(1), HO(2));                   \
  }
BMM_CASE(2)
BMM_CASE(3)
BMM_CASE(4)
BMM_CASE(8)
static wcase mk_bmm(int d, int64_t b) {
  static const char *ids[9] = {[2] = "bmm2", [3] = "bmm3", [4] = "bmm4", [8] = "bmm8"};
  static const char *funcs[9] = {[2] = "bmm2_grad", [3] = "bmm3_grad", [4] = "bmm4_grad",
                                 [8] = "bmm8_grad"};
  int (*g[9])(wcase *) = {[2] = gbmm2, [3] = gbmm3, [4] = gbmm4, [8] = gbmm8};
  int (*f[9])(wcase *) = {[2] = fbmm2, [3] = fbmm3, [4] = fbmm4, [8] = fbmm8};
  int (*h[9])(wcase *) = {[2] = hbmm2, [3] = hbmm3, [4] = hbmm4, [8] = hbmm8};
  wcase c = {.id = ids[d], .func = funcs[d], .sym = {b}, .grad = g[d], .fwd = f[d], .hand = h[d]};
  snprintf(c.sizes, sizeof c.sizes, "b=%lld of %dx%d", (long long)b, d, d);
  add_in3(&c, "a", F32, 3, b, d, d, -1, 1);
  add_in3(&c, "x", F32, 3, b, d, d, -1, 1);
  add(&c, 1, "out", F32, 0, 0, 0);
  add3(&c, 1, "d_a", F32, 3, b, d, d);
  add3(&c, 1, "d_x", F32, 3, b, d, d);
  return c;
}

/* ---- measuring ---- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void must(wcase *c, const char *side, int rc) {
  if (rc != 0) {
    fprintf(stderr, "workloads: %s (%s) failed: %s\n", c->func, side,
            rc > 0 ? sg_last_error() : "hand-written code: out of memory");
    exit(2);
  }
}

static double batch(wcase *c, int (*fn)(wcase *), const char *side, int iters) {
  double t0 = now();
  for (int i = 0; i < iters; i++)
    must(c, side, fn(c));
  return (now() - t0) / iters;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *s, int n) {
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return s[n / 2];
}

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* Minor page faults per call, over `calls` calls after a warm-up call. */
static double faults(wcase *c, int (*fn)(wcase *), const char *side, int calls) {
  must(c, side, fn(c));
  long f0 = minflt();
  for (int i = 0; i < calls; i++)
    must(c, side, fn(c));
  return (double)(minflt() - f0) / calls;
}

typedef struct result {
  double sgc, hand, ratio, fwd, gradfwd, spread, rel, flt_sgc, flt_hand;
  double rspread; /* IQR / median of the rounds' sgc/C */
  double floor, tread, tstream; /* two_pass: grad/fwd of bare loops; their times */
  double pct, hpct, bw; /* streaming: % of the bound (sgc, C), the bound */
  double fpct;          /* streaming: % of the bound of the forward function */
  double twin, tspread; /* xent_loop: grad / unrolled twin's grad, its IQR / median */
  const char *which;
} result;

/* The bound's read of two arrays, timed again in every round of a
 * streaming workload (time_case). */
typedef struct Bound {
  float *a, *b, *c;
  int64_t n;
  float (*read2)(const float *, const float *, int64_t, int);
  void (*stream)(const float *, const float *, float *, int64_t);
} Bound;
static Bound bound;
static volatile float bound_sink; /* keeps the reads */
static double bound_once(void) {
  double best = 1e30;
  for (int rep = 0; rep < 2; rep++) { /* the better of the two reads */
    double t0 = now();
    bound_sink += bound.read2(bound.a, bound.b, bound.n, rep);
    double t = now() - t0;
    best = t < best ? t : best;
  }
  return 2.0 * 4.0 * (double)bound.n / best;
}

/* The bare loop of a two-pass workload's second pass: read a and b,
 * stream c (bound.stream); in seconds, the better of two, as bound_once
 * takes the better of its two reads. */
static double stream_once(void) {
  double best = 1e30;
  for (int rep = 0; rep < 2; rep++) {
    double t0 = now();
    bound.stream(bound.a, bound.b, bound.c, bound.n);
    double t = now() - t0;
    best = t < best ? t : best;
  }
  return best;
}

static void time_case(wcase *c, double budget, result *r) {
  double ts = 0, th = 0, t0 = now();
  while (now() - t0 < 0.1 * budget || ts == 0) {
    ts = batch(c, c->grad, "sgc", 1);
    th = batch(c, c->hand, "hand", 1);
  }
  double per = ts > th ? ts : th;
  int iters = per > 4e-3 ? 1 : (int)(4e-3 / per) + 1;
  int rounds = (int)(0.7 * budget / ((c->twin ? 4 : 3) * per * iters)); /* grad, C, fwd, twin */
  rounds = rounds < 11 ? 11 : rounds > MAX_SAMPLES ? MAX_SAMPLES : rounds;
  static double ss[MAX_SAMPLES], sh[MAX_SAMPLES], sr[MAX_SAMPLES], sf[MAX_SAMPLES];
  static double sgf[MAX_SAMPLES], sp[MAX_SAMPLES], shp[MAX_SAMPLES], sb[MAX_SAMPLES];
  static double sfl[MAX_SAMPLES], sbr[MAX_SAMPLES], sbw[MAX_SAMPLES], sfp[MAX_SAMPLES];
  static double stw[MAX_SAMPLES];
  for (int k = 0; k < rounds; k++) {
    ss[k] = batch(c, c->grad, "sgc", iters);
    sh[k] = batch(c, c->hand, "hand", iters);
    sr[k] = ss[k] / sh[k];
    /* W3's gradient must read z and y, then read them again and write dz;
     * its forward reads them once. The same in bare loops, in this round:
     * the bound's read of two arrays of W3's size, then that read
     * streaming a third. Their ratio is what grad/fwd would be with both
     * functions at the speed of memory. */
    double bare = 0;
    if (c->min_bytes > 0) { /* the bound of this round, beside its times */
      sb[k] = bound_once();
      bare = c->min_bytes / sb[k];
    }
    if (c->two_pass) {
      sbr[k] = 2.0 * 4.0 * (double)bound.n / sb[k];
      sbw[k] = stream_once();
      sfl[k] = (sbr[k] + sbw[k]) / sbr[k];
      bare += sbw[k];
    }
    if (c->min_bytes > 0) {
      sp[k] = 100.0 * bare / ss[k];
      shp[k] = 100.0 * bare / sh[k];
    }
    /* the forward in the same round, so that grad/fwd, like sgc/C, is a
     * ratio of neighbours: timed in a phase of its own, the forward met
     * another minute's bandwidth (W3's ratio moved 1.9-2.4 between runs) */
    sf[k] = batch(c, c->fwd, "sgc forward", iters);
    sgf[k] = ss[k] / sf[k];
    if (c->min_bytes > 0)
      sfp[k] = 100.0 * c->fwd_min_bytes / sb[k] / sf[k];
    if (c->twin)
      stw[k] = ss[k] / batch(c, c->twin, "sgc twin", iters);
  }
  r->pct = r->hpct = r->fpct = r->twin = -1;
  if (c->min_bytes > 0) {
    r->pct = median(sp, rounds);
    r->hpct = median(shp, rounds);
    r->fpct = median(sfp, rounds);
    r->bw = median(sb, rounds);
  }
  if (c->twin) {
    r->twin = median(stw, rounds);
    r->tspread = 100 * (stw[3 * rounds / 4] - stw[rounds / 4]) / r->twin;
  }
  if (c->two_pass) {
    r->floor = median(sfl, rounds);
    r->tread = median(sbr, rounds);
    r->tstream = median(sbw, rounds);
  }
  r->ratio = median(sr, rounds);
  r->rspread = 100 * (sr[3 * rounds / 4] - sr[rounds / 4]) / r->ratio;
  r->gradfwd = median(sgf, rounds);
  qsort(ss, (size_t)rounds, sizeof *ss, cmp_double);
  r->sgc = ss[rounds / 2];
  r->spread = 100 * (ss[3 * rounds / 4] - ss[rounds / 4]) / r->sgc;
  r->hand = median(sh, rounds);
  r->fwd = median(sf, rounds);
  int calls = iters < 3 ? 3 : iters;
  r->flt_sgc = faults(c, c->grad, "sgc", calls);
  r->flt_hand = faults(c, c->hand, "hand", calls);
}

static double compare(const wcase *c, const char **which) {
  double worst = 0;
  *which = c->out[0].name;
  for (int k = 0; k < c->nout; k++) {
    const arr *a = &c->out[k];
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < count(a); i++) {
      double d = fabs(get(a, a->data, i) - get(a, a->hand, i)), m = fabs(get(a, a->hand, i));
      if (!(d <= diff))
        diff = d;
      if (m > scale)
        scale = m;
    }
    double rel = diff / (scale > 0 ? scale : 1e-30);
    if (!(rel <= worst))
      worst = rel, *which = a->name;
  }
  return worst;
}

/* Bandwidth of a triad a = b + s c over three 64 MiB arrays (bytes read
 * and written, as STREAM counts them), best of a few runs, in bytes/s. */
static double triad_bandwidth(void) {
  int64_t n = 16 << 20;
  float *a = alloc(n, 0), *b = alloc(n, 0), *cc = alloc(n, 0);
  for (int64_t i = 0; i < n; i++)
    b[i] = (float)i, cc[i] = 1;
  double best = 1e30;
  for (int rep = 0; rep < 6; rep++) {
    double t0 = now();
    for (int64_t i = 0; i < n; i++)
      a[i] = b[i] + 0.5f * cc[i];
    double t = now() - t0;
    best = t < best ? t : best;
    cc[rep] = a[n - 1 - rep]; /* keep the stores */
  }
  free(a), free(b), free(cc);
  return 3.0 * 4.0 * (double)n / best;
}

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The same read on `threads` threads at once, each summing its share of
 * the array, in wall-clock time: how far memory lets a streaming workload
 * scale (--scaling). */
typedef struct {
  const float *a;
  int64_t n;
  float sum;
} ReadPart;

static void *read_part(void *arg) {
  ReadPart *p = arg;
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t i = 0; i < p->n; i += 4)
    s0 += p->a[i], s1 += p->a[i + 1], s2 += p->a[i + 2], s3 += p->a[i + 3];
  p->sum = s0 + s1 + s2 + s3;
  return NULL;
}

static double read_bandwidth_threads(int threads) {
  int64_t n = 64 << 20;
  float *a = alloc(n, 0);
  for (int64_t i = 0; i < n; i++)
    a[i] = 1;
  double best = 1e30;
  volatile float sink = 0;
  for (int rep = 0; rep < 4; rep++) {
    pthread_t tid[8];
    ReadPart part[8];
    double t0 = wall();
    for (int t = 0; t < threads; t++) {
      part[t] = (ReadPart){a + n / threads * t, n / threads, 0};
      if (t > 0)
        pthread_create(&tid[t], NULL, read_part, &part[t]);
    }
    read_part(&part[0]);
    for (int t = 1; t < threads; t++)
      pthread_join(tid[t], NULL);
    double t = wall() - t0;
    for (int k = 0; k < threads; k++)
      sink += part[k].sum;
    best = t < best ? t : best;
  }
  (void)sink;
  free(a);
  return 4.0 * (double)n / best;
}

/* The bandwidth bound of the %bw column: the fastest this thread moves
 * memory in the same run, the best of three kernels -- reading two 64 MiB
 * arrays at once with the widest vectors the CPU has (the scalar and
 * 16-byte reads above reach 26-29 GB/s here, AVX-512 37-42), the same read
 * with one prefetch per 4 KB page 8 KB ahead of each array (kick; 6-19%
 * faster here, bench/prefetch), and the triad counting the bytes it really
 * moves (the write allocates its line first: four arrays' worth, where
 * STREAM counts three). Against the triad alone W2 and W3 showed 134% and
 * 142%: it is not a bound. */
#define READ2(NAME, BYTES, TGT)                                                          \
  TGT static float NAME(const float *a, const float *b, int64_t n, int kick) {           \
    typedef float v __attribute__((vector_size(BYTES)));                                 \
    enum { L = BYTES / 4 };                                                              \
    v s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};                                            \
    for (int64_t i = 0; i + 2 * L <= n; i += 2 * L) {                                    \
      v x0, x1, y0, y1;                                                                  \
      if (kick && (i & 1023) == 0) {                                                     \
        __builtin_prefetch((const char *)(a + i) + 8192);                                \
        __builtin_prefetch((const char *)(b + i) + 8192);                                \
      }                                                                                  \
      memcpy(&x0, a + i, BYTES), memcpy(&x1, a + i + L, BYTES);                          \
      memcpy(&y0, b + i, BYTES), memcpy(&y1, b + i + L, BYTES);                          \
      s0 += x0, s1 += x1, s2 += y0, s3 += y1;                                            \
    }                                                                                    \
    v t = (s0 + s1) + (s2 + s3);                                                         \
    float r = 0;                                                                         \
    for (int k = 0; k < L; k++)                                                          \
      r += t[k];                                                                         \
    return r;                                                                            \
  }
/* c = a - b, c written with non-temporal stores where the CPU has them
 * (as sgc's loops write large outputs, codegen/cg_stream.c), then FENCE. */
#define STREAM2(NAME, BYTES, TGT, STORE, FENCE)                                          \
  TGT static void NAME(const float *a, const float *b, float *c, int64_t n) {           \
    typedef float v __attribute__((vector_size(BYTES)));                                 \
    enum { L = BYTES / 4 };                                                              \
    for (int64_t i = 0; i + L <= n; i += L) {                                            \
      v x, y, d;                                                                         \
      memcpy(&x, a + i, BYTES), memcpy(&y, b + i, BYTES);                                \
      d = x - y;                                                                         \
      STORE;                                                                             \
    }                                                                                    \
    FENCE;                                                                               \
  }
STREAM2(stream_16, 16, , memcpy(c + i, &d, sizeof d), (void)0)
READ2(read2_16, 16, )
#if defined(__x86_64__) && defined(__GNUC__)
READ2(read2_64, 64, __attribute__((target("avx512f"))))
READ2(read2_32, 32, __attribute__((target("avx2"))))
STREAM2(stream_64, 64, __attribute__((target("avx512f"))), _mm512_stream_ps(c + i, (__m512)d),
        _mm_sfence())
#endif

static double bound_bandwidth(double triad) {
  int64_t n = 16 << 20;
  float *a = alloc(n, 0), *b = alloc(n, 0), *c = alloc(n, 0);
  bound = (Bound){a, b, c, n, NULL, stream_16};
  for (int64_t i = 0; i < n; i++)
    a[i] = 1, b[i] = 2, c[i] = 0;
  float (*read2)(const float *, const float *, int64_t, int) = read2_16;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f"))
    read2 = read2_64, bound.stream = stream_64;
  else if (__builtin_cpu_supports("avx2"))
    read2 = read2_32;
#endif
  double best[2] = {1e30, 1e30};
  volatile float sink = 0;
  for (int rep = 0; rep < 6; rep++) {
    double t0 = now();
    sink += read2(a, b, n, rep & 1);
    double t = now() - t0;
    best[rep & 1] = t < best[rep & 1] ? t : best[rep & 1];
  }
  (void)sink;
  bound.read2 = read2;
  double read = 2.0 * 4.0 * (double)n / best[0], kick = 2.0 * 4.0 * (double)n / best[1];
  double triad_moved = triad * 4.0 / 3.0;
  double most = read > kick ? read : kick;
  most = most > triad_moved ? most : triad_moved;
  printf("memory bandwidth (this run): reading two arrays %.1f GB/s, with a prefetch per page "
         "%.1f GB/s, triad %.1f GB/s as STREAM counts (%.1f moved); bound: %.1f GB/s\n",
         read / 1e9, kick / 1e9, triad / 1e9, triad_moved / 1e9, most / 1e9);
  return most;
}

static void dump(const wcase *c, const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.txt", dir, c->id);
  FILE *txt = fopen(path, "w");
  snprintf(path, sizeof path, "%s/%s.bin", dir, c->id);
  FILE *bin = fopen(path, "wb");
  if (!txt || !bin) {
    fprintf(stderr, "workloads: cannot write %s\n", path);
    exit(2);
  }
  fprintf(txt, "case %s %s\n", c->id, c->func);
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < (pass ? c->nout : c->nin); k++) {
      const arr *a = pass ? &c->out[k] : &c->in[k];
      fprintf(txt, "%s %s %s", pass ? "out" : "in", a->name,
              a->dt == F64 ? "f64" : a->dt == I32 ? "i32" : "f32");
      for (int i = 0; i < a->rank; i++)
        fprintf(txt, " %lld", (long long)a->dims[i]);
      fprintf(txt, "\n");
      fwrite(a->data, elem_bytes(a->dt), (size_t)count(a), bin);
    }
  fclose(txt);
  fclose(bin);
}


static FILE *scaling_tsv;  /* --scaling --data DIR: DIR/scaling.tsv */
static FILE *portable_tsv; /* --portable --data DIR: DIR/portable.tsv */

static FILE *open_in(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f)
    fprintf(stderr, "workloads: cannot write %s\n", path);
  return f;
}

/* --portable: the portable C (the baseline of the runs before issue 30)
 * against the expert's AVX-512 C, alternated in one process, thread CPU
 * time: the measure of how far the old baselines were from an
 * expert's (on an EPYC 3.5x for W2, 2.5x W3, 2.8x W6, 3.7x W5). */
static void portable_vs_expert(wcase *c, double budget) {
  hand_portable = 1;
  double per = batch(c, c->hand, "portable", 1);
  hand_portable = 0;
  batch(c, c->hand, "expert", 1);
  int iters = per > 4e-3 ? 1 : (int)(4e-3 / per) + 1;
  int rounds = (int)(0.7 * budget / (2 * per * iters));
  rounds = rounds < 11 ? 11 : rounds > MAX_SAMPLES ? MAX_SAMPLES : rounds;
  static double sp[MAX_SAMPLES], sx[MAX_SAMPLES], sr[MAX_SAMPLES];
  for (int k = 0; k < rounds; k++) {
    hand_portable = 1;
    sp[k] = batch(c, c->hand, "portable", iters);
    hand_portable = 0;
    sx[k] = batch(c, c->hand, "expert", iters);
    sr[k] = sp[k] / sx[k];
  }
  double ratio = median(sr, rounds), spread = 100 * (sr[3 * rounds / 4] - sr[rounds / 4]) / ratio;
  printf("%-14s %-24s %11.4g %11.4g %9.2f %6.1f%%\n", c->func, c->sizes, 1e3 * median(sp, rounds),
         1e3 * median(sx, rounds), ratio, spread);
  fflush(stdout);
  if (portable_tsv)
    fprintf(portable_tsv, "%s\t%s\t%.6f\t%.6f\t%.4f\t%.1f\n", c->id, c->func,
            1e3 * median(sp, rounds), 1e3 * median(sx, rounds), ratio, spread);
}

/* Wall-clock time of one batch of `iters` gradients on `threads` threads
 * (0: the default, every core). */
static double wall_batch(wcase *c, int threads, int iters) {
  sg_set_num_threads(threads);
  double t0 = wall();
  for (int i = 0; i < iters; i++)
    must(c, "sgc", c->grad(c));
  return (wall() - t0) / iters;
}

/* "Other work" for --scaling: busy loops in child processes of ours. */
static pid_t busy[8];
static int nbusy;
static void start_load(int n) {
  fflush(stdout);
  for (int i = 0; i < n && nbusy < 8; i++) {
    pid_t pid = fork();
    if (pid == 0) { /* the child only spins: nothing of the parent's is touched */
      volatile unsigned long spin = 0;
      for (;;)
        spin++;
    }
    if (pid > 0)
      busy[nbusy++] = pid;
  }
}
static void stop_load(void) {
  for (int i = 0; i < nbusy; i++) {
    kill(busy[i], SIGKILL);
    waitpid(busy[i], NULL, 0);
  }
  nbusy = 0;
}

/* One thread against the default (0: every core), in alternating rounds
 * (a batch on 1 thread, then one on all), as sgc/C is timed: this host's
 * speed drifts within minutes, and two phases timed one after the other
 * would divide the times of different minutes. Medians of each, and the
 * speedup: the median of the rounds' ratios (above 1: the pool helps). */
static void scaling_pass(wcase *c, double budget, double out[3]) {
  wall_batch(c, 1, 1); /* warm-up: the workspace is sized */
  double per = wall_batch(c, 1, 1);
  wall_batch(c, 0, 1); /* warm-up: the pool's workers start */
  int iters = per > 4e-3 ? 1 : (int)(4e-3 / per) + 1;
  int rounds = (int)(0.25 * budget / (1.5 * per * iters));
  rounds = rounds < 11 ? 11 : rounds > MAX_SAMPLES ? MAX_SAMPLES : rounds;
  static double s1[MAX_SAMPLES], sn[MAX_SAMPLES], ratio[MAX_SAMPLES];
  for (int k = 0; k < rounds; k++) {
    s1[k] = wall_batch(c, 1, iters);
    sn[k] = wall_batch(c, 0, iters);
    ratio[k] = s1[k] / sn[k];
  }
  out[0] = median(s1, rounds), out[1] = median(sn, rounds), out[2] = median(ratio, rounds);
}

/* --scaling: the gradient on one thread and on the default thread count,
 * first as the machine is, then with two busy processes of ours beside it
 * (load 2 on top of whatever else runs; not in the smoke test); then the
 * outputs of one call on each thread count compared bit for bit. */
static void scaling(wcase *c, double budget, int loaded) {
  double idle[3], load[3] = {-1, -1, -1};
  scaling_pass(c, budget, idle);
  if (loaded) {
    start_load(2);
    scaling_pass(c, budget, load);
    stop_load();
  }
  void *keep[MAX_ARR];
  wall_batch(c, 1, 1);
  for (int k = 0; k < c->nout; k++) {
    size_t bytes = (size_t)count(&c->out[k]) * elem_bytes(c->out[k].dt);
    keep[k] = alloc(count(&c->out[k]) ? count(&c->out[k]) : 1, c->out[k].dt);
    memcpy(keep[k], c->out[k].data, bytes);
  }
  wall_batch(c, 0, 1);
  int same = 1;
  for (int k = 0; k < c->nout; k++) {
    size_t bytes = (size_t)count(&c->out[k]) * elem_bytes(c->out[k].dt);
    same &= memcmp(keep[k], c->out[k].data, bytes) == 0;
    free(keep[k]);
  }
  sg_set_num_threads(1);
  char loaded_cols[64] = "        -         -        -";
  if (loaded)
    snprintf(loaded_cols, sizeof loaded_cols, "%9.4g %9.4g %8.2f", 1e3 * load[0], 1e3 * load[1],
             load[2]);
  printf("%-14s %-24s %9.4g %9.4g %8.2f %s  %s\n", c->func, c->sizes, 1e3 * idle[0],
         1e3 * idle[1], idle[2], loaded_cols, same ? "yes" : "NO");
  fflush(stdout);
  if (scaling_tsv)
    fprintf(scaling_tsv, "%s\t%s\t%.6f\t%.6f\t%.4f\t%.6f\t%.6f\t%.4f\t%s\n", c->id, c->func,
            1e3 * idle[0], 1e3 * idle[1], idle[2], 1e3 * load[0], 1e3 * load[1], load[2],
            same ? "yes" : "NO");
}

static void free_case(wcase *c) {
  for (int i = 0; i < c->nin; i++)
    free(c->in[i].data);
  for (int i = 0; i < c->nout; i++)
    free(c->out[i].data), free(c->out[i].hand);
}

int main(int argc, char **argv) {
  double budget = 2.0;
  const char *dir = NULL, *only = NULL;
  int smoke = 0, scale = 0, portable = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--budget") && i + 1 < argc)
      budget = atof(argv[++i]);
    else if (!strcmp(argv[i], "--data") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--smoke"))
      smoke = 1;
    else if (!strcmp(argv[i], "--scaling"))
      scale = 1;
    else if (!strcmp(argv[i], "--portable"))
      portable = 1;
    else {
      fprintf(stderr,
              "usage: %s [--budget S] [--data DIR] [--only ID] [--smoke] [--scaling] "
              "[--portable]\n",
              argv[0]);
      return 2;
    }
  }
  sg_set_num_threads(1); /* one thread on each side: see the top of the file */
  /* The sizes of issue 9 (or small ones for the smoke test). */
  /* W1-W6 and W2n (0-6), the RNN (7), the softmax cross-entropy in a loop
   * (8), the small gather and products (9-13); the ramped W3s (14, 15)
   * only in the smoke test; --scaling and --portable: W1-W6 */
  int ids = scale || portable ? 6 : smoke ? 16 : 14, failed = 0;
  FILE *tsv = NULL;
  if (portable) {
    printf("%-14s %-24s %11s %11s %9s %7s\n", "function", "sizes", "portable ms", "expert ms",
           "ratio", "spread");
    if (dir && !(portable_tsv = open_in(dir, "portable.tsv")))
      return 2;
  }
  if (dir && !smoke && !scale && !portable && !(tsv = open_in(dir, "workloads.tsv")))
    return 2;
  double bw = 0;
  char floor_note[320] = "", twin_note[800] = "";
  if (scale) {
    double r1 = read_bandwidth_threads(1), r2 = read_bandwidth_threads(2);
    printf("memory read bandwidth (this run): 1 thread %.1f GB/s, 2 threads %.1f GB/s (%.2fx)\n",
           r1 / 1e9, r2 / 1e9, r2 / r1);
    printf("%-14s %-24s %9s %9s %8s %9s %9s %8s  %s\n", "function", "sizes", "1t ms",
           "all ms", "speedup", "1t+load", "all+load", "speedup", "bit-identical");
    if (dir && !smoke && !(scaling_tsv = open_in(dir, "scaling.tsv")))
      return 2;
  }
  else if (!smoke && !portable) {
    bw = bound_bandwidth(triad_bandwidth());
    printf("%-14s %-30s %9s %9s %6s %7s %8s %5s %5s %14s  %s\n", "function", "sizes", "sgc ms",
           "C ms", "sgc/C", "spread", "grad/fwd", "flt", "flt C", "%bw sgc/C/fwd",
           "max rel diff");
  }
  /* the cases' ids, so that --only builds no other case's data */
  static const char *const case_ids[16] = {"w1",   "w2",    "w3",    "w4",   "w5",   "w6",
                                           "w2n",  "rnn",   "xloop", "take3", "bmm2", "bmm3",
                                           "bmm4", "bmm8",  "w3r",   "w3r"};
  for (int w = 0; w < ids; w++) {
    if (only && strcmp(only, case_ids[w]))
      continue;
    wcase c;
    switch (w) {
    case 0: c = smoke ? mk1(8, 16, 12) : mk1(256, 512, 1000); break;
    case 1: c = smoke ? mk2("w2", 1000, 16) : mk2("w2", 1 << 20, 16); break;
    case 2: c = smoke ? mk3("w3", 10000, 0) : mk3("w3", 16 << 20, 0); break;
    case 3: c = smoke ? mk4(4, 30, 12, 10) : mk4(64, 784, 256, 10); break;
    case 4: c = mk5(10, 20); break;
    case 5: c = smoke ? mk6(1003, 8) : mk6(1 << 20, 8); break;
    case 6: c = smoke ? mk2("w2n", 1003, 4) : mk2("w2n", 4 << 20, 4); break;
    case 7: c = smoke ? mk_rnn(50, 8, 12, 5, 3) : mk_rnn(1000, 128, 256, 32, 32); break;
    case 8: c = smoke ? mk_xloop(3, 20) : mk_xloop(32, 1000); break;
    case 9: c = smoke ? mk_take3(1003) : mk_take3(1 << 15); break;
    case 10: c = mk_bmm(2, smoke ? 37 : 16384); break;
    case 11: c = mk_bmm(3, smoke ? 37 : 7281); break;
    case 12: c = mk_bmm(4, smoke ? 37 : 4096); break;
    case 13: c = mk_bmm(8, smoke ? 37 : 1024); break;
    case 14: c = mk3("w3r", 10000, 10); break;
    default: c = mk3("w3r", 10000, 400); break;
    }
    descs(&c);
    if (scale || portable) {
      if (scale)
        scaling(&c, budget, !smoke);
      else
        portable_vs_expert(&c, budget);
      free_case(&c);
      continue;
    }
    must(&c, "sgc", c.grad(&c));
    /* the portable C first (the baseline before issue 30), then the
     * expert's vector code, each against sgc */
    hand_portable = 1;
    must(&c, "hand", c.hand(&c));
    const char *pwhich;
    double prel = compare(&c, &pwhich);
    hand_portable = 0;
    must(&c, "hand", c.hand(&c));
    must(&c, "sgc forward", c.fwd(&c));
    result r = {0};
    r.rel = compare(&c, &r.which);
    /* The forward function's value is the gradient's value. */
    double fv = c.fwd_val;
    if (c.out[0].dt != F64) {
      float f;
      memcpy(&f, &c.fwd_val, sizeof f);
      fv = f;
    }
    double gv = get(&c.out[0], c.out[0].data, 0);
    int bad = !(r.rel <= 1e-3) || !(prel <= 1e-3) || !(fabs(fv - gv) <= 1e-6 * fabs(gv) + 1e-30);
    failed |= bad;
    if (c.twin) { /* the twin computes the same */
      must(&c, "sgc twin", c.twin(&c));
      const char *twhich;
      double trel = compare(&c, &twhich);
      failed |= !(trel <= 1e-3);
      if (smoke)
        printf("%s: its twin (%s) and C agree to %.1e (%s)%s\n", c.func, c.twin_what, trel, twhich,
               trel <= 1e-3 ? "" : "  FAIL: sgc and C disagree");
      must(&c, "sgc", c.grad(&c));
    }
    if (smoke) {
      printf("%s: sgc and C agree to %.1e (%s), portable C %.1e (%s)%s\n", c.func, r.rel, r.which,
             prel, pwhich, bad ? "  FAIL: sgc and C disagree" : "");
      free_case(&c);
      continue;
    }
    time_case(&c, budget, &r);
    char pcts[32] = "-";
    if (r.pct >= 0)
      snprintf(pcts, sizeof pcts, "%.0f%%/%.0f%%/%.0f%%", r.pct, r.hpct, r.fpct);
    printf("%-14s %-30s %9.4g %9.4g %6.2f %6.1f%% %8.2f %5.1f %5.1f %14s  %.1e (%s)%s\n", c.func,
           c.sizes, 1e3 * r.sgc, 1e3 * r.hand, r.ratio, r.rspread, r.gradfwd, r.flt_sgc,
           r.flt_hand, pcts, r.rel, r.which, bad ? "  FAIL: sgc and C disagree" : "");
    fflush(stdout);
    if (c.two_pass)
      snprintf(floor_note, sizeof floor_note,
               "%s: grad/fwd %.2f, bare loops in the same rounds %.2f (read z and y: %.2f ms; "
               "read them and stream dz: %.2f ms): the ratio with both at memory's speed\n",
               c.func, r.gradfwd, r.floor, 1e3 * r.tread, 1e3 * r.tstream);
    if (c.twin) {
      char note[200];
      snprintf(note, sizeof note,
               "%s: %s (sgc's gradients, same rounds): %.2f (spread %.1f%%)\n", c.func,
               c.twin_what, r.twin, r.tspread);
      strncat(twin_note, note, sizeof twin_note - strlen(twin_note) - 1);
    }
    if (tsv) {
      fprintf(tsv, "%s\t%s\t%s\t%.6f\t%.6f\t%.4f\t%.1f\t%.6f\t%.4f\t%.1f\t%.3e\t%.2f\t%.2f"
                   "\t%.1f\t%.1f\t%.1f\t%.2f\t%.4f\t%.1f\n",
              c.id, c.func, c.sizes, 1e3 * r.sgc, 1e3 * r.hand, r.ratio, r.rspread, 1e3 * r.fwd,
              r.gradfwd, r.spread, r.rel, r.flt_sgc, r.flt_hand, r.pct, r.hpct, r.fpct,
              (c.min_bytes > 0 ? r.bw : bw) / 1e9, r.twin, r.tspread);
      dump(&c, dir);
    }
    free_case(&c);
  }
  if (tsv)
    fclose(tsv);
  if (scaling_tsv)
    fclose(scaling_tsv);
  if (portable_tsv)
    fclose(portable_tsv);
  fputs(floor_note, stdout);
  fputs(twin_note, stdout);
  free(bound.a), free(bound.b), free(bound.c);
  if (failed) {
    fprintf(stderr, "workloads: FAIL: the hand-written C differs from sgc by more than 1e-3\n");
    return 1;
  }
  return 0;
}
