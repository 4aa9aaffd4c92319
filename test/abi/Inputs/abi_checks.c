/* Driver for the run-time argument checks of spec section 9, on the
 * functions of abi.sg. argv[1] picks one behaviour; each call prints
 *   rc=<SG_ code>
 *   msg=<sg_last_error()>     \  only when rc is not SG_OK; the second
 *   nothing written            /  means every byte of every buffer, inputs
 *                                 and outputs, is what it was before the call
 * Output buffers start filled with the sentinel byte 0xA5. */
#include "abi.h"
#include "sgtest.h"

#define MAXREG 64
static struct {
  unsigned char *p, *copy;
  size_t n;
} reg[MAXREG];
static int nreg;

/* A fresh buffer of n bytes: random floats for an input, the sentinel for
 * an output. */
static void *buffer(size_t n, bool output) {
  unsigned char *p = malloc(n ? n : 1);
  if (output)
    memset(p, 0xA5, n);
  else
    for (size_t i = 0; i + 4 <= n; i += 4) {
      float v = (float)sgt_uniform(-1, 1);
      memcpy(p + i, &v, 4);
    }
  reg[nreg].p = p;
  reg[nreg].n = n;
  reg[nreg].copy = malloc(n ? n : 1);
  nreg++;
  return p;
}

static sg_tensor tensor(int dtype, bool output, int rank, const int64_t *shape) {
  sg_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.rank = rank;
  int64_t n = 1;
  for (int k = 0; k < rank; k++)
    n *= (t.shape[k] = shape[k]);
  t.data = buffer((size_t)n * (dtype == SG_F64 ? 8 : 4), output);
  return t;
}
#define IN(dtype, ...) tensor(dtype, false, (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__})
#define OUT(dtype, ...) tensor(dtype, true, (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__})
#define IN0(dtype) tensor(dtype, false, 0, NULL)
#define OUT0(dtype) tensor(dtype, true, 0, NULL)

static const char *code_name(int rc) {
  static const char *names[] = {"SG_OK", "SG_ERR_NULL", "SG_ERR_DTYPE", "SG_ERR_RANK",
                                "SG_ERR_SHAPE", "SG_ERR_ALIAS", "SG_ERR_ALLOC"};
  return rc >= 0 && rc <= 6 ? names[rc] : "unknown code";
}

static void snapshot(void) {
  for (int i = 0; i < nreg; i++)
    memcpy(reg[i].copy, reg[i].p, reg[i].n);
}

/* Print the result of a call made after snapshot(); a failed call must not
 * have changed a single byte. */
static void report(int rc) {
  printf("rc=%s\n", code_name(rc));
  if (rc == SG_OK)
    return;
  printf("msg=%s\n", sg_last_error());
  bool same = true;
  for (int i = 0; i < nreg; i++)
    for (size_t b = 0; b < reg[i].n; b++)
      if (reg[i].p[b] != reg[i].copy[b]) {
        if (same)
          printf("FAIL: buffer %d byte %zu changed (0x%02x -> 0x%02x)\n", i, b,
                 reg[i].copy[b], reg[i].p[b]);
        same = false;
        sgt_failures++;
      }
  if (same)
    printf("nothing written\n");
}
#define CALL(expr)                                                                      \
  do {                                                                                  \
    snapshot();                                                                         \
    report(expr);                                                                       \
  } while (0)

/* The arguments of model_grad (k = 3, d = 4) and of dense_vjp (n = 2, d = 4,
 * h = 5), each in its own buffer. */
static sg_tensor w, x, s, m, out, d_w, d_s, d_m;
static sg_tensor lx, lw, seed, lout, ld_x, ld_w;

static void setup(void) {
  w = IN(SG_F32, 3, 4), x = IN(SG_F32, 4), s = IN0(SG_F32), m = IN(SG_F32, 2, 3);
  out = OUT0(SG_F32), d_w = OUT(SG_F32, 3, 4), d_s = OUT0(SG_F32), d_m = OUT(SG_F32, 2, 3);
  lx = IN(SG_F32, 2, 4), lw = IN(SG_F32, 4, 5), seed = IN(SG_F32, 2, 5);
  lout = OUT(SG_F32, 2, 5), ld_x = OUT(SG_F32, 2, 4), ld_w = OUT(SG_F32, 4, 5);
}

