/* Size expressions (spec section 5): `n - 1`, `k * d`, `2 * n + 1`.
 *
 * A size is a polynomial with integer coefficients in the symbolic sizes
 * the parameters bind. Each distinct polynomial that is not a literal or a
 * plain name is interned as a *derived* symbol of the module, named by its
 * canonical spelling (terms by decreasing degree, then by the names of
 * their variables; "d * k", "n - 1"), with its polynomial kept beside it.
 * So two sizes are equal exactly when their Dims are (`k * d` and `d * k`
 * are one symbol), and every rule that compares Dims (broadcasting,
 * matmul, reshape) compares polynomials without knowing it. The code
 * generator computes a derived size from its variables at entry and
 * rejects a negative one (SG_ERR_SHAPE). */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static int cmp_vars(const Module *m, const SizeTerm *a, const SizeTerm *b) {
  if (a->nvars != b->nvars)
    return b->nvars - a->nvars; /* higher degree first */
  for (int k = 0; k < a->nvars; k++) {
    int c = strcmp(m->syms[a->vars[k]], m->syms[b->vars[k]]);
    if (c)
      return c;
  }
  return 0;
}

/* Sort variables within terms by name, terms canonically, merge equal
 * terms, drop zero ones. */
static void canonical(const Module *m, SizePoly *p) {
  for (int t = 0; t < p->nterms; t++) {
    SizeTerm *x = &p->t[t];
    for (int i = 1; i < x->nvars; i++)
      for (int j = i; j > 0 && strcmp(m->syms[x->vars[j - 1]], m->syms[x->vars[j]]) > 0; j--) {
        int v = x->vars[j];
        x->vars[j] = x->vars[j - 1];
        x->vars[j - 1] = v;
      }
  }
  for (int i = 1; i < p->nterms; i++)
    for (int j = i; j > 0 && cmp_vars(m, &p->t[j - 1], &p->t[j]) > 0; j--) {
      SizeTerm v = p->t[j];
      p->t[j] = p->t[j - 1];
      p->t[j - 1] = v;
    }
  int n = 0;
  for (int i = 0; i < p->nterms; i++) {
    if (n > 0 && cmp_vars(m, &p->t[n - 1], &p->t[i]) == 0)
      p->t[n - 1].coef += p->t[i].coef;
    else
      p->t[n++] = p->t[i];
  }
  int k = 0;
  for (int i = 0; i < n; i++)
    if (p->t[i].coef != 0)
      p->t[k++] = p->t[i];
  p->nterms = k;
}

SizePoly ir_poly_const(int64_t c) {
  SizePoly p;
  memset(&p, 0, sizeof p);
  if (c != 0) {
    p.nterms = 1;
    p.t[0].coef = c;
  }
  return p;
}

SizePoly ir_poly_of(const Module *m, Dim d) {
  if (d.sym < 0)
    return ir_poly_const(d.size);
  if (m->sym_poly && m->sym_poly[d.sym])
    return *m->sym_poly[d.sym];
  SizePoly p = ir_poly_const(1);
  p.t[0].nvars = 1;
  p.t[0].vars[0] = d.sym;
  return p;
}

bool ir_poly_add(const Module *m, const SizePoly *a, const SizePoly *b, int sign, SizePoly *out) {
  SizePoly r = *a;
  for (int i = 0; i < b->nterms; i++) {
    if (r.nterms == IR_POLY_TERMS)
      return false;
    r.t[r.nterms] = b->t[i];
    if (__builtin_mul_overflow(r.t[r.nterms].coef, (int64_t)sign, &r.t[r.nterms].coef))
      return false;
    r.nterms++;
  }
  canonical(m, &r);
  *out = r;
  return true;
}

