"""sgc from Python: compile .sg programs at run time and call them on NumPy
arrays (spec section 10). Only the standard library's ctypes and NumPy.

    import numpy as np, sgc
    m = sgc.compile(open("xent.sg").read())     # or sgc.load("xent.sg")
    loss = m.xent(w, x, y)                       # a NumPy scalar or array
    loss, d_w = m.xent_grad(w, x, y)             # value and every gradient

Each export and each derivative (f_grad, f_vjp, f_jvp, f_hvp) is a
function of the module; help(m.f) shows its .sg signature. Its arguments
are the function's parameters in order; it allocates the results (shaped
from the sizes the arguments bind) and returns them: one result alone,
several as a tuple (f_grad: the value, then the gradient of each parameter
that is not const and not i32, in order; f_jvp: (out, t_out); f_hvp:
(out, (d_pa, ...), (hv_pa, ...))).

Arguments are never converted with a loss (spec section 10, v3):
- an array (NumPy, a torch tensor, anything with __array__) of another
  float dtype than the parameter's raises sgc.Error with the fix in the
  message (w.astype(np.float32)); so does a float array for an i32
  parameter, or an integer array for a float one;
- integer arrays of any width are accepted for an i32 parameter when every
  value fits (checked: the first that does not is named);
- Python numbers and lists, which have no dtype of their own, take the
  parameter's: for i32 only integers (2.0 is 2, 0.5 is an error), for a
  float parameter integers only where exact, and floats rounded to f32 as
  an f32 literal in a .sg program is (one beyond f32's range is an error);
- None is an error that says so;
- non-contiguous arrays are copied; shapes and ranks are checked by the
  generated code, whose message sgc.Error carries.

How it works: libsgc.so (next to this file) holds the compiler, LLVM's JIT
and the runtime; the signatures come from the C header sgc_header returns,
whose comments give each function's .sg parameters and results. Each entry
point gets a Python function written for its signature when the module is
loaded (_caller: dtypes, ranks, descriptor offsets and result shapes as
constants). A call fills descriptors kept per function (a free list: the
GIL is released during the call, so two threads never share one) and calls
the entry point through ctypes with their addresses; an argument that is
already a contiguous array of the parameter's dtype and rank takes a path
that does nothing else (`make bench`: bench/python_overhead.py).
"""

import ast
import ctypes
import inspect
import keyword
import os
import re

import numpy as np

__all__ = ["compile", "load", "Module", "Error", "CompileError", "set_num_threads",
           "__version__"]


class Error(Exception):
    """A call was refused or failed: the runtime's message (sg_last_error),
    e.g. "xent_grad: argument 'x' has shape [5], expected [d] with d = 4
    (bound by 'w')". `code` is the SG_ERR_ code when there is one."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class CompileError(Error):
    """The program has errors: str(e) is the diagnostics, exactly as the
    sgc command prints them (file:line:col: error: ..., line, caret)."""


MAX_RANK = 8
# sg_runtime.h's codes, for the errors raised here before a call.
_ERR_NULL, _ERR_DTYPE, _ERR_RANK = 1, 2, 3

# One sg_tensor is 10 words: data, shape[8], then rank and dtype (int32
# each) in the last.
_WORDS = 2 + MAX_RANK


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
    lib.sgc_version.restype = ctypes.c_char_p
    lib.sgc_version.argtypes = []
    lib.sg_last_error.restype = ctypes.c_char_p
    lib.sg_last_error.argtypes = []
    lib.sg_set_num_threads.restype = None
    lib.sg_set_num_threads.argtypes = [ctypes.c_int]
    return lib


_lib = _load_library()
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None

__version__ = _lib.sgc_version().decode()


def set_num_threads(n):
    """The number of threads a call may use (0: every core), for calls made
    from now on by any thread: sg_set_num_threads. The default is the
    environment variable SG_NUM_THREADS, else the number of cores."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError("sgc.set_num_threads: expected a number of threads >= 0 (0: every "
                         "core), got %r" % (n,))
    _lib.sg_set_num_threads(int(min(n, 1 << 30)))


