"""Run a command and print its exit status on standard output (after
whatever the command printed), so that a FileCheck test can check the
exact status:

    python3 %S/Inputs/exit_status.py [--timeout=SECONDS] CMD ARGS... | FileCheck

The command's standard error is passed through unchanged. With a timeout
(default 300 seconds) a command still running is killed and the line is
"timed out after SECONDS s" instead, so a hang fails the test quickly and
says why. SGC_TIMEOUT_SCALE (set by lit under `make check-asan`, whose
sanitized compiler runs several times slower) multiplies the timeout; the
message still names the unscaled limit the test states. The status of this script is 0 unless the command could not be
run at all."""
import subprocess
import sys

args = sys.argv[1:]
timeout = 300.0
if args and args[0].startswith("--timeout="):
    timeout = float(args[0].split("=", 1)[1])
    args = args[1:]
import os
scale = float(os.environ.get("SGC_TIMEOUT_SCALE", "1"))
sys.stdout.flush()
try:
    rc = subprocess.call(args, timeout=timeout * scale)
except subprocess.TimeoutExpired:
    print("timed out after %g s" % timeout)
    sys.exit(0)
print("exit status: %d" % rc)
