"""import sgc with torch unimportable: the module works, sgc.torch says
it needs PyTorch."""
import sys

sys.modules["torch"] = None  # import torch now raises ImportError

import numpy as np  # noqa: E402
import sgc  # noqa: E402
from check import done, equal  # noqa: E402

equal("sgc" in sys.modules, True, "import sgc without torch")
m = sgc.load(sys.argv[1])
w = np.ones((3, 4), np.float32)
x = np.ones(4, np.float32)
y = np.array([0, 1, 0], np.float32)
equal(m.xent_grad(w, x, y)[1].shape, (3, 4), "xent_grad works")
try:
    import sgc.torch  # noqa: F401
except ImportError as e:
    print("ImportError: %s" % e)
done()
