"""sgc.torch: an sgc module's exports as functions of torch tensors, with
autograd (spec section 10, v3). Needs PyTorch; `import sgc` alone does not.

    import torch, sgc, sgc.torch
    m = sgc.compile(open("xent.sg").read(), options="--exports=grad,jvp")
    xent = sgc.torch.function(m, "xent")   # a callable on torch tensors
    loss = xent(w, x, y)                   # w.requires_grad: loss has a grad_fn
    loss.backward()                        # w.grad from xent_grad

- Arguments are CPU tensors of the parameter's dtype (float32, float64,
  int32): anything else raises sgc.Error naming the parameter, with the
  fix (w.to(torch.float32)); Python numbers and lists convert as in the
  sgc module (only exactly). Contiguous tensors are passed without a copy
  (their data_ptr()), others are made contiguous first; results are torch
  tensors the generated code writes into directly.
- backward (loss.backward(), torch.autograd.grad) uses the export's
  f_grad when its result is a scalar (called in the forward pass already,
  when a differentiable argument requires grad: one sweep for value and
  gradient, scaled by the incoming gradient in backward), else f_vjp with
  the incoming gradients as seeds. const and i32 parameters get no
  gradient (None), as in the generated code; i32 results are not
  differentiable. A second derivative through backward (create_graph=True)
  raises sgc.Error (f_hvp gives Hessian-vector products).
- Forward mode (torch.autograd.forward_ad) uses f_jvp when the module has
  it (options="--exports=grad,jvp"), and otherwise raises sgc.Error saying
  so.
"""
import inspect

try:
    import torch
except ImportError as e:  # pragma: no cover (a machine without torch)
    raise ImportError("sgc.torch needs PyTorch (%s); the sgc module itself does not" % e) from e

import sgc

__all__ = ["function"]

_DTYPES = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32}


class _Export:
    """An export and its derivative entry points: which parameters have a
    gradient (neither const nor i32) and which results are float."""

    def __init__(self, module, name):
        entries = module.entries
        if name not in entries or sgc._base_of(name, entries):
            exports = [n for n in entries if not sgc._base_of(n, entries)]
            raise sgc.Error("sgc.torch.function: %s has no export '%s' (its exports: %s)"
                            % (module.filename, name, ", ".join(exports)))
        self.module = module  # keeps the code alive
        self.name = name
        self.f = entries[name]
        self.grad = entries.get(name + "_grad")
        self.vjp = entries.get(name + "_vjp")
        self.jvp = entries.get(name + "_jvp")
        self.params = self.f.params
        self.wrt = [k for k, p in enumerate(self.params) if not p.is_const and p.dtype != "i32"]
        self.floats = [k for k, r in enumerate(self.f.results) if r.dtype != "i32"]
        self.ints = [k for k, r in enumerate(self.f.results) if r.dtype == "i32"]

    def tensor(self, k, value):
        """Argument k as a contiguous CPU tensor of its parameter's dtype,
        or sgc.Error."""
        slot = self.params[k]
        if isinstance(value, torch.Tensor):
            if value.dtype != _DTYPES[slot.dtype]:
                return sgc.Error("%s: argument '%s' has dtype %s, expected %s (sgc does not convert "
                                 "it: pass %s.to(%s))" % (self.name, slot.name, value.dtype,
                                                          slot.dtype, slot.name, _DTYPES[slot.dtype]),
                                 sgc._ERR_DTYPE)
            if value.device.type != "cpu" or value.layout != torch.strided:
                return sgc.Error("%s: argument '%s' is a %s tensor on %s; sgc runs on dense CPU "
                                 "tensors: pass %s.to_dense().cpu()"
                                 % (self.name, slot.name, value.layout, value.device, slot.name),
                                 sgc._ERR_DTYPE)
            return value if value.is_contiguous() else value.contiguous()
        array = sgc._argument(self.name, slot, value)  # None, numbers, lists: only exactly
        if isinstance(array, sgc.Error):
            return array
        return torch.from_numpy(array)

    def run(self, entry, tensors):
        """Results of `entry` on contiguous tensors, as new tensors."""
        def new(shape, slot):
            t = torch.empty(shape, dtype=_DTYPES[slot.dtype])
            return t, t.data_ptr()
        return sgc._raw_call(entry, [(t.data_ptr(), tuple(t.shape)) for t in tensors], new)

    def arguments(self, args):
        tensors = []
        for k, value in enumerate(args):
            t = self.tensor(k, value)
            if isinstance(t, sgc.Error):
                raise t
            tensors.append(t)
        return tensors


