/* sgcheck: one export of a .sg file checked end to end, for regression
 * tests of programs that need no driver of their own.
 *
 *   sgcheck FILE.sg FUNC [NAME=V,V,...]... [--want NAME=V,V,...]...
 *           [--error] [--ad-memory=SIZE] [--levels=A|B|...]
 *
 * NAME=... binds a size (`n=5`) or gives a parameter's elements (`idx=0,2,-1`);
 * other parameters get deterministic random values in [-1, 1] (i32: in
 * [0, 3)). The file is compiled with sgc_compile (the stages and flags of
 * the sgc command) at each level, by default "-O2", "-O0" and "-O2
 * --ad-memory=SIZE" (SIZE 2K unless given), and FUNC and its gradient
 * (FUNC_grad or FUNC_vjp, with a random seed per result) are called:
 *   - every call returns SG_OK; a second call gives the same bits;
 *   - FUNC's results equal the gradient function's value, and every level
 *     agrees with the first to 1e-10 relative, the --ad-memory level bit
 *     for bit (spec section 7);
 *   - where every float parameter is f64, each gradient matches central
 *     differences of sum(seed * FUNC) to 1e-7 relative (max-norm);
 *   - --want: that result (out, out1, d_x, ...) equals the values given,
 *     worked out by hand, to 1e-9.
 * With --error every call must instead fail with SG_ERR_INDEX and write
 * nothing; the message of the first is printed ("error: ...").
 * Each check prints an "ok: ..." line or a "FAIL ..." line with both
 * values; the last line is "all checks passed" or the number failed. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sgc.h>

#include "sgtest.h"

enum { MAXP = 24, MAXSIZES = 32, MAXLEVELS = 4 };

typedef struct Entry {
  char name[64];
  int dtype;
  bool is_const;
  int rank;
  char dims[SG_MAX_RANK][64];
} Entry;

typedef struct Sig {
  char name[128];
  int nparams, nresults;
  Entry params[MAXP], results[MAXP];
} Sig;

typedef struct Binding {
  const char *name;
  const char *values;
} Binding;

static Binding binds[MAXP * 2], wants[MAXP];
static int nbinds, nwants;
static char size_names[MAXSIZES][64];
static int64_t size_values[MAXSIZES];
static int nsizes;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (fread(s, 1, (size_t)n, f) != (size_t)n)
    exit(2);
  s[n] = 0;
  fclose(f);
  return s;
}

/* ---- the header's comments: "/" "* f_grad(x: f64[n], ...)\n -> out: f64, d_x: f64[n] *" "/" ---- */

static const char *parse_entry(const char *p, Entry *e) {
  memset(e, 0, sizeof *e);
  while (*p == ' ' || *p == ',')
    p++;
  int k = 0;
  while (isalnum((unsigned char)*p) || *p == '_')
    e->name[k++] = *p++;
  p += 2; /* ": " */
  if (strncmp(p, "const ", 6) == 0) {
    e->is_const = true;
    p += 6;
  }
  e->dtype = strncmp(p, "f32", 3) == 0 ? SG_F32 : strncmp(p, "f64", 3) == 0 ? SG_F64 : SG_I32;
  p += 3;
  if (*p == '[') {
    p++;
    while (*p != ']') {
      int depth = 0, j = 0;
      while (*p == ' ')
        p++;
      while (*p && !(depth == 0 && (*p == ',' || *p == ']'))) {
        depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        e->dims[e->rank][j++] = *p++;
      }
      e->rank++;
      if (*p == ',')
        p++;
    }
    p++;
  }
  return p;
}

static bool find_sig(const char *header, const char *name, Sig *s) {
  char want[160];
  snprintf(want, sizeof want, "/* %s(", name);
  const char *p = strstr(header, want);
  if (!p)
    return false;
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  p += strlen(want);
  while (*p != ')')
    p = parse_entry(p, &s->params[s->nparams++]);
  p = strstr(p, "-> ") + 3;
  while (*p != ' ' || p[1] != '*')
    p = parse_entry(p, &s->results[s->nresults++]);
  return true;
}

/* ---- sizes: names bound on the command line, expressions of + - * ( ) ---- */

static int64_t size_of_name(const char *n, int len) {
  for (int k = 0; k < nsizes; k++)
    if ((int)strlen(size_names[k]) == len && strncmp(size_names[k], n, (size_t)len) == 0)
      return size_values[k];
  printf("FAIL: size '%.*s' is not bound (give %.*s=N)\n", len, n, len, n);
  exit(1);
}

