"""Run a command and print its exit status on standard output (after
whatever the command printed), so that a FileCheck test can check the
exact status:

    python3 %S/Inputs/exit_status.py [--timeout=SECONDS] CMD ARGS... | FileCheck

The command's standard error is passed through unchanged. With a timeout
(default 300 seconds) a command still running is killed and the line is
"timed out after SECONDS s" instead, so a hang fails the test quickly and
says why. The status of this script is 0 unless the command could not be
run at all."""
import subprocess
import sys

args = sys.argv[1:]
timeout = 300.0
if args and args[0].startswith("--timeout="):
    timeout = float(args[0].split("=", 1)[1])
    args = args[1:]
sys.stdout.flush()
try:
    rc = subprocess.call(args, timeout=timeout)
except subprocess.TimeoutExpired:
    print("timed out after %g s" % timeout)
    sys.exit(0)
print("exit status: %d" % rc)
