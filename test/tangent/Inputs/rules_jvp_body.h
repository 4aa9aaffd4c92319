/* The checks of rules_jvp_main.c for one dtype: DT is SG_F32 or SG_F64,
 * F(name) the export of test/ops/Inputs/rules.sg in that dtype, RULES the
 * function to define. Each derivative is the tangent along a basis vector
 * (a column of the Jacobian, one f_jvp call each), or along a chosen t,
 * and must equal exactly what the reverse-mode checks of rules_body.h
 * demand of the gradient: section 7's rules in the forward direction. */

/* d[i] = the tangent of the scalar f(x) along e_i */
static void RULES(jrow1)(int (*f)(const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *),
                         const sg_tensor *x, sg_tensor *d) {
  sg_tensor out = SCALAR(DT, 0), tout = SCALAR(DT, 0), t = sgo_like(DT, x);
  for (int64_t i = 0; i < sgt_numel(x); i++) {
    for (int64_t j = 0; j < sgt_numel(x); j++)
      sgt_set(&t, j, i == j);
    CHECK_EQ_INT(f(x, &t, &out, &tout), SG_OK);
    sgt_set(d, i, sgt_get(&tout, 0));
  }
}

/* dx[i], dy[i]: the tangents of the scalar f(x, y) along e_i in x, in y */
static void RULES(jrow2)(int (*f)(const sg_tensor *, const sg_tensor *, const sg_tensor *,
                                  const sg_tensor *, sg_tensor *, sg_tensor *),
                         const sg_tensor *x, const sg_tensor *y, sg_tensor *dx, sg_tensor *dy) {
  sg_tensor out = SCALAR(DT, 0), tout = SCALAR(DT, 0), tx = sgo_like(DT, x), ty = sgo_like(DT, y);
  for (int side = 0; side < 2; side++)
    for (int64_t i = 0; i < sgt_numel(x); i++) {
      for (int64_t j = 0; j < sgt_numel(x); j++) {
        sgt_set(&tx, j, side == 0 && i == j);
        sgt_set(&ty, j, side == 1 && i == j);
      }
      CHECK_EQ_INT(f(x, y, &tx, &ty, &out, &tout), SG_OK);
      sgt_set(side ? dy : dx, i, sgt_get(&tout, 0));
    }
}