static int64_t expr_sum(const char **p);
static int64_t expr_atom(const char **p) {
  while (**p == ' ')
    (*p)++;
  if (**p == '(') {
    (*p)++;
    int64_t v = expr_sum(p);
    (*p)++;
    return v;
  }
  if (isdigit((unsigned char)**p))
    return strtoll(*p, (char **)p, 10);
  const char *s = *p;
  while (isalnum((unsigned char)**p) || **p == '_')
    (*p)++;
  return size_of_name(s, (int)(*p - s));
}
static int64_t expr_prod(const char **p) {
  int64_t v = expr_atom(p);
  for (;;) {
    while (**p == ' ')
      (*p)++;
    if (**p != '*')
      return v;
    (*p)++;
    v *= expr_atom(p);
  }
}
static int64_t expr_sum(const char **p) {
  int64_t v = expr_prod(p);
  for (;;) {
    while (**p == ' ')
      (*p)++;
    if (**p != '+' && **p != '-')
      return v;
    int sign = **p == '-' ? -1 : 1;
    (*p)++;
    v += sign * expr_prod(p);
  }
}
static int64_t dim_value(const char *d) { return expr_sum(&d); }

static const char *bound(Binding *list, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (strcmp(list[k].name, name) == 0)
      return list[k].values;
  return NULL;
}

static sg_tensor make(const Entry *e) {
  int64_t shape[SG_MAX_RANK];
  for (int k = 0; k < e->rank; k++)
    shape[k] = dim_value(e->dims[k]);
  return sgt_tensor(e->dtype, e->rank, shape);
}

static void fill_values(sg_tensor *t, const char *values, const char *name) {
  const char *p = values;
  for (int64_t i = 0; i < sgt_numel(t); i++) {
    char *end;
    double v = strtod(p, &end);
    if (end == p) {
      printf("FAIL: %s needs %lld values, got %lld\n", name, (long long)sgt_numel(t), (long long)i);
      exit(1);
    }
    sgt_set(t, i, v);
    p = *end == ',' ? end + 1 : end;
  }
}

/* ---- calling an entry point of any arity ---- */

#define A(k) t[k]
static int call(void *fp, int n, sg_tensor **t) {
  typedef sg_tensor *P;
  switch (n) {
  case 1: return ((int (*)(P))fp)(A(0));
  case 2: return ((int (*)(P, P))fp)(A(0), A(1));
  case 3: return ((int (*)(P, P, P))fp)(A(0), A(1), A(2));
  case 4: return ((int (*)(P, P, P, P))fp)(A(0), A(1), A(2), A(3));
  case 5: return ((int (*)(P, P, P, P, P))fp)(A(0), A(1), A(2), A(3), A(4));
  case 6: return ((int (*)(P, P, P, P, P, P))fp)(A(0), A(1), A(2), A(3), A(4), A(5));
  case 7: return ((int (*)(P, P, P, P, P, P, P))fp)(A(0), A(1), A(2), A(3), A(4), A(5), A(6));
  case 8:
    return ((int (*)(P, P, P, P, P, P, P, P))fp)(A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7));
  case 9:
    return ((int (*)(P, P, P, P, P, P, P, P, P))fp)(A(0), A(1), A(2), A(3), A(4), A(5), A(6),
                                                     A(7), A(8));
  case 10:
    return ((int (*)(P, P, P, P, P, P, P, P, P, P))fp)(A(0), A(1), A(2), A(3), A(4), A(5), A(6),
                                                        A(7), A(8), A(9));
  case 11:
    return ((int (*)(P, P, P, P, P, P, P, P, P, P, P))fp)(A(0), A(1), A(2), A(3), A(4), A(5),
                                                           A(6), A(7), A(8), A(9), A(10));
  case 12:
    return ((int (*)(P, P, P, P, P, P, P, P, P, P, P, P))fp)(A(0), A(1), A(2), A(3), A(4), A(5),
                                                              A(6), A(7), A(8), A(9), A(10),
                                                              A(11));
  default: printf("FAIL: %d arguments are more than sgcheck calls\n", n); exit(1);
  }
}
#undef A

/* One compiled level: the export and its gradient, their outputs. */
typedef struct Level {
  const char *options;
  sgc_module *m;
  void *f, *grad;
  sg_tensor fout[MAXP], gout[MAXP];
} Level;

static Sig fs, gs;
static sg_tensor params[MAXP], seeds[MAXP];
static bool has_grad, all_f64 = true;

