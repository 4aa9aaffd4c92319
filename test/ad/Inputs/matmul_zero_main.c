/* Driver for matmul_zero_factor.test (Inputs/matmul_zero.sg), n = 2, m = 3,
 * in f32 (zf_*, zs_*) and f64 (f64_zf_*, f64_zs_*).
 * zf_*: c = 0, so w @ c = 0 and its adjoint is infinite: d_w must be
 * exactly 1 everywhere (the value is +inf).
 * zs_*: b = 1000, so exp(b) = inf, the product is not taken by select and
 * its adjoint is 0: the value and every gradient element must be exactly 0. */
#include "mz32.h"
#include "mz64.h"
#include "sgtest.h"

#define UNPACK(...) __VA_ARGS__
#define SHAPE(r, s) sgt_tensor(dt, r, (int64_t[]){UNPACK s})

static void report(const char *name, int dt, bool ok, const char *what) {
  printf("%s %s %s: %s\n", ok ? "ok:" : "FAIL", name, dt == SG_F64 ? "f64" : "f32", what);
  sgt_failures += !ok;
}

/* every element of t equals v */
static bool all_eq(const sg_tensor *t, double v) {
  for (int64_t i = 0; i < sgt_numel(t); i++)
    if (!(sgt_get(t, i) == v))
      return false;
  return true;
}

#define ZF_ONE(fn, name, dt, r0, s0, r1, s1, wfirst)                                       \
  do {                                                                                     \
    sg_tensor p0 = SHAPE(r0, s0), p1 = SHAPE(r1, s1), out = sgt_scalar(dt);                \
    sg_tensor *w = wfirst ? &p0 : &p1;                                                     \
    sgt_fill(w, 0.5, 2);                                                                   \
    sg_tensor d = sgt_tensor(dt, w->rank, w->shape);                                       \
    CHECK_EQ_INT(fn(&p0, &p1, &out, &d), SG_OK);                                           \
    report(name, dt, all_eq(&d, 1) && isinf(sgt_get(&out, 0)), "d_w = 1, value +inf");   \
    free(p0.data), free(p1.data), free(out.data), free(d.data);                            \
  } while (0)
#define ZF(name, r0, s0, r1, s1, wfirst)                                                   \
  do {                                                                                     \
    int dt = SG_F32;                                                                       \
    ZF_ONE(name##_grad, #name, dt, r0, s0, r1, s1, wfirst);                                \
    dt = SG_F64;                                                                           \
    ZF_ONE(f64_##name##_grad, #name, dt, r0, s0, r1, s1, wfirst);                          \
  } while (0)

#define ZS_ONE(fn, name, dt, ra, sa, rb, sb)                                               \
  do {                                                                                     \
    sg_tensor a = SHAPE(ra, sa), b = SHAPE(rb, sb), out = sgt_scalar(dt);                  \
    sgt_fill(&a, 0.5, 2);                                                                  \
    for (int64_t i = 0; i < sgt_numel(&b); i++)                                            \
      sgt_set(&b, i, 1000);                                                                \
    sg_tensor da = sgt_tensor(dt, a.rank, a.shape), db = sgt_tensor(dt, b.rank, b.shape);  \
    sgt_set(&da, 0, -7), sgt_set(&db, 0, -7);                                              \
    CHECK_EQ_INT(fn(&a, &b, &out, &da, &db), SG_OK);                                       \
    report(name, dt, all_eq(&da, 0) && all_eq(&db, 0) && sgt_get(&out, 0) == 0,          \
           "d_a = d_b = 0, value 0");                                                      \
    free(a.data), free(b.data), free(out.data), free(da.data), free(db.data);              \
  } while (0)
#define ZS(name, ra, sa, rb, sb)                                                           \
  do {                                                                                     \
    int dt = SG_F32;                                                                       \
    ZS_ONE(name##_grad, #name, dt, ra, sa, rb, sb);                                        \
    dt = SG_F64;                                                                           \
    ZS_ONE(f64_##name##_grad, #name, dt, ra, sa, rb, sb);                                  \
  } while (0)

int main(void) {
  ZF(zf_vv, 1, (2), 1, (2), 1);
  ZF(zf_mv, 2, (3, 2), 1, (2), 1);
  ZF(zf_vm, 1, (2), 2, (2, 3), 1);
  ZF(zf_mm, 2, (3, 2), 2, (2, 3), 1);
  ZF(zf_vv_r, 1, (2), 1, (2), 0);
  ZF(zf_mv_r, 2, (3, 2), 1, (2), 0);
  ZF(zf_vm_r, 1, (2), 2, (2, 3), 0);
  ZF(zf_mm_r, 2, (3, 2), 2, (2, 3), 0);
  ZS(zs_vv, 1, (2), 1, (2));
  ZS(zs_mv, 1, (2), 2, (3, 2));
  ZS(zs_vm, 2, (2, 3), 1, (2));
  ZS(zs_mm, 2, (2, 3), 2, (3, 2));
  ZS(zs_vv_r, 1, (2), 1, (2));
  ZS(zs_mv_r, 2, (3, 2), 1, (2));
  ZS(zs_vm_r, 1, (2), 2, (2, 3));
  ZS(zs_mm_r, 2, (3, 2), 2, (2, 3));
  ZF(zf_bmm, 3, (2, 3, 2), 2, (2, 3), 1);
  ZF(zf_bmm_r, 3, (2, 3, 2), 2, (2, 3), 0);
  ZS(zs_bmm, 2, (2, 3), 3, (2, 3, 2));
  ZS(zs_bmm_r, 3, (2, 3, 2), 2, (2, 3));
  return sgt_finish();
}
