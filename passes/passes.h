/* Every pass over the IR, one file each in passes/, each with one entry
 * point. driver/pipeline.c runs them as a flat list, with the verifier
 * between passes when checking is on. */
#ifndef SGC_PASSES_H
#define SGC_PASSES_H

#include "../ir/ir.h"

/* inline.c: requires an acyclic call graph; afterwards no `call` or `grad`
 * remains and only exported functions are left. A grad(f, wrt=p) becomes
 * the inlined body of f's gradient, built by the AD pass's builder below. */
void pass_inline(Module *m);

/* ad.c: requires no call or grad; adds f_grad (scalar result) or f_vjp
 * (tensor result) after every exported f that has none yet. */
void pass_ad(Module *m);
/* The gradient of f (call-free) with respect to its parameter only_wrt, or
 * to all its non-const parameters when only_wrt < 0. Results: f's value if
 * with_value, then one adjoint per differentiated parameter. With a tensor
 * result, a `seed` parameter is added after f's own. */
Function *ad_build(Module *m, Function *f, const char *name, int only_wrt, bool with_value);

/* Whether op's adjoint can be non-zero (its rule is not ad_zero/ad_none). */
bool ad_propagates(Op op);

/* activity.c: marks Inst.active: depends on a differentiable parameter
 * (`varied`, through ops with a non-zero derivative, never through
 * stop_gradient) and the result depends on it (`useful`). */
void ad_activity(Function *f, const bool *differentiable);

/* The same for every function (non-const parameters), shown by the printer. */
void pass_activity(Module *m);

/* strip_stop.c: requires AD done; removes stop_gradient (an identity). */
void pass_strip_stop(Module *m);
/* dce.c: requires nothing; removes instructions no result depends on. */
void pass_dce(Module *m);
/* cse.c: requires nothing; of identical instructions keeps the first. */
void pass_cse(Module *m);
/* fold.c: requires nothing; literal operands give literal results. */
void pass_fold(Module *m);
/* simplify.c: requires nothing; IEEE-exact algebra and known zeros. */
void pass_simplify(Module *m);
/* remat.c: requires to run last; copies cheap values once per use. */
void pass_remat(Module *m);
#endif