# ---- signatures, from the header's comments ----
#   /* xent_grad(w: f32[k, d], x: const f32[d], y: const f32[k])
#      -> out: f32, d_w: f32[k, d] */

_SIGNATURE = re.compile(r"/\* (\w+)\((.*?)\)\n\s*-> (.*?) \*/", re.S)
_ENTRY = re.compile(r"(\w+): (const )?(\w+)(?:\[(.*)\])?$")
_NAME = re.compile(r"[A-Za-z_]\w*$")

_DTYPES = {"f32": (1, np.dtype(np.float32), "np.float32"),
           "f64": (2, np.dtype(np.float64), "np.float64"),
           "i32": (3, np.dtype(np.int32), "np.int32")}
_SG_NAMES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
             np.dtype(np.int32): "i32"}
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


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
    """One parameter or result: its name, .sg type (dtype name, dims: each
    an int, a size name or a size expression, as text) and whether it is
    const; the descriptor's dtype code and the NumPy dtype."""

    def __init__(self, text):
        match = _ENTRY.match(text.strip())
        if not match:
            raise Error("sgc: cannot read the signature entry '%s'" % text)
        self.name, self.is_const, self.dtype = match.group(1), bool(match.group(2)), match.group(3)
        self.dims = _split_top(match.group(4)) if match.group(4) is not None else []
        self.rank = len(self.dims)
        self.code, self.npdtype, self.np_name = _DTYPES[self.dtype]
        # The descriptor's last word: rank, then dtype (little-endian int32s).
        self.rank_dtype = self.rank | (self.code << 32)

    def type_text(self):
        return "%s%s%s" % ("const " if self.is_const else "", self.dtype,
                           "[%s]" % ", ".join(self.dims) if self.dims else "")


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


# ---- arguments: what may be passed for a parameter, and how ----

def _describe(value):
    """How an argument is named in a message about its dtype: its kind of
    object, for the fix to read right (w.astype(...) or w.to(...))."""
    module = type(value).__module__ or ""
    return "torch" if module.split(".")[0] == "torch" else "array"


def _dtype_error(fname, slot, got, kind):
    if kind == "torch":
        fix = "%s.to(torch.%s)" % (slot.name, slot.np_name[3:])
    else:
        fix = "%s.astype(%s)" % (slot.name, slot.np_name)
    return Error("%s: argument '%s' has dtype %s, expected %s (sgc does not convert it: pass %s)"
                 % (fname, slot.name, _SG_NAMES.get(got, str(got)), slot.dtype, fix), _ERR_DTYPE)


def _first_outside(array, low, high):
    """The first value of an integer array outside [low, high] and its
    index, or None."""
    bad = np.flatnonzero((array < low) | (array > high))
    if not bad.size:
        return None
    index = np.unravel_index(bad[0], array.shape)
    return array.flat[bad[0]], tuple(int(k) for k in index)


def _at(index):
    return "" if not index else " at index %s" % (index[0] if len(index) == 1 else index,)


def _typed_array(fname, slot, array, kind):
    """An array with a dtype of its own for `slot`: itself if its dtype is
    the parameter's, an int32 copy of an integer array for an i32
    parameter whose values all fit, else sgc.Error."""
    dt = array.dtype
    if dt == slot.npdtype and dt.isnative:
        return array
    if slot.dtype == "i32" and dt.kind in "iu":
        if dt.itemsize >= 4 and not (dt.kind == "i" and dt.itemsize == 4):
            outside = _first_outside(array, _I32_MIN, _I32_MAX)
            if outside is not None:
                return Error("%s: argument '%s' has dtype %s and its value %d%s does not fit "
                             "in i32" % (fname, slot.name, dt, outside[0], _at(outside[1])),
                             _ERR_DTYPE)
        return array.astype(np.int32)
    return _dtype_error(fname, slot, dt, kind)


