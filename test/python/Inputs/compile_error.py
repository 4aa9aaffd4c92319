"""Print the text of the sgc.CompileError that sgc.load(FILE) raises."""
import sys

import sgc

try:
    sgc.load(sys.argv[1])
    print("no error")
except sgc.CompileError as e:
    sys.stdout.write(str(e))
