/* The sgc IR: read this first.
 *
 * A Module is a list of Funcs. A Function is an SSA program over tensors:
 * its parameters and instructions are all `Inst`s, each defining one value
 * with a dtype (f32, f64, i32, bool) and a shape, and its results are a
 * list (several results are several entries). Sizes may be symbolic (`n`),
 * bound by the arguments when the generated code runs, or size expressions
 * of such names (`n - 1`, ir/size.c). Calls between user functions are
 * inlined before AD (docs/internals.md says why).
 *
 * Control flow is structured, as MLIR's scf dialect: a loop or a branch is
 * ONE instruction (`for`, `while`, `if`) holding its bodies as Regions, so
 * passes recurse into bodies instead of chasing a CFG. A region may use any
 * value defined before its op in an enclosing block (implicit capture);
 * nothing defined inside is visible outside except through its yields, which
 * become the op's results. An Inst defines exactly one value, so a region op
 * defines a tuple, read by one `proj` per result placed right after it:
 *
 *   %5 = for %lo, %hi, %h0, %l0 : (f32[h], f32) {
 *   ^(%6: i32, %7: f32[h], %8: f32):
 *     ...
 *     yield %12, %14
 *   }
 *   %15 = proj %5 {index=0} : f32[h]
 *   %16 = proj %5 {index=1} : f32
 *
 *   for:   args [lo, hi, init...]; regions[0] params [i, c...], yields [c'...];
 *          results: the final c... (none run when hi <= lo: the inits).
 *   while: args [init...]; regions[0] (the condition) params [c...], yields
 *          [bool scalar]; regions[1] (the body) params [c...], yields [c'...];
 *          results: the c... for which the condition is false.
 *   if:    args [cond]; regions[0] then, regions[1] else, no params, each
 *          yields the results.
 *   custom (a call of a function with derivative rules, spec 6b; `name`
 *          the function's): args the arguments of its differentiable (non-
 *          const float) parameters; regions[0] the inlined body, no params,
 *          yields the results; regions[1] the inlined vjp rule, params
 *          [y..., dy...] (the results, the float results' cotangents),
 *          yields one cotangent per arg; regions[2] the inlined jvp rule,
 *          params one tangent per arg, yields the float results' tangents.
 *          `index` holds which rules there are (CUSTOM_VJP | CUSTOM_JVP); a
 *          missing one's region is empty. Body and rules capture the other
 *          arguments. AD uses the rules, then passes/strip_custom.c puts the
 *          body in its place.
 *   unloop (made by AD): args [loop, acc...], the loop a for or while; runs
 *          once per iteration the loop ran, last first; regions[0] params
 *          [i, c..., acc...]: the index (for a while: the iteration number),
 *          the carried values entering that iteration, the accumulators;
 *          yields [acc'...]; results: the final acc... . The code generator
 *          records the loop's carried values (a tape) for it.
 *
 * Elementwise instructions take operands of exactly their own shape; the
 * lowering makes NumPy broadcasting explicit with `broadcast`, so that every
 * adjoint rule is local and `broadcast`'s adjoint (a sum) is the only place
 * where broadcasting meets differentiation.
 *
 *   func @xent(%w: f32[k, d], %x: const f32[d], %y: const f32[k]) -> f32 {
 *     %0 = matmul %w, %x : f32[k]
 *     %1 = max %0 {axes=[0]} : f32
 *     ...
 *     ret %9
 *   }
 *
 * The operations are listed once, with their shape rule, adjoint and flags,
 * in ir/ops.def. */
#ifndef SGC_IR_H
#define SGC_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util.h"

enum { IR_MAX_RANK = 8 };

typedef enum { DT_F32 = 1, DT_F64 = 2, DT_I32 = 3, DT_BOOL = 4 } DType; /* F32..I32 = sg_dtype */

/* One dimension: a literal size, or the symbolic size Module.syms[sym]: a
 * name the parameters bind, or a size expression of such names (`n - 1`,
 * `d * k`; ir/size.c), interned so that equal polynomials are one symbol. */
typedef struct Dim {
  int64_t size; /* when sym < 0 */
  int sym;      /* -1 for a literal */
} Dim;

typedef struct Type {
  DType dtype;
  int rank;
  Dim dim[IR_MAX_RANK]; /* dim[0] is the outermost */
} Type;

typedef enum {
#define OP(name, ...) OP_##name,
#include "ops.def"
#undef OP
  OP_COUNT
} Op;

