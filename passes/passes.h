/* Every pass over the IR, one file each in passes/, each with one entry
 * point. driver/pipeline.c runs them as a flat list, with the verifier
 * between passes when checking is on. */
#ifndef SGC_PASSES_H
#define SGC_PASSES_H

#include "../ir/ir.h"

/* inline.c: requires an acyclic call graph; afterwards no `call` remains
 * and only exported functions are left. A call of a derived function
 * (grad(f, wrt=p) and the like) inlines the body derive_build makes. */
void pass_inline(Module *m);

/* A function with f's signature whose body is one custom op carrying f's
 * rules (f and its rules flat), located at `at`: what a call of f inlines
 * to, for the transforms of f itself to use its rules. */
Function *inline_ruled(Module *m, Function *f, Loc at);

/* derive.c: the body of the derived function d (ir/derive.c), built from
 * its base, which must be call-free; d is then an ordinary function. */
void derive_build(Module *m, Function *d);

/* exports.c: requires no call; adds after every exported f the
 * derivative entry points m->exports asks for (spec sections 8 and 9):
 * f_grad (scalar result) or f_vjp, f_jvp, f_hvp (scalar result), each only
 * where f has a float result and a differentiable parameter and the module
 * has no function of that name yet. pass_jvp and pass_hvp add only f_jvp or
 * only f_hvp, whatever m->exports says (sgc-opt --passes=jvp). */
void pass_ad(Module *m);
void pass_jvp(Module *m);
void pass_hvp(Module *m);
/* The gradient of f (call-free) with respect to its parameter only_wrt, or
 * to all its non-const float parameters when only_wrt < 0. Results: f's
 * value if with_value, then one adjoint per differentiated parameter. With
 * a tensor result or several, or with `seeds`, a cotangent parameter per
 * float result (`seed`, or seed0..seedm) is added after f's own: const
 * for an export's f_vjp, differentiable with `seeds` (vjp in the
 * language). A derivative reverse mode cannot take (through an active
 * unloop: reverse over reverse through a loop) is reported through the
 * module (ir_error) at `at`, or where the unloop is when at.line is 0;
 * `export_of` names the export whose derivative entry point (--exports)
 * this is, so that the message says the user did not write it. */
typedef struct AdSpec {
  int only_wrt;
  bool with_value, seeds;
  Loc at;
  const char *export_of;
} AdSpec;
Function *ad_build(Module *m, Function *f, const char *name, const AdSpec *spec);

/* tangent.c: forward mode. A function `name` with f's parameters (f
 * call-free), then one tangent parameter `prefix`<p> per float parameter
 * with wrt[k], shaped like it; its results are f's (if with_value), then
 * the tangent of each float result of f (t_<result name>). */
Function *tg_build(Module *m, Function *f, const char *name, const bool *wrt, const char *prefix,
                   bool with_value);

/* vmap.c: vector mode. A function `name` with f's parameters (f
 * call-free), those with batch[k] given a leading axis of size B; its
 * results are f's with that leading axis (broadcast where one does not
 * depend on a batched parameter). What cannot be batched (a condition or an
 * index that depends on a batched parameter) is reported at `at`. */
Function *vmap_build(Module *m, Function *f, const char *name, const bool *batch, Dim B, Loc at);

/* Whether op's adjoint can be non-zero (its rule is not ad_zero/ad_none). */
bool ad_propagates(Op op);

/* activity.c: marks Inst.active: depends on a differentiable parameter
 * (`varied`, through ops with a non-zero derivative, never through
 * stop_gradient) and the result depends on it (`useful`). */
void ad_activity(Function *f, const bool *differentiable);
/* Only the first half: active = varied, whether useful or not (forward
 * mode). A region op is active when one of its results is varied. */
void ad_varied(Function *f, const bool *differentiable);
/* active = depends on a parameter with from[k], through any op and dtype
 * (what vector mode batches, passes/vmap.c). */
void ad_depends(Function *f, const bool *from);

/* The same for every function (non-const parameters), shown by the printer. */
void pass_activity(Module *m);

/* strip_custom.c: requires AD done; each custom op becomes its body. */
void pass_strip_custom(Module *m);
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