#define MODEL_GRAD() model_grad(&w, &x, &s, &m, &out, &d_w, &d_s, &d_m)
#define DENSE_VJP() dense_vjp(&lx, &lw, &seed, &lout, &ld_x, &ld_w)

/* The value of model at the current arguments, computed directly. */
static double model_ref(int64_t k) {
  double r = 0, mm = 0;
  for (int64_t i = 0; i < k; i++) {
    double z = 0;
    for (int j = 0; j < 4; j++)
      z += sgt_get(&w, i * 4 + j) * sgt_get(&x, j);
    r += tanh(z);
  }
  for (int i = 0; i < 6; i++)
    mm += sgt_get(&m, i) * sgt_get(&m, i);
  return r * sgt_get(&s, 0) + mm;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  setup();
  if (!strcmp(mode, "valid")) {
    CALL(MODEL_GRAD());
    CHECK_CLOSE(sgt_get(&out, 0), model_ref(3), 1e-5);
    CALL(DENSE_VJP());
  } else if (!strcmp(mode, "null_descriptor")) {
    CALL(model_grad(&w, NULL, &s, &m, &out, &d_w, &d_s, &d_m));
    CALL(model_grad(&w, &x, &s, &m, &out, &d_w, NULL, &d_m));
    CALL(dense_vjp(&lx, &lw, NULL, &lout, &ld_x, &ld_w));
    CALL(model(NULL, &x, &s, &m, &out));
  } else if (!strcmp(mode, "null_data")) {
    void *keep = w.data;
    w.data = NULL;
    CALL(MODEL_GRAD());
    w.data = keep;
    keep = s.data;
    s.data = NULL;
    CALL(MODEL_GRAD());
    s.data = keep;
    keep = d_m.data;
    d_m.data = NULL;
    CALL(MODEL_GRAD());
    d_m.data = keep;
    keep = out.data;
    out.data = NULL;
    CALL(MODEL_GRAD());
    out.data = keep;
  } else if (!strcmp(mode, "null_data_empty")) {
    /* k = 0: w and d_w have no elements and may have NULL data. */
    w.shape[0] = d_w.shape[0] = 0;
    w.data = d_w.data = NULL;
    CALL(MODEL_GRAD());
    CHECK_CLOSE(sgt_get(&out, 0), model_ref(0), 1e-6);
    CHECK_EXACT(sgt_get(&d_s, 0), 0);
    for (int i = 0; i < 6; i++)
      CHECK_CLOSE(sgt_get(&d_m, i), 2 * sgt_get(&m, i), 1e-6);
    CALL(model(&w, &x, &s, &m, &out));
    /* d = 0 too: x and w both empty, every row of w @ x is 0. */
    w.shape[0] = d_w.shape[0] = 3;
    w.shape[1] = d_w.shape[1] = x.shape[0] = 0;
    x.data = NULL;
    CALL(MODEL_GRAD());
    CHECK_CLOSE(sgt_get(&out, 0), model_ref(0), 1e-6);
    /* Still one element: NULL data is an error. */
    w.shape[1] = d_w.shape[1] = x.shape[0] = 4;
    CALL(MODEL_GRAD());
  } else if (!strcmp(mode, "dtype")) {
    s.dtype = SG_F64;
    CALL(MODEL_GRAD());
    s.dtype = SG_F32;
    m.dtype = 0;
    CALL(MODEL_GRAD());
    m.dtype = 77;
    CALL(MODEL_GRAD());
    m.dtype = SG_F32;
    d_w.dtype = SG_F64;
    CALL(MODEL_GRAD());
    d_w.dtype = SG_F32;
    seed.dtype = SG_F64;
    CALL(DENSE_VJP());
  } else if (!strcmp(mode, "rank")) {
    m.rank = 1, m.shape[0] = 6;
    CALL(MODEL_GRAD());
    m.rank = 2, m.shape[0] = 2;
    s.rank = 1, s.shape[0] = 1;
    CALL(MODEL_GRAD());
    s.rank = 0;
    m.rank = 3, m.shape[2] = 1;
    CALL(MODEL_GRAD());
    m.rank = 2;
    out.rank = 1, out.shape[0] = 1;
    CALL(MODEL_GRAD());
    out.rank = 0;
    m.rank = -1;
    CALL(MODEL_GRAD());
    m.rank = 9;
    CALL(MODEL_GRAD());
    m.rank = 2;
  } else if (!strcmp(mode, "literal_dim")) {
    m.shape[0] = 3, m.shape[1] = 2;
    CALL(MODEL_GRAD());
    m.shape[0] = 2, m.shape[1] = 3;
    d_m.shape[1] = 1;
    CALL(MODEL_GRAD());
    d_m.shape[1] = 3;
    m.shape[1] = -3;
    CALL(MODEL_GRAD());
    m.shape[1] = 3;
  } else if (!strcmp(mode, "symbolic")) {
    x.shape[0] = 5;
    CALL(MODEL_GRAD());
    x.shape[0] = 4;
    d_w.shape[1] = 2;
    CALL(MODEL_GRAD());
    d_w.shape[0] = 1, d_w.shape[1] = 4;
    CALL(MODEL_GRAD());
    d_w.shape[0] = 3;
    seed.shape[1] = 4;
    CALL(DENSE_VJP());
    seed.shape[0] = 1, seed.shape[1] = 5;
    CALL(DENSE_VJP());
    seed.shape[0] = 2;
    lw.shape[0] = 2;
    CALL(DENSE_VJP());
    lw.shape[0] = 4;
  } else if (!strcmp(mode, "overlap_input")) {
    void *keep = d_m.data;
    d_m.data = m.data;
    CALL(MODEL_GRAD());
    d_m.data = keep;
    keep = d_s.data;
    d_s.data = x.data; /* a const input */
    CALL(MODEL_GRAD());
    d_s.data = keep;
    keep = ld_x.data;
    ld_x.data = seed.data;
    CALL(DENSE_VJP());
    ld_x.data = keep;
  } else if (!strcmp(mode, "overlap_output")) {
    void *keep = d_s.data;
    d_s.data = out.data;
    CALL(MODEL_GRAD());
    d_s.data = keep;
    keep = ld_x.data;
    ld_x.data = lout.data; /* d_x (8 floats) inside out (10 floats) */
    CALL(DENSE_VJP());
    ld_x.data = keep;
  } else if (!strcmp(mode, "overlap_partial")) {
    /* d_w starts at the last element of w; out is the last float of d_m. */
    float *both = buffer(24 * 4, true);
    memcpy(both, w.data, 12 * 4);
    w.data = both;
    d_w.data = both + 11;
    CALL(MODEL_GRAD());
    void *keep = out.data;
    out.data = (float *)d_m.data + 5;
    CALL(MODEL_GRAD());
    out.data = keep;
    d_w.data = both + 1;
    CALL(MODEL_GRAD());
    d_w.data = both + 12; /* right after w: no overlap */
    CALL(MODEL_GRAD());
  } else if (!strcmp(mode, "overlap_allowed")) {
    /* Inputs may share memory; outputs may sit right next to inputs. */
    float *both = buffer((12 + 12) * 4, true);
    memcpy(both, w.data, 12 * 4);
    w.data = both;
    d_w.data = both + 12;
    memcpy(x.data, w.data, 4 * 4);
    CALL(MODEL_GRAD());
    double want = model_ref(3);
    x.data = w.data; /* x aliases the first row of w: the same values */
    CALL(MODEL_GRAD());
    CHECK_CLOSE(sgt_get(&out, 0), want, 1e-6);
    /* x of dense and seed: same shape, the same buffer. */
    seed.shape[1] = lw.shape[1] = lout.shape[1] = ld_w.shape[1] = 4;
    memcpy(seed.data, lx.data, 8 * 4);
    CALL(DENSE_VJP());
    float ref[8 + 8 + 16];
    memcpy(ref, lout.data, 8 * 4), memcpy(ref + 8, ld_x.data, 8 * 4), memcpy(ref + 16, ld_w.data, 16 * 4);
    seed.data = lx.data;
    CALL(DENSE_VJP());
    CHECK(memcmp(ref, lout.data, 8 * 4) == 0 && memcmp(ref + 8, ld_x.data, 8 * 4) == 0 &&
          memcmp(ref + 16, ld_w.data, 16 * 4) == 0);
  } else {
    printf("unknown mode '%s'\n", mode);
    return 2;
  }
  for (int i = 0; i < nreg; i++)
    free(reg[i].p), free(reg[i].copy);
  return sgt_finish();
}
