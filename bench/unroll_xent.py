"""unroll_xent.py: writes the straight-line twin of bench/xent_loop.sg, the
loop's 32 steps as 32 copies of its body (issue 30, item 3: the loop must
run within 1.25x of them). Usage: python3 bench/unroll_xent.py OUT.sg"""
import sys

STEPS = 32


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lines = ["# Written by bench/unroll_xent.py: bench/xent_loop.sg's 32 steps,",
             "# unrolled by hand.",
             "export fn xent_unrolled(z: f32[%d, n, k], y: const f32[%d, n, k]) -> f32 {"
             % (STEPS, STEPS)]
    for i in range(STEPS):
        lines += ["  let z%d = z[%d];" % (i, i),
                  "  let s%d = z%d - reshape(stop_gradient(max(z%d, axis=1)), [n, 1]);"
                  % (i, i, i),
                  "  let lse%d = log(sum(exp(s%d), axis=1));" % (i, i),
                  "  let l%d = sum(y[%d] * (reshape(lse%d, [n, 1]) - s%d));" % (i, i, i, i)]
    # the loop adds the steps' losses one by one to 0, in order
    total = "0.0"
    for i in range(STEPS):
        total = "(%s + l%d)" % (total, i) if i else "l0"
    lines += ["  return %s;" % total, "}"]
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