class _Call(torch.autograd.Function):
    """One call of an export, with its derivatives from the generated code.
    Its outputs are the export's float results; the i32 ones, which have
    no derivative, leave by `ints` (a list forward fills) instead: torch
    1.13's forward mode fails an internal assertion on a custom Function
    with a non-differentiable output (pytorch/pytorch#90067)."""

    @staticmethod
    def forward(ctx, export, ints, *args):
        tensors = export.arguments(args)
        ctx.export = export
        ctx.grads = None
        wants = any(ctx.needs_input_grad[2 + k] for k in export.wrt)
        nres = len(export.f.results)
        if wants and export.grad is not None:
            results = export.run(export.grad, tensors)
            outs, ctx.grads = results[:nres], results[nres:]
        else:
            outs = export.run(export.f, tensors)
            if wants:
                ctx.save_for_backward(*tensors)
        ctx.save_for_forward(*tensors)
        if export.ints:
            ints.extend(outs[r] for r in export.ints)
        floats = [outs[r] for r in export.floats]
        return floats[0] if len(floats) == 1 else tuple(floats)

    @staticmethod
    def backward(ctx, *grad_outputs):
        export = ctx.export
        if torch.is_grad_enabled():  # create_graph=True: a derivative of this one wanted
            raise sgc.Error("%s: its gradient is not differentiable in turn (backward with "
                            "create_graph=True); the module's %s_hvp gives Hessian-vector "
                            "products" % (export.name, export.name))
        grads = [None] * len(export.params)
        if ctx.grads is not None:  # f_grad ran in forward: scale by the incoming gradient
            for k, g in zip(export.wrt, ctx.grads):
                grads[k] = g * grad_outputs[0]
        else:
            tensors = list(ctx.saved_tensors)
            # (torch passes zeros for outputs that got no gradient)
            seeds = [g.to(_DTYPES[export.f.results[r].dtype]).contiguous()
                     for g, r in zip(grad_outputs, export.floats)]
            results = export.run(export.vjp, tensors + seeds)
            for k, g in zip(export.wrt, results[len(export.f.results):]):
                grads[k] = g
        return (None, None, *grads)

    @staticmethod
    def jvp(ctx, _export, _ints, *tangents):
        export = ctx.export
        if export.jvp is None:
            raise sgc.Error("%s: forward-mode AD needs %s_jvp, which %s was not compiled with: "
                            "compile it with options=\"--exports=grad,jvp\""
                            % (export.name, export.name, export.module.filename))
        tensors = list(ctx.saved_tensors)
        ts = []
        for k in export.wrt:
            t = tangents[k]
            ts.append(torch.zeros_like(tensors[k]) if t is None
                      else t.to(tensors[k].dtype).contiguous())
        out = export.run(export.jvp, tensors + ts)[len(export.f.results):]
        return out[0] if len(out) == 1 else tuple(out)


def function(module, name):
    """The export `name` of a compiled sgc module as a function of torch
    tensors, differentiable by torch's autograd (backward through the
    export's f_grad or f_vjp, forward mode through f_jvp)."""
    export = _Export(module, name)
    n = len(export.params)

    def call(*args):
        if len(args) != n:
            raise sgc._takes(name, export.params, len(args))
        if not export.floats:  # nothing to differentiate
            outs = export.run(export.f, export.arguments(args))
        elif not export.ints:
            return _Call.apply(export, None, *args)
        else:
            ints = []
            floats = _Call.apply(export, ints, *args)
            floats = [floats] if len(export.floats) == 1 else list(floats)
            outs = [None] * len(export.f.results)
            for r, t in zip(export.floats + export.ints, floats + ints):
                outs[r] = t
        return outs[0] if len(outs) == 1 else tuple(outs)

    taken = set()
    call.__name__ = call.__qualname__ = name
    call.__module__ = __name__
    call.__signature__ = inspect.Signature(
        [inspect.Parameter(sgc._python_name(p.name, taken), inspect.Parameter.POSITIONAL_ONLY)
         for p in export.params])
    call.__doc__ = ("%s\n\nThe .sg export %s on torch tensors, differentiable by torch.autograd "
                    "(gradients for %s)." % (export.f.signature(), name,
                                              ", ".join(export.params[k].name for k in export.wrt)
                                              or "no parameter"))
    call.export = export
    return call
