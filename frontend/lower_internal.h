/* What the files of the lowering share (frontend/lower*.c): the walk's
 * context, values and bindings, and the helpers more than one file calls
 * (prefixed lw_, or lower_ for the lowering of a construct).
 *
 *   lower.c        names, types, dtypes and broadcasting; expressions; the
 *                  entry point lower_program
 *   lower_call.c   calls: built-in operations, user functions, function
 *                  expressions (grad, jvp, ...), constructors
 *   lower_formula.c  v3 operations along an axis (logsumexp, softmax,
 *                  log_softmax as the spec's formulas; cumsum), clip,
 *                  concat and stack
 *   lower_index.c  indexing, take, indexed assignment
 *   lower_stmt.c   signatures, statements, loops and branches
 *   lower_rules.c  custom derivative rules: @vjp(g), @jvp(h) (v3)
 *   lower_check.c  whole-program checks: recursion, export names, size
 *                  after inlining */
#ifndef SGC_LOWER_INTERNAL_H
#define SGC_LOWER_INTERNAL_H

#include "lower.h"

#include <stdint.h>

typedef struct Val {
  Inst *v;   /* NULL: an error was already reported; stay quiet */
  bool weak; /* a literal (or made only of literals): dtype not fixed */
  bool integral; /* weak and made only of integer literals: may meet i32 */
  const char *name; /* the name it was read through, for hints in messages */
  bool not_arith; /* integral, through an op other than + - * // % (abs, sum,
                     reshape, ...): i32 where it meets one, f32 alone (section 3) */
} Val;

/* What a name is bound to. Assignment rebinds a `var` in place: the
 * lowering does SSA renaming, so `x = e;` only changes which value the
 * name stands for from then on. */
typedef enum { BIND_PARAM, BIND_LET, BIND_VAR, BIND_INDEX } BindKind;

typedef struct Binding {
  const char *name;
  BindKind kind;
  Loc loc;   /* the declaration */
  Val val;
  Type type; /* BIND_VAR: the declared type every assignment must give */
  struct Binding *up;       /* the binding made before this one */
  struct Binding *shadowed; /* the binding of the same name this one hides */
} Binding;

/* The innermost binding of each name in scope, so that a lookup is one
 * probe instead of a walk over every binding (a body of 38,000 lets spent
 * most of its time in strcmp). Open addressing; a name, once in, stays,
 * with a NULL binding when nothing binds it. */
typedef struct Names {
  const char **key;
  Binding **innermost;
  size_t cap, len;
} Names;

typedef struct FnInfo {
  Func *ast;
  Function *ir; /* the IR function (params typed once the signature is ok) */
  bool sig_ok;
  int state; /* recursion check: 0 new, 1 on the DFS stack, 2 done */
} FnInfo;

typedef struct Ctx {
  Module *m;
  Diag *d;
  FnInfo *fns;
  int nfns;
  int *fn_index; /* open addressing by name: index into fns + 1, 0 empty */
  size_t fn_cap;
  FnInfo *cur;
  Builder b;
  Binding *scope; /* every binding in scope, innermost first (via up) */
  Names names;
} Ctx;

static const Val BAD = {.v = NULL};

#define ERR(c, loc, ...) diag_error((c)->d, (loc), __VA_ARGS__)

typedef enum {
  B_UNARY, B_BINARY, B_REDUCE, B_MEAN, B_SELECT, B_TRANSPOSE, B_RESHAPE,
  B_BROADCAST, B_ZEROS, B_ONES, B_STOP, B_TRANSFORM, B_TAKE, B_TAKE_ALONG,
  B_MAKE, B_FULL, B_ARANGE, B_ARG, B_RANDOM, B_SPLIT,
  B_LOGSUMEXP, B_SOFTMAX, B_LOG_SOFTMAX, B_CLIP, B_SCAN, B_CONCAT, B_STACK,
} BuiltinKind;

struct Builtin {
  const char *name;
  BuiltinKind kind;
  Op op;
};

/* lower.c */
char *lw_tstr(Ctx *c, const Type *t);
char *lw_dstr(Ctx *c, const Type *t);
FnInfo *lw_find_fn(Ctx *c, const char *name);
Binding *lw_bind_kind(Ctx *c, const char *name, BindKind kind, Loc loc, Val v);
/* b now stands for v (an assignment, a loop's carried value), which
 * takes b's name if it has none. */
void lw_set_value(Ctx *c, Binding *b, Val v);
void lw_close_scope(Ctx *c, Binding *scope);
Binding *lw_lookup(Ctx *c, const char *name);
bool lower_dims(Ctx *c, AstDim *dims, int n, Loc loc, bool bind, Type *t);
int lw_size_sym(Ctx *c, const char *name);
bool lower_type(Ctx *c, AstType *at, bool bind, Type *t);
const char *lw_dtype_word(AstDType dt);
Val lw_concrete(Ctx *c, Val x, DType dt);
bool lw_not_bool(Ctx *c, Val x, Loc loc);
bool lw_weak_fits(Ctx *c, Val x, DType dt, Loc loc);
bool lw_unify_dtypes(Ctx *c, Val *a, Val *b, Loc loc, const char *what);
bool lw_need_float(Ctx *c, Val x, Loc loc, const char *what);
bool lw_broadcast_pair(Ctx *c, Val *a, Val *b, Loc loc, const char *what);
Val lw_elementwise2(Ctx *c, Op op, Val a, Val b, Loc loc, const char *what);
Val lower_expr(Ctx *c, Expr *e);

/* lower_call.c */
const struct Builtin *lw_find_builtin(const char *name);
const char *lw_suggest_function(Ctx *c, const char *name);
Arg *lw_nth_positional(Expr *call, int n);
bool lw_check_arity(Ctx *c, Expr *call, const char *fname, int lo, int hi, const char *const *kws);
Arg *lw_keyword(Expr *call, const char *kw);
Val lw_value_arg(Ctx *c, Expr *e);
bool lw_int_literal(Expr *e, int64_t *out);
bool lower_user_call_n(Ctx *c, Expr *call, Function *callee, Val *outs, int nouts);
Function *lw_function_expr(Ctx *c, Expr *e, const char *role);
Function *lw_callee(Ctx *c, Expr *callee, bool *bad);
Val lower_call(Ctx *c, Expr *e);
bool lw_axis_arg(Ctx *c, Expr *call, int rank, int *k);
Val lw_reduce_operand(Ctx *c, Expr *call, const struct Builtin *bi);
Inst *lw_flatten(Ctx *c, Inst *v, Loc loc);

/* lower_formula.c */
Val lower_along(Ctx *c, Expr *call, const struct Builtin *bi);
Val lower_clip(Ctx *c, Expr *call);
Val lower_concat(Ctx *c, Expr *call, const struct Builtin *bi);

/* lower_index.c */
Val lower_index(Ctx *c, Expr *e);
Val lower_take(Ctx *c, Expr *call, const struct Builtin *bi);
Inst *lower_index_assign(Ctx *c, Stmt *s, Binding *b);

/* lower_stmt.c */
void lw_declare_function(Ctx *c, FnInfo *fn);
void lower_body(Ctx *c, FnInfo *fn);

/* lower_rules.c */
void lw_resolve_rules(Ctx *c);

/* lower_check.c */
bool lw_find_cycle(Ctx *c, FnInfo *fn);
bool lw_c_symbol_ok(const char *name);
bool lw_export_clashes_with_libc(Ctx *c, Func *f);
void lw_check_expansion(Ctx *c);

#endif