static int run_f(Level *L) {
  sg_tensor *t[MAXP * 2];
  int n = 0;
  for (int k = 0; k < fs.nparams; k++)
    t[n++] = &params[k];
  for (int k = 0; k < fs.nresults; k++)
    t[n++] = &L->fout[k];
  return call(L->f, n, t);
}

/* The gradient's parameters are f's, then one seed per float result
 * (vjp only); its results f's, then the gradients. */
static int run_grad(Level *L) {
  sg_tensor *t[MAXP * 3];
  int n = 0;
  for (int k = 0; k < gs.nparams; k++)
    t[n++] = k < fs.nparams ? &params[k] : &seeds[k - fs.nparams];
  for (int k = 0; k < gs.nresults; k++)
    t[n++] = &L->gout[k];
  return call(L->grad, n, t);
}

static size_t bytes_of(const sg_tensor *t) {
  return (size_t)sgt_numel(t) * (t->dtype == SG_F64 ? 8 : 4);
}

static bool same_bits(const sg_tensor *a, const sg_tensor *b) {
  return memcmp(a->data, b->data, bytes_of(a)) == 0;
}

/* a and b agree to tol relative (max-norm, against max(1, |b|)). */
static void check_close(const char *what, const sg_tensor *a, const sg_tensor *b, double tol) {
  double err = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < sgt_numel(a); i++) {
    double x = sgt_get(a, i), y = sgt_get(b, i);
    double e = (isnan(x) && isnan(y)) || x == y ? 0 : fabs(x - y) / fmax(1.0, fabs(y));
    if (!(e <= err))
      err = e, worst = i;
  }
  if (!(err <= tol)) {
    printf("FAIL: %s: element %lld is %.17g, expected %.17g\n", what, (long long)worst,
           sgt_get(a, worst), sgt_get(b, worst));
    sgt_failures++;
  } else {
    printf("ok: %s\n", what);
  }
}

static Level *fd_level;
static double loss(void) { /* sum(seed * f) of the first level, in double */
  if (run_f(fd_level) != SG_OK)
    return NAN;
  double s = 0;
  for (int r = 0, j = fs.nparams; r < fs.nresults; r++) {
    if (fs.results[r].dtype == SG_I32)
      continue;
    const sg_tensor *seed = gs.nparams > fs.nparams ? &seeds[j++ - fs.nparams] : NULL;
    for (int64_t i = 0; i < sgt_numel(&fd_level->fout[r]); i++)
      s += (seed ? sgt_get(seed, i) : 1.0) * sgt_get(&fd_level->fout[r], i);
  }
  return s;
}

static void fill_sentinel(sg_tensor *t) {
  for (int64_t i = 0; i < sgt_numel(t); i++)
    sgt_set(t, i, 12345);
}