static void RULES(run)(void) {
  sg_tensor out = SCALAR(DT, 0), tout = SCALAR(DT, 0);

  /* stop_gradient: the tangent of sum(x + stop_gradient(sqrt(x))) along t
   * is exactly sum(t), also where sqrt(x) is NaN or its derivative infinite. */
  {
    sg_tensor x = VEC(DT, -1, 4, 0, 2.25), d = sgo_like(DT, &x), t = VEC(DT, 1, 2, 3, 4);
    RULES(jrow1)(F(sg_sqrt_jvp), &x, &d);
    CHECK_ALL_EXACT(&d, 1, 1, 1, 1);
    CHECK_EQ_INT(F(sg_sqrt_jvp)(&x, &t, &out, &tout), SG_OK);
    CHECK(isnan(sgt_get(&out, 0)));
    CHECK_EXACT(sgt_get(&tout, 0), 10);
  }
  /* sum(x * stop_gradient(exp(x))): the tangent along e_i is exp(x_i), bit
   * for bit the forward exp. */
  {
    sg_tensor x = VEC(DT, -1, 0.5, 2, 0, -3), d = sgo_like(DT, &x), e = sgo_like(DT, &x);
    RULES(jrow1)(F(sg_exp_jvp), &x, &d);
    CHECK_EQ_INT(F(exp)(&x, &e), SG_OK);
    for (int64_t i = 0; i < 5; i++)
      CHECK_EXACT(sgt_get(&d, i), sgt_get(&e, i));
  }

  /* select: only the picked branch's tangent, however infinite or NaN the
   * other's derivative. */
  {
    sg_tensor x = VEC(DT, -1, 4, 0, 0.25), d = sgo_like(DT, &x);
    RULES(jrow1)(F(sel_sqrt_jvp), &x, &d);
    CHECK_ALL_EXACT(&d, 0, 0.25, 0, 1);
    sg_tensor t = VEC(DT, 5, 4, 7, 1);
    CHECK_EQ_INT(F(sel_sqrt_jvp)(&x, &t, &out, &tout), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 2.5);
    CHECK_EXACT(sgt_get(&tout, 0), 2);
  }
  {
    sg_tensor x = VEC(DT, -1, 0, 2, -INFINITY), d = sgo_like(DT, &x);
    RULES(jrow1)(F(sel_log_jvp), &x, &d);
    CHECK_ALL_EXACT(&d, 1, 1, 0.5, 1);
  }
  {
    sg_tensor x = VEC(DT, 200, 1000, 1, 50), d = sgo_like(DT, &x);
    RULES(jrow1)(F(sel_exp_jvp), &x, &d);
    CHECK_EXACT(sgt_get(&d, 0), 1);
    CHECK_EXACT(sgt_get(&d, 1), 1);
    CHECK_ULPS(&d, 2, exp(1), 2);
    CHECK_EXACT(sgt_get(&d, 3), 1);
  }
  {
    sg_tensor x = VEC(DT, -1, 0, 4), d = sgo_like(DT, &x);
    RULES(jrow1)(F(sel_chain_jvp), &x, &d);
    CHECK_EXACT(sgt_get(&d, 0), 1);
    CHECK_EXACT(sgt_get(&d, 1), 1);
    CHECK_CLOSE(sgt_get(&d, 2), 3 * (log(4) / 4 + 0.5) + 1, 1e-6);
  }
  {
    sg_tensor x = VEC(DT, 1, 2, 3), y = VEC(DT, 0, 2, 0), dx = sgo_like(DT, &x),
              dy = sgo_like(DT, &y);
    RULES(jrow2)(F(sel_div_jvp), &x, &y, &dx, &dy);
    CHECK_ALL_EXACT(&dx, 1, 0.5, 1);
    CHECK_ALL_EXACT(&dy, 0, -0.5, 0);
  }

  /* ties in max/min reductions: the mean of the tied elements' tangents */
  {
    sg_tensor x = VEC(DT, 1, 3, 3), d = sgo_like(DT, &x);
    RULES(jrow1)(F(max_jvp), &x, &d);
    CHECK_ALL_EXACT(&d, 0, 0.5, 0.5);
    sg_tensor t = VEC(DT, 9, 2, 5);
    CHECK_EQ_INT(F(max_jvp)(&x, &t, &out, &tout), SG_OK);
    CHECK_EXACT(sgt_get(&tout, 0), 3.5);
    sg_tensor x3 = VEC(DT, 3, 3, 3), d3 = sgo_like(DT, &x3);
    RULES(jrow1)(F(max_jvp), &x3, &d3);
    for (int64_t i = 0; i < 3; i++)
      CHECK_ULPS(&d3, i, 1.0 / 3, 0.5);
    sg_tensor y = VEC(DT, 2, -1, -1, 5), dy = sgo_like(DT, &y);
    RULES(jrow1)(F(min_jvp), &y, &dy);
    CHECK_ALL_EXACT(&dy, 0, 0.5, 0.5, 0);
  }
  {
    sg_tensor x = MAT(DT, 2, 3, 1, 3, 3, 2, 2, 0), d = sgo_like(DT, &x);
    RULES(jrow1)(F(max_a1_jvp), &x, &d);
    CHECK_ALL_EXACT(&d, 0, 1, 1, 1, 1, 0);
    sg_tensor y = MAT(DT, 2, 3, 1, 3, 3, 1, 2, 3), dy = sgo_like(DT, &y);
    RULES(jrow1)(F(max_a0_jvp), &y, &dy);
    CHECK_ALL_EXACT(&dy, 1, 2, 1, 1, 0, 1);
    sg_tensor z = MAT(DT, 2, 3, 1, 1, 1, 0, 2, 0), dz = sgo_like(DT, &z);
    RULES(jrow1)(F(min_am1_jvp), &z, &dz);
    for (int64_t i = 0; i < 3; i++)
      CHECK_ULPS(&dz, i, 2.0 / 3, 0.5);
    CHECK_EXACT(sgt_get(&dz, 3), 1);
    CHECK_EXACT(sgt_get(&dz, 4), 0);
    CHECK_EXACT(sgt_get(&dz, 5), 1);
  }
  /* maximum/minimum: on a tie, the mean of both sides' tangents */
  {
    sg_tensor x = VEC(DT, 1, 2, 3), y = VEC(DT, 1, 0, 5), dx = sgo_like(DT, &x),
              dy = sgo_like(DT, &y);
    RULES(jrow2)(F(maximum_jvp), &x, &y, &dx, &dy);
    CHECK_ALL_EXACT(&dx, 0.5, 1, 0);
    CHECK_ALL_EXACT(&dy, 0.5, 0, 1);
    RULES(jrow2)(F(minimum_jvp), &x, &y, &dx, &dy);
    CHECK_ALL_EXACT(&dx, 0.5, 0, 1);
    CHECK_ALL_EXACT(&dy, 0.5, 1, 0);
    sg_tensor tx = VEC(DT, 4, 0, 0), ty = VEC(DT, 2, 0, 0);
    CHECK_EQ_INT(F(maximum_jvp)(&x, &y, &tx, &ty, &out, &tout), SG_OK);
    CHECK_EXACT(sgt_get(&tout, 0), 3);
    sg_tensor z = VEC(DT, 0, -1, 2), dz = sgo_like(DT, &z);
    RULES(jrow1)(F(maximum_lit_jvp), &z, &dz);
    CHECK_ALL_EXACT(&dz, 0.5, 0, 1);
    sg_tensor w = VEC(DT, 1, -2, 0), dw = sgo_like(DT, &w);
    RULES(jrow1)(F(maximum_self_jvp), &w, &dw);
    CHECK_ALL_EXACT(&dw, 1, 1, 1);
  }

  /* non-differentiable points, along a tangent of all 3s: relu'(0) =
   * abs'(0) = 0; sign, floor, ceil, round: 0 everywhere. */
  {
    sg_tensor x = VEC(DT, 0, -1, 2, -0.0), s = VEC(DT, 3, 3, 3, 3), o = sgo_like(DT, &x),
              d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(relu_jvp)(&x, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&o, 0, 0, 2, 0);
    CHECK_ALL_EXACT(&d, 0, 0, 3, 0);
    sg_tensor a = VEC(DT, 0, -2, 3, -0.0);
    CHECK_EQ_INT(F(abs_jvp)(&a, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&d, 0, -3, 3, 0);
    sg_tensor g = VEC(DT, 0, 1.5, -2, -0.0);
    CHECK_EQ_INT(F(sign_jvp)(&g, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&d, 0, 0, 0, 0);
    sg_tensor f = VEC(DT, 1, 1.5, -0.5, -2);
    CHECK_EQ_INT(F(floor_jvp)(&f, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&d, 0, 0, 0, 0);
    CHECK_EQ_INT(F(ceil_jvp)(&f, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&d, 0, 0, 0, 0);
    CHECK_EQ_INT(F(round_jvp)(&f, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&d, 0, 0, 0, 0);
  }
  {
    sg_tensor x = VEC(DT, 1, 2, 3), y = VEC(DT, 1, 0, 5), dx = sgo_like(DT, &x),
              dy = sgo_like(DT, &y);
    RULES(jrow2)(F(cmp_jvp), &x, &y, &dx, &dy);
    CHECK_ALL_EXACT(&dx, 0, 0, 0);
    CHECK_ALL_EXACT(&dy, 0, 0, 0);
  }

  /* const parameters get no tangent parameter: the call has exactly the
   * arity (a, b, c, d, t_b, t_d, out, t_out); the test checks the header. */
  {
    sg_tensor a = VEC(DT, 1, 2), b = VEC(DT, 3, -1), c = SCALAR(DT, 2), d = SCALAR(DT, 0.5);
    sg_tensor tb = VEC(DT, 1, 0), td = SCALAR(DT, 0);
    CHECK_EQ_INT(F(const_jvp)(&a, &b, &c, &d, &tb, &td, &out, &tout), SG_OK);
    CHECK_EXACT(sgt_get(&tout, 0), 1);
    sgt_set(&tb, 0, 0);
    sgt_set(&td, 0, 1);
    CHECK_EQ_INT(F(const_jvp)(&a, &b, &c, &d, &tb, &td, &out, &tout), SG_OK);
    CHECK_EXACT(sgt_get(&tout, 0), 2);
  }

  /* the saturated tails: finite tangents, as the gradients are */
  {
    sg_tensor x = VEC(DT, 1000, -1000, -20, 0, 20, -5), one = VEC(DT, 1, 1, 1, 1, 1, 1);
    sg_tensor o = sgo_like(DT, &x), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(softplus_jvp)(&x, &one, &o, &d), SG_OK);
    CHECK_FINITE(&d);
    CHECK_EXACT(sgt_get(&d, 0), 1);
    CHECK_EXACT(sgt_get(&d, 3), 0.5);
    CHECK_EQ_INT(F(sigmoid_jvp)(&x, &one, &o, &d), SG_OK);
    CHECK_FINITE(&d);
    CHECK_EXACT(sgt_get(&d, 3), 0.25);
    CHECK_EQ_INT(F(tanh_jvp)(&x, &one, &o, &d), SG_OK);
    CHECK_FINITE(&d);
    CHECK_EXACT(sgt_get(&d, 3), 1);
  }
  sgo_free_all();
}
