"""torch.autograd.gradcheck on every export of every shipped example, in
float64 (the f32 examples with every f32 made f64), through
sgc.torch.function: the backward of each (f_grad or f_vjp) against torch's
central differences of its forward. The inputs are random, with sizes
from the signature and valid values for the i32 parameters (token ids,
labels, step counts, keys); only the differentiable parameters (neither
const nor i32) require grad.

Three exports have, by design, a gradient that is not the derivative of
their value (section 7: stop_gradient of something that depends on the
parameter): the straight-through estimator (qloss: round), CD-1's loss
(the reconstruction depends on w) and the EM M-step (the responsibilities
depend on mu). gradcheck cannot pass on them; for those the test checks
that it reports the mismatch and that the torch gradient is the module's
f_grad, bit for bit. Usage: torch_gradcheck.py EXAMPLES_DIR"""
import os
import sys

import numpy as np
import sgc
import sgc.torch
import torch
from torch.autograd.gradcheck import GradcheckError
from check import done, equal

root = sys.argv[1]
files = ["stable_softmax.sg", "mlp.sg", "lstm.sg", "em_gmm.sg", "contrastive_divergence.sg",
         "adversarial.sg", "straight_through.sg", "v2/bow_classifier.sg", "v2/rnn.sg",
         "v2/cd_k.sg", "v2/em_fit.sg", "v2/pgd_adversarial.sg", "mpi/model.sg"]
surrogates = {"qloss", "cd1_loss", "m_step_loss"}
# where f32 -> f64 is not all (a var of literals alone is f32 unless typed)
f64_fixes = {"v2/rnn.sg": ("var loss = 0.0;", "var loss: f64 = 0.0;")}
rng = np.random.default_rng(32)
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
}
fixed_sizes = {"em_fit": {"k": 2, "n": 12}}

for name in files:
    source = open(os.path.join(root, name)).read().replace("f32", "f64")
    if name in f64_fixes:
        source = source.replace(*f64_fixes[name])
    m = sgc.compile(source, os.path.basename(name))
    for export in m.functions:
        if sgc._base_of(export, m.functions):
            continue
        fn = sgc.torch.function(m, export)
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
        if export not in surrogates:
            ok = torch.autograd.gradcheck(fn, tuple(args), eps=1e-6, atol=1e-6, rtol=1e-5)
            equal(ok, True, "gradcheck %s (%s, %d differentiable of %d parameters)"
                  % (export, name, len(fn.export.wrt), len(params)))
            continue
        try:
            torch.autograd.gradcheck(fn, tuple(args), eps=1e-6, atol=1e-6, rtol=1e-5)
            equal("passed", "a mismatch", "gradcheck %s" % export)
        except GradcheckError:
            print("ok: gradcheck %s (%s): a mismatch, as its surrogate gradient must give" % (export, name))
        value = fn(*args)
        grads = torch.autograd.grad(value, [args[k] for k in fn.export.wrt])
        want = getattr(m, export + "_grad")(*[a.detach().numpy() for a in args])[1:]
        equal(all(np.array_equal(g.numpy(), w) for g, w in zip(grads, want)), True,
              "  %s's torch gradient is %s_grad's, bit for bit" % (export, export))
done()
