"""Processes compiling the same source at the same time all succeed: six
start together on an empty cache directory, each compiles examples/mlp.sg
(about half a second), stores its entry (a temporary file renamed over the
entry) and calls the result. All give the same results, one entry and no
temporary file remain, and the next process hits it.
Usage: cache_concurrent.py DIR FILE.sg"""
import concurrent.futures
import os
import sys

from cache_run import done, entries, equal, kinds, run

directory, source = sys.argv[1], sys.argv[2]
with concurrent.futures.ThreadPoolExecutor(6) as pool:
    outcomes = list(pool.map(lambda _: run(directory, source), range(6)))
results = [r for r, _, _ in outcomes]
equal(None in results, False, "6 processes at once: every one succeeded")
equal(len(set(results)), 1, "the same results in every one")
stored = sum(any(t.startswith("sgc: cache: stored") for t in trace) for _, _, trace in outcomes)
hits = sum(any(t.startswith("sgc: cache: hit") for t in trace) for _, _, trace in outcomes)
equal(stored + hits, 6, "each stored the entry or found it whole")
equal(len(entries(directory)), 1, "one entry")
equal([f for f in os.listdir(directory) if f.startswith(".tmp-")], [], "no temporary file left")
again, _, trace = run(directory, source)
equal(again, results[0], "the next process: same results")
print("next:", ", ".join(kinds(trace, directory)))
done()