def _index_of(array, flat):
    return _at(tuple(int(k) for k in np.unravel_index(flat, array.shape)))


def _python_value(fname, slot, value):
    """A Python number or (nested) list or tuple for `slot`: converted only
    exactly (floats for an f32 parameter round as an f32 literal does)."""
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as e:
        return Error("%s: argument '%s' cannot be read as an %s array: %s"
                     % (fname, slot.name, slot.dtype, e), _ERR_DTYPE)
    kind = array.dtype.kind
    if kind == "O" and array.size and all(type(v) is int for v in array.flat):
        # integers beyond 64 bits: none fits an i32, a float takes them if exact
        for flat, v in enumerate(array.flat):
            if slot.dtype == "i32" and not _I32_MIN <= v <= _I32_MAX:
                return Error("%s: argument '%s' holds %d%s, which does not fit in i32"
                             % (fname, slot.name, v, _index_of(array, flat)), _ERR_DTYPE)
            if slot.dtype != "i32":
                with np.errstate(over="ignore"):
                    f = slot.npdtype.type(v)
                if not np.isfinite(f) or int(f) != v:
                    return Error("%s: argument '%s' holds %d%s, which %s has no exact value for"
                                 % (fname, slot.name, v, _index_of(array, flat), slot.dtype),
                                 _ERR_DTYPE)
        return array.astype(slot.npdtype)
    if kind not in "iuf":  # bool, complex, strings, other objects
        return Error("%s: argument '%s' is a %s of %s, expected %s"
                     % (fname, slot.name, "number" if array.ndim == 0 else "list",
                        "bools" if kind == "b" else array.dtype, slot.dtype), _ERR_DTYPE)
    if slot.dtype == "i32":
        if kind == "f":
            bad = np.flatnonzero(~(np.isfinite(array) & (array == np.floor(array))))
            if bad.size:
                return Error("%s: argument '%s' holds %r%s, not an integer (expected i32)"
                             % (fname, slot.name, float(array.flat[bad[0]]),
                                _index_of(array, bad[0])), _ERR_DTYPE)
        outside = _first_outside(array, _I32_MIN, _I32_MAX)
        if outside is not None:
            return Error("%s: argument '%s' holds %s%s, which does not fit in i32"
                         % (fname, slot.name, outside[0], _at(outside[1])), _ERR_DTYPE)
        return array.astype(np.int32)
    with np.errstate(over="ignore"):
        converted = array.astype(slot.npdtype)
    if kind in "iu":
        bad = np.flatnonzero((converted.astype(array.dtype) != array) | ~np.isfinite(converted))
        if bad.size:
            return Error("%s: argument '%s' holds %d%s, which %s has no exact value for"
                         % (fname, slot.name, array.flat[bad[0]], _index_of(array, bad[0]),
                            slot.dtype), _ERR_DTYPE)
    else:
        bad = np.flatnonzero(np.isfinite(array) & ~np.isfinite(converted))
        if bad.size:
            return Error("%s: argument '%s' holds %r%s, beyond the range of %s"
                         % (fname, slot.name, float(array.flat[bad[0]]), _index_of(array, bad[0]),
                            slot.dtype), _ERR_DTYPE)
    return converted


