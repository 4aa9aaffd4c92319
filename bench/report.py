"""report.py: the PyTorch half of `make bench`, and the final table.

Reads what bench_main wrote (DIR/results.tsv: sgc and hand-written C times;
DIR/ID.txt and DIR/ID.bin: each case's inputs and sgc's outputs), times the
same programs in PyTorch's eager autograd (forward + backward, the gradient
with torch.autograd.grad) on the same data -- once with
torch.set_num_threads(1), like for like with single-threaded sgc (CPU time,
as bench_main measures), and once with every CPU (wall time) -- checks PyTorch's values against
sgc's, and prints one table with the ratios. Each time is the median of
many batches after a warm-up. Without torch (--no-torch) it prints the
table without the PyTorch columns; that path needs only the standard library.

Usage: /usr/bin/python3 bench/report.py DIR [--budget S] [--no-torch]
"""
import os
import sys
import time


def read_results(d):
    rows = []
    with open(os.path.join(d, "results.tsv")) as f:
        for line in f:
            cid, func, sizes, sgc, hand, ratio, spread, rel, which = \
                line.rstrip("\n").split("\t")
            rows.append(dict(id=cid, func=func, sizes=sizes, sgc=float(sgc),
                             hand=float(hand), ratio=float(ratio),
                             spread=float(spread),
                             rel=float(rel), which=which))
    return rows


def load_case(d, cid, np):
    """Returns ({name: array} inputs, {name: array} sgc outputs)."""
    ins, outs, specs = {}, {}, []
    with open(os.path.join(d, cid + ".txt")) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "case":
                continue
            specs.append((parts[0], parts[1], tuple(int(x) for x in parts[2:])))
    flat = np.fromfile(os.path.join(d, cid + ".bin"), dtype=np.float32)
    off = 0
    for role, name, shape in specs:
        n = int(np.prod(shape)) if shape else 1
        a = flat[off:off + n].reshape(shape)
        off += n
        (ins if role == "in" else outs)[name] = a
    return ins, outs


def load_workload(d, cid, np):
    """Like load_case, for workloads_main's files (a dtype per array)."""
    ins, outs, specs = {}, {}, []
    with open(os.path.join(d, cid + ".txt")) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "case":
                continue
            specs.append((parts[0], parts[1], parts[2], tuple(int(x) for x in parts[3:])))
    raw = open(os.path.join(d, cid + ".bin"), "rb").read()
    off = 0
    for role, name, dt, shape in specs:
        n = int(np.prod(shape)) if shape else 1
        dtype = np.float64 if dt == "f64" else np.float32
        a = np.frombuffer(raw, dtype=dtype, count=n, offset=off).reshape(shape)
        off += n * np.dtype(dtype).itemsize
        (ins if role == "in" else outs)[name] = a
    return ins, outs


def workload_programs(torch):
    """W1-W6 of bench/workloads.sg, as a PyTorch user writes them."""
    def row_xent(z, y):
        s = z - torch.max(z, dim=1, keepdim=True)[0].detach()
        lse = torch.log(torch.sum(torch.exp(s), dim=1, keepdim=True))
        return torch.sum(y * (lse - s))

    def w1(t):
        w = t["w"].requires_grad_()
        x, y = t["x"], t["y"]

        def run():
            loss = row_xent(x @ w, y)
            return (loss,) + torch.autograd.grad(loss, [w])
        return run

    def w2(t):
        w = t["w"].requires_grad_()
        x, y = t["x"], t["y"]

        def run():
            z = x @ w
            loss = torch.sum(torch.nn.functional.softplus(z) - y * z)
            return (loss,) + torch.autograd.grad(loss, [w])
        return run

    def vec_xent(z, y):
        s = z - torch.max(z).detach()
        return torch.sum(y) * torch.log(torch.sum(torch.exp(s))) - torch.sum(y * s)

    def w3(t):
        z = t["z"].requires_grad_()
        y = t["y"]

        def run():
            loss = vec_xent(z, y)
            return (loss,) + torch.autograd.grad(loss, [z])
        return run

    def w4(t):
        params = [t[k].requires_grad_() for k in ("w1", "b1", "w2", "b2")]
        w1_, b1, w2_, b2 = params
        x, y = t["x"], t["y"]

        def run():
            hid = torch.tanh(x @ w1_ + b1)
            loss = row_xent(hid @ w2_ + b2, y)
            return (loss,) + torch.autograd.grad(loss, params)
        return run

    def w5(t):
        w = t["w"].requires_grad_()
        x, y = t["x"], t["y"]

        def run():
            loss = vec_xent(w @ x, y)
            return (loss,) + torch.autograd.grad(loss, [w])
        return run

    def w6(t):
        mu = t["mu"].requires_grad_()
        x = t["x"]

        def run():
            d = x.reshape(-1, 1) - mu.reshape(1, -1)
            with torch.no_grad():
                logp = -0.5 * d * d
                e = torch.exp(logp - torch.max(logp, dim=1, keepdim=True)[0])
                r = e / torch.sum(e, dim=1, keepdim=True)
            loss = torch.sum(r * 0.5 * d * d)
            return (loss,) + torch.autograd.grad(loss, [mu])
        return run

    return {"w1_xent_grad": w1, "w2_logreg_grad": w2, "w3_xent_grad": w3,
            "w4_mlp_grad": w4, "w5_tiny_grad": w5, "w6_mstep_grad": w6}


