"""A second compile of the same source in a new process takes the cached
object: no stage of the compiler runs (the trace says hit), it costs at
least 10x less CPU time than the first, and the results are the same
bits. Usage: cache_hit.py DIR FILE.sg"""
import sys

from cache_run import done, entries, equal, kinds, run

directory, source = sys.argv[1], sys.argv[2]
first, t1, trace1 = run(directory, source)
second, t2, trace2 = run(directory, source)
print("first:", ", ".join(kinds(trace1, directory)))
print("second:", ", ".join(kinds(trace2, directory)))
equal(len(entries(directory)), 1, "one entry")
equal(second, first, "the same results, bit for bit")
equal(t1 >= 10 * t2, True, "the cached compile costs at least 10x less CPU time")
if t1 < 10 * t2:
    print("  first %.4f s, second %.4f s" % (t1, t2))
third, t3, trace3 = run(directory, source)
print("third:", ", ".join(kinds(trace3, directory)))
done()
