"""torch.autograd.gradcheck on every export of every shipped example, in
float64 (the f32 examples with every f32 made f64), through
sgc.torch.function: the backward of each (f_grad or f_vjp) and, where the
file compiles with --exports=grad,jvp, its forward-mode AD (f_jvp,
check_forward_ad) against torch's central differences of its forward. The
inputs are random, with sizes from the signature and valid values for the
i32 parameters (token ids, labels, step counts, keys); only the
differentiable parameters (neither const nor i32) require grad.

Some exports have, by design, a gradient that is not the derivative of
their value: section 7's stop_gradient of something that depends on the
parameter (the straight-through estimator qloss: round; CD-1's loss, whose
reconstruction depends on w; the EM M-step, whose responsibilities depend
on mu) and custom rules that say so (quantized_loss clips the cotangent
and passes it through round). gradcheck cannot pass on them; for those
the test checks that it reports the mismatch, that the torch gradient is
the module's f_grad, bit for bit, and, with f_jvp, that forward and
reverse mode agree (u . J t both ways). Exports with no differentiable
parameter (every one const) have no derivative: their torch result needs
no gradient and equals the module's. A file whose custom rules lack the
forward direction does not compile with jvp (the message is checked).
Usage: torch_gradcheck.py EXAMPLES_DIR"""
import os
import sys

import numpy as np
import sgc
import sgc.torch
import torch
import torch.autograd.forward_ad as fwAD
from torch.autograd.gradcheck import GradcheckError
from check import close, done, equal

root = sys.argv[1]
files = ["stable_softmax.sg", "mlp.sg", "lstm.sg", "em_gmm.sg", "contrastive_divergence.sg",
         "adversarial.sg", "straight_through.sg", "v2/bow_classifier.sg", "v2/rnn.sg",
         "v2/cd_k.sg", "v2/em_fit.sg", "v2/pgd_adversarial.sg", "mpi/model.sg",
         "v3/clip_gradient.sg", "v3/implicit_layer.sg", "v3/newton_cg.sg",
         "v3/spring_sensitivity.sg"]
surrogates = {"qloss", "cd1_loss", "m_step_loss", "quantized_loss"}
# where f32 -> f64 is not all (a var of literals alone is f32 unless typed)
f64_fixes = {"v2/rnn.sg": ("var loss = 0.0;", "var loss: f64 = 0.0;")}
rng = np.random.default_rng(32)
torch.manual_seed(32)
# values for i32 and scalar const parameters, by export and name
special = {
    ("bow_loss", "tokens"): lambda s: rng.integers(-s["v"], s["v"], (s["b"], s["s"])),
    ("bow_loss", "labels"): lambda s: rng.integers(0, s["c"], s["b"]),
    ("rnn_loss", "labels"): lambda s: rng.integers(0, s["c"], s["t"]),
    ("cdk_loss", "steps"): lambda s: 2,
    ("cdk_loss", "key"): lambda s: 7,
    ("cdk_loss", "v0"): lambda s: (rng.random((s["b"], s["nv"])) < 0.5) * 1.0,
    ("cd1_loss", "v0"): lambda s: (rng.random((s["b"], s["nv"])) < 0.5) * 1.0,
    ("em_fit", "x"): lambda s: np.concatenate([rng.normal(-2, 0.5, 6), rng.normal(2, 0.5, 6)]),
    ("em_fit", "mu0"): lambda s: np.array([-1.0, 1.0]),
    ("em_fit", "tol"): lambda s: 1e-13,
    ("pgd_loss", "eps"): lambda s: 0.1,
    ("pgd_loss", "alpha"): lambda s: 0.05,
    ("pgd_loss", "steps"): lambda s: 3,
    ("pgd_loss", "y"): lambda s: rng.choice([-1.0, 1.0], s["n"]),
    ("adversarial_loss", "y"): lambda s: rng.choice([-1.0, 1.0], s["n"]),
    # a contraction, so that the fixed point exists and the iteration finds it
    ("implicit_loss", "W"): lambda s: rng.standard_normal((s["h"], s["h"])) * 0.2,
    ("newton_step", "lam"): lambda s: 0.1,
    ("loss_hessian", "lam"): lambda s: 0.1,
    ("loss_value", "lam"): lambda s: 0.1,
    ("trajectory_jacobian", "dt"): lambda s: 0.05,
    ("fit_hessian", "dt"): lambda s: 0.05,
    ("fit", "dt"): lambda s: 0.05,
}
fixed_sizes = {"em_fit": {"k": 2, "n": 12}}



