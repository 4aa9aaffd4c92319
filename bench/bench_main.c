/* bench_main.c: the driver behind `make bench` (see bench/README.md).
 *
 * For each benchmark case it times sgc's generated gradient function against
 * the expert's hand-written C gradient (bench/hand/), checks that the two
 * agree, prints one table row, and records the row and the case's data for
 * bench/report.py, which adds the PyTorch columns.
 *
 * Timing: both functions are warmed up, then timed in alternating rounds
 * (sgc, hand, sgc, hand, ...) so that a noisy neighbour or a frequency
 * change hits both alike; each sample is a batch of calls lasting a few
 * milliseconds of this thread's CPU time (not wall time: the machine may be
 * shared, and time spent waiting for a CPU is noise, not cost), and the
 * reported time per call is the median sample. The
 * ratio sgc/hand is the median of the per-round ratios. The spread column is
 * the interquartile range over the median, in percent (the larger of the
 * two sides): a loaded machine shows up there.
 *
 * Threads: sgc runs on one thread here (sg_set_num_threads(1), whatever
 * SG_NUM_THREADS says), as the hand-written code does: the time measured
 * is the calling thread's, so work done by the pool's other threads would
 * go uncounted and sgc would look up to 2x faster than it is.
 *
 * Agreement: for every output, max |sgc - hand| / max |hand| (relative to
 * the output's largest magnitude, so elements near zero do not blow it up);
 * the row shows the largest over the outputs. Above 1e-3 the row says FAIL
 * and the program exits with status 1 after the table.
 *
 * Usage: bench_main [--budget SECONDS_PER_CASE] [--data DIR] [--only ID]
 *                   [--profile sgc|hand]
 *   --data DIR   write DIR/results.tsv and, per case, DIR/ID.txt (manifest:
 *                the arrays' names and shapes) and DIR/ID.bin (the inputs
 *                and sgc's outputs, float32, in manifest order).
 *   --profile SIDE  no table: call only that side's function (of the --only
 *                case, or of every case) for the budget, for perf record or
 *                perf stat. Case ids: mlp_s mlp_l xent layer ew cd1. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hand/hand.h"
#include "sg_runtime.h"

/* The generated functions (sgc --header writes the same declarations). */
int mlp_loss_grad(const sg_tensor *w1, const sg_tensor *b1,
                  const sg_tensor *w2, const sg_tensor *b2, const sg_tensor *x,
                  const sg_tensor *y, sg_tensor *out, sg_tensor *d_w1,
                  sg_tensor *d_b1, sg_tensor *d_w2, sg_tensor *d_b2);
int layer_vjp(const sg_tensor *x, const sg_tensor *w, const sg_tensor *seed,
              sg_tensor *out, sg_tensor *d_x, sg_tensor *d_w);
int xent_grad(const sg_tensor *w, const sg_tensor *x, const sg_tensor *y,
              sg_tensor *out, sg_tensor *d_w);
int ew_grad(const sg_tensor *x, sg_tensor *out, sg_tensor *d_x);
int cd1_loss_grad(const sg_tensor *w, const sg_tensor *a, const sg_tensor *c,
                  const sg_tensor *v0, sg_tensor *out, sg_tensor *d_w,
                  sg_tensor *d_a, sg_tensor *d_c);

enum { MAX_ARR = 8, MAX_SAMPLES = 400 };

/* One array of a case. Inputs use data; outputs get one buffer per side. */
typedef struct arr {
  const char *name;
  int rank;
  int64_t dims[3];
  float *data, *hand;
} arr;

typedef struct bcase {
  const char *id, *func;
  char sizes[64];
  int nin, nout;
  arr in[MAX_ARR], out[MAX_ARR];
  int64_t sym[4]; /* the case's sizes, in the order the hand function takes */
  int (*sgc)(struct bcase *);
  int (*hand)(struct bcase *);
} bcase;

/* ---- data ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static float urand(float lo, float hi) { /* xorshift64*, uniform [lo, hi) */
  rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25,
      rng_state ^= rng_state >> 27;
  uint64_t r = rng_state * 2685821657736338717u;
  return lo + (hi - lo) * (float)((r >> 40) * (1.0 / 16777216.0));
}

