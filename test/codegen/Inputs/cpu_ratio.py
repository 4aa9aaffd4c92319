"""Compile two programs and check how their compile times compare:

    python3 cpu_ratio.py MAX_RATIO SMALL.sg BIG.sg -- SGC [ARGS...]

Runs `SGC ARGS FILE -o FILE.o` for each (small first), measures the CPU
time of each compile (user + system, from the child's rusage: not wall
time, which on a shared machine counts the time spent waiting for a CPU)
and prints "ratio ok" if BIG took at most MAX_RATIO times as long as
SMALL, or both times and the ratio otherwise."""
import os
import resource
import subprocess
import sys

limit, small, big = float(sys.argv[1]), sys.argv[2], sys.argv[3]
cmd = sys.argv[sys.argv.index("--") + 1:]


def cpu_of(src):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd + [src, "-o", src + ".o"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


t_small = cpu_of(small)
t_big = cpu_of(big)
ratio = t_big / max(t_small, 1e-3)
if ratio <= limit:
    print("ratio ok")
else:
    print("%s: %.2f s, %s: %.2f s, ratio %.1f > %.1f"
          % (os.path.basename(small), t_small, os.path.basename(big), t_big, ratio, limit))
