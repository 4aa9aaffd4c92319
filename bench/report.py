"""report.py: the PyTorch half of `make bench`, and the final table.

Reads what the drivers wrote: bench_main's DIR/results.tsv and
workloads_main's DIR/workloads.tsv (sgc and hand-written C times, ratios,
faults, memory), DIR/portable.tsv (the expert C against the portable C)
and DIR/scaling.tsv (the thread pool, idle and loaded), and per case
DIR/ID.txt and DIR/ID.bin (its inputs and sgc's outputs). Times the same
programs in PyTorch's eager autograd (forward + backward, the gradient with
torch.autograd.grad) on the same data -- once with torch.set_num_threads(1),
like for like with single-threaded sgc (CPU time, as the drivers measure),
and once with every CPU (wall time) -- checks PyTorch's values against
sgc's, and prints one table with every case's ratios, then the thread
pool's table. Each time is the median of many batches after a warm-up.
Without torch (--no-torch) it prints the tables without the PyTorch
columns; that path needs only the standard library.

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
        dtype = {"f64": np.float64, "i32": np.int32}.get(dt, np.float32)
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

    def rnn(t):
        params = [t[k].requires_grad_() for k in ("emb", "u", "w", "bh", "vo", "bo")]
        emb, u, w, bh, vo, bo = params
        tokens, targets = t["tokens"].long(), t["targets"].long()
        steps, b = tokens.shape

        def run():
            hs = torch.zeros(b, w.shape[0])
            loss = 0
            for i in range(steps):
                hs = torch.tanh(emb[tokens[i]] @ u + hs @ w + bh)
                loss = loss + torch.nn.functional.cross_entropy(
                    hs @ vo + bo, targets[i], reduction="sum")
            loss = loss / (steps * b)
            return (loss,) + torch.autograd.grad(loss, params)
        return run

    def xloop(t):
        z = t["z"].requires_grad_()
        y = t["y"]

        def run():
            loss = 0
            for i in range(z.shape[0]):
                loss = loss + row_xent(z[i], y[i])
            return (loss,) + torch.autograd.grad(loss, [z])
        return run

    def take3(t):
        a = t["a"].requires_grad_()
        w = t["w"]
        idx = (torch.arange(3) + 1) % 3

        def run():
            loss = torch.sum(w * torch.square(torch.index_select(a, 1, idx)))
            return (loss,) + torch.autograd.grad(loss, [a])
        return run

    def bmm(t):
        a, x = t["a"].requires_grad_(), t["x"].requires_grad_()

        def run():
            loss = torch.sum(torch.square(a @ x))
            return (loss,) + torch.autograd.grad(loss, [a, x])
        return run

    return {"w1_xent_grad": w1, "w2_logreg_grad": w2, "w3_xent_grad": w3,
            "w4_mlp_grad": w4, "w5_tiny_grad": w5, "w6_mstep_grad": w6,
            "rnn_lm_grad": rnn, "xent_loop_grad": xloop, "take3_grad": take3,
            "bmm2_grad": bmm, "bmm3_grad": bmm, "bmm4_grad": bmm, "bmm8_grad": bmm}


WORKLOAD_COLUMNS = ("id func sizes sgc hand ratio rspread fwd gradfwd spread rel "
                    "flt_sgc flt_hand pct hpct fpct bw twin tspread").split()


def read_workloads(d):
    """workloads_main's rows (workloads.tsv, columns as WORKLOAD_COLUMNS)."""
    rows = []
    path = os.path.join(d, "workloads.tsv")
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            cells = line.rstrip("\n").split("\t")
            r = dict(zip(WORKLOAD_COLUMNS, cells))
            for k in WORKLOAD_COLUMNS[3:]:
                r[k] = float(r[k])
            rows.append(r)
    return rows


def read_portable(d):
    """workloads_main --portable's rows (portable.tsv)."""
    path = os.path.join(d, "portable.tsv")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [dict(id=c[0], func=c[1], portable=float(c[2]), expert=float(c[3]),
                     ratio=float(c[4]), spread=float(c[5]))
                for c in (line.rstrip("\n").split("\t") for line in f)]


