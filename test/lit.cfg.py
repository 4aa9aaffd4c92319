# lit configuration for sgc. `make check` runs: python3 lit.py -sv test
#
# Substitutions:
#   %sgc, %sgc-opt   the compiler and the IR tool under test
#   %cc              a C compiler with the runtime's include and library
#                    flags (link: %cc main.c model.o %rtlib -o prog)
#   %rtlib           -lsgrt -lm (and the sanitizers under make check-asan)
#   %llvm_cflags, %llvm_libs   llvm-config-19 --cflags / --ldflags --libs
#   %libsgc          link flags for libsgc (static, with LLVM and -lsgrt)
#   %python          /usr/bin/python3 with build/python on PYTHONPATH
#   %pysgc           the same, for scripts that import sgc also under ASan
#   %valgrind        valgrind memcheck that fails on any error or leak
#   %mpicc, %mpirun  OpenMPI's compiler wrapper (as %cc) and launcher, local
#                    only (REQUIRES: mpi; also graphviz, gdb for those tools,
#                    torch where /usr/bin/python3 imports PyTorch)
#   FileCheck        LLVM's, from llvm-19-tools (`not` is lit's builtin)
import os
import re
import subprocess
import shutil
import lit.formats

config.name = "sgc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".sg", ".ir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "drivers"]
config.test_source_root = os.path.dirname(__file__)
root = os.path.dirname(config.test_source_root)
build = os.path.join(root, os.environ.get("SGC_BUILD", "build"))
config.test_exec_root = os.path.join(build, "test")

llvm_bin = "/usr/lib/llvm-19/bin"
san = os.environ.get("SGC_TEST_SAN", "")
inc = os.path.join(build, "include")
lib = os.path.join(build, "lib")
drivers = os.path.join(config.test_source_root, "drivers")

config.substitutions.append(("%sgc-opt", os.path.join(build, "bin", "sgc-opt")))
config.substitutions.append(("%sgc", os.path.join(build, "bin", "sgc")))
config.substitutions.append(("%cc", "cc -std=c11 -O1 -g -Wall -Wextra -Werror %s -I%s -I%s -I%s"
                             % (san, inc, drivers, os.path.join(root, "runtime"))))
# LLVM's C API flags, for tests that build against LLVM directly
# (test/codegen/gen_math.c); lit's shell has no $(...).
import subprocess
def _llvm_config(*args):
    return subprocess.check_output(["llvm-config-19"] + list(args), text=True).split()
config.substitutions.append(("%llvm_cflags", " ".join(_llvm_config("--cflags"))))
config.substitutions.append(("%llvm_libs", " ".join(_llvm_config("--ldflags", "--libs"))))
config.substitutions.append(("%rtlib", "-L%s -lsgrt -lm -lpthread" % lib))
# libsgc, statically, as `pkg-config --libs sgc` links it.
config.substitutions.append(("%libsgc", "-L%s -lsgc -lsgrt %s -lm -lpthread"
                             % (lib, " ".join(_llvm_config("--ldflags", "--libs")))))
# Debian's python3 (not a pyenv shim on PATH) with the build tree's sgc module.
# %pysgc is the same for a script that imports sgc under make check-asan
# too: the sanitized libsgc.so needs its runtimes loaded first, and Python's
# own allocations live to its exit, so leaks are not checked there (the C
# tests check libsgc's). A test that runs sgc itself keeps %python, so that
# the sanitized compiler it runs checks its leaks.
pythonpath = os.path.join(build, "python")
pysgc = "env PYTHONPATH=%s /usr/bin/python3" % pythonpath
if os.environ.get("SGC_TEST_SAN"):
    def _runtime(name):
        return subprocess.check_output(["cc", "-print-file-name=" + name], text=True).strip()
    pysgc = ("env PYTHONPATH=%s LD_PRELOAD=%s:%s "
             "ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 /usr/bin/python3"
             % (pythonpath, _runtime("libasan.so"), _runtime("libubsan.so")))
config.substitutions.append(("%pysgc", pysgc))
config.substitutions.append(("%python", "env PYTHONPATH=%s /usr/bin/python3" % pythonpath))
config.substitutions.append(("%drivers", drivers))
config.substitutions.append(("%examples", os.path.join(root, "examples")))
config.substitutions.append(("%root", root))
# --fair-sched=yes: valgrind runs one thread at a time, and by default a
# thread spinning on an atomic (the pool's caller waiting for a worker) can
# keep the others from ever running; pool.test's "2 took part" then failed.
config.substitutions.append(("%valgrind",
    "valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all"))
config.substitutions.append(("FileCheck", os.path.join(llvm_bin, "FileCheck")))

for var in ["SGC_VERIFY", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "HOME", "TMPDIR", "SGC_TIMEOUT_SCALE"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
# libsgc's compile cache (lib/cache.c) is off in the suite, so that every
# test compiles (and nothing is written to ~/.cache): the tests of the
# cache set SGC_CACHE_DIR themselves. SGC_CACHE_DIR=DIR make check runs the
# whole suite through a cache in DIR instead.
config.environment["SGC_CACHE_DIR"] = os.environ.get("SGC_CACHE_DIR", "")
if san:
    config.available_features.add("asan")
    # The sanitized compiler is 2-4x slower: the big-input tests keep their
    # "compiles within N s" (no hang) with N scaled (check/Inputs/exit_status.py),
    # so that they still run under ASan for the memory errors they can find.
    config.environment.setdefault("SGC_TIMEOUT_SCALE", "5")
else:
    config.available_features.add("no-asan")
if shutil.which("valgrind"):
    config.available_features.add("valgrind")
# The AVX-512 forms of bench/hand (test/bench/hand_math.test) need the CPU.
try:
    with open("/proc/cpuinfo") as f:
        flags = next((l.split() for l in f if l.startswith("flags")), [])
    if all(x in flags for x in ["avx512f", "avx512dq", "avx512bw", "avx512vl", "fma"]):
        config.available_features.add("avx512")
except OSError:
    pass
# sgc prefers 512-bit vectors on an AVX-512 host, except on the server
# cores whose clock drops under 512-bit load (codegen/cg.c: host_features).
if "avx512" in config.available_features:
    try:
        llc = subprocess.run(["llc-19", "--version"], capture_output=True, text=True).stdout
        host = re.search(r"Host CPU: (\S+)", llc)
        if host and host.group(1) not in ("skylake-avx512", "cascadelake", "cooperlake"):
            config.available_features.add("wide-vectors")
    except OSError:
        pass
# Tools some tests need (.ci/run installs them; elsewhere those tests skip):
# Graphviz for --emit-dot, gdb for -g, OpenMPI for examples/mpi.
for tools, feature in [(["dot"], "graphviz"), (["gdb"], "gdb"), (["mpirun", "mpicc"], "mpi")]:
    if all(shutil.which(t) for t in tools):
        config.available_features.add(feature)
# PyTorch for Debian's python3 (python3-torch), for sgc.torch's tests.
if subprocess.call(["/usr/bin/python3", "-c", "import torch"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("torch")
# OpenMPI: its compiler wrapper with the runtime's flags, and mpirun on this
# machine only (shared memory between ranks, loopback for the launcher;
# root allowed, as CI runs as root).
config.substitutions.append(("%mpicc", "mpicc -std=c11 -O2 -g -Wall -Wextra -Werror %s -I%s -I%s"
                             % (san, inc, drivers)))
config.substitutions.append(("%mpirun", "mpirun --allow-run-as-root --oversubscribe "
                             "--mca btl self,vader --mca oob_tcp_if_include lo"))
