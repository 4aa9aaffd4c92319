/* The abstract syntax tree of a .sg file, as the parser builds it.
 *
 * Every node lives in one Arena and keeps its source location, so the checker
 * (frontend/lower.c) can point a caret at it. Lists are singly linked through
 * `next`, in source order. Nothing here is typed yet: dtypes and shapes are
 * worked out while lowering to the IR. */
#ifndef SGC_AST_H
#define SGC_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/util.h"

typedef enum { AST_F32 = 1, AST_F64 = 2, AST_I32 = 3, AST_BOOL = 4 } AstDType; /* = DType */

/* One dimension of a type or of a shape list `[2, n]`: a literal, a name,
 * or (v2) a size expression `lhs op rhs` with op '+', '-' or '*'. */
typedef struct AstDim {
  Loc loc;          /* for an expression: its operator */
  const char *name; /* symbolic size, or NULL for a literal */
  int64_t size;     /* the literal size when name is NULL */
  bool bad;         /* the literal was not a non-negative integer */
  char op;          /* 0 for a literal or a name */
  struct AstDim *lhs, *rhs;
  struct AstDim *next;
} AstDim;

/* `f32`, `f64[k, d]`. rank == 0 is a scalar; rank may exceed 8 here (the
 * checker reports it). */
typedef struct AstType {
  Loc loc;
  AstDType dtype;
  int rank;
  AstDim *dims;
} AstType;

typedef enum {
  EX_NUMBER, /* 0.5: `num`, `text` the spelling */
  EX_NAME,   /* x: `name` */
  EX_DTYPE,  /* a dtype used as a callee, f64(x): `dtype` */
  EX_SHAPE,  /* [2, n]: `dims`, `ndims` */
  EX_NEG,    /* -lhs */
  EX_NOT,    /* !lhs */
  EX_BINARY, /* lhs op rhs */
  EX_CALL,   /* callee(args) */
  EX_TUPLE,  /* (a, b): `args` (only after return, several results) */
  EX_INDEX,  /* lhs[index, ...]: `index`, `nindex` */
} ExprKind;

typedef enum {
  BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MATMUL, BIN_POW,
  BIN_LT, BIN_LE, BIN_GT, BIN_GE, BIN_EQ, BIN_NE,
  BIN_IDIV, BIN_MOD, BIN_AND, BIN_OR,
} BinOp;

typedef struct Expr Expr;

/* One index of x[...]: a position or tensor (`pos`), or a slice lo:hi
 * (either may be NULL: 0, and the axis size). */
typedef struct Index {
  Loc loc;
  bool slice;
  Expr *pos, *lo, *hi;
  struct Index *next;
} Index;

/* A call argument; `kw` is the keyword of `axis=1`, NULL if positional. */
typedef struct Arg {
  Loc loc;
  const char *kw;
  Expr *value;
  struct Arg *next;
} Arg;

struct Expr {
  ExprKind kind;
  Loc loc;          /* the operator for EX_BINARY/EX_NEG, else the start */
  double num;       /* EX_NUMBER */
  const char *text; /* EX_NUMBER: the literal as written */
  const char *name; /* EX_NAME */
  AstDType dtype;   /* EX_DTYPE */
  BinOp op;         /* EX_BINARY */
  Expr *lhs, *rhs;  /* EX_NEG, EX_NOT (lhs only), EX_BINARY */
  Expr *callee;     /* EX_CALL */
  Arg *args;        /* EX_CALL, EX_TUPLE (the elements) */
  int nargs;
  AstDim *dims;     /* EX_SHAPE */
  int ndims;
  int depth;        /* 1 + the deepest operand's depth */
  int nesting;      /* operands inside operands; a left-associative chain is one level */
  Index *index;     /* EX_INDEX */
  int nindex;
};

/* The deepest expression the parser accepts. The checker and the lowering
 * recurse over expressions, so this bounds their stack (on the big stack
 * of run_with_big_stack). A chain as long as this is more operations than
 * a function may have anyway (frontend/lower.c), so no program that could
 * compile is refused. */
enum { AST_MAX_DEPTH = 200000 };

/* The deepest nesting the parser accepts: call arguments, unary operands,
 * index expressions, tuple elements and the right operand of a binary
 * operator (both operands of `**`) are one level inside their expression;
 * the left operand of a left-associative operator is not, so `a + b + c`
 * is one level however long, while `exp(exp(...))`, `- - x` and
 * `x ** x ** x` nest. Parentheses alone do not count. Like clang's bracket
 * depth (256 by default), it refuses early what no real program needs:
 * every level is a few instructions in the gradient, so a program nested
 * 16,000 deep took LLVM seconds to compile. */
enum { AST_MAX_NESTING = 1000 };

typedef enum {
  ST_LET,    /* let name [: type] = value; */
  ST_VAR,    /* var name [: type] = value; */
  ST_ASSIGN, /* name = value; or name op= value; */
  ST_RETURN, /* return value; */
  ST_FOR,    /* for name in value..hi { body } */
  ST_WHILE,  /* while value { body } */
  ST_IF,     /* if value { body } else { orelse } (orelse: NULL, or a list) */
} StmtKind;

typedef struct Stmt {
  StmtKind kind;
  Loc loc;          /* the keyword; ST_ASSIGN: the operator */
  const char *name; /* ST_LET, ST_VAR, ST_ASSIGN */
  Loc name_loc;
  Arg *names;       /* ST_LET of several names, `let (a, b) = f(x);`: kw holds each
                       name, loc its place; name is then NULL */
  int nnames;
  AstType *type;    /* ST_LET, ST_VAR: optional annotation, else NULL */
  bool compound;    /* ST_ASSIGN: `op=`, with op in `op` */
  Index *index;     /* ST_ASSIGN to v[...]: the indices (v2), else NULL */
  int nindex;
  BinOp op;
  Expr *value;
  Expr *hi;           /* ST_FOR: the upper bound */
  struct Stmt *body;  /* ST_FOR, ST_WHILE, ST_IF: the block */
  struct Stmt *orelse;/* ST_IF: the else block (an `else if` is a one-if list) */
  bool has_else;
  struct Stmt *next;
} Stmt;

typedef struct Param {
  Loc loc; /* the name */
  const char *name;
  bool is_const;
  AstType type;
  struct Param *next;
} Param;

/* v3: a custom derivative rule line before a function, `@vjp(g)` or
 * `@jvp(h)` (spec 6b). */
typedef struct Rule {
  Loc loc;          /* the '@' */
  bool jvp;         /* @jvp(...), else @vjp(...) */
  const char *fn;   /* the rule function's name */
  Loc fn_loc;
  struct Rule *next;
} Rule;

typedef struct Func {
  Loc loc;      /* the function's name */
  Loc end_loc;  /* the closing brace, for "missing return" */
  bool exported;
  const char *name;
  Param *params;
  int nparams;
  AstType ret;      /* the (first) result type */
  AstType *rets;    /* v2: all result types, `-> (f32, f32[n])` */
  int nrets;
  Stmt *body;
  Rule *rules;      /* v3: its rule lines, in order */
  struct Func *next;
} Func;

typedef struct Program {
  Func *funcs;
  int nfuncs;
} Program;

/* Parse `src` (len bytes, need not be NUL-terminated) into `*out`, allocating
 * in `arena`. Syntax errors go to `diag`; returns the number of errors. The
 * tree is usable (possibly partial) even when errors were reported. */
int parse_program(Arena *arena, Diag *diag, const char *src, size_t len, Program *out);

#endif