def _argument(fname, slot, value):
    """Any argument for `slot` as an array the descriptor can point to (its
    dtype the parameter's unless the rank is wrong, which the generated
    code reports), or the sgc.Error to raise."""
    if value is None:
        return Error("%s: argument '%s' is None, expected %s" % (fname, slot.name, slot.type_text()),
                     _ERR_NULL)
    if isinstance(value, (np.ndarray, np.generic)):
        array = _typed_array(fname, slot, np.asarray(value), "array")
    elif isinstance(value, (bool, int, float, list, tuple)):
        array = _python_value(fname, slot, value)
    else:  # a torch tensor, or anything with __array__ (zero-copy where it can be)
        try:
            raw = np.asarray(value)
        except Exception as e:  # noqa: BLE001 (the object's own error, named)
            hint = ""
            if _describe(value) == "torch" and getattr(value, "requires_grad", False):
                hint = "; pass %s.detach(), or call it through sgc.torch.function" % slot.name
            return Error("%s: argument '%s' (%s) cannot be read as an array: %s%s"
                         % (fname, slot.name, type(value).__name__, str(e).rstrip("."), hint),
                         _ERR_DTYPE)
        if raw.dtype.kind not in "iuf" or raw.dtype == object:
            return Error("%s: argument '%s' (%s) is not a numeric array, expected %s"
                         % (fname, slot.name, type(value).__name__, slot.dtype), _ERR_DTYPE)
        array = _typed_array(fname, slot, raw, _describe(value))
    if isinstance(array, Error):
        return array
    if array.ndim > MAX_RANK:
        return Error("%s: argument '%s' has rank %d, expected %d"
                     % (fname, slot.name, array.ndim, slot.rank), _ERR_RANK)
    return np.ascontiguousarray(array) if not array.flags.c_contiguous else array


def _address(array):
    """The address of a contiguous array's data (NULL if it is empty)."""
    if not array.size:
        return 0
    if array.flags.writeable:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    return array.__array_interface__["data"][0]


# ---- entry points ----

def _python_name(name, taken):
    """A parameter name Python accepts: the .sg name, '_'-suffixed if it is
    a keyword or already taken."""
    while keyword.iskeyword(name) or name in taken:
        name += "_"
    taken.add(name)
    return name