enum { F_ELEM = 1, F_INDEX = 2, F_COMMUTE = 8, F_INT = 16, F_INTONLY = 32, F_FAILS = 64,
       F_AXIS = 128, F_MATH = 256, F_CHEAP = 512, F_FREE = 1024, F_RANDOM = 2048 };

typedef enum {
  SH_GIVEN, SH_SAME, SH_CMP, SH_SELECT, SH_REDUCE, SH_TRANSPOSE, SH_MATMUL, SH_REGION,
  SH_LOGIC, SH_ARG,
} ShapeRule;

enum { CUSTOM_VJP = 1, CUSTOM_JVP = 2 }; /* custom: Inst.index */

/* The type of a region op itself: a tuple of its results, which only proj
 * reads (the result types are those of its yields). */
#define IR_TUPLE ((DType)0)

typedef struct OpInfo {
  const char *name;
  int arity;
  ShapeRule shape;
  int flags;
} OpInfo;
extern const OpInfo ir_ops[OP_COUNT];

/* Has op any of the properties in `flags` (ops.def's last column)? */
static inline bool ir_op_is(Op op, int flags) { return (ir_ops[op].flags & flags) != 0; }

typedef struct Function Function;
typedef struct Inst Inst;
typedef struct Region Region;

/* One block of a region op (see the top of this file). */
struct Region {
  Inst **params;  /* block arguments (op arg): loop index, carried values */
  int nparams;
  Inst *first, *last; /* its instructions, in order */
  Inst **yields;  /* the values it passes on */
  int nyields;
  Inst *owner;    /* the region op that holds it */
};

/* An instruction and the value it defines. Parameters are Insts too
 * (op == OP_param), kept in Function.params rather than the body list. */
struct Inst {
  Op op;
  Type type;
  Inst **args;
  int nargs;
  /* attributes; which ones an op uses is fixed by ops.def */
  double num;               /* const: the value */
  unsigned axes;            /* sum/max/min: bit i set = axis i reduced */
  int perm[IR_MAX_RANK];    /* transpose: result axis i is operand axis perm[i] */
  Type attr;                /* count: the dims whose product it is */
  Function *callee;         /* call: the function called */
  int wrt;                  /* param: its index; call: which result of the
                               callee (0 if one) */
  int index;                /* proj: which result; arg: which block argument;
                               polygamma: the order n of psi^(n) */
  Region *regions;          /* for, while, if: their bodies */
  int nregions;
  Region *parent;           /* the region it is in; NULL: the function body */
  bool is_const;            /* param: declared `const` */
  bool rechecks;            /* its run-time checks (F_FAILS) repeat checks made
                               before: an adjoint, AD's recomputation of
                               the primal, or a tangent (its primal copy
                               checks). DCE may drop it when unused; any
                               other op that can fail stays (spec section 6) */
  const char *name;         /* param: its name; others: optional hint */
  Loc loc;                  /* where in the .sg source it came from */

  bool active;              /* set by passes/activity.c for the AD pass */
  int id;                   /* number for printing, set by ir_renumber */
  int nuses;                /* set by ir_count_uses */
  void *aux;                /* scratch for the pass that is running */
  Inst *fwd;                /* replaced by this (see ir_forward) */
  Inst *prev, *next;        /* body order */
};

/* What a function is: written in the program, or a derivative entry point
 * of an export (spec section 9): f_grad, f_vjp, f_jvp, f_hvp. */
typedef enum { FN_PLAIN, FN_GRAD, FN_VJP, FN_JVP, FN_HVP } FuncKind;

/* Which derivative entry points each export gets (--exports, spec 8). */
enum { EXPORT_GRAD = 1, EXPORT_JVP = 2, EXPORT_HVP = 4 };

/* A transform of a function (spec 6b), a function itself: its kind, the
 * function it transforms and the parameter it differentiates with respect
 * to. ir/derive.c gives its signature; passes/derive.c builds its body when
 * the inliner first needs it. */
typedef enum { DV_NONE, DV_GRAD, DV_JVP, DV_VJP, DV_JACOBIAN, DV_HESSIAN, DV_COUNT } DeriveKind;
extern const char *const ir_derive_names[DV_COUNT]; /* "grad", "jvp", ... */

