/* The checks of rules_main.c, for one dtype: DT is SG_F32 or SG_F64, F(name)
 * the export of rules.sg in that dtype, RULES the function to define.
 * "ulps" are units in the last place of DT. */
static void RULES(void) {
  sg_tensor out = SCALAR(DT, 0);

  /* stop_gradient: d/dx sum(x + stop_gradient(sqrt(x))) is exactly 1, also
   * where sqrt(x) is NaN (x = -1) or its derivative infinite (x = 0). */
  {
    sg_tensor x = VEC(DT, -1, 4, 0, 2.25), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(sg_sqrt_grad)(&x, &out, &d), SG_OK);
    CHECK(isnan(sgt_get(&out, 0)));
    CHECK_ALL_EXACT(&d, 1, 1, 1, 1);
    sg_tensor x2 = VEC(DT, 4, 2.25), d2 = sgo_like(DT, &x2);
    CHECK_EQ_INT(F(sg_sqrt_grad)(&x2, &out, &d2), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 4 + 2 + 2.25 + 1.5);
  }
  /* d/dx sum(x * stop_gradient(exp(x))) is exp(x), bit for bit the forward
   * exp, never exp(x) + x exp(x). */
  {
    sg_tensor x = VEC(DT, -1, 0.5, 2, 0, -3), d = sgo_like(DT, &x), e = sgo_like(DT, &x);
    CHECK_EQ_INT(F(sg_exp_grad)(&x, &out, &d), SG_OK);
    CHECK_EQ_INT(F(exp)(&x, &e), SG_OK);
    for (int64_t i = 0; i < 5; i++) {
      CHECK_EXACT(sgt_get(&d, i), sgt_get(&e, i));
      CHECK_ULPS(&d, i, exp(sgt_get(&x, i)), 2);
    }
  }

  /* select: nothing from the branch not picked, however infinite or NaN. */
  {
    sg_tensor x = VEC(DT, -1, 4, 0, 0.25), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(sel_sqrt_grad)(&x, &out, &d), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 2.5);
    CHECK_ALL_EXACT(&d, 0, 0.25, 0, 1);
  }
  {
    sg_tensor x = VEC(DT, -1, 0, 2, -INFINITY), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(sel_log_grad)(&x, &out, &d), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), -INFINITY);
    CHECK_ALL_EXACT(&d, 1, 1, 0.5, 1);
  }
  {
    /* exp(200) overflows f32, exp(1000) overflows both; not picked. */
    sg_tensor x = VEC(DT, 200, 1000, 1, 50), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(sel_exp_grad)(&x, &out, &d), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), 1250 + exp(1), 1e-6);
    CHECK_EXACT(sgt_get(&d, 0), 1);
    CHECK_EXACT(sgt_get(&d, 1), 1);
    CHECK_ULPS(&d, 2, exp(1), 2);
    CHECK_EXACT(sgt_get(&d, 3), 1);
  }
  {
    /* at 0 the unpicked sqrt(x) * log(x) is 0 * -inf = NaN, sqrt' = inf */
    sg_tensor x = VEC(DT, -1, 0, 4), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(sel_chain_grad)(&x, &out, &d), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), 3 + 3 * 2 * log(4), 1e-6);
    CHECK_EXACT(sgt_get(&d, 0), 1);
    CHECK_EXACT(sgt_get(&d, 1), 1);
    CHECK_CLOSE(sgt_get(&d, 2), 3 * (log(4) / 4 + 0.5) + 1, 1e-6);
  }
  {
    /* x / 0 in the branch not picked: d_y gets exactly 0 there, not -inf or NaN */
    sg_tensor x = VEC(DT, 1, 2, 3), y = VEC(DT, 0, 2, 0), dx = sgo_like(DT, &x),
              dy = sgo_like(DT, &y);
    CHECK_EQ_INT(F(sel_div_grad)(&x, &y, &out, &dx, &dy), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 5);
    CHECK_ALL_EXACT(&dx, 1, 0.5, 1);
    CHECK_ALL_EXACT(&dy, 0, -0.5, 0);
  }

  /* ties in max/min reductions: split evenly */
  {
    sg_tensor x = VEC(DT, 1, 3, 3), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(max_grad)(&x, &out, &d), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 3);
    CHECK_ALL_EXACT(&d, 0, 0.5, 0.5);
    sg_tensor x3 = VEC(DT, 3, 3, 3), d3 = sgo_like(DT, &x3);
    CHECK_EQ_INT(F(max_grad)(&x3, &out, &d3), SG_OK);
    for (int64_t i = 0; i < 3; i++)
      CHECK_ULPS(&d3, i, 1.0 / 3, 0.5);
    sg_tensor y = VEC(DT, 2, -1, -1, 5), dy = sgo_like(DT, &y);
    CHECK_EQ_INT(F(min_grad)(&y, &out, &dy), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), -1);
    CHECK_ALL_EXACT(&dy, 0, 0.5, 0.5, 0);
    sg_tensor z = VEC(DT, 7), dz = sgo_like(DT, &z);
    CHECK_EQ_INT(F(min_grad)(&z, &out, &dz), SG_OK);
    CHECK_ALL_EXACT(&dz, 1);
  }
  {
    /* with axis=: the split is per reduced row, times the weight 2 */
    sg_tensor x = MAT(DT, 2, 3, 1, 3, 3, 2, 2, 0), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(max_a1_grad)(&x, &out, &d), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 10);
    CHECK_ALL_EXACT(&d, 0, 1, 1, 1, 1, 0);
    sg_tensor y = MAT(DT, 2, 3, 1, 3, 3, 1, 2, 3), dy = sgo_like(DT, &y);
    CHECK_EQ_INT(F(max_a0_grad)(&y, &out, &dy), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 14);
    CHECK_ALL_EXACT(&dy, 1, 2, 1, 1, 0, 1);
    sg_tensor z = MAT(DT, 2, 3, 1, 1, 1, 0, 2, 0), dz = sgo_like(DT, &z);
    CHECK_EQ_INT(F(min_am1_grad)(&z, &out, &dz), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 2);
    for (int64_t i = 0; i < 3; i++)
      CHECK_ULPS(&dz, i, 2.0 / 3, 0.5);
    CHECK_EXACT(sgt_get(&dz, 3), 1);
    CHECK_EXACT(sgt_get(&dz, 4), 0);
    CHECK_EXACT(sgt_get(&dz, 5), 1);
  }
  /* maximum/minimum: half to each side on a tie */
  {
    sg_tensor x = VEC(DT, 1, 2, 3), y = VEC(DT, 1, 0, 5), dx = sgo_like(DT, &x),
              dy = sgo_like(DT, &y);
    CHECK_EQ_INT(F(maximum_grad)(&x, &y, &out, &dx, &dy), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 8);
    CHECK_ALL_EXACT(&dx, 0.5, 1, 0);
    CHECK_ALL_EXACT(&dy, 0.5, 0, 1);
    CHECK_EQ_INT(F(minimum_grad)(&x, &y, &out, &dx, &dy), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 4);
    CHECK_ALL_EXACT(&dx, 0.5, 0, 1);
    CHECK_ALL_EXACT(&dy, 0.5, 1, 0);
    sg_tensor z = VEC(DT, 0, -1, 2), dz = sgo_like(DT, &z);
    CHECK_EQ_INT(F(maximum_lit_grad)(&z, &out, &dz), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 2);
    CHECK_ALL_EXACT(&dz, 0.5, 0, 1);
    sg_tensor w = VEC(DT, 1, -2, 0), dw = sgo_like(DT, &w);
    CHECK_EQ_INT(F(maximum_self_grad)(&w, &out, &dw), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), -1);
    CHECK_ALL_EXACT(&dw, 1, 1, 1);
  }

  /* non-differentiable points, through f_vjp with a seed of all 3s:
   * relu'(0) = abs'(0) = 0; sign, floor, ceil, round: 0 everywhere. */
  {
    sg_tensor x = VEC(DT, 0, -1, 2, -0.0), s = VEC(DT, 3, 3, 3, 3), o = sgo_like(DT, &x),
              d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(relu_vjp)(&x, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&o, 0, 0, 2, 0);
    CHECK_ALL_EXACT(&d, 0, 0, 3, 0);
    sg_tensor a = VEC(DT, 0, -2, 3, -0.0);
    CHECK_EQ_INT(F(abs_vjp)(&a, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&o, 0, 2, 3, 0);
    CHECK_ALL_EXACT(&d, 0, -3, 3, 0);
    sg_tensor g = VEC(DT, 0, 1.5, -2, -0.0);
    CHECK_EQ_INT(F(sign_vjp)(&g, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&o, 0, 1, -1, 0);
    CHECK_ALL_EXACT(&d, 0, 0, 0, 0);
    sg_tensor f = VEC(DT, 1, 1.5, -0.5, -2);
    CHECK_EQ_INT(F(floor_vjp)(&f, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&o, 1, 1, -1, -2);
    CHECK_ALL_EXACT(&d, 0, 0, 0, 0);
    CHECK_EQ_INT(F(ceil_vjp)(&f, &s, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&o, 1, 2, 0, -2);
    CHECK_ALL_EXACT(&d, 0, 0, 0, 0);
    /* round: half to even, as NumPy and JAX */
    sg_tensor r = VEC(DT, 0.5, 1.5, 2.5, -0.5, -1.5, 0.3, 2), s6 = VEC(DT, 3, 3, 3, 3, 3, 3, 3),
              ro = sgo_like(DT, &r), rd = sgo_like(DT, &r);
    CHECK_EQ_INT(F(round_vjp)(&r, &s6, &ro, &rd), SG_OK);
    CHECK_ALL_EXACT(&ro, 0, 2, 2, 0, -2, 0, 2);
    CHECK_ALL_EXACT(&rd, 0, 0, 0, 0, 0, 0, 0);
  }
  {
    /* comparisons: zero derivative on both sides, ties included */
    sg_tensor x = VEC(DT, 1, 2, 3), y = VEC(DT, 1, 0, 5), dx = sgo_like(DT, &x),
              dy = sgo_like(DT, &y);
    CHECK_EQ_INT(F(cmp_grad)(&x, &y, &out, &dx, &dy), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 3);
    CHECK_ALL_EXACT(&dx, 0, 0, 0);
    CHECK_ALL_EXACT(&dy, 0, 0, 0);
  }

  /* const parameters: no d_a, no d_c. This call has exactly the arity
   * (a, b, c, d, out, d_b, d_d); the test also checks the header text. */
  {
    sg_tensor a = VEC(DT, 1, 2), b = VEC(DT, 3, -1), c = SCALAR(DT, 2), d = SCALAR(DT, 0.5);
    sg_tensor db = sgo_like(DT, &b), dd = SCALAR(DT, 0);
    CHECK_EQ_INT(F(const_grad)(&a, &b, &c, &d, &out, &db, &dd), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), 1 + exp(1) + exp(2), 1e-6);
    CHECK_ALL_EXACT(&db, 1, 2);
    CHECK_EXACT(sgt_get(&dd, 0), 2);
  }

  /* numerically careful forward values, and derivatives through f_vjp
   * with a seed of ones (finite and in range in the saturated tails; their
   * relative accuracy there is in derivative_tails.test) */
  {
    sg_tensor x = VEC(DT, 1000, -1000, -20, 0, 20, -5), one = VEC(DT, 1, 1, 1, 1, 1, 1);
    sg_tensor o = sgo_like(DT, &x), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(softplus_vjp)(&x, &one, &o, &d), SG_OK);
    CHECK_EXACT(sgt_get(&o, 0), 1000);
    CHECK_IN(sgt_get(&o, 1), 0, 1e-30);
    CHECK_ULPS(&o, 2, log1p(exp(-20.0)), 4);
    CHECK_ULPS(&o, 3, log(2.0), 2);
    CHECK_ULPS(&o, 4, 20 + log1p(exp(-20.0)), 2);
    CHECK_ULPS(&o, 5, log1p(exp(-5.0)), 4);
    CHECK_FINITE(&d);
    CHECK_EXACT(sgt_get(&d, 0), 1);
    CHECK_IN(sgt_get(&d, 1), 0, 1e-30);
    CHECK_REL(sgt_get(&d, 2), 1 / (1 + exp(20.0)), 1e-5);
    CHECK_EXACT(sgt_get(&d, 3), 0.5);
    CHECK_REL(sgt_get(&d, 4), 1 / (1 + exp(-20.0)), 1e-6);
    CHECK_REL(sgt_get(&d, 5), 1 / (1 + exp(5.0)), 1e-5);

    CHECK_EQ_INT(F(sigmoid_vjp)(&x, &one, &o, &d), SG_OK);
    CHECK_EXACT(sgt_get(&o, 0), 1);
    CHECK_IN(sgt_get(&o, 1), 0, 1e-30);
    CHECK_ULPS(&o, 2, 1 / (1 + exp(20.0)), 4);
    CHECK_EXACT(sgt_get(&o, 3), 0.5);
    CHECK_ULPS(&o, 4, 1 / (1 + exp(-20.0)), 2);
    CHECK_ULPS(&o, 5, 1 / (1 + exp(5.0)), 4);
    CHECK_FINITE(&d);
    CHECK_IN(sgt_get(&d, 0), 0, 1e-30);
    CHECK_IN(sgt_get(&d, 1), 0, 1e-30);
    CHECK_REL(sgt_get(&d, 2), exp(-20.0) / sq_(1 + exp(-20.0)), 1e-5);
    CHECK_EXACT(sgt_get(&d, 3), 0.25);
    CHECK_REL(sgt_get(&d, 5), exp(-5.0) / sq_(1 + exp(-5.0)), 1e-5);
  }
  {
    sg_tensor x = VEC(DT, 20, -20, 1000, -1000, 0.5, 1e-10, 0),
              one = VEC(DT, 1, 1, 1, 1, 1, 1, 1), o = sgo_like(DT, &x), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(tanh_vjp)(&x, &one, &o, &d), SG_OK);
    CHECK_ALL_EXACT(&o, 1, -1, 1, -1, sgt_get(&o, 4), sgt_get(&o, 5), 0);
    CHECK_ULPS(&o, 4, tanh(0.5), 2);
    CHECK_ULPS(&o, 5, tanh(sgt_get(&x, 5)), 1);
    CHECK_FINITE(&d);
    for (int64_t i = 0; i < 4; i++)
      CHECK_IN(sgt_get(&d, i), 0, 1e-6);
    CHECK_REL(sgt_get(&d, 4), 1 - sq_(tanh(0.5)), 1e-6);
    CHECK_EXACT(sgt_get(&d, 5), 1);
    CHECK_EXACT(sgt_get(&d, 6), 1);
  }
  {
    sg_tensor x = VEC(DT, 1e-10, -0.5, 1e-30, 3, -1e-7, 0), one = VEC(DT, 1, 1, 1, 1, 1, 1);
    sg_tensor o = sgo_like(DT, &x), d = sgo_like(DT, &x);
    CHECK_EQ_INT(F(log1p_vjp)(&x, &one, &o, &d), SG_OK);
    for (int64_t i = 0; i < 6; i++) {
      CHECK_ULPS(&o, i, log1p(sgt_get(&x, i)), 1);
      CHECK_REL(sgt_get(&d, i), 1 / (1 + sgt_get(&x, i)), DT == SG_F32 ? 1e-6 : 1e-14);
    }
    sg_tensor y = VEC(DT, 1e-10, -1e-7, 1e-30, 2, -3, 0);
    CHECK_EQ_INT(F(expm1_vjp)(&y, &one, &o, &d), SG_OK);
    for (int64_t i = 0; i < 6; i++) {
      CHECK_ULPS(&o, i, expm1(sgt_get(&y, i)), 1);
      CHECK_REL(sgt_get(&d, i), exp(sgt_get(&y, i)), DT == SG_F32 ? 1e-6 : 1e-14);
    }
  }
  sgo_free_all();
}
