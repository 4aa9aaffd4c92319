/* The body of lstm_hand.c, included once per floating-point type (T, with
 * SUF naming the functions and EXP, LOG, TANH the math of that type). */

static T SUF(sigm)(T x) { return x >= 0 ? 1 / (1 + EXP(-x)) : EXP(x) / (1 + EXP(x)); }

/* One layer's step: from (h, c) and input x to (h', c'), keeping what the
 * backward step needs in s: x, h, c, f, i, o, g, c', tanh(c'). */
static void SUF(cell)(int64_t b, const T *w, const T *bias, const T *x, const T *h, const T *c,
                      T *hn, T *cn, T *s) {
  for (int64_t j = 0; j < b; j++) {
    T f = SUF(sigm)(x[j] * w[j] + bias[j]);
    T i = SUF(sigm)(h[j] * w[b + j] + bias[b + j]);
    T o = SUF(sigm)(x[j] * w[2 * b + j] + bias[2 * b + j]);
    T g = TANH(h[j] * w[3 * b + j] + bias[3 * b + j]);
    T cc = c[j] * f + i * g, tc = TANH(cc);
    s[j] = x[j], s[b + j] = h[j], s[2 * b + j] = c[j];
    s[3 * b + j] = f, s[4 * b + j] = i, s[5 * b + j] = o, s[6 * b + j] = g;
    s[7 * b + j] = cc, s[8 * b + j] = tc;
    cn[j] = cc;
    hn[j] = o * tc;
  }
}

/* Its backward step: dh, dc (in: the adjoints of h', c'; out: of h, c),
 * dx (out), the weights' adjoints accumulated. */
static void SUF(cell_back)(int64_t b, const T *w, const T *s, T *dh, T *dc, T *dx, T *dw,
                           T *dbias) {
  for (int64_t j = 0; j < b; j++) {
    T x = s[j], h = s[b + j], c = s[2 * b + j], f = s[3 * b + j], i = s[4 * b + j];
    T o = s[5 * b + j], g = s[6 * b + j], tc = s[8 * b + j];
    T dcc = dc[j] + dh[j] * o * (1 - tc * tc);
    T df = dcc * c * f * (1 - f), di = dcc * g * i * (1 - i);
    T dox = dh[j] * tc * o * (1 - o), dg = dcc * i * (1 - g * g);
    dw[j] += df * x, dbias[j] += df;
    dw[b + j] += di * h, dbias[b + j] += di;
    dw[2 * b + j] += dox * x, dbias[2 * b + j] += dox;
    dw[3 * b + j] += dg * h, dbias[3 * b + j] += dg;
    dx[j] = df * w[j] + dox * w[2 * b + j];
    dh[j] = di * w[b + j] + dg * w[3 * b + j];
    dc[j] = dcc * f;
  }
}

/* The loss, and with d_main non-NULL its gradient (d_main [4,4,b], d_extra
 * [3,b]). Returns 0, or -1 if scratch memory could not be had. */
int SUF(lstm_hand)(int64_t b, int64_t c, const T *mainp, const T *extra, const T *state,
                   const T *seq, T *loss, T *d_main, T *d_extra) {
  int64_t steps = c - 1, per = 2 * 9 * b + 2 * b; /* two layers, probabilities, ypred */
  static _Thread_local T *scratch;
  static _Thread_local int64_t have;
  int64_t need = (steps > 0 ? steps : 0) * per + 8 * b;
  if (need > have) {
    T *p = realloc(scratch, (size_t)need * sizeof(T));
    if (!p)
      return -1;
    scratch = p, have = need;
  }
  T *st = scratch, *hc = scratch + (steps > 0 ? steps : 0) * per; /* h0 c0 h1 c1, then 4 temps */
  memcpy(hc, state, (size_t)(4 * b) * sizeof(T));
  T *x = hc + 4 * b, *tmp = x + b;
  T total = 0;
  for (int64_t t = 0; t < steps; t++) {
    T *s = st + t * per;
    for (int64_t j = 0; j < b; j++)
      x[j] = seq[t * b + j] * extra[j];
    SUF(cell)(b, mainp, mainp + 4 * b, x, hc, hc + b, hc, hc + b, s);
    SUF(cell)(b, mainp + 8 * b, mainp + 12 * b, hc, hc + 2 * b, hc + 3 * b, hc + 2 * b,
              hc + 3 * b, s + 9 * b);
    T *p = s + 18 * b, sum = 0;
    for (int64_t j = 0; j < b; j++) {
      T y = hc[2 * b + j] * extra[b + j] + extra[2 * b + j];
      p[j] = EXP(y);
      sum += p[j];
      tmp[j] = y;
    }
    T lse = LOG(sum + 2);
    for (int64_t j = 0; j < b; j++) {
      total += seq[(t + 1) * b + j] * (tmp[j] - lse);
      p[j] /= sum + 2; /* d lse / d y */
    }
  }
  *loss = -total / (T)(steps * b);
  if (!d_main)
    return 0;
  memset(d_main, 0, (size_t)(16 * b) * sizeof(T));
  memset(d_extra, 0, (size_t)(3 * b) * sizeof(T));
  T *dh0 = hc, *dc0 = hc + b, *dh1 = hc + 2 * b, *dc1 = hc + 3 * b, *dx = x;
  memset(hc, 0, (size_t)(4 * b) * sizeof(T));
  T scale = -1 / (T)(steps * b);
  for (int64_t t = steps - 1; t >= 0; t--) {
    T *s = st + t * per, *p = s + 18 * b, dsum = 0;
    for (int64_t j = 0; j < b; j++)
      dsum += scale * seq[(t + 1) * b + j];
    for (int64_t j = 0; j < b; j++) {
      T dy = scale * seq[(t + 1) * b + j] - dsum * p[j];
      T h1 = s[9 * b + 8 * b + j] * s[9 * b + 5 * b + j]; /* o * tanh(c') of layer 1 */
      d_extra[b + j] += dy * h1;
      d_extra[2 * b + j] += dy;
      dh1[j] += dy * extra[b + j];
    }
    SUF(cell_back)(b, mainp + 8 * b, s + 9 * b, dh1, dc1, dx, d_main + 8 * b, d_main + 12 * b);
    for (int64_t j = 0; j < b; j++)
      dh0[j] += dx[j];
    SUF(cell_back)(b, mainp, s, dh0, dc0, dx, d_main, d_main + 4 * b);
    for (int64_t j = 0; j < b; j++)
      d_extra[j] += dx[j] * seq[t * b + j];
  }
  return 0;
}