struct Function {
  const char *name;
  bool exported;
  FuncKind kind;
  DeriveKind derive;        /* not DV_NONE: a transform of `base` with its signature */
  Function *base;           /*   alone (results are placeholders) until it is built */
  int wrt;                  /*   the parameter of base it differentiates */
  Function *vjp_rule;       /* custom derivative rules (spec 6b), or NULL: */
  Function *jvp_rule;       /*   calls of it are inlined as `custom` ops */
  Inst **params;
  int nparams;
  Inst *first, *last;       /* the body */
  Inst **results;           /* what `ret` returns */
  const char **result_names;/* "out", "d_w", ... (the C ABI's names) */
  int nresults;
  Loc loc;
  int mark;                 /* scratch for the pass that is running */
  Function *next;
};

/* A size expression: the sum of coef * vars[0] * ... * vars[nvars-1]. */
enum { IR_POLY_TERMS = 16, IR_POLY_DEGREE = 8 };
typedef struct SizeTerm {
  int64_t coef;
  int nvars;
  int vars[IR_POLY_DEGREE]; /* symbols of plain names, sorted by name */
} SizeTerm;
typedef struct SizePoly {
  int nterms;
  SizeTerm t[IR_POLY_TERMS]; /* canonical order, no zero terms */
} SizePoly;

typedef struct Module {
  Arena *arena;
  Function *funcs;
  Function *funcs_hint;     /* NULL or a function in the list: appends walk on from it */
  const char **syms;        /* names of symbolic sizes, interned */
  SizePoly **sym_poly;      /* per symbol: its polynomial if derived, else NULL */
  int nsyms, capsyms;
  bool show_activity;       /* the printer marks active values (sgc-opt --passes=activity) */
  const char *file;         /* the .sg file's name, for run-time error messages */
  unsigned exports;         /* EXPORT_* flags: what passes/exports.c adds */
  Diag *diag;               /* where passes report the program's errors (NULL: stderr) */
  int errors;               /* how many they reported: the pipeline stops after such a pass */
  const char *last_error;   /* the last one, not repeated at the same place */
  Loc last_error_loc;
} Module;

/* ---- module and types (ir/ir.c) ---- */
Module *ir_module_new(void);
void ir_module_free(Module *m);
int ir_sym(Module *m, const char *name);        /* intern a size name */
Function *ir_func_new(Module *m, const char *name);  /* appended to m->funcs */
Function *ir_find_func(Module *m, const char *name);
/* An error in the program found by a pass (AD meeting a derivative it
 * cannot take, say), at loc, counted in m->errors. */