def read_scaling(d):
    """workloads_main --scaling's rows (scaling.tsv)."""
    path = os.path.join(d, "scaling.tsv")
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for line in f:
            cid, func, t1, tn, sp, t1l, tnl, spl, same = line.rstrip("\n").split("\t")
            rows.append(dict(id=cid, func=func, t1=float(t1), tn=float(tn), sp=float(sp),
                             t1l=float(t1l), tnl=float(tnl), spl=float(spl), same=same))
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
    """Milliseconds to 4 significant digits (a W5 call is 0.0002 ms)."""
    return "%.4g" % v if v < 1000 else "%.0f" % v


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
    # at least 11 rounds, or 3 when 11 would take more than four budgets
    # (PyTorch's RNN takes about a second a call here, seven on 2 busy CPUs)
    least = 11 if 11 * per * iters <= 4 * budget else 3
    rounds = max(least, min(400, int(0.9 * budget / (per * iters))))
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

    # ---- one table: every case of bench_main and workloads_main ----
    for r in rows:  # bench_main measures none of these
        r.update(rspread=r["spread"], gradfwd=-1, flt_sgc=-1, flt_hand=-1,
                 pct=-1, hpct=-1, fpct=-1, twin=-1)
    head = ["workload", "sizes", "sgc ms", "C ms", "sgc/C", "spread"]
    if torch_ok:
        head += ["torch-1t ms", "torch-%dt ms" % many, "sgc/torch-1t", "sgc/torch-%dt" % many]
    head += ["grad/fwd", "faults sgc/C", "memory sgc/C/fwd", "C diff"]
    if torch_ok:
        head += ["torch diff"]
    table = []
    for r in rows + wrows:
        line = [r["func"], r["sizes"], fmt_ms(r["sgc"]), fmt_ms(r["hand"]),
                "%.2f" % r["ratio"], "%.0f%%" % r["rspread"]]
        if torch_ok:
            line += [fmt_ms(r["t1"]), fmt_ms(r["tn"]), "%.2f" % (r["sgc"] / r["t1"]),
                     "%.2f" % (r["sgc"] / r["tn"])]
        line += ["%.2f" % r["gradfwd"] if r["gradfwd"] > 0 else "-",
                 "%.0f/%.0f" % (r["flt_sgc"], r["flt_hand"]) if r["flt_sgc"] >= 0 else "-",
                 "%.2f/%.2f/%.2f" % (100 / r["pct"], 100 / r["hpct"], 100 / r["fpct"])
                 if r["pct"] > 0 else "-",
                 "%.0e" % r["rel"]]
        if torch_ok:
            line += ["%.0e" % r["trel"]]
        table.append(line)
    print("== sgc vs an expert's C%s: value and gradient, median ms per call "
          "(one thread, CPU time%s) =="
          % (" vs PyTorch" if torch_ok else "",
             ", except torch-%dt: wall time" % many if torch_ok else ""))
    print_table(head, table)
    print("sgc/C: the median of the rounds' ratios, sgc and the C timed alternately in one "
          "process; spread: the ratios' interquartile range over their median (for the "
          "first rows, bench_main's: the larger of the two sides' times'). Ratios < 1: sgc "
          "is faster; the PyTorch ratios divide medians. grad/fwd: sgc's gradient over its "
          "forward function, timed in the same rounds. faults: minor page faults per call "
          "after warm-up. memory: for the streaming workloads, the time over that of the "
          "least traffic any algorithm needs (W2: x and y read once; W3: z and y read, then "
          "read again with dz streamed out; the forward: one read), as bare loops timed "
          "beside each round: 1.00 is the speed of memory (passes over memory, in effect). "
          "diff: max |x - sgc| / max |sgc| over all outputs.")
    print("C = bench/hand/*.c (gcc -O3 -march=native): AVX-512 intrinsics where the CPU "
          "has them (workloads, the RNN, the expert's packed GEMM), the older cases' "
          "C calling the runtime's GEMM as one calls a BLAS.")
    for r in wrows:
        if r["twin"] > 0:
            what = {"xloop": "the loop's gradient over the same 32 steps unrolled",
                    "w1": "written out over written with log_softmax",
                    "w3": "written out over written with logsumexp"}.get(r["id"], "over its twin")
            print("%s: %s: %.2f (spread %.0f%%; bar: 1.25)"
                  % (r["func"], what, r["twin"], r["tspread"]))
        if r["id"] == "w5":
            print("w5_tiny_grad per call: sgc %.0f ns, C %.0f ns (bar: 1.5x)"
                  % (1e6 * r["sgc"], 1e6 * r["hand"]))
    prows = read_portable(d)
    if prows:
        print("the expert's C against the portable C the runs before issue 30 used, "
              "alternated: " + ", ".join("%s %.2fx" % (r["id"].upper(), r["ratio"])
                                         for r in prows)
              + " faster (the issue's expert on an EPYC: W2 3.5x, W3 2.5x, W5 3.7x, W6 2.8x)")
    srows = read_scaling(d)
    if srows:
        print()
        print("== the thread pool: sgc's gradient on one thread and on the default "
              "(every core), wall time, median; then with two busy processes beside it ==")
        head = ["workload", "1t ms", "all ms", "speedup", "1t ms, load 2", "all ms, load 2",
                "speedup, load 2", "bit-identical"]
        print_table(head, [[r["func"], fmt_ms(r["t1"]), fmt_ms(r["tn"]), "%.2f" % r["sp"],
                            fmt_ms(r["t1l"]), fmt_ms(r["tnl"]), "%.2f" % r["spl"], r["same"]]
                           for r in srows], right_from=1)
        print("speedup: the median of the rounds' 1-thread time over the all-thread time "
              "(below 1: the pool costs time). Other jobs on the machine add to the load.")
    vec = os.environ.get("HAND_VECTOR_MATH", "").split()
    scal = os.environ.get("HAND_SCALAR_MATH", "").split()
    notes.append("libmvec in the hand-written objects (lanes): %s; scalar libm calls: %s"
                 % (", ".join(vec) or "none", ", ".join(scal) or "none"))
    sgc_calls = os.environ.get("SGC_MATH_CALLS", "").split()
    notes.append("libm calls in sgc's objects: %s (its exp/log/tanh are inline "
                 "arithmetic)" % (", ".join(sgc_calls) or "none"))
    for n in notes:
        print("note: " + n)
    if failed:
        print("report: FAIL: PyTorch's values differ from sgc's by more than 1e-3",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