def arguments(fn, export):
    params = fn.export.params
    sizes = dict(fixed_sizes.get(export, {}))
    for p in params:
        for d in p.dims:
            if not d.isdigit():
                sizes.setdefault(d, 2 + len(sizes) % 3)
    args = []
    for k, p in enumerate(params):
        shape = tuple(int(d) if d.isdigit() else sizes[d] for d in p.dims)
        make = special.get((export, p.name))
        value = make(sizes) if make else rng.standard_normal(shape) * 0.7
        t = torch.tensor(value, dtype=sgc.torch._DTYPES[p.dtype])
        args.append(t.requires_grad_(k in fn.export.wrt))
    return args


def forward_equals_reverse(fn, args, export):
    """u . (J t) by f_jvp (torch.autograd.forward_ad) against (J^T u) . t
    by the reverse sweep, for random t and u."""
    wrt = fn.export.wrt
    ts = [torch.randn_like(args[k]) for k in wrt]
    with fwAD.dual_level():
        duals = list(args)
        for k, t in zip(wrt, ts):
            duals[k] = fwAD.make_dual(args[k].detach(), t)
        out, tangent = fwAD.unpack_dual(fn(*duals))
    u = torch.randn_like(out)
    grads = torch.autograd.grad(fn(*args), [args[k] for k in wrt], u)
    close(float(torch.sum(u * tangent)), float(sum(torch.sum(g * t) for g, t in zip(grads, ts))),
          1e-12, "  %s: forward and reverse mode agree (u . J t)" % export)


for name in files:
    source = open(os.path.join(root, name)).read().replace("f32", "f64")
    if name in f64_fixes:
        source = source.replace(*f64_fixes[name])
    try:
        m = sgc.compile(source, os.path.basename(name), options="--exports=grad,jvp")
        forward = True
    except sgc.CompileError as e:
        print("%s: no f_jvp: %s" % (name, str(e).splitlines()[0].split(": error: ")[1]))
        m = sgc.compile(source, os.path.basename(name))
        forward = False
    for export in m.functions:
        if sgc._base_of(export, m.functions):
            continue
        fn = sgc.torch.function(m, export)
        args = arguments(fn, export)
        params = fn.export.params
        if not fn.export.wrt:
            out = fn(*args)
            want = getattr(m, export)(*[a.numpy() for a in args])
            equal((out.requires_grad, np.array_equal(out.numpy(), want)), (False, True),
                  "%s (%s): no differentiable parameter, no gradient; the module's value"
                  % (export, name))
            continue
        if export not in surrogates:
            ok = torch.autograd.gradcheck(fn, tuple(args), eps=1e-6, atol=1e-6, rtol=1e-5,
                                          check_forward_ad=forward)
            equal(ok, True, "gradcheck %s (%s, %d differentiable of %d parameters%s)"
                  % (export, name, len(fn.export.wrt), len(params),
                     ", forward and reverse" if forward else ""))
            continue
        try:
            torch.autograd.gradcheck(fn, tuple(args), eps=1e-6, atol=1e-6, rtol=1e-5)
            equal("passed", "a mismatch", "gradcheck %s" % export)
        except GradcheckError:
            print("ok: gradcheck %s (%s): a mismatch, as its surrogate gradient must give"
                  % (export, name))
        value = fn(*args)
        grads = torch.autograd.grad(value, [args[k] for k in fn.export.wrt])
        want = getattr(m, export + "_grad")(*[a.detach().numpy() for a in args])[1:]
        equal(all(np.array_equal(g.numpy(), w) for g, w in zip(grads, want)), True,
              "  %s's torch gradient is %s_grad's, bit for bit" % (export, export))
        if forward:
            forward_equals_reverse(fn, args, export)
done()
