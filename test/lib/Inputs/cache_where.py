"""Where the cache lives: $SGC_CACHE_DIR, else $XDG_CACHE_HOME/sgc (only an
absolute one, as the XDG specification says), else ~/.cache/sgc; set and
empty, SGC_CACHE_DIR turns the cache off (nothing written, nothing
traced); a directory that cannot be made or written costs only the
caching. Usage: cache_where.py TMP FILE.sg"""
import os
import sys

from cache_run import done, entries, equal, kinds, run

tmp, source = sys.argv[1], sys.argv[2]
home, xdg = os.path.join(tmp, "home"), os.path.join(tmp, "xdg")
want, _, _ = run("", source)


def case(what, cache_dir, env, where):
    got, _, trace = run(cache_dir, source, extra=env)
    equal(got, want, "%s: same results" % what)
    print("  " + (", ".join(kinds(trace, where)) or "(no trace)"))
    return trace


case("HOME", None, {"HOME": home, "XDG_CACHE_HOME": None}, home + "/.cache/sgc")
equal(len(entries(home + "/.cache/sgc")), 1, "  an entry in ~/.cache/sgc")
case("XDG_CACHE_HOME", None, {"HOME": home, "XDG_CACHE_HOME": xdg}, xdg + "/sgc")
equal(len(entries(xdg + "/sgc")), 1, "  an entry in $XDG_CACHE_HOME/sgc")
case("a relative XDG_CACHE_HOME", None, {"HOME": home, "XDG_CACHE_HOME": "rel"}, home + "/.cache/sgc")
case("SGC_CACHE_DIR", os.path.join(tmp, "mine"), {"HOME": home, "XDG_CACHE_HOME": xdg},
     os.path.join(tmp, "mine"))
equal(len(entries(os.path.join(tmp, "mine"))), 1, "  an entry in $SGC_CACHE_DIR")
trace = case("SGC_CACHE_DIR set and empty", "", {"HOME": os.path.join(tmp, "home2")}, tmp)
equal(os.path.exists(os.path.join(tmp, "home2")), False, "  nothing written")
open(os.path.join(tmp, "file"), "w").close()
case("SGC_CACHE_DIR under a file", os.path.join(tmp, "file", "cache"), {}, tmp)
case("SGC_CACHE_DIR a file", os.path.join(tmp, "file"), {}, tmp)
case("no HOME", None, {"HOME": None, "XDG_CACHE_HOME": None}, tmp)
done()
