"""sgc from Python: compile .sg programs at run time and call them on NumPy
arrays (spec section 10). Only the standard library's ctypes and NumPy.

    import numpy as np, sgc
    m = sgc.compile(open("xent.sg").read())     # or sgc.load("xent.sg")
    loss = m.xent(w, x, y)                       # a NumPy scalar or array
    loss, d_w = m.xent_grad(w, x, y)             # value and every gradient

Each export and each gradient (f_grad, f_vjp) is a callable of the module.
Its arguments are the function's parameters in order; it allocates the
results (shaped from the symbolic sizes the arguments bind) and returns
them: one result alone, several as a tuple (value first, then the
gradients of the parameters that are not const, in order).

NumPy arrays are passed as they are: a wrong dtype or shape raises
sgc.Error with the runtime's message (never a silent conversion);
non-contiguous arrays are copied first. Plain Python numbers and lists,
which have no dtype of their own, take the parameter's.

How it works: libsgc.so (next to this file) holds the compiler, LLVM's JIT
and the runtime; the signatures come from the C header sgc_header returns,
whose comments give each function's .sg parameters and results.
"""

import ast
import ctypes
import os
import re

import numpy as np

__all__ = ["compile", "load", "Module", "Error", "CompileError"]


class Error(Exception):
    """A call was refused or failed: the runtime's message (sg_last_error),
    e.g. "xent_grad: argument 'x' has shape [5], expected [d] with d = 4
    (bound by 'w')". `code` is the SG_ERR_ code when the runtime gave one."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class CompileError(Error):
    """The program has errors: str(e) is the diagnostics, exactly as the
    sgc command prints them (file:line:col: error: ..., line, caret)."""


MAX_RANK = 8


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("shape", ctypes.c_int64 * MAX_RANK),
                ("rank", ctypes.c_int32),
                ("dtype", ctypes.c_int32)]


_DTYPES = {"f32": (1, np.dtype(np.float32)),
           "f64": (2, np.dtype(np.float64)),
           "i32": (3, np.dtype(np.int32))}
_CODES = {dt: code for code, dt in _DTYPES.values()}


def _load_library():
    path = os.environ.get("SGC_LIBRARY") or os.path.join(os.path.dirname(__file__), "libsgc.so")
    lib = ctypes.CDLL(path)
    lib.sgc_compile.restype = ctypes.c_void_p
    lib.sgc_compile.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                ctypes.POINTER(ctypes.c_void_p)]
    lib.sgc_lookup.restype = ctypes.c_void_p
    lib.sgc_lookup.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.sgc_header.restype = ctypes.c_char_p
    lib.sgc_header.argtypes = [ctypes.c_void_p]
    lib.sgc_free.restype = None
    lib.sgc_free.argtypes = [ctypes.c_void_p]
    lib.sg_last_error.restype = ctypes.c_char_p
    lib.sg_last_error.argtypes = []
    return lib


_lib = _load_library()
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


# ---- signatures, from the header's comments ----
#   /* xent_grad(w: f32[k, d], x: const f32[d], y: const f32[k])
#      -> out: f32, d_w: f32[k, d] */

_SIGNATURE = re.compile(r"/\* (\w+)\((.*?)\)\n\s*-> (.*?) \*/", re.S)
_ENTRY = re.compile(r"(\w+): (const )?(\w+)(?:\[(.*)\])?$")


def _split_top(text):
    """Split at commas outside brackets and parentheses."""
    items, depth, start = [], 0, 0
    for k, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:k].strip())
            start = k + 1
    if text[start:].strip():
        items.append(text[start:].strip())
    return items


class _Slot:
    """One parameter or result: name, dtype name, dims (each an int, a size
    name or a size expression, as text)."""

    def __init__(self, text):
        match = _ENTRY.match(text.strip())
        if not match:
            raise Error("sgc: cannot read the signature entry '%s'" % text)
        self.name, self.dtype = match.group(1), match.group(3)
        self.dims = _split_top(match.group(4)) if match.group(4) is not None else []


def _size(expr, sizes, fname):
    """The value of a dimension (a literal, a size name or an expression of
    them) with the sizes bound by the arguments."""
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in sizes:
                raise Error("%s: size '%s' is not bound by any argument" % (fname, node.id))
            return sizes[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.Div: lambda: a // b, ast.FloorDiv: lambda: a // b,
                   ast.Mod: lambda: a % b}
            if type(node.op) in ops:
                return ops[type(node.op)]()
        raise Error("%s: cannot evaluate the size '%s'" % (fname, expr))
    return ev(ast.parse(expr, mode="eval"))


class Function:
    """A generated entry point: call it with the parameters' arrays."""

    def __init__(self, module, name, address, params, results):
        self._module = module  # keeps the compiled code alive
        self.__name__ = name
        self.params, self.results = params, results
        argtypes = [ctypes.POINTER(_Tensor)] * (len(params) + len(results))
        self._fn = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(address)

    def __repr__(self):
        return "<sgc function %s(%s)>" % (self.__name__, ", ".join(p.name for p in self.params))

    def _argument(self, slot, value):
        if isinstance(value, (np.ndarray, np.generic)):
            array = np.asarray(value)
            if array.dtype not in _CODES:
                raise Error("%s: argument '%s' has dtype %s, expected %s"
                            % (self.__name__, slot.name, array.dtype, slot.dtype), 2)
        else:  # a Python number or list: no dtype of its own
            array = np.asarray(value, dtype=_DTYPES[slot.dtype][1])
        if array.ndim > MAX_RANK:
            raise Error("%s: argument '%s' has rank %d, expected %d"
                        % (self.__name__, slot.name, array.ndim, len(slot.dims)), 3)
        return np.require(array, requirements=["C", "A"])

    def __call__(self, *args):
        if len(args) != len(self.params):
            raise TypeError("%s() takes %d arguments (%s), got %d"
                            % (self.__name__, len(self.params),
                               ", ".join(p.name for p in self.params), len(args)))
        arrays = [self._argument(p, a) for p, a in zip(self.params, args)]
        # Sizes named by the parameters, bound by the first argument that
        # uses them (the runtime checks that the others agree).
        sizes = {}
        for slot, array in zip(self.params, arrays):
            if array.ndim == len(slot.dims):
                for dim, n in zip(slot.dims, array.shape):
                    if re.fullmatch(r"[A-Za-z_]\w*", dim):
                        sizes.setdefault(dim, n)
        outputs = []
        for slot in self.results:
            try:
                shape = tuple(_size(d, sizes, self.__name__) for d in slot.dims)
            except Error:
                shape = None  # an argument is misshaped: the runtime will say which
            if shape is None or any(n < 0 for n in shape):
                shape = (0,) * len(slot.dims)
            outputs.append(np.empty(shape, dtype=_DTYPES[slot.dtype][1]))
        tensors = []
        for array in arrays + outputs:
            t = _Tensor()
            t.data = array.ctypes.data if array.size else None
            t.rank = array.ndim
            t.dtype = _CODES.get(array.dtype, 0)
            for k, n in enumerate(array.shape):
                t.shape[k] = n
            tensors.append(t)
        rc = self._fn(*[ctypes.byref(t) for t in tensors])
        if rc != 0:
            message = _lib.sg_last_error()
            raise Error(message.decode() if message else "%s failed (%d)" % (self.__name__, rc), rc)
        values = [o[()] if o.ndim == 0 else o for o in outputs]
        return values[0] if len(values) == 1 else tuple(values)