bool ir_poly_mul(const Module *m, const SizePoly *a, const SizePoly *b, SizePoly *out) {
  SizePoly r;
  memset(&r, 0, sizeof r);
  for (int i = 0; i < a->nterms; i++)
    for (int j = 0; j < b->nterms; j++) {
      const SizeTerm *x = &a->t[i], *y = &b->t[j];
      if (r.nterms == IR_POLY_TERMS || x->nvars + y->nvars > IR_POLY_DEGREE)
        return false;
      SizeTerm *z = &r.t[r.nterms++];
      if (__builtin_mul_overflow(x->coef, y->coef, &z->coef))
        return false;
      z->nvars = x->nvars + y->nvars;
      memcpy(z->vars, x->vars, sizeof(int) * (size_t)x->nvars);
      memcpy(z->vars + x->nvars, y->vars, sizeof(int) * (size_t)y->nvars);
    }
  canonical(m, &r);
  *out = r;
  return true;
}

bool ir_poly_eq(const SizePoly *a, const SizePoly *b) {
  if (a->nterms != b->nterms)
    return false;
  for (int i = 0; i < a->nterms; i++) {
    if (a->t[i].coef != b->t[i].coef || a->t[i].nvars != b->t[i].nvars)
      return false;
    for (int k = 0; k < a->t[i].nvars; k++)
      if (a->t[i].vars[k] != b->t[i].vars[k])
        return false;
  }
  return true;
}

/* "2 * n * k - n + 1" */
static char *spell(const Module *m, const SizePoly *p, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < p->nterms && n < len; i++) {
    const SizeTerm *t = &p->t[i];
    int64_t c = t->coef;
    if (i > 0)
      n += (size_t)snprintf(buf + n, len - n, c < 0 ? " - " : " + ");
    else if (c < 0)
      n += (size_t)snprintf(buf + n, len - n, "-");
    uint64_t mag = c < 0 ? 0 - (uint64_t)c : (uint64_t)c;
    const char *sep = "";
    if (mag != 1 || t->nvars == 0) {
      n += (size_t)snprintf(buf + n, len - n, "%llu", (unsigned long long)mag);
      sep = " * ";
    }
    for (int k = 0; k < t->nvars && n < len; k++, sep = " * ")
      n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, m->syms[t->vars[k]]);
  }
  return buf;
}

Dim ir_poly_dim(Module *m, const SizePoly *p) {
  if (p->nterms == 0)
    return ir_lit(0);
  if (p->nterms == 1 && p->t[0].nvars == 0)
    return ir_lit(p->t[0].coef);
  if (p->nterms == 1 && p->t[0].nvars == 1 && p->t[0].coef == 1)
    return (Dim){0, p->t[0].vars[0]};
  char buf[1024];
  int s = ir_sym(m, spell(m, p, buf, sizeof buf));
  if (!m->sym_poly[s]) {
    m->sym_poly[s] = ARENA_NEW(m->arena, SizePoly);
    *m->sym_poly[s] = *p;
  }
  return (Dim){0, s};
}

bool ir_sym_derived(const Module *m, int sym) { return m->sym_poly && m->sym_poly[sym]; }

bool ir_subst_dim(Module *m, Dim d, const Dim *map, Dim *out) {
  if (d.sym < 0) {
    *out = d;
    return true;
  }
  if (!ir_sym_derived(m, d.sym)) {
    *out = map[d.sym].sym == -2 ? d : map[d.sym];
    return true;
  }
  SizePoly p = *m->sym_poly[d.sym], r = ir_poly_const(0);
  for (int i = 0; i < p.nterms; i++) {
    SizePoly t = ir_poly_const(p.t[i].coef);
    for (int k = 0; k < p.t[i].nvars; k++) {
      int v = p.t[i].vars[k];
      SizePoly f = ir_poly_of(m, map[v].sym == -2 ? (Dim){0, v} : map[v]);
      if (!ir_poly_mul(m, &t, &f, &t))
        return false;
    }
    if (!ir_poly_add(m, &r, &t, 1, &r))
      return false;
  }
  *out = ir_poly_dim(m, &r);
  return true;
}