static int64_t count(const arr *a) {
  int64_t n = 1;
  for (int i = 0; i < a->rank; i++)
    n *= a->dims[i];
  return n;
}

static float *alloc_f32(int64_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, (size_t)(n ? n : 1) * sizeof(float)) != 0) {
    fprintf(stderr, "bench: out of memory\n");
    exit(2);
  }
  return p;
}

static arr *add_in(bcase *c, const char *name, int rank, int64_t d0,
                   int64_t d1, float lo, float hi) {
  arr *a = &c->in[c->nin++];
  *a = (arr){name, rank, {d0, d1, 0}, NULL, NULL};
  a->data = alloc_f32(count(a));
  for (int64_t i = 0; i < count(a); i++)
    a->data[i] = urand(lo, hi);
  return a;
}

static void add_out(bcase *c, const char *name, int rank, int64_t d0,
                    int64_t d1) {
  arr *a = &c->out[c->nout++];
  *a = (arr){name, rank, {d0, d1, 0}, NULL, NULL};
  a->data = alloc_f32(count(a));
  a->hand = alloc_f32(count(a));
  memset(a->data, 0, (size_t)count(a) * sizeof(float));
  memset(a->hand, 0, (size_t)count(a) * sizeof(float));
}

static sg_tensor desc(const arr *a, float *p) {
  sg_tensor t = {p, {0}, a->rank, SG_F32};
  for (int i = 0; i < a->rank; i++)
    t.shape[i] = a->dims[i];
  return t;
}

/* Descriptors for sgc: inputs first, then outputs. */
static void descs(const bcase *c, sg_tensor *t) {
  for (int i = 0; i < c->nin; i++)
    t[i] = desc(&c->in[i], c->in[i].data);
  for (int i = 0; i < c->nout; i++)
    t[c->nin + i] = desc(&c->out[i], c->out[i].data);
}

#define IN(k) (c->in[k].data)
#define HOUT(k) (c->out[k].hand)

/* ---- the cases ---- */

static int sgc_mlp(bcase *c) {
  sg_tensor t[11];
  descs(c, t);
  return mlp_loss_grad(&t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7],
                       &t[8], &t[9], &t[10]);
}
static int hand_mlp(bcase *c) {
  return hand_mlp_loss_grad(c->sym[0], c->sym[1], c->sym[2], c->sym[3], IN(0),
                            IN(1), IN(2), IN(3), IN(4), IN(5), HOUT(0),
                            HOUT(1), HOUT(2), HOUT(3), HOUT(4));
}
static bcase mk_mlp(const char *id, int64_t n, int64_t d, int64_t h,
                    int64_t o) {
  bcase c = {.id = id, .func = "mlp_loss_grad", .sym = {n, d, h, o},
             .sgc = sgc_mlp, .hand = hand_mlp};
  snprintf(c.sizes, sizeof c.sizes, "n=%lld d=%lld h=%lld o=%lld",
           (long long)n, (long long)d, (long long)h, (long long)o);
  float s1 = 1.0f / sqrtf((float)d), s2 = 1.0f / sqrtf((float)h);
  add_in(&c, "w1", 2, d, h, -s1, s1);
  add_in(&c, "b1", 1, h, 0, -0.1f, 0.1f);
  add_in(&c, "w2", 2, h, o, -s2, s2);
  add_in(&c, "b2", 1, o, 0, -0.1f, 0.1f);
  add_in(&c, "x", 2, n, d, -1, 1);
  add_in(&c, "y", 2, n, o, -1, 1);
  add_out(&c, "out", 0, 0, 0);
  add_out(&c, "d_w1", 2, d, h);
  add_out(&c, "d_b1", 1, h, 0);
  add_out(&c, "d_w2", 2, h, o);
  add_out(&c, "d_b2", 1, o, 0);
  return c;
}

