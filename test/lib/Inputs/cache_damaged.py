"""A damaged entry is detected, compiled again and written over, never
loaded: each damage below is done to a good entry, then a new process
compiles the same source. It must succeed with the first compile's
results, say why it rejected the entry (or missed it), and store a good
entry again, which the next process hits. Usage: cache_damaged.py DIR FILE.sg OTHER.sg"""
import os
import sys

from cache_run import done, entries, equal, kinds, run

directory, source, other = sys.argv[1], sys.argv[2], sys.argv[3]
want, _, _ = run(directory, source)
path = os.path.join(directory, entries(directory)[0])
good = open(path, "rb").read()


def flip(at):
    return lambda b: b[:at] + bytes([b[at] ^ 0x40]) + b[at + 1:]


def into_directory():
    os.remove(path)
    os.mkdir(path)


def symlink():
    os.rmdir(path)
    open(path + ".elsewhere", "wb").write(good)
    os.symlink(path + ".elsewhere", path)


def other_key():
    """A whole entry, its checksum right, of another source (as a hash
    collision would give)."""
    os.remove(path)
    run(directory + "/other", other)
    os.rename(os.path.join(directory, "other", entries(directory + "/other")[0]), path)


damages = [
    ("truncated to half", lambda b: b[:len(b) // 2]),
    ("truncated by one byte", lambda b: b[:-1]),
    ("empty", lambda b: b""),
    ("a byte of the object flipped", flip(len(good) - 200)),
    ("a byte of the key flipped", flip(60)),
    ("the checksum flipped", flip(len(good) - 1)),
    ("the magic flipped", flip(0)),
    ("a length flipped", flip(40)),
    ("garbage appended", lambda b: b + b"\0" * 16),
    ("random bytes", lambda b: os.urandom(len(b))),
]
for what, damage in damages:
    open(path, "wb").write(damage(good))
    got, _, trace = run(directory, source)
    print("%s: %s" % (what, ", ".join(kinds(trace, directory))))
    equal(got, want, "  same results")
    equal(open(path, "rb").read() == good, True, "  a good entry again")

for what, damage in [("a directory in its place", into_directory), ("a symbolic link", symlink),
                     ("another source's entry", other_key)]:
    damage()
    got, _, trace = run(directory, source)
    print("%s: %s" % (what, ", ".join(kinds(trace, directory))))
    equal(got, want, "  same results")
equal(open(path, "rb").read() == good, True, "a good entry again")
got, _, trace = run(directory, source)
print("then:", ", ".join(kinds(trace, directory)))
done()