def read_workloads(d):
    rows = []
    path = os.path.join(d, "workloads.tsv")
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            (cid, func, sizes, sgc, hand, ratio, fwd, spread, rel, fs, fh, pct,
             hpct, bw, gradfwd) = line.rstrip("\n").split("\t")
            rows.append(dict(id=cid, func=func, sizes=sizes, sgc=float(sgc),
                             hand=float(hand), ratio=float(ratio), fwd=float(fwd),
                             gradfwd=float(gradfwd),
                             spread=float(spread), rel=float(rel),
                             flt_sgc=float(fs), flt_hand=float(fh),
                             pct=float(pct), hpct=float(hpct), bw=float(bw)))
    return rows


def print_table(head, table, right_from=2):
    table = [head] + table
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for k, row in enumerate(table):
        cells = [c.ljust(w) if i < right_from else c.rjust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        print("| " + " | ".join(cells) + " |")
        if k == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def fmt_ms(v):
    return "%.4f" % v if v < 0.1 else "%.3f" % v


# ---- the programs, written as a PyTorch user would write the .sg source ----
# Each returns (outputs, gradient function); the gradient function does the
# whole forward and backward pass and returns the values in the order of
# sgc's outputs (value first, then the gradients).

def programs(torch):
    def mlp(t):
        params = [t[k].requires_grad_() for k in ("w1", "b1", "w2", "b2")]
        w1, b1, w2, b2 = params
        x, y = t["x"], t["y"]

        def run():
            hid = torch.tanh(x @ w1 + b1)
            out = hid @ w2 + b2
            loss = torch.mean(torch.square(out - y))
            return (loss,) + torch.autograd.grad(loss, params)
        return run

    def layer(t):
        x, w = t["x"].requires_grad_(), t["w"].requires_grad_()
        seed = t["seed"]

        def run():
            out = torch.tanh(x @ w)
            return (out,) + torch.autograd.grad(out, [x, w], seed)
        return run

    def xent(t):
        w = t["w"].requires_grad_()
        x, y = t["x"], t["y"]

        def run():
            z = w @ x
            e = torch.exp(z - torch.max(z).detach())
            p = e / torch.sum(e)
            loss = -torch.sum(y * torch.log(p))
            return (loss,) + torch.autograd.grad(loss, [w])
        return run

    def ew(t):
        x = t["x"].requires_grad_()

        def run():
            loss = torch.sum(torch.tanh(x) * torch.sigmoid(x) + torch.exp(-torch.square(x)))
            return (loss,) + torch.autograd.grad(loss, [x])
        return run

    def cd1(t):
        params = [t[k].requires_grad_() for k in ("w", "a", "c")]
        w, a, c = params
        v0 = t["v0"]

        def free_energy(v):
            return -(v @ a) - torch.sum(torch.nn.functional.softplus(v @ w + c), dim=1)

        def run():
            h = torch.sigmoid(v0 @ w + c)
            v1 = torch.sigmoid(h @ w.t() + a).detach()
            loss = torch.mean(free_energy(v0) - free_energy(v1))
            return (loss,) + torch.autograd.grad(loss, params)
        return run

    return {"mlp_loss_grad": mlp, "layer_vjp": layer, "xent_grad": xent,
            "ew_grad": ew, "cd1_loss_grad": cd1}


def blas_in_use():
    """The BLAS library PyTorch loaded (Debian's torch uses libblas.so.3,
    which the alternatives system points at OpenBLAS or the reference BLAS)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {l.split()[-1] for l in f if "blas" in l.split()[-1]}
    except OSError:
        return "unknown"
    for lib in sorted(libs):
        if "openblas" in lib or "blis" in lib or "mkl" in lib:
            return lib
    return "reference BLAS (slow)" if libs else "unknown"


def median_time(fn, budget, clock):
    """(median, best) seconds per call: warm-up, then batches of ~4 ms."""
    t0 = time.perf_counter()
    per = None
    while time.perf_counter() - t0 < 0.1 * budget or per is None:
        s = clock()
        fn()
        per = clock() - s
    iters = 1 if per > 4e-3 else int(4e-3 / per) + 1
    rounds = max(11, min(400, int(0.9 * budget / (per * iters))))
    samples = []
    for _ in range(rounds):
        s = clock()
        for _ in range(iters):
            fn()
        samples.append((clock() - s) / iters)
    samples.sort()
    return samples[len(samples) // 2], samples[0]


def max_rel(outs, sgc_outs, np):
    """max over outputs of max |torch - sgc| / max |sgc| (NaN counts as inf)."""
    worst = 0.0
    for got, want in zip(outs, sgc_outs.values()):
        g = got.detach().numpy().astype(np.float64).reshape(want.shape)
        want = want.astype(np.float64)
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        rel = float(np.max(np.abs(g - want))) / (scale if scale > 0 else 1e-30)
        worst = max(worst, rel if rel == rel else float("inf"))
    return worst


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    d = args[0]
    budget = float(args[args.index("--budget") + 1]) if "--budget" in args else 2.5
    use_torch = "--no-torch" not in args
    rows = read_results(d)
    notes = []

    torch_ok = False
    if use_torch:
        try:
            import numpy as np
            import torch
            torch_ok = True
        except ImportError as e:
            notes.append("PyTorch skipped: cannot import it (%s)" % e)
    elif os.environ.get("TORCH_NOTE"):
        notes.append(os.environ["TORCH_NOTE"])

    failed = False
    if torch_ok:
        progs = programs(torch)
        default_threads = torch.get_num_threads()
        # The multi-thread column uses every CPU we may run on (PyTorch's own
        # default can be lower: it counts physical cores as it sees them).
        many = max(default_threads, len(os.sched_getaffinity(0)))
        for r in rows:
            ins, sgc_outs = load_case(d, r["id"], np)
            t = {k: torch.from_numpy(v.copy()) for k, v in ins.items()}
            run = progs[r["func"]](t)
            r["trel"] = max_rel(run(), sgc_outs, np)
            if not r["trel"] <= 1e-3:
                failed = True
            # One thread: the process's CPU time, like bench_main's thread
            # CPU time. Several threads: wall time (CPU time would add up
            # the threads).
            torch.set_num_threads(1)
            r["t1"] = 1e3 * median_time(run, budget, time.process_time)[0]
            torch.set_num_threads(many)
            med, best = median_time(run, budget, time.perf_counter)
            r["tn"], r["tn_best"] = 1e3 * med, 1e3 * best
            torch.set_num_threads(default_threads)
        notes.append("PyTorch %s, eager autograd on the CPU, BLAS: %s; torch-1t: "
                     "torch.set_num_threads(1); torch-%dt: %d threads (PyTorch's "
                     "default on this machine: %d), wall time, median and best "
                     "batch: on a busy machine the median mostly measures "
                     "waiting for a free CPU"
                     % (torch.__version__, blas_in_use(), many, many,
                        default_threads))

    wrows = read_workloads(d)
    if torch_ok and wrows:
        wprogs = workload_programs(torch)
        for r in wrows:
            ins, sgc_outs = load_workload(d, r["id"], np)
            t = {k: torch.from_numpy(v.copy()) for k, v in ins.items()}
            run = wprogs[r["func"]](t)
            r["trel"] = max_rel(run(), sgc_outs, np)
            if not r["trel"] <= 1e-3:
                failed = True
            torch.set_num_threads(1)
            r["t1"] = 1e3 * median_time(run, budget, time.process_time)[0]
            torch.set_num_threads(many)
            r["tn"] = 1e3 * median_time(run, budget, time.perf_counter)[0]
            torch.set_num_threads(default_threads)

    # ---- the table ----
    head = ["function", "sizes", "sgc ms", "hand ms"]
    if torch_ok:
        head += ["torch-1t ms", "torch-%dt ms" % many, "(best)"]
    head += ["sgc/hand"]
    if torch_ok:
        head += ["sgc/torch-1t", "sgc/torch-%dt" % many]
    head += ["hand diff"]
    if torch_ok:
        head += ["torch diff"]
    table = [head]
    for r in rows:
        line = [r["func"], r["sizes"], "%.3f" % r["sgc"], "%.3f" % r["hand"]]
        if torch_ok:
            line += ["%.3f" % r["t1"], "%.3f" % r["tn"], "%.3f" % r["tn_best"]]
        line += ["%.2f" % r["ratio"]]
        if torch_ok:
            line += ["%.2f" % (r["sgc"] / r["t1"]), "%.2f" % (r["sgc"] / r["tn"])]
        line += ["%.0e" % r["rel"]]
        if torch_ok:
            line += ["%.0e" % r["trel"]]
        table.append(line)
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    if torch_ok:
        print("== sgc vs hand-written C vs PyTorch (median ms per call, forward "
              "+ backward; one thread, CPU time, except torch-%dt: wall time) =="
              % many)
    else:
        print("== sgc vs hand-written C (median ms per call, forward + "
              "backward; one thread, CPU time) ==")
    for k, row in enumerate(table):
        cells = [c.ljust(w) if i < 2 else c.rjust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        print("| " + " | ".join(cells) + " |")
        if k == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print("ratios < 1: sgc is faster; sgc/hand is the median of back-to-back "
          "pairs, the PyTorch ratios divide medians. diff: max |x - sgc| / "
          "max |sgc| over all outputs (value and gradients).")
    print("hand = bench/hand/*.c, gcc -O3 -march=native -fno-math-errno "
          "-fopenmp-simd; its matrix products call the runtime's GEMM "
          "(sg_rt_gemm_f32), as an expert would call a BLAS.")
    vec = os.environ.get("HAND_VECTOR_MATH", "").split()
    scal = os.environ.get("HAND_SCALAR_MATH", "").split()
    notes.append("vectorized in the hand-written code (libmvec, lanes): %s; "
                 "scalar calls (loop remainders, single values): %s"
                 % (", ".join(vec) or "none", ", ".join(scal) or "none"))
    sgc_calls = os.environ.get("SGC_MATH_CALLS", "").split()
    notes.append("libm calls in sgc's objects: %s (its exp/log/tanh are inline "
                 "arithmetic)" % (", ".join(sgc_calls) or "none"))
    if wrows:
        print()
        print("== W1-W6 of issue 9: sgc vs expert C%s (median ms per call, "
              "value + gradient) ==" % (" vs PyTorch" if torch_ok else ""))
        head = ["workload", "sizes", "sgc ms", "C ms"]
        if torch_ok:
            head += ["torch-1t ms", "torch-%dt ms" % many]
        head += ["sgc/C"]
        if torch_ok:
            head += ["sgc/torch-1t", "sgc/torch-%dt" % many]
        head += ["grad/fwd", "faults/call sgc", "faults/call C", "%bw sgc", "%bw C",
                 "C diff"]
        if torch_ok:
            head += ["torch diff"]
        table = []
        for r in wrows:
            line = [r["func"], r["sizes"], fmt_ms(r["sgc"]), fmt_ms(r["hand"])]
            if torch_ok:
                line += [fmt_ms(r["t1"]), fmt_ms(r["tn"])]
            line += ["%.2f" % r["ratio"]]
            if torch_ok:
                line += ["%.2f" % (r["sgc"] / r["t1"]), "%.2f" % (r["sgc"] / r["tn"])]
            line += ["%.2f" % r["gradfwd"], "%.0f" % r["flt_sgc"],
                     "%.0f" % r["flt_hand"],
                     "%.0f%%" % r["pct"] if r["pct"] >= 0 else "-",
                     "%.0f%%" % r["hpct"] if r["hpct"] >= 0 else "-",
                     "%.0e" % r["rel"]]
            if torch_ok:
                line += ["%.0e" % r["trel"]]
            table.append(line)
        print_table(head, table)
        print("%%bw: bytes the minimal algorithm moves (W2: x and y once; W3: z and y "
              "twice, dz once) over the bandwidth bound, divided by the time: per timed round, "
              "against the bound measured beside it (the better of two reads of two arrays "
              "with the widest vectors, one with a prefetch per page; median %.1f GB/s), "
              "the median of the rounds. "
              "faults/call: minor page faults per "
              "call after warm-up (getrusage). grad/fwd: sgc's gradient over sgc's "
              "forward function, timed in the same rounds (the median of the rounds' ratios)." % next((r["bw"] for r in wrows if r["pct"] >= 0), wrows[0]["bw"]))
    for n in notes:
        print("note: " + n)
    if failed:
        print("report: FAIL: PyTorch's values differ from sgc's by more than 1e-3",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