static int sgc_layer(bcase *c) {
  sg_tensor t[6];
  descs(c, t);
  return layer_vjp(&t[0], &t[1], &t[2], &t[3], &t[4], &t[5]);
}
static int hand_layer(bcase *c) {
  return hand_layer_vjp(c->sym[0], c->sym[1], c->sym[2], IN(0), IN(1), IN(2),
                        HOUT(0), HOUT(1), HOUT(2));
}
static bcase mk_layer(const char *id, int64_t n, int64_t d, int64_t h) {
  bcase c = {.id = id, .func = "layer_vjp", .sym = {n, d, h},
             .sgc = sgc_layer, .hand = hand_layer};
  snprintf(c.sizes, sizeof c.sizes, "n=%lld d=%lld h=%lld", (long long)n,
           (long long)d, (long long)h);
  float s = 1.0f / sqrtf((float)d);
  add_in(&c, "x", 2, n, d, -1, 1);
  add_in(&c, "w", 2, d, h, -s, s);
  add_in(&c, "seed", 2, n, h, -1, 1);
  add_out(&c, "out", 2, n, h);
  add_out(&c, "d_x", 2, n, d);
  add_out(&c, "d_w", 2, d, h);
  return c;
}

static int sgc_xent(bcase *c) {
  sg_tensor t[5];
  descs(c, t);
  return xent_grad(&t[0], &t[1], &t[2], &t[3], &t[4]);
}
static int hand_xent(bcase *c) {
  return hand_xent_grad(c->sym[0], c->sym[1], IN(0), IN(1), IN(2), HOUT(0),
                        HOUT(1));
}
static bcase mk_xent(const char *id, int64_t k, int64_t d) {
  bcase c = {.id = id, .func = "xent_grad", .sym = {k, d},
             .sgc = sgc_xent, .hand = hand_xent};
  snprintf(c.sizes, sizeof c.sizes, "k=%lld d=%lld", (long long)k,
           (long long)d);
  float s = 4.0f / sqrtf((float)d); /* logits spread over a few units */
  add_in(&c, "w", 2, k, d, -s, s);
  add_in(&c, "x", 1, d, 0, -1, 1);
  arr *y = add_in(&c, "y", 1, k, 0, 0, 1); /* a probability vector */
  float sum = 0;
  for (int64_t i = 0; i < k; i++)
    sum += y->data[i];
  for (int64_t i = 0; i < k; i++)
    y->data[i] /= sum;
  add_out(&c, "out", 0, 0, 0);
  add_out(&c, "d_w", 2, k, d);
  return c;
}

static int sgc_ew(bcase *c) {
  sg_tensor t[3];
  descs(c, t);
  return ew_grad(&t[0], &t[1], &t[2]);
}
static int hand_ew(bcase *c) {
  return hand_ew_grad(c->sym[0], IN(0), HOUT(0), HOUT(1));
}
static bcase mk_ew(const char *id, int64_t n) {
  bcase c = {.id = id, .func = "ew_grad", .sym = {n},
             .sgc = sgc_ew, .hand = hand_ew};
  snprintf(c.sizes, sizeof c.sizes, "n=%lld", (long long)n);
  add_in(&c, "x", 1, n, 0, -4, 4);
  add_out(&c, "out", 0, 0, 0);
  add_out(&c, "d_x", 1, n, 0);
  return c;
}

static int sgc_cd1(bcase *c) {
  sg_tensor t[8];
  descs(c, t);
  return cd1_loss_grad(&t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7]);
}
static int hand_cd1(bcase *c) {
  return hand_cd1_loss_grad(c->sym[0], c->sym[1], c->sym[2], IN(0), IN(1),
                            IN(2), IN(3), HOUT(0), HOUT(1), HOUT(2), HOUT(3));
}
static bcase mk_cd1(const char *id, int64_t nv, int64_t nh, int64_t b) {
  bcase c = {.id = id, .func = "cd1_loss_grad", .sym = {nv, nh, b},
             .sgc = sgc_cd1, .hand = hand_cd1};
  snprintf(c.sizes, sizeof c.sizes, "nv=%lld nh=%lld b=%lld", (long long)nv,
           (long long)nh, (long long)b);
  add_in(&c, "w", 2, nv, nh, -0.05f, 0.05f);
  add_in(&c, "a", 1, nv, 0, -0.5f, 0.5f);
  add_in(&c, "c", 1, nh, 0, -0.5f, 0.5f);
  add_in(&c, "v0", 2, b, nv, 0, 1); /* pixel intensities */
  add_out(&c, "out", 0, 0, 0);
  add_out(&c, "d_w", 2, nv, nh);
  add_out(&c, "d_a", 1, nv, 0);
  add_out(&c, "d_c", 1, nh, 0);
  return c;
}

