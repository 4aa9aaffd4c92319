"""Every flag and environment variable sgc --help describes must be in the
manual page as man formats it. Usage: man_lists.py HELP_TEXT MAN_TEXT"""
import re
import sys

help_text = open(sys.argv[1]).read()
man = open(sys.argv[2]).read()
described = help_text.partition("\n\n")[2]
flags = set()
for line in described.splitlines():
    m = re.match(r"  (-[^\s,]+(?:, -[^\s,]+)*|-O0 -O1 -O2 -O3)\s", line)
    if m:
        flags |= {f.split("[")[0].split("=")[0] for f in re.split(r",? ", m.group(1))}
names = set(re.findall(r"^  ([A-Z_]{3,})\s", described, re.M))
missing = [f for f in sorted(flags) if not re.search(r"(^|[\s\[|(,])%s\b" % re.escape(f), man, re.M)]
missing += [n for n in sorted(names) if n not in man]
for m in missing:
    print("missing from the manual: " + m)
print("%d flags and %d environment variables of --help, %d missing from the manual"
      % (len(flags), len(names), len(missing)))