class _Entry:
    """A generated entry point (f, f_grad, f_vjp, f_jvp, f_hvp): its .sg
    signature, its address as a ctypes function of descriptor addresses,
    and the plan of its results' shapes."""

    def __init__(self, module, name, address, params, results):
        self.module = module  # keeps the compiled code alive
        self.name = name
        self.params, self.results = params, results
        self.nparams = len(params)
        n = len(params) + len(results)
        self.fn = ctypes.CFUNCTYPE(ctypes.c_int, *([ctypes.c_void_p] * n))(address)
        self.free = []  # descriptor blocks not in use by a call (_caller's)
        self.free_raw = []  # the same for _raw_call, which points results elsewhere
        # Where each size name is bound: the first parameter with it as a
        # dimension of its own.
        bound = {}
        for p, slot in enumerate(params):
            for axis, dim in enumerate(slot.dims):
                if _NAME.match(dim):
                    bound.setdefault(dim, (p, axis))
        self.bound = bound
        # Each result's shape: a tuple of literals (static); the index of a
        # parameter declared with the same dims (a gradient), whose
        # argument's shape it takes; per dim a literal or the (parameter,
        # axis) that binds it; or None when a dim is an expression
        # (computed with _size).
        self.plans = []
        for slot in results:
            plan = []
            for dim in slot.dims:
                if dim.isdigit():
                    plan.append(int(dim))
                elif dim in bound:
                    plan.append(bound[dim])
                else:
                    plan = None
                    break
            if plan is not None and all(type(d) is int for d in plan):
                plan = tuple(plan)
            elif plan is not None:
                plan = next((p for p, param in enumerate(params) if param.dims == slot.dims), plan)
            self.plans.append(plan)
        self.static_shapes = self.plans if all(type(p) is tuple for p in self.plans) else None

    def signature(self):
        return "%s(%s) -> %s" % (
            self.name, ", ".join("%s: %s" % (p.name, p.type_text()) for p in self.params),
            ", ".join("%s: %s" % (r.name, r.type_text()) for r in self.results)
            if len(self.results) == 1 else
            "(%s)" % ", ".join("%s: %s" % (r.name, r.type_text()) for r in self.results))

    def block(self):
        """A new descriptor block for one call: the words of every
        descriptor, their addresses, and per result a 0-d array over memory
        of the block itself when the result is a scalar (its descriptor
        points there; the call returns a copy), else None. The words that
        do not change from call to call are filled here: each descriptor's
        rank and dtype, a result's literal shape, a scalar result's data."""
        n = len(self.params) + len(self.results)
        words = (ctypes.c_int64 * (_WORDS * n + len(self.results)))()
        base = ctypes.addressof(words)
        for k, slot in enumerate(self.params + self.results):
            words[_WORDS * k + _WORDS - 1] = slot.rank_dtype
        scalars = []
        for k, (slot, plan) in enumerate(zip(self.results, self.plans)):
            d = _WORDS * (len(self.params) + k)
            if type(plan) is tuple:
                words[d + 1:d + 1 + slot.rank] = plan
            if slot.rank:
                scalars.append(None)
                continue
            at = _WORDS * n + k
            scalars.append(np.frombuffer(words, slot.npdtype, 1, 8 * at).reshape(()))
            words[d] = base + 8 * at
        return words, tuple(base + 8 * _WORDS * k for k in range(n)), scalars

    def reset(self, words):
        """The parameters' rank and dtype words as block() left them (an
        argument of the wrong rank, passed to the generated code to refuse,
        changed its own)."""
        for k, slot in enumerate(self.params):
            words[_WORDS * k + _WORDS - 1] = slot.rank_dtype

    def result_shapes(self, shapes):
        """The results' shapes from the arguments' (the shapes of arrays of
        the right rank; None for others). A size not bound (an argument of
        the wrong rank) or negative gives empty results: the generated
        code then refuses the arguments, writing nothing."""
        out = []
        for slot, plan in zip(self.results, self.plans):
            if type(plan) is tuple:
                out.append(plan)
                continue
            try:
                if type(plan) is int:
                    shape = shapes[plan]
                elif plan is not None:
                    shape = tuple(d if type(d) is int else shapes[d[0]][d[1]] for d in plan)
                else:
                    sizes = {}
                    for dim, (p, axis) in self.bound.items():
                        if shapes[p] is not None:
                            sizes[dim] = shapes[p][axis]
                    shape = tuple(_size(d, sizes, self.name) for d in slot.dims)
            except (TypeError, Error):
                shape = None
            if shape is None or any(n < 0 for n in shape):
                shape = (0,) * slot.rank
            out.append(shape)
        return out

    def fail(self, rc):
        """The sgc.Error for return code rc: the runtime's message."""
        message = _lib.sg_last_error()
        return Error(message.decode() if message else "%s failed (%d)" % (self.name, rc), rc)


def _fill(words, k, address, shape, code):
    """Descriptor k of a block: data, shape, rank and dtype."""
    base = _WORDS * k
    words[base] = address
    words[base + 1:base + 1 + len(shape)] = shape
    words[base + _WORDS - 1] = len(shape) | (code << 32)


def _slow_argument(entry, k, value, words, keep):
    """Argument k when it is not an array the call can point to as it is:
    converted (or refused) by _argument, kept alive in `keep` until the
    call returns, its descriptor filled. Returns its shape, or None when
    its rank is not the parameter's (the generated code refuses it)."""
    slot = entry.params[k]
    array = _argument(entry.name, slot, value)
    if isinstance(array, Error):
        raise array
    keep.append(array)
    _fill(words, k, _address(array), array.shape, slot.code)
    return array.shape if array.ndim == slot.rank else None


def _arity_error(entry, args):
    return _takes(entry.name, entry.params, len(args))


def _takes(name, params, got):
    """The TypeError of a call with `got` arguments where `params` are due."""
    return TypeError("%s() takes %d argument%s (%s), got %d"
                     % (name, len(params), "" if len(params) == 1 else "s",
                        ", ".join(p.name for p in params), got))


# A call from Python is a function written for its entry point when the
# module is loaded (below, by _caller): straight-line code, one paragraph
# per parameter and per result, with the dtypes, ranks, descriptor offsets
# and result shapes of the signature as constants, so that a call does no
# work the signature already decided (spec 10's overhead per call:
# bench/python_overhead.py). An argument that is an ndarray of the
# parameter's dtype and rank, contiguous, writable and not empty (ctypes'
# from_buffer refuses the rest) is pointed to as it is; anything else goes
# through _slow_argument.