/* ---- timing ---- */

/* CPU time of this thread: both sides run on one thread, and on a shared
 * machine the time spent waiting for a CPU must not count against either. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void must(bcase *c, const char *side, int rc) {
  if (rc != 0) {
    fprintf(stderr, "bench: %s (%s) failed: %s\n", c->func, side,
            rc > 0 ? sg_last_error() : "hand-written code: out of memory");
    exit(2);
  }
}

/* Seconds per call over a batch of `iters` calls. */
static double batch(bcase *c, int (*fn)(bcase *), const char *side,
                    int iters) {
  double t0 = now();
  for (int i = 0; i < iters; i++)
    must(c, side, fn(c));
  return (now() - t0) / iters;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct stats {
  double median, iqr_pct;
} stats;

static stats summarize(double *s, int n) {
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  stats st = {s[n / 2], 0};
  st.iqr_pct = 100.0 * (s[(3 * n) / 4] - s[n / 4]) / st.median;
  return st;
}

/* Alternating rounds within `budget` seconds (at least 11 rounds). */
static void time_case(bcase *c, double budget, stats *sgc, stats *hand,
                      stats *ratio) {
  /* Warm-up: caches, page faults of the scratch buffers, CPU frequency. */
  double t_s = 0, t_h = 0, t0 = now();
  while (now() - t0 < 0.1 * budget) {
    t_s = batch(c, c->sgc, "sgc", 1);
    t_h = batch(c, c->hand, "hand", 1);
  }
  /* Batches of about 4 ms, or a single call if one call takes longer. */
  double per = t_s > t_h ? t_s : t_h;
  int iters = per > 4e-3 ? 1 : (int)(4e-3 / per) + 1;
  int rounds = (int)(0.9 * budget / (2 * per * iters));
  if (rounds < 11)
    rounds = 11;
  if (rounds > MAX_SAMPLES)
    rounds = MAX_SAMPLES;
  static double ss[MAX_SAMPLES], sh[MAX_SAMPLES];
  for (int r = 0; r < rounds; r++) {
    ss[r] = batch(c, c->sgc, "sgc", iters);
    sh[r] = batch(c, c->hand, "hand", iters);
  }
  /* The ratio is the median of the per-round ratios: each pair ran back to
   * back, so slow drift in the machine's speed cancels. */
  static double sr[MAX_SAMPLES];
  for (int r = 0; r < rounds; r++)
    sr[r] = ss[r] / sh[r];
  *sgc = summarize(ss, rounds);
  *hand = summarize(sh, rounds);
  *ratio = summarize(sr, rounds);
}

/* max over outputs of max|sgc - hand| / max|hand|; *which names the output. */
static double compare(const bcase *c, const char **which) {
  double worst = 0;
  *which = c->out[0].name;
  for (int k = 0; k < c->nout; k++) {
    const arr *a = &c->out[k];
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < count(a); i++) {
      double d = fabs((double)a->data[i] - (double)a->hand[i]);
      double m = fabs((double)a->hand[i]);
      if (!(d <= diff)) /* also catches NaN */
        diff = d;
      if (m > scale)
        scale = m;
    }
    double rel = diff / (scale > 0 ? scale : 1e-30);
    if (!(rel <= worst)) {
      worst = rel;
      *which = a->name;
    }
  }
  return worst;
}