void ir_error(Module *m, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
Inst *ir_add_param(Module *m, Function *f, const char *name, Type t, bool is_const);
void ir_set_results(Module *m, Function *f, Inst **vals, const char **names, int n);
/* `want`, or `want` + `suffix` (repeated) if a parameter or result of f
 * already has that name: the C ABI names every argument. */
const char *ir_unique_name(Module *m, const Function *f, const char *want, const char *suffix);
/* The name of a result being added after names[0..n) (f's results not set
 * yet): `want`, made unique among f's parameters and those names. */
const char *ir_result_name(Module *m, const Function *f, const char *const *names, int n,
                           const char *want);
void ir_remove_func(Module *m, Function *f);

Type ir_scalar(DType dt);
bool ir_dim_eq(Dim a, Dim b);
bool ir_is_float(DType dt);                      /* f32 or f64 */
double ir_wrap_i32(double v);    /* v truncated and wrapped to i32 (NaN, inf: 0) */
bool ir_type_eq(const Type *a, const Type *b);   /* dtype and every dim */
bool ir_shape_eq(const Type *a, const Type *b);  /* dims only */
Dim ir_lit(int64_t n);
bool ir_dim_is(Dim d, int64_t n);                /* literal n */
int64_t ir_static_numel(const Type *t);          /* -1 if symbolic or past int64 */
const char *ir_dtype_name(DType dt);
/* "f32[k, 4]" into buf; returns buf */
char *ir_type_str(const Module *m, const Type *t, char *buf, size_t len);
char *ir_dims_str(const Module *m, const Type *t, char *buf, size_t len); /* "[k, 4]" */

/* ---- instructions (ir/ir.c) ---- */
/* Where new instructions go: before `before`, or at the end when NULL. */
typedef struct Builder {
  Module *m;
  Function *f;
  Inst *before;
  Loc loc;   /* given to every new instruction */
  Region *r; /* when before is NULL: append to this region (NULL: f's body) */
} Builder;

Inst *ir_new_inst(Builder *b, Op op, Type type, Inst **args, int nargs);
/* A copy of i (attributes included) with operands `args`. */
Inst *ir_clone_inst(Builder *b, const Inst *i, Inst **args);
void ir_insert_before(Function *f, Inst *at, Inst *i); /* at NULL: append to f's body */
void ir_append(Function *f, Region *r, Inst *i);       /* r NULL: f's body */
void ir_unlink(Function *f, Inst *i);                  /* from its block */
/* Regions: a region op with `nregions` empty regions; a block argument of r. */
Inst *ir_region_op(Builder *b, Op op, Inst **args, int nargs, int nregions);
Inst *ir_add_region_param(Module *m, Region *r, Type t);
void ir_set_yields(Module *m, Region *r, Inst **vals, int n);
Inst *ir_proj(Builder *b, Inst *op, int index);  /* result `index` of a region op */
int ir_num_results(const Inst *op);               /* how many values it yields */
Type ir_result_type(const Inst *op, int index);
/* Pre-order walk over every instruction of f, nested regions included: an
 * op comes before the instructions of its regions.
 *   for (Inst *i = f->first; i; i = ir_walk_next(i)) ...
 * (to unlink i, take the next one first; never unlink a region op so). */
Inst *ir_walk_next(const Inst *i);
/* A copy of i (regions included, recursively) at b's position. Operands and
 * values captured from outside are mapped through their aux (which must be
 * set); every value the copy defines is recorded in the original's aux.
 * `retype` (if not NULL) adjusts each copied instruction and argument. */
Inst *ir_copy_inst(Builder *b, Inst *i, void (*retype)(Inst *copy, void *ctx), void *ctx);
void ir_replace_uses(Function *f, Inst *old, Inst *with); /* operands and results */
/* Replacing many values in one sweep, for passes that walk a function in
 * order (ir_replace_uses is linear, so calling it per instruction would be
 * quadratic): ir_forward records the replacement, ir_resolve_args applies
 * all recorded ones to an instruction's operands before the pass looks at
 * them, and ir_resolve_func to the whole function at the end. */
void ir_forward(Inst *old, Inst *with);
void ir_resolve_args(Inst *i);
void ir_resolve_func(Function *f);
void ir_count_uses(Function *f);                          /* sets Inst.nuses */
int ir_renumber(Function *f);                             /* sets Inst.id */
int ir_num_insts(const Function *f);

/* Builders that work out the result type (and die() on a shape error:
 * callers check first, with the rules in ir/shape.c). */
Inst *ir_const(Builder *b, DType dt, double v);
Inst *ir_const_like(Builder *b, const Type *t, double v); /* broadcast const */
Inst *ir_unary(Builder *b, Op op, Inst *x);
Inst *ir_binary(Builder *b, Op op, Inst *x, Inst *y);   /* same shapes */
Inst *ir_select(Builder *b, Inst *c, Inst *x, Inst *y);
Inst *ir_convert(Builder *b, Inst *x, DType dt);
Inst *ir_broadcast(Builder *b, Inst *x, const Type *to);  /* no-op if same */
Inst *ir_reshape(Builder *b, Inst *x, const Type *to);    /* no-op if same */
Inst *ir_transpose(Builder *b, Inst *x, const int *perm);
Inst *ir_reduce(Builder *b, Op op, Inst *x, unsigned axes);
Inst *ir_count(Builder *b, const Type *x, unsigned axes, DType dt);
Inst *ir_size_value(Builder *b, Dim d); /* the i32 scalar d (a count) */
/* An op along one axis (ops.def F_AXIS: prod, prod_others, cumsum, ...). */
Inst *ir_along(Builder *b, Op op, Inst *x, int axis);
/* The same for the ops along one axis of two operands (prod_pairs_lo/hi). */
Inst *ir_along2(Builder *b, Op op, Inst *x, Inst *v, int axis);
Inst *ir_polygamma(Builder *b, int order, Inst *x);
/* xs[0..n) joined along `axis` into type t (the lengths' sum on axis). */
Inst *ir_concat(Builder *b, Inst **xs, int n, int axis, const Type *t);
Inst *ir_matmul(Builder *b, Inst *x, Inst *y);
Inst *ir_matmulz(Builder *b, Inst *x, Inst *y); /* zero annihilates, like mulz */
/* A batched matmulz summed over the batch axes that `to` (the product's
 * type with those batch axes left out or 1) does not have. */
Inst *ir_matmulz_into(Builder *b, Inst *x, Inst *y, const Type *to);
/* An indexing op of ops.def (gather, slice, ...) along `axis`, of type t
 * (its dtype is taken from x). */
Inst *ir_index_op(Builder *b, Op op, Inst *x, Inst *idx, int axis, const Type *t);
/* update or update_add (ops.def) of v with u at the positions that one
 * index per axis in `axes` selects, ix[0..] in axis order. */
Inst *ir_update(Builder *b, Op op, Inst *v, Inst *u, Inst *const *ix, unsigned axes);
/* x read at those positions: of u's type (slices along the boxes, then the
 * gather), the partner of update (its adjoint, `v[idx] *= e`). */
Inst *ir_positions(Builder *b, Inst *x, Inst *const *ix, unsigned axes, const Type *u);
/* The sum of x over the axes broadcasting added, back to type `to`. */
Inst *ir_unbroadcast(Builder *b, Inst *x, const Type *to);

/* ---- derived functions (ir/derive.c) ----
 * The transform `kind` of base with respect to its parameter wrt, named
 * `base.kind.param`, with its signature (spec 6b) and located at `at` (the
 * transform in the program: errors while building it point there); the
 * same one when the module has it already. NULL with a message in err
 * (naming the functions as the program writes them) when the transform does
 * not apply. */
Function *ir_derive(Module *m, DeriveKind kind, Function *base, int wrt, Loc at, char *err,
                    size_t errlen);
/* The signature of d (d->derive, base and wrt set, no parameters yet);
 * false with a message when the transform does not apply. */
bool ir_derive_signature(Module *m, Function *d, char *err, size_t errlen);
/* How the program writes f: its name, or a transform like grad(f, wrt=x). */
const char *ir_func_display(Module *m, const Function *f);

/* ---- size expressions (ir/size.c) ----
 * The ops return false when the result would not fit (too many terms, a
 * degree past IR_POLY_DEGREE, coefficients past int64). */
SizePoly ir_poly_const(int64_t c);
SizePoly ir_poly_of(const Module *m, Dim d);
bool ir_poly_add(const Module *m, const SizePoly *a, const SizePoly *b, int sign, SizePoly *out);
bool ir_poly_mul(const Module *m, const SizePoly *a, const SizePoly *b, SizePoly *out);
bool ir_poly_eq(const SizePoly *a, const SizePoly *b);
/* The Dim of a polynomial: a literal, a plain name, or a derived symbol. */
Dim ir_poly_dim(Module *m, const SizePoly *p);
bool ir_sym_derived(const Module *m, int sym);
/* d with every plain name s replaced by map[s] (map[s].sym == -2: kept). */
bool ir_subst_dim(Module *m, Dim d, const Dim *map, Dim *out);

/* ---- shape rules (ir/shape.c) ----
 * Each returns false and writes a message (no location) on error. */
bool ir_broadcast_shapes(const Module *m, const Type *a, const Type *b, Type *out,
                         char *err, size_t errlen);
bool ir_can_broadcast_to(const Type *from, const Type *to);
bool ir_matmul_type(const Module *m, const Type *a, const Type *b, Type *out,
                    char *err, size_t errlen);
Type ir_reduce_type(const Type *x, unsigned axes);
Type ir_transpose_type(const Type *x, const int *perm);
bool ir_reshape_ok(const Module *m, const Type *from, const Type *to);
/* The element count of t as a polynomial; false if it does not fit. */
bool ir_numel_poly(const Module *m, const Type *t, SizePoly *out);
/* The result type `i` must have given its operands, or false with a message. */
bool ir_infer_type(const Module *m, const Inst *i, Type *out, char *err, size_t errlen);

/* ---- values known before the program runs (ir/literal.c) ---- */
/* op on the i32 literals a[0..arity) as the generated code computes it
 * (wrapping, floor division); false if it does not fold (a division by 0). */
bool ir_fold_i32(Op op, const double *a, double *r);
/* The entries of ix, an i32 vector of literal length at most cap built from
 * literals, arange and integer ops (a few thousand operands visited at
 * most), into t: their count, or -1. */
int ir_index_table(const Inst *ix, int64_t *t, int cap);

/* ---- printing, parsing, checking ---- */
void ir_print_func(FILE *out, Module *m, Function *f);
void ir_print_module(FILE *out, Module *m);
/* Parse textual IR (the printer's format) into a new module; NULL after
 * reporting errors to `diag`. */
Module *ir_parse(Diag *diag, const char *src, size_t len);
/* Check every invariant; prints "verifier: @f: %3 = ...: message" for each
 * violation to stderr and returns the number found. */
int ir_verify(Module *m, const char *after_pass);

#endif