_PARAM = """\
        s{k} = None
        if type(a{k}) is ndarray and a{k}.dtype is dtype{k} and a{k}.ndim == {rank}:
            try:
                w[{d}] = addressof(from_buffer(a{k}))
                s{k} = a{k}.shape
            except (TypeError, ValueError):
                pass
        if s{k} is None:
            s{k} = slow(entry, {k}, a{k}, w, keep)
        else:
{store}
"""

_RESULT = """\
        sh = {shape}
        r{j} = empty(sh, dtype_r{j})
        w[{d}] = addressof(from_buffer(r{j})) if r{j}.size else 0
{store}
"""


def _shape_stores(d, rank, shape, indent):
    """Statements writing a shape (an expression) into descriptor words d+1...
    (none for a scalar)."""
    pad = " " * indent
    if rank == 0:
        return pad + "pass\n"
    if rank <= 3:
        return "".join("%sw[%d] = %s[%d]\n" % (pad, d + 1 + a, shape, a) for a in range(rank))
    return "%sw[%d:%d] = %s\n" % (pad, d + 1, d + 1 + rank, shape)


def _caller(entry, layout):
    """The Python function calling `entry` on arrays: its results as
    `layout` (nested tuples of result indices) arranges them."""
    n, params, results = entry.nparams, entry.params, entry.results
    names = ", ".join("a%d" % k for k in range(n))
    src = ["def call(*args):",
           "    if len(args) != %d:" % n,
           "        raise arity(entry, args)",
           "    %s = args" % (names + ("," if n == 1 else "")) if n else "",
           "    block = free.pop() if free else new_block()",
           "    w = block[0]",
           "    keep = []",
           "    try:"]
    space = {"entry": entry, "free": entry.free, "new_block": entry.block, "arity": _arity_error,
             "ndarray": np.ndarray, "addressof": ctypes.addressof,
             "from_buffer": ctypes.c_char.from_buffer, "slow": _slow_argument,
             "empty": np.empty, "fn": entry.fn, "Error": Error}
    for k, slot in enumerate(params):
        space["dtype%d" % k] = slot.npdtype
        d = _WORDS * k
        src.append(_PARAM.format(k=k, d=d, rank=slot.rank,
                                 store=_shape_stores(d, slot.rank, "s%d" % k, 12)))
    # The results' shapes: literal ones are in the block already; a
    # gradient's is its parameter's argument's (none if that has the
    # wrong rank: the call is refused); others come from result_shapes.
    if any(type(plan) not in (tuple, int) for plan in entry.plans):
        src.append("        shapes = entry.result_shapes([%s])" % ", ".join("s%d" % k for k in range(n)))
    values = []
    for j, (slot, plan) in enumerate(zip(results, entry.plans)):
        if not slot.rank:
            values.append("scalars[%d][()]" % j)
            continue
        values.append("r%d" % j)
        space["dtype_r%d" % j] = slot.npdtype
        d = _WORDS * (n + j)
        if type(plan) is tuple:
            shape, store = repr(plan), "        pass\n"
        else:
            shape = ("s%d if s%d is not None else %r" % (plan, plan, (0,) * slot.rank)
                     if type(plan) is int else "shapes[%d]" % j)
            store = _shape_stores(d, slot.rank, "sh", 8)
        src.append(_RESULT.format(j=j, d=d, shape=shape, store=store))

    def arrange(part):
        if type(part) is int:
            return values[part]
        return "(%s)" % "".join(arrange(p) + ", " for p in part)
    src += ["        rc = fn(*block[1])",
            "        if rc:",
            "            raise entry.fail(rc)",
            "        scalars = block[2]",
            "        return " + arrange(layout),
            "    finally:",
            "        if keep:",
            "            entry.reset(w)",
            "        free.append(block)"]
    exec("\n".join(line for line in src if line), space)  # noqa: S102 (our own text)
    return space["call"]