static void dump(const bcase *c, const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.txt", dir, c->id);
  FILE *txt = fopen(path, "w");
  snprintf(path, sizeof path, "%s/%s.bin", dir, c->id);
  FILE *bin = fopen(path, "wb");
  if (!txt || !bin) {
    fprintf(stderr, "bench: cannot write %s\n", path);
    exit(2);
  }
  fprintf(txt, "case %s %s\n", c->id, c->func);
  for (int pass = 0; pass < 2; pass++) {
    int n = pass ? c->nout : c->nin;
    for (int k = 0; k < n; k++) {
      const arr *a = pass ? &c->out[k] : &c->in[k];
      fprintf(txt, "%s %s", pass ? "out" : "in", a->name);
      for (int i = 0; i < a->rank; i++)
        fprintf(txt, " %lld", (long long)a->dims[i]);
      fprintf(txt, "\n");
      fwrite(a->data, sizeof(float), (size_t)count(a), bin);
    }
  }
  fclose(txt);
  fclose(bin);
}

int main(int argc, char **argv) {
  double budget = 2.5;
  const char *dir = NULL, *only = NULL, *profile = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--budget") && i + 1 < argc)
      budget = atof(argv[++i]);
    else if (!strcmp(argv[i], "--data") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--profile") && i + 1 < argc &&
             (!strcmp(argv[i + 1], "sgc") || !strcmp(argv[i + 1], "hand")))
      profile = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--budget S] [--data DIR] [--only ID] "
              "[--profile sgc|hand]\n",
              argv[0]);
      return 2;
    }
  }

  sg_set_num_threads(1); /* one thread on each side: see the top of the file */
  bcase cases[] = {
      mk_mlp("mlp_s", 256, 256, 256, 64),
      mk_mlp("mlp_l", 1024, 512, 512, 128),
      mk_xent("xent", 1000, 512),
      mk_layer("layer", 256, 512, 512),
      mk_ew("ew", 1 << 20),
      mk_cd1("cd1", 784, 256, 128),
  };
  int ncases = (int)(sizeof cases / sizeof cases[0]);

  if (profile) {
    for (int i = 0; i < ncases; i++) {
      bcase *c = &cases[i];
      if (only && strcmp(only, c->id))
        continue;
      int (*fn)(bcase *) = strcmp(profile, "sgc") ? c->hand : c->sgc;
      long calls = 0;
      double t0 = now();
      while (now() - t0 < budget)
        must(c, profile, fn(c)), calls++;
      printf("%s %s: %ld calls, %.3f ms per call\n", c->id, profile, calls,
             1e3 * (now() - t0) / (double)calls);
    }
    return 0;
  }

  FILE *tsv = NULL;
  if (dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/results.tsv", dir);
    if (!(tsv = fopen(path, "w"))) {
      fprintf(stderr, "bench: cannot write %s\n", path);
      return 2;
    }
  }

  printf("%-14s %-24s %10s %10s %9s %7s  %s\n", "function", "sizes",
         "sgc ms", "hand ms", "sgc/hand", "spread", "max rel diff");
  int failed = 0;
  for (int i = 0; i < ncases; i++) {
    bcase *c = &cases[i];
    if (only && strcmp(only, c->id))
      continue;
    must(c, "sgc", c->sgc(c));
    must(c, "hand", c->hand(c));
    const char *which;
    double rel = compare(c, &which);
    int bad = !(rel <= 1e-3);
    failed |= bad;
    stats s, h, q;
    time_case(c, budget, &s, &h, &q);
    double spread = s.iqr_pct > h.iqr_pct ? s.iqr_pct : h.iqr_pct;
    printf("%-14s %-24s %10.3f %10.3f %9.2f %6.1f%%  %.1e (%s)%s\n", c->func,
           c->sizes, 1e3 * s.median, 1e3 * h.median, q.median,
           spread, rel, which, bad ? "  FAIL: sgc and hand disagree" : "");
    fflush(stdout);
    if (tsv) {
      fprintf(tsv, "%s\t%s\t%s\t%.6f\t%.6f\t%.4f\t%.1f\t%.3e\t%s\n", c->id,
              c->func, c->sizes, 1e3 * s.median, 1e3 * h.median, q.median,
              spread, rel, which);
      dump(c, dir);
    }
  }
  if (tsv)
    fclose(tsv);
  if (failed) {
    fprintf(stderr, "bench: FAIL: a hand-written gradient differs from sgc's "
                    "by more than 1e-3 (relative)\n");
    return 1;
  }
  return 0;
}
