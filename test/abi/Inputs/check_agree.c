/* Driver for check_fast_path.test: the inline argument checks of a
 * generated entry (codegen/cg_argcheck.c) against the table-driven
 * sg_rt_check (runtime/check.c), which stays the definition of the rules.
 *
 * model_grad of abi.sg is called with randomly damaged descriptors: NULL
 * descriptors and data, wrong dtypes and ranks, dimensions replaced by
 * negative, zero, other small or huge values, data pointers into one shared
 * pool so that arguments overlap. For each case sg_rt_check is called on a
 * copy of model_grad's signature and the generated function on the same
 * descriptors: both must return the same code and, on failure, the same
 * message. Cases the table accepts with shapes larger than the buffers are
 * skipped (the function would read them). Prints the counts per code. */
#include "abi.h"
#include "sgrt.h"
#include "sgtest.h"

/* model_grad(w: f32[k, d], x: const f32[d], s: f32, m: f32[2, 3])
 *   -> (out: f32, d_w: f32[k, d], d_s: f32, d_m: f32[2, 3]); symbols k, d */
static const int64_t dims_kd[2] = {-1, -2}, dims_d[1] = {-2}, dims_23[2] = {2, 3};
static const char *const sym_names[2] = {"k", "d"};
static const sg_rt_arg args[8] = {
    {"w", SG_F32, 2, 0, 0, dims_kd},   {"x", SG_F32, 1, 0, 0, dims_d},
    {"s", SG_F32, 0, 0, 0, NULL},      {"m", SG_F32, 2, 0, 0, dims_23},
    {"out", SG_F32, 0, 1, 0, NULL},    {"d_w", SG_F32, 2, 1, 0, dims_kd},
    {"d_s", SG_F32, 0, 1, 0, NULL},    {"d_m", SG_F32, 2, 1, 0, dims_23},
};
static const sg_rt_sig sig = {"model_grad", 8, 2, sym_names, args};

enum { POOL = 4096, OWN = 64 };
static float pool[POOL];
static float own[8][OWN];

static uint64_t rnd(uint64_t n) { return (uint64_t)(sgt_uniform(0, 1) * (double)n) % n; }

static int64_t odd_dim(void) {
  static const int64_t v[] = {-1, -7, 0, 1, 2, 3, 5, (int64_t)1 << 40, (int64_t)1 << 62, INT64_MAX};
  return v[rnd(sizeof v / sizeof v[0])];
}

static int64_t numel(const sg_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++)
    n *= t->shape[d];
  return n;
}

int main(void) {
  sg_tensor t[8];
  const sg_tensor *av[8];
  int count[8] = {0}, skipped = 0, cases = 20000;
  for (int c = 0; c < cases; c++) {
    int64_t k = (int64_t)rnd(4), d = (int64_t)rnd(4) + (rnd(4) ? 1 : 0);
    for (int a = 0; a < 8; a++) {
      memset(&t[a], 0, sizeof t[a]);
      t[a].dtype = args[a].dtype;
      t[a].rank = args[a].rank;
      for (int j = 0; j < args[a].rank; j++) {
        int64_t e = args[a].dims[j];
        t[a].shape[j] = e == -1 ? k : e == -2 ? d : e;
      }
      t[a].data = own[a];
      av[a] = &t[a];
      /* damage, each kind rarely, so that most cases fail at most once */
      if (rnd(100) < 3)
        t[a].dtype = rnd(2) ? SG_F64 : (int32_t)rnd(9) - 2;
      if (rnd(100) < 3)
        t[a].rank = (int32_t)rnd(11) - 1;
      for (int j = 0; j < 2; j++)
        if (rnd(100) < 4)
          t[a].shape[j] = odd_dim();
      if (rnd(100) < 3)
        t[a].data = NULL;
      if (rnd(100) < 12)
        t[a].data = pool + rnd(32);
      if (rnd(1000) < 5)
        av[a] = NULL;
    }
    int64_t syms[2];
    int rc_table = sg_rt_check(&sig, av, syms);
    char msg_table[1024];
    snprintf(msg_table, sizeof msg_table, "%s", rc_table ? sg_last_error() : "");
    if (rc_table == SG_OK) {
      bool fits = true;
      for (int a = 0; a < 8; a++)
        fits &= numel(&t[a]) <= OWN && numel(&t[a]) <= POOL / 2;
      if (!fits) {
        skipped++;
        continue;
      }
    }
    int rc = model_grad(av[0], av[1], av[2], av[3], (sg_tensor *)av[4], (sg_tensor *)av[5],
                        (sg_tensor *)av[6], (sg_tensor *)av[7]);
    if (rc != rc_table || (rc && strcmp(msg_table, sg_last_error()))) {
      printf("FAIL: case %d: table rc=%d '%s', generated rc=%d '%s'\n", c, rc_table, msg_table, rc,
             rc ? sg_last_error() : "");
      sgt_failures++;
    }
    if (rc >= 0 && rc < 8)
      count[rc]++;
  }
  for (int r = 0; r < 6; r++)
    printf("code %d: %d cases\n", r, count[r]);
  printf("skipped %d\n", skipped);
  printf(sgt_failures ? "FAILED\n" : "all agree\n");
  return sgt_failures != 0;
}