class Module:
    """A compiled program: one attribute per export and per gradient."""

    def __init__(self, handle, filename):
        self._handle = handle
        self.filename = filename
        self.header = _lib.sgc_header(handle).decode()
        self.functions = {}
        for match in _SIGNATURE.finditer(self.header):
            name = match.group(1)
            address = _lib.sgc_lookup(handle, name.encode())
            if not address:
                continue
            params = [_Slot(p) for p in _split_top(match.group(2))]
            results = [_Slot(r) for r in _split_top(match.group(3))]
            self.functions[name] = Function(self, name, address, params, results)
            setattr(self, name, self.functions[name])

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.sgc_free(self._handle)
            self._handle = None

    def __repr__(self):
        return "<sgc module %s: %s>" % (self.filename, ", ".join(self.functions))


def compile(source, filename="<source>", options=None):
    """Compile a whole .sg program. `options` are sgc flags ("-O3",
    "--target-cpu=generic"). Raises CompileError with the diagnostics."""
    if isinstance(source, str):
        source = source.encode()
    errors = ctypes.c_void_p()
    handle = _lib.sgc_compile(source, filename.encode(),
                              options.encode() if options else None, ctypes.byref(errors))
    if not handle:
        text = ctypes.string_at(errors.value).decode() if errors.value else "sgc: error\n"
        _libc.free(errors)
        raise CompileError(text)
    return Module(handle, filename)


def load(path, options=None):
    """Compile the .sg file at `path` (named so in messages)."""
    with open(path, encoding="utf-8") as f:
        return compile(f.read(), str(path), options)