static bool untouched(const sg_tensor *t) {
  for (int64_t i = 0; i < sgt_numel(t); i++)
    if (sgt_get(t, i) != 12345)
      return false;
  return true;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: sgcheck FILE.sg FUNC [NAME=V,...] [--want NAME=V,...] [--error] "
                    "[--ad-memory=SIZE] [--levels=A|B]\n");
    return 2;
  }
  const char *file = argv[1], *func = argv[2], *admem = "2K";
  char *levels_arg = NULL;
  bool expect_error = false;
  for (int k = 3; k < argc; k++) {
    char *a = argv[k];
    if (strcmp(a, "--error") == 0) {
      expect_error = true;
    } else if (strncmp(a, "--ad-memory=", 12) == 0) {
      admem = a + 12;
    } else if (strncmp(a, "--levels=", 9) == 0) {
      levels_arg = a + 9;
    } else if (strcmp(a, "--want") == 0 && k + 1 < argc) {
      char *eq = strchr(argv[++k], '=');
      *eq = 0;
      wants[nwants++] = (Binding){argv[k], eq + 1};
    } else if (strchr(a, '=')) {
      char *eq = strchr(a, '=');
      *eq = 0;
      binds[nbinds++] = (Binding){a, eq + 1};
      if (!strchr(eq + 1, ',') && isdigit((unsigned char)eq[1])) { /* maybe a size */
        snprintf(size_names[nsizes], sizeof size_names[0], "%s", a);
        size_values[nsizes++] = atoll(eq + 1);
      }
    } else {
      fprintf(stderr, "sgcheck: unknown argument %s\n", a);
      return 2;
    }
  }
  Level levels[MAXLEVELS];
  memset(levels, 0, sizeof levels);
  int nlevels = 0;
  char admem_opt[64];
  snprintf(admem_opt, sizeof admem_opt, "-O2 --ad-memory=%s", admem);
  if (levels_arg) {
    for (char *s = strtok(levels_arg, "|"); s && nlevels < MAXLEVELS; s = strtok(NULL, "|"))
      levels[nlevels++].options = s;
  } else {
    levels[nlevels++].options = "-O2";
    levels[nlevels++].options = "-O0";
    levels[nlevels++].options = admem_opt;
  }
  char *src = slurp(file);
  for (int l = 0; l < nlevels; l++) {
    char *errors = NULL;
    levels[l].m = sgc_compile(src, file, levels[l].options, &errors);
    if (!levels[l].m) {
      printf("FAIL: sgc_compile %s:\n%s", levels[l].options, errors);
      free(errors);
      return 1;
    }
  }
  free(src);
  const char *header = sgc_header(levels[0].m);
  char gname[160];
  if (!find_sig(header, func, &fs)) {
    printf("FAIL: no export %s\n", func);
    return 1;
  }
  snprintf(gname, sizeof gname, "%s_grad", func);
  has_grad = find_sig(header, gname, &gs);
  if (!has_grad) {
    snprintf(gname, sizeof gname, "%s_vjp", func);
    has_grad = find_sig(header, gname, &gs);
  }
  for (int l = 0; l < nlevels; l++) {
    levels[l].f = sgc_lookup(levels[l].m, func);
    levels[l].grad = has_grad ? sgc_lookup(levels[l].m, gname) : NULL;
  }
  /* a vector given by its values binds its size (idx=0,2,2 binds m = 3) */
  for (int k = 0; k < fs.nparams; k++) {
    Entry *e = &fs.params[k];
    const char *v = bound(binds, nbinds, e->name);
    if (v && e->rank == 1 && isalpha((unsigned char)e->dims[0][0]) &&
        !bound(binds, nbinds, e->dims[0]) && nsizes < MAXSIZES) {
      int64_t count = 1;
      for (const char *c = v; *c; c++)
        count += *c == ',';
      snprintf(size_names[nsizes], sizeof size_names[0], "%s", e->dims[0]);
      size_values[nsizes++] = count;
    }
  }
  for (int k = 0; k < fs.nparams; k++) {
    Entry *e = &fs.params[k];
    params[k] = make(e);
    const char *v = bound(binds, nbinds, e->name);
    if (v)
      fill_values(&params[k], v, e->name);
    else if (e->dtype == SG_I32)
      for (int64_t i = 0; i < sgt_numel(&params[k]); i++)
        sgt_set(&params[k], i, (double)(int)sgt_uniform(0, 3));
    else
      sgt_fill(&params[k], -1, 1);
    if (e->dtype == SG_F32)
      all_f64 = false;
  }
  for (int k = fs.nparams; k < gs.nparams; k++) {
    seeds[k - fs.nparams] = make(&gs.params[k]);
    sgt_fill(&seeds[k - fs.nparams], -1, 1);
  }
  for (int l = 0; l < nlevels; l++) {
    for (int r = 0; r < fs.nresults; r++)
      levels[l].fout[r] = make(&fs.results[r]);
    for (int r = 0; r < gs.nresults; r++)
      levels[l].gout[r] = make(&gs.results[r]);
  }

  if (expect_error) {
    for (int l = 0; l < nlevels; l++) {
      Level *L = &levels[l];
      for (int which = 0; which < 1 + has_grad; which++) {
        Sig *s = which ? &gs : &fs;
        sg_tensor *outs = which ? L->gout : L->fout;
        for (int r = 0; r < s->nresults; r++)
          fill_sentinel(&outs[r]);
        int rc = which ? run_grad(L) : run_f(L);
        bool clean = true;
        for (int r = 0; r < s->nresults; r++)
          clean &= untouched(&outs[r]);
        if (rc != SG_ERR_INDEX || !clean) {
          printf("FAIL: %s %s returned %d (expected SG_ERR_INDEX = %d)%s\n", s->name, L->options,
                 rc, SG_ERR_INDEX, clean ? "" : " and wrote its outputs");
          sgt_failures++;
        } else {
          if (l == 0 && which == 0)
            printf("error: %s\n", sg_last_error());
          printf("ok: %s %s fails with SG_ERR_INDEX, writing nothing\n", s->name, L->options);
        }
      }
    }
    goto done;
  }

  for (int l = 0; l < nlevels; l++) {
    Level *L = &levels[l];
    char what[512];
    int rc = run_f(L);
    if (rc != SG_OK) {
      printf("FAIL: %s %s returned %d: %s\n", func, L->options, rc, sg_last_error());
      return 1;
    }
    if (has_grad && (rc = run_grad(L)) != SG_OK) {
      printf("FAIL: %s %s returned %d: %s\n", gname, L->options, rc, sg_last_error());
      return 1;
    }
    /* a repeated call: the same bits */
    sg_tensor again[MAXP];
    bool same = true;
    for (int r = 0; r < gs.nresults; r++) {
      again[r] = make(&gs.results[r]);
      memcpy(again[r].data, L->gout[r].data, bytes_of(&again[r]));
    }
    if (has_grad && run_grad(L) == SG_OK)
      for (int r = 0; r < gs.nresults; r++)
        same &= same_bits(&again[r], &L->gout[r]);
    for (int r = 0; r < gs.nresults; r++)
      free(again[r].data);
    snprintf(what, sizeof what, "%s %s: a second call gives the same bits", gname, L->options);
    if (has_grad) {
      if (same)
        printf("ok: %s\n", what);
      else
        printf("FAIL: %s\n", what), sgt_failures++;
    }
    for (int r = 0; r < fs.nresults && has_grad; r++) {
      snprintf(what, sizeof what, "%s %s: %s equals %s's", gname, L->options, gs.results[r].name,
               func);
      check_close(what, &L->gout[r], &L->fout[r], 1e-12);
    }
    if (l == 0)
      continue;
    bool bitwise = strstr(L->options, "--ad-memory") != NULL;
    for (int r = 0; r < fs.nresults; r++) {
      snprintf(what, sizeof what, "%s: %s %s %s -O2's", func, fs.results[r].name,
               bitwise ? "has the bits of" : "agrees with", L->options);
      if (bitwise && !same_bits(&L->fout[r], &levels[0].fout[r]))
        printf("FAIL: %s\n", what), sgt_failures++;
      else
        check_close(what, &L->fout[r], &levels[0].fout[r], 1e-10);
    }
    for (int r = 0; r < gs.nresults && has_grad; r++) {
      snprintf(what, sizeof what, "%s: %s at %s %s -O2's", gname, gs.results[r].name, L->options,
               bitwise ? "has the bits of" : "agrees with");
      if (bitwise && !same_bits(&L->gout[r], &levels[0].gout[r]))
        printf("FAIL: %s\n", what), sgt_failures++;
      else
        check_close(what, &L->gout[r], &levels[0].gout[r], 1e-10);
    }
  }
  /* central differences of sum(seed * f), f64 programs only */
  fd_level = &levels[0];
  for (int r = fs.nresults; r < gs.nresults && has_grad && all_f64; r++) {
    const char *pname = gs.results[r].name + 2; /* d_x */
    int p = 0;
    while (p < fs.nparams && strcmp(fs.params[p].name, pname) != 0)
      p++;
    double *fd = calloc((size_t)sgt_numel(&params[p]) + 1, sizeof(double));
    sgt_fd(loss, &params[p], fd);
    char what[320];
    snprintf(what, sizeof what, "%s %s", gname, gs.results[r].name);
    sgt_check_grad(&levels[0].gout[r], fd, 1e-7, what, file, 0);
    free(fd);
  }
  for (int w = 0; w < nwants; w++) {
    const sg_tensor *got = NULL;
    for (int r = 0; r < gs.nresults && has_grad; r++)
      if (strcmp(gs.results[r].name, wants[w].name) == 0)
        got = &levels[0].gout[r];
    for (int r = 0; r < fs.nresults && !got; r++)
      if (strcmp(fs.results[r].name, wants[w].name) == 0)
        got = &levels[0].fout[r];
    if (!got) {
      printf("FAIL: no result %s\n", wants[w].name);
      sgt_failures++;
      continue;
    }
    sg_tensor want = *got;
    want.data = calloc((size_t)sgt_numel(got) + 1, 8);
    fill_values(&want, wants[w].values, wants[w].name);
    char what[320];
    snprintf(what, sizeof what, "%s equals the values worked out by hand", wants[w].name);
    check_close(what, got, &want, 1e-9);
    free(want.data);
  }
done:
  for (int l = 0; l < nlevels; l++) {
    for (int r = 0; r < fs.nresults; r++)
      free(levels[l].fout[r].data);
    for (int r = 0; r < gs.nresults; r++)
      free(levels[l].gout[r].data);
    sgc_free(levels[l].m);
  }
  for (int k = 0; k < fs.nparams; k++)
    free(params[k].data);
  for (int k = fs.nparams; k < gs.nparams; k++)
    free(seeds[k - fs.nparams].data);
  return sgt_finish();
}