def _raw_call(entry, inputs, new_result):
    """Call `entry` on arguments given as (address, shape) pairs, each of
    its parameter's dtype (the caller checked that); new_result(shape,
    slot) allocates each result and returns (the object, its address).
    Returns the results' objects. For callers with arrays of their own
    (sgc.torch's tensors): no copy either way."""
    free = entry.free_raw
    block = free.pop() if free else entry.block()
    words = block[0]
    try:
        shapes = []
        for k, (slot, (address, shape)) in enumerate(zip(entry.params, inputs)):
            _fill(words, k, address, shape, slot.code)
            shapes.append(shape if len(shape) == slot.rank else None)
        outputs = []
        k = entry.nparams
        for slot, shape in zip(entry.results, entry.static_shapes or entry.result_shapes(shapes)):
            result, address = new_result(shape, slot)
            _fill(words, k, address, shape, slot.code)
            outputs.append(result)
            k += 1
        rc = entry.fn(*block[1])
        if rc:
            raise entry.fail(rc)
        return outputs
    finally:
        free.append(block)


# How the results of each kind of entry point are returned.

def _layout(entry, base):
    """The results of `entry` as returned, as nested tuples of their
    indices: (out, t_out) for f_jvp, (out, (d_pa, ...), (hv_pa, ...)) for
    f_hvp, and one result alone or all of them in a tuple for the others
    (a group of one is that result alone: out and t_out of a single
    result)."""
    def flat(indices):
        return indices[0] if len(indices) == 1 else tuple(indices)
    k = list(range(len(entry.results)))
    if base is None:
        return flat(k)
    nout = len(base.results)
    if entry.name.endswith("_jvp"):
        return flat(k[:nout]), flat(k[nout:])
    nd = (len(k) - nout) // 2
    return flat(k[:nout]), tuple(k[nout:nout + nd]), tuple(k[nout + nd:])


_DERIVATIVES = ("_grad", "_vjp", "_jvp", "_hvp")


def _base_of(name, entries):
    """The export `name` is a derivative of (f for f_grad...), or None."""
    for suffix in _DERIVATIVES:
        if name.endswith(suffix) and name[:-len(suffix)] in entries:
            return name[:-len(suffix)]
    return None


def _make_function(entry, layout):
    """A Python function for `entry`: positional parameters named as in
    .sg, its signature in its docstring (help(m.f))."""
    function = _caller(entry, layout)
    taken = set()
    function.__name__ = function.__qualname__ = entry.name
    function.__module__ = __name__
    function.__signature__ = inspect.Signature(
        [inspect.Parameter(_python_name(p.name, taken), inspect.Parameter.POSITIONAL_ONLY)
         for p in entry.params])
    function.__doc__ = (
        "%s\n\nThe .sg export's entry point %s, on NumPy arrays (sgc.Error if an argument "
        "is refused; const parameters get no gradient)." % (entry.signature(), entry.name))
    function.entry = entry
    return function


class Module:
    """A compiled program: one function per export and per derivative."""

    def __init__(self, handle, filename):
        self._handle = handle
        self.filename = filename
        self.header = _lib.sgc_header(handle).decode()
        self.entries = {}
        for match in _SIGNATURE.finditer(self.header):
            name = match.group(1)
            address = _lib.sgc_lookup(handle, name.encode())
            if not address:
                continue
            params = [_Slot(p) for p in _split_top(match.group(2))]
            results = [_Slot(r) for r in _split_top(match.group(3))]
            self.entries[name] = _Entry(self, name, address, params, results)
        self.functions = {}
        for name, entry in self.entries.items():
            base = _base_of(name, self.entries)
            grouped = base is not None and name.endswith(("_jvp", "_hvp"))
            self.functions[name] = _make_function(
                entry, _layout(entry, self.entries[base] if grouped else None))
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
