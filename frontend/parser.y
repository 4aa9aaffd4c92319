/* The parser of .sg files: the grammar of spec section 4, building the AST of
 * frontend/ast.h in the caller's arena.
 *
 * Error handling.
 *  - Messages are written by yyreport_syntax_error (parse.error custom) from
 *    the lookahead, the token before it and the exact set of tokens the
 *    parser could accept there. The parser is canonical LR(1) with default
 *    reductions only in consistent states, so an error is detected at the
 *    first token that cannot continue the input and the expected set is
 *    exact, which is what lets the messages be specific ("expected ';' after
 *    the expression", "parameter 'x' has no type; ...").
 *  - A few mistakes are accepted by the grammar and reported from actions:
 *    chained comparisons, a keyword used as a name, shape sizes that are not
 *    non-negative integers, and a function body missing its '}' (detected
 *    when the next 'fn'/'export' or the end of the file arrives inside it).
 *  - Recovery: a broken statement is skipped up to its ';' (`stmt: error
 *    ';'`), or up to the next 'let', 'var', 'return', '}', 'fn', 'export' or end of
 *    file (`stmts: stmts error`); a stray `{ ... }` block inside a body (say
 *    after a reserved `if`) is skipped whole. A broken function header is
 *    skipped up to the '{' of its body, whose statements are still checked
 *    (or up to the next 'fn'/'export' if no '{' comes first). At the top
 *    level, anything is skipped up to the next 'fn' or 'export'.
 *    yyerrok is called only once the resynchronising token has been shifted
 *    or is a lookahead that is sure to be shifted next, so error recovery
 *    cannot loop and the next error reported is a new one. Elsewhere bison's
 *    rule holds: no new error is reported until three tokens have been
 *    shifted. A syntax error at a token the lexer already complained about
 *    (stray character, malformed number, reserved word) is not reported,
 *    nor a missing '}' at a token that already had an error.
 *  - Failed statements and functions are dropped from the tree; everything
 *    that is in the tree is complete.
 *
 * Depth: the parser stack may grow to YYMAXDEPTH entries (one per nesting
 * level, roughly); past that, "expression nested too deeply" and the parse
 * stops. Note that the AST itself can be as deep as the input is long
 * (`a+a+a+...` is a left spine): past AST_MAX_DEPTH (ast.h) levels the
 * parser reports "expression nested too deeply", which bounds the
 * recursion of every later walk over the tree. */

%code requires {
#include "ast.h"

#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif

typedef struct NumTok {
  const char *text;
  double num;
  bool bad; /* the lexer already reported it */
} NumTok;

typedef struct ArgList { Arg *head, *tail; int n; } ArgList;
typedef struct DimList { AstDim *head, *tail; int n; } DimList;
typedef struct ParamList { Param *head, *tail; int n; } ParamList;
typedef struct StmtList { Stmt *head, *tail; } StmtList;
typedef struct TypeList { AstType *v; int n, cap; } TypeList;
typedef struct IndexList { Index *head, *tail; int n; } IndexList;
typedef struct Body { Stmt *head; Loc open, end; bool closed; } Body;
typedef struct RuleList { Rule *head, *tail; } RuleList;
typedef struct CmpOp { BinOp op; Loc loc; } CmpOp;
typedef struct AssignOp { bool compound; BinOp op; Loc loc; } AssignOp;

typedef struct Bracket { char ch; Loc loc; } Bracket;

/* Shared by the parser and the lexer for one parse. */
typedef struct ParseCtx {
  Arena *arena;
  Diag *diag;
  /* lexer position (1-based) and the end of the last token returned */
  int line, col;
  Loc last_end;
  Loc prev_end;       /* the end of the token before the lookahead */
  /* the lookahead token and the one before it */
  long ntok;          /* tokens returned so far; the lookahead is number ntok */
  int cur_kind, prev_kind;
  const char *cur_text, *prev_text; /* identifier or number spelling */
  Loc cur_loc;
  bool cur_first;     /* the lookahead is the first token on its line */
  int decl_kind;      /* T_LET or T_VAR: the last declaration keyword read */
  bool cur_unmatched; /* a closer with no opener of its kind */
  Bracket open_before; /* innermost open bracket before the lookahead */
  long lex_err_tok;   /* token the lexer reported an error about */
  long last_err_tok;  /* token the parser last reported a syntax error at */
  /* open brackets, innermost last; nopen counts each kind: ( [ { */
  Bracket *br;
  int nbr, capbr;
  int nopen[3];
  /* the functions parsed so far */
  Func *funcs, *funcs_tail;
  int nfuncs;
  bool depth_reported; /* "nested too deeply" was said (once per parse) */
} ParseCtx;

static inline int br_kind(char ch) { return ch == '(' ? 0 : ch == '[' ? 1 : 2; }
}

%code provides {
#define YY_DECL int yylex(YYSTYPE *yylval_param, YYLTYPE *yylloc_param, yyscan_t yyscanner, ParseCtx *pc)
YY_DECL;
}

%code {
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lexer.h"

#define YYMAXDEPTH 1000000

#define LOC(yl) ((Loc){.line = (yl).first_line, .col = (yl).first_column})

static void yyerror(YYLTYPE *loc, yyscan_t scanner, ParseCtx *pc, const char *msg);

static Expr *mk_expr(ParseCtx *pc, ExprKind kind, Loc loc) {
  Expr *e = ARENA_NEW(pc->arena, Expr);
  e->kind = kind;
  e->loc = loc;
  e->depth = 1;
  return e;
}

/* Records that e contains `sub`, one nesting level inside it when `inner`.
 * Past AST_MAX_DEPTH operations or AST_MAX_NESTING levels (ast.h), one
 * error per parse: a chain of a million '+' would otherwise overflow the
 * stack of every later walk over the tree, and thousands of nested calls
 * take seconds to compile. */
static void nest(ParseCtx *pc, Expr *e, const Expr *sub, bool inner) {
  if (!sub)
    return;
  if (sub->nesting + inner > e->nesting) {
    e->nesting = sub->nesting + inner;
    if (e->nesting > AST_MAX_NESTING && !pc->depth_reported) {
      pc->depth_reported = true;
      diag_error(pc->diag, e->loc, "expression nested too deeply (more than %d levels)",
                 AST_MAX_NESTING);
    }
  }
  if (sub->depth < e->depth)
    return;
  e->depth = sub->depth + 1;
  if (e->depth > AST_MAX_DEPTH && !pc->depth_reported) {
    pc->depth_reported = true;
    diag_error(pc->diag, e->loc, "expression nested too deeply (more than %d operations deep)",
               AST_MAX_DEPTH);
  }
}

static Expr *mk_binary(ParseCtx *pc, BinOp op, Loc loc, Expr *lhs, Expr *rhs) {
  Expr *e = mk_expr(pc, EX_BINARY, loc);
  e->op = op;
  e->lhs = lhs;
  e->rhs = rhs;
  nest(pc, e, lhs, op == BIN_POW); /* `**` is right-associative */
  nest(pc, e, rhs, true);
  return e;
}

static const char *binop_spelling(BinOp op) {
  switch (op) {
  case BIN_LT: return "<";
  case BIN_LE: return "<=";
  case BIN_GT: return ">";
  case BIN_GE: return ">=";
  case BIN_EQ: return "==";
  case BIN_NE: return "!=";
  default: return "?";
  }
}

static AstDim *mk_dim(ParseCtx *pc, Loc loc) {
  AstDim *d = ARENA_NEW(pc->arena, AstDim);
  d->loc = loc;
  return d;
}

static AstDim *mk_dim_op(ParseCtx *pc, Loc loc, char op, AstDim *lhs, AstDim *rhs) {
  AstDim *d = mk_dim(pc, loc);
  d->op = op;
  d->lhs = lhs;
  d->rhs = rhs;
  d->bad = lhs->bad || rhs->bad;
  return d;
}

/* A literal dimension: digits only, and it must fit in an int64_t. */
static AstDim *mk_num_dim(ParseCtx *pc, Loc loc, NumTok t) {
  AstDim *d = mk_dim(pc, loc);
  if (t.bad) {
    d->bad = true;
    return d;
  }
  int64_t v = 0;
  for (const char *p = t.text; *p; p++) {
    if (*p < '0' || *p > '9') {
      diag_error(pc->diag, loc, "shape sizes must be non-negative integers");
      d->bad = true;
      return d;
    }
    if (v > (INT64_MAX - (*p - '0')) / 10) {
      diag_error(pc->diag, loc, "shape size '%.40s' is too large", t.text);
      d->bad = true;
      return d;
    }
    v = v * 10 + (*p - '0');
  }
  d->size = v;
  return d;
}

static Index *mk_index(ParseCtx *pc, Loc loc, bool slice, Expr *pos, Expr *lo, Expr *hi) {
  Index *x = ARENA_NEW(pc->arena, Index);
  x->loc = loc;
  x->slice = slice;
  x->pos = pos;
  x->lo = lo;
  x->hi = hi;
  return x;
}

static TypeList type_list(ParseCtx *pc, TypeList l, AstType t) {
  if (l.n == l.cap) {
    int cap = l.cap ? 2 * l.cap : 4;
    AstType *v = ARENA_ARRAY(pc->arena, AstType, cap);
    if (l.n)
      memcpy(v, l.v, sizeof(AstType) * (size_t)l.n);
    l.v = v;
    l.cap = cap;
  }
  l.v[l.n++] = t;
  return l;
}

static ArgList arg_list(ParseCtx *pc, ArgList l, Loc loc, const char *kw, Expr *value) {
  Arg *a = ARENA_NEW(pc->arena, Arg);
  a->loc = loc;
  a->kw = kw;
  a->value = value;
  if (l.tail)
    l.tail->next = a;
  else
    l.head = a;
  l.tail = a;
  l.n++;
  return l;
}

static void keyword_as_name(ParseCtx *pc, Loc loc, const char *kw) {
  diag_error(pc->diag, loc, "'%s' is a keyword and cannot be used as a name", kw);
}

/* Forget the brackets a failed statement left open (keep the body's '{'),
 * or all of them between functions. */
static void br_unwind_to_brace(ParseCtx *pc) {
  while (pc->nbr && pc->br[pc->nbr - 1].ch != '{') {
    pc->nopen[br_kind(pc->br[pc->nbr - 1].ch)]--;
    pc->nbr--;
  }
}

static void br_clear(ParseCtx *pc) {
  pc->nbr = 0;
  pc->nopen[0] = pc->nopen[1] = pc->nopen[2] = 0;
}

static void add_func(ParseCtx *pc, Func *f) {
  if (pc->funcs_tail)
    pc->funcs_tail->next = f;
  else
    pc->funcs = f;
  pc->funcs_tail = f;
  pc->nfuncs++;
}
}

%define api.pure full
%locations
%define parse.error custom
%define lr.type canonical-lr
%define lr.default-reduction consistent
%expect 0
%param {yyscan_t scanner} {ParseCtx *pc}

/* In a body missing its '}', an error is a broken statement (shift the
 * error token), not the end of the function. */
%precedence UNCLOSED
%precedence error

%union {
  const char *str;
  NumTok num;
  bool flag;
  AstDType dtype;
  Expr *expr;
  Arg *arg;
  ArgList args;
  AstDim *dim;
  DimList dims;
  AstType type;
  AstType *ptype;
  Param *param;
  ParamList params;
  Stmt *stmt;
  StmtList stmts;
  Body body;
  Func *func;
  CmpOp cmp;
  TypeList types;
  Index *index;
  IndexList indices;
  AssignOp assign;
  RuleList rules;
}

%token T_FN "'fn'" T_EXPORT "'export'" T_LET "'let'" T_RETURN "'return'"
%token T_CONST "'const'" T_F32 "'f32'" T_F64 "'f64'" T_I32 "'i32'" T_BOOL "'bool'" T_VAR "'var'"
%token T_FOR "'for'" T_IN "'in'" T_WHILE "'while'" T_IF "'if'" T_ELSE "'else'" T_DOTDOT "'..'"
%token <str> T_IDENT "identifier"
%token <num> T_NUMBER "number"
%token T_LPAREN "'('" T_RPAREN "')'" T_LBRACK "'['" T_RBRACK "']'"
%token T_LBRACE "'{'" T_RBRACE "'}'" T_COMMA "','" T_COLON "':'" T_SEMI "';'"
%token T_ASSIGN "'='" T_ARROW "'->'"
%token T_PLUSEQ "'+='" T_MINUSEQ "'-='" T_STAREQ "'*='"
%token T_PLUS "'+'" T_MINUS "'-'" T_STAR "'*'" T_SLASH "'/'" T_AT "'@'" T_POW "'**'"
%token T_LT "'<'" T_LE "'<='" T_GT "'>'" T_GE "'>='" T_EQ "'=='" T_NE "'!='"
%token T_IDIV "'//'" T_PERCENT "'%'" T_AND "'&&'" T_OR "'||'" T_NOT "'!'"

%type <str> name
%type <flag> export_opt const_opt
%type <dtype> dtype
%type <type> type
%type <types> rtype types
%type <index> index
%type <indices> indices
%type <ptype> let_type
%type <dims> dims
%type <dim> dim dterm dfactor
%type <param> param
%type <params> params params_opt
%type <body> body
%type <stmts> stmts
%type <stmt> stmt ifstmt
%type <stmts> block
%type <func> func
%type <rules> rules_opt
%type <expr> expr or_expr and_expr cmp_expr cmp additive term unary power postfix primary
%type <cmp> cmpop
%type <assign> assignop
%type <args> args args_opt tuple_elems names
%type <arg> arg

%%

program:
    funcs
  ;

funcs:
    %empty
  | funcs func          { if ($2) add_func(pc, $2); br_clear(pc); }
  | funcs error {
      /* Skipping to 'fn', 'export' or the end of the file; export_opt
       * ends the error recovery once one arrives. */
      br_clear(pc);
    }
  ;

func:
    rules_opt export_opt T_FN name T_LPAREN params_opt T_RPAREN T_ARROW rtype body {
      Func *f = ARENA_NEW(pc->arena, Func);
      f->loc = LOC(@4);
      f->exported = $2;
      f->name = $4;
      f->params = $6.head;
      f->nparams = $6.n;
      f->ret = $9.v[0];
      f->rets = $9.v;
      f->nrets = $9.n;
      f->body = $10.head;
      f->end_loc = $10.end;
      f->rules = $1.head;
      if (!$10.closed) {
        bool eof = pc->cur_kind == YYEOF;
        if (pc->last_err_tok != pc->ntok) /* not already reported there */
          diag_error(pc->diag, $10.end,
                     "%smissing '}' to close the body of function '%s' (opened at line %d)",
                     eof ? "unexpected end of file: " : "", $4, $10.open.line);
      }
      $$ = f;
    }
    /* A broken header: skip to the body and still parse it. */
  | rules_opt export_opt T_FN error body {
      if (!$5.closed) {
        bool eof = pc->cur_kind == YYEOF;
        if (pc->last_err_tok != pc->ntok)
          diag_error(pc->diag, $5.end,
                     "%smissing '}' to close the function body opened at line %d",
                     eof ? "unexpected end of file: " : "", $5.open.line);
      }
      yyerrok;
      $$ = NULL;
    }
    /* A broken header and no body before the next function. */
  | rules_opt export_opt T_FN error {
      $$ = NULL;
    }
  ;

/* v3: custom derivative rules, `@vjp(g)` and `@jvp(h)` lines before a
 * function (spec 6b); vjp and jvp are plain identifiers here. */
rules_opt:
    %empty              { $$ = (RuleList){NULL, NULL}; }
  | rules_opt T_AT T_IDENT T_LPAREN T_IDENT T_RPAREN {
      $$ = $1;
      bool jvp = strcmp($3, "jvp") == 0;
      if (!jvp && strcmp($3, "vjp") != 0) {
        diag_error(pc->diag, LOC(@3), "unknown rule '@%s': a rule line is @vjp(name) or "
                   "@jvp(name)", $3);
      } else {
        Rule *r = ARENA_NEW(pc->arena, Rule);
        r->loc = LOC(@2);
        r->jvp = jvp;
        r->fn = $5;
        r->fn_loc = LOC(@5);
        if ($$.tail)
          $$.tail->next = r;
        else
          $$.head = r;
        $$.tail = r;
      }
    }
  ;

/* A function starts here. If its 'fn' or 'export' begins a line, whatever
 * error came before is over, so the next one is reported (yyerrok is safe:
 * the token is the lookahead or was just shifted). A 'fn' in the middle of
 * a line is more likely a keyword misused in an expression. */
export_opt:
    %empty              { if (pc->cur_first) yyerrok; $$ = false; }
  | T_EXPORT            { if (pc->cur_first) yyerrok; $$ = true; }
  ;

/* A keyword where a name belongs is reported and then taken as the name. */
name:
    T_IDENT             { $$ = $1; }
  | T_FN                { keyword_as_name(pc, LOC(@1), "fn"); $$ = "fn"; }
  | T_EXPORT            { keyword_as_name(pc, LOC(@1), "export"); $$ = "export"; }
  | T_LET               { keyword_as_name(pc, LOC(@1), "let"); $$ = "let"; }
  | T_RETURN            { keyword_as_name(pc, LOC(@1), "return"); $$ = "return"; }
  | T_F32               { keyword_as_name(pc, LOC(@1), "f32"); $$ = "f32"; }
  | T_F64               { keyword_as_name(pc, LOC(@1), "f64"); $$ = "f64"; }
  | T_I32               { keyword_as_name(pc, LOC(@1), "i32"); $$ = "i32"; }
  | T_BOOL              { keyword_as_name(pc, LOC(@1), "bool"); $$ = "bool"; }
  | T_VAR               { keyword_as_name(pc, LOC(@1), "var"); $$ = "var"; }
  | T_FOR               { keyword_as_name(pc, LOC(@1), "for"); $$ = "for"; }
  | T_IN                { keyword_as_name(pc, LOC(@1), "in"); $$ = "in"; }
  | T_WHILE             { keyword_as_name(pc, LOC(@1), "while"); $$ = "while"; }
  | T_IF                { keyword_as_name(pc, LOC(@1), "if"); $$ = "if"; }
  | T_ELSE              { keyword_as_name(pc, LOC(@1), "else"); $$ = "else"; }
  ;

params_opt:
    %empty              { $$ = (ParamList){NULL, NULL, 0}; }
  | params              { $$ = $1; }
  ;

params:
    param               { $$ = (ParamList){$1, $1, 1}; }
  | params T_COMMA param {
      $$ = $1;
      $$.tail->next = $3;
      $$.tail = $3;
      $$.n++;
    }
  ;

param:
    name T_COLON const_opt type {
      Param *p = ARENA_NEW(pc->arena, Param);
      p->loc = LOC(@1);
      p->name = $1;
      p->is_const = $3;
      p->type = $4;
      $$ = p;
    }
  ;

/* v2: several results, `-> (f32, f32[n])` */
rtype:
    type                { $$ = type_list(pc, (TypeList){NULL, 0, 0}, $1); }
  | T_LPAREN types T_RPAREN { $$ = $2; }
  ;

types:
    type T_COMMA type   { $$ = type_list(pc, type_list(pc, (TypeList){NULL, 0, 0}, $1), $3); }
  | types T_COMMA type  { $$ = type_list(pc, $1, $3); }
  ;

const_opt:
    %empty              { $$ = false; }
  | T_CONST             { $$ = true; }
  ;

type:
    dtype {
      $$ = (AstType){.loc = LOC(@1), .dtype = $1, .rank = 0, .dims = NULL};
    }
  | dtype T_LBRACK dims T_RBRACK {
      $$ = (AstType){.loc = LOC(@1), .dtype = $1, .rank = $3.n, .dims = $3.head};
    }
  ;

dtype:
    T_F32               { $$ = AST_F32; }
  | T_F64               { $$ = AST_F64; }
  | T_I32               { $$ = AST_I32; }
  | T_BOOL              { $$ = AST_BOOL; }
  ;

dims:
    dim                 { $$ = (DimList){$1, $1, 1}; }
  | dims T_COMMA dim {
      $$ = $1;
      $$.tail->next = $3;
      $$.tail = $3;
      $$.n++;
    }
  ;

/* v2: size arithmetic, `n - 1`, `2 * n + 1`, `k * d` */
dim:
    dterm               { $$ = $1; }
  | T_MINUS T_NUMBER {
      $$ = mk_dim(pc, LOC(@1));
      $$->bad = true;
      if (!$2.bad)
        diag_error(pc->diag, LOC(@1), "shape sizes must be non-negative integers");
    }
  | dim T_PLUS dterm    { $$ = mk_dim_op(pc, LOC(@2), '+', $1, $3); }
  | dim T_MINUS dterm   { $$ = mk_dim_op(pc, LOC(@2), '-', $1, $3); }
  ;

dterm:
    dfactor             { $$ = $1; }
  | dterm T_STAR dfactor { $$ = mk_dim_op(pc, LOC(@2), '*', $1, $3); }
  ;

dfactor:
    T_NUMBER            { $$ = mk_num_dim(pc, LOC(@1), $1); }
  | T_IDENT {
      $$ = mk_dim(pc, LOC(@1));
      $$->name = $1;
    }
  | T_LPAREN dim T_RPAREN { $$ = $2; }
  ;

body:
    T_LBRACE stmts T_RBRACE {
      $$ = (Body){$2.head, LOC(@1), LOC(@3), true};
    }
    /* The '}' is missing: the next function or the end of the file came
     * first. The func rule reports it, naming the function. */
  | T_LBRACE stmts %prec UNCLOSED {
      $$ = (Body){$2.head, LOC(@1), pc->cur_loc, false};
    }
  ;

stmts:
    %empty              { $$ = (StmtList){NULL, NULL}; }
  | stmts stmt {
      $$ = $1;
      if ($2) {
        if ($$.tail)
          $$.tail->next = $2;
        else
          $$.head = $2;
        $$.tail = $2;
      }
    }
  | stmts error {
      /* Resynchronised at 'let', 'var', 'return', '}', 'fn', 'export' or the end
       * of the file. The first three always continue the statement list,
       * so new errors may be reported at once; after the others, bison's
       * usual three-token grace period applies. */
      if (yychar == T_LET || yychar == T_VAR || yychar == T_RETURN || yychar == T_RBRACE)
        yyerrok;
      br_unwind_to_brace(pc);
      $$ = $1;
    }
  ;

stmt:
    T_LET name let_type T_ASSIGN expr T_SEMI {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_LET;
      s->loc = LOC(@1);
      s->name = $2;
      s->name_loc = LOC(@2);
      s->type = $3;
      s->value = $5;
      $$ = s;
    }
  | T_LET T_LPAREN names T_RPAREN let_type T_ASSIGN expr T_SEMI {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_LET;
      s->loc = LOC(@1);
      s->names = $3.head;
      s->nnames = $3.n;
      s->name_loc = LOC(@3);
      s->type = $5;
      s->value = $7;
      $$ = s;
    }
  | T_VAR name let_type T_ASSIGN expr T_SEMI {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_VAR;
      s->loc = LOC(@1);
      s->name = $2;
      s->name_loc = LOC(@2);
      s->type = $3;
      s->value = $5;
      $$ = s;
    }
  | T_IDENT assignop expr T_SEMI {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_ASSIGN;
      s->loc = $2.loc;
      s->name = $1;
      s->name_loc = LOC(@1);
      s->compound = $2.compound;
      s->op = $2.op;
      s->value = $3;
      $$ = s;
    }
  | T_FOR name T_IN expr T_DOTDOT expr block {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_FOR;
      s->loc = LOC(@1);
      s->name = $2;
      s->name_loc = LOC(@2);
      s->value = $4;
      s->hi = $6;
      s->body = $7.head;
      $$ = s;
    }
  | T_WHILE expr block {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_WHILE;
      s->loc = LOC(@1);
      s->value = $2;
      s->body = $3.head;
      $$ = s;
    }
  | ifstmt              { $$ = $1; }
  | T_IDENT T_LBRACK indices T_RBRACK assignop expr T_SEMI {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_ASSIGN;
      s->loc = $5.loc;
      s->name = $1;
      s->name_loc = LOC(@1);
      s->index = $3.head;
      s->nindex = $3.n;
      s->compound = $5.compound;
      s->op = $5.op;
      s->value = $6;
      $$ = s;
    }
  | T_RETURN expr T_SEMI {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_RETURN;
      s->loc = LOC(@1);
      s->value = $2;
      $$ = s;
    }
  | error T_SEMI {
      yyerrok;
      br_unwind_to_brace(pc);
      $$ = NULL;
    }
    /* A block where none belongs (`if c { ... }`): skip it whole. */
  | error T_LBRACE stmts T_RBRACE {
      yyerrok;
      br_unwind_to_brace(pc);
      $$ = NULL;
    }
  ;

ifstmt:
    T_IF expr block {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_IF;
      s->loc = LOC(@1);
      s->value = $2;
      s->body = $3.head;
      $$ = s;
    }
  | T_IF expr block T_ELSE block {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_IF;
      s->loc = LOC(@1);
      s->value = $2;
      s->body = $3.head;
      s->orelse = $5.head;
      s->has_else = true;
      $$ = s;
    }
  | T_IF expr block T_ELSE ifstmt {
      Stmt *s = ARENA_NEW(pc->arena, Stmt);
      s->kind = ST_IF;
      s->loc = LOC(@1);
      s->value = $2;
      s->body = $3.head;
      s->orelse = $5;
      s->has_else = true;
      $$ = s;
    }
  ;

block:
    T_LBRACE stmts T_RBRACE { $$ = $2; }
  ;

assignop:
    T_ASSIGN            { $$ = (AssignOp){false, BIN_ADD, LOC(@1)}; }
  | T_PLUSEQ            { $$ = (AssignOp){true, BIN_ADD, LOC(@1)}; }
  | T_MINUSEQ           { $$ = (AssignOp){true, BIN_SUB, LOC(@1)}; }
  | T_STAREQ            { $$ = (AssignOp){true, BIN_MUL, LOC(@1)}; }
  ;

let_type:
    %empty              { $$ = NULL; }
  | T_COLON type {
      $$ = ARENA_NEW(pc->arena, AstType);
      *$$ = $2;
    }
  ;

expr:
    or_expr             { $$ = $1; }
  ;

or_expr:
    and_expr            { $$ = $1; }
  | or_expr T_OR and_expr { $$ = mk_binary(pc, BIN_OR, LOC(@2), $1, $3); }
  ;

and_expr:
    cmp_expr            { $$ = $1; }
  | and_expr T_AND cmp_expr { $$ = mk_binary(pc, BIN_AND, LOC(@2), $1, $3); }
  ;

/* Comparisons do not chain; a chain is parsed, reported and kept. */
cmp_expr:
    additive            { $$ = $1; }
  | cmp                 { $$ = $1; }
  ;

cmp:
    additive cmpop additive { $$ = mk_binary(pc, $2.op, $2.loc, $1, $3); }
  | cmp cmpop additive {
      diag_error(pc->diag, $2.loc,
                 "comparisons do not chain: 'a %s b %s c' is not valid; compare two values at a time",
                 binop_spelling($1->op), binop_spelling($2.op));
      $$ = mk_binary(pc, $2.op, $2.loc, $1, $3);
    }
  ;

cmpop:
    T_LT                { $$ = (CmpOp){BIN_LT, LOC(@1)}; }
  | T_LE                { $$ = (CmpOp){BIN_LE, LOC(@1)}; }
  | T_GT                { $$ = (CmpOp){BIN_GT, LOC(@1)}; }
  | T_GE                { $$ = (CmpOp){BIN_GE, LOC(@1)}; }
  | T_EQ                { $$ = (CmpOp){BIN_EQ, LOC(@1)}; }
  | T_NE                { $$ = (CmpOp){BIN_NE, LOC(@1)}; }
  ;

additive:
    term                { $$ = $1; }
  | additive T_PLUS term  { $$ = mk_binary(pc, BIN_ADD, LOC(@2), $1, $3); }
  | additive T_MINUS term { $$ = mk_binary(pc, BIN_SUB, LOC(@2), $1, $3); }
  ;

term:
    unary               { $$ = $1; }
  | term T_STAR unary   { $$ = mk_binary(pc, BIN_MUL, LOC(@2), $1, $3); }
  | term T_SLASH unary  { $$ = mk_binary(pc, BIN_DIV, LOC(@2), $1, $3); }
  | term T_AT unary     { $$ = mk_binary(pc, BIN_MATMUL, LOC(@2), $1, $3); }
  | term T_IDIV unary   { $$ = mk_binary(pc, BIN_IDIV, LOC(@2), $1, $3); }
  | term T_PERCENT unary { $$ = mk_binary(pc, BIN_MOD, LOC(@2), $1, $3); }
  ;

unary:
    T_MINUS unary {
      $$ = mk_expr(pc, EX_NEG, LOC(@1));
      $$->lhs = $2;
      nest(pc, $$, $2, true);
    }
  | T_NOT unary {
      $$ = mk_expr(pc, EX_NOT, LOC(@1));
      $$->lhs = $2;
      nest(pc, $$, $2, true);
    }
  | power               { $$ = $1; }
  ;

power:
    postfix             { $$ = $1; }
  | postfix T_POW unary { $$ = mk_binary(pc, BIN_POW, LOC(@2), $1, $3); }
  ;

postfix:
    primary             { $$ = $1; }
  | postfix T_LBRACK indices T_RBRACK {
      $$ = mk_expr(pc, EX_INDEX, LOC(@2));
      $$->lhs = $1;
      $$->index = $3.head;
      $$->nindex = $3.n;
      nest(pc, $$, $1, false);
      for (Index *ix = $3.head; ix; ix = ix->next) {
        nest(pc, $$, ix->pos, true);
        nest(pc, $$, ix->lo, true);
        nest(pc, $$, ix->hi, true);
      }
    }
  | postfix T_LPAREN args_opt T_RPAREN {
      $$ = mk_expr(pc, EX_CALL, LOC(@1));
      $$->callee = $1;
      $$->args = $3.head;
      $$->nargs = $3.n;
      nest(pc, $$, $1, false);
      for (Arg *a = $3.head; a; a = a->next)
        nest(pc, $$, a->value, true);
    }
  ;

primary:
    T_NUMBER {
      $$ = mk_expr(pc, EX_NUMBER, LOC(@1));
      $$->num = $1.num;
      $$->text = $1.text;
    }
  | T_IDENT {
      $$ = mk_expr(pc, EX_NAME, LOC(@1));
      $$->name = $1;
    }
  | T_F32 {
      $$ = mk_expr(pc, EX_DTYPE, LOC(@1));
      $$->dtype = AST_F32;
    }
  | T_F64 {
      $$ = mk_expr(pc, EX_DTYPE, LOC(@1));
      $$->dtype = AST_F64;
    }
  | T_I32 {
      $$ = mk_expr(pc, EX_DTYPE, LOC(@1));
      $$->dtype = AST_I32;
    }
  | T_BOOL {
      $$ = mk_expr(pc, EX_DTYPE, LOC(@1));
      $$->dtype = AST_BOOL;
    }
  | T_LPAREN expr T_RPAREN { $$ = $2; }
  | T_LPAREN expr T_COMMA tuple_elems T_RPAREN {
      $$ = mk_expr(pc, EX_TUPLE, LOC(@1));
      Arg *first = ARENA_NEW(pc->arena, Arg);
      first->loc = LOC(@2);
      first->value = $2;
      first->next = $4.head;
      $$->args = first;
      $$->nargs = $4.n + 1;
      for (Arg *a = first; a; a = a->next)
        nest(pc, $$, a->value, true);
    }
  | T_LBRACK dims T_RBRACK {
      $$ = mk_expr(pc, EX_SHAPE, LOC(@1));
      $$->dims = $2.head;
      $$->ndims = $2.n;
    }
  ;

tuple_elems:
    expr                { $$ = arg_list(pc, (ArgList){NULL, NULL, 0}, LOC(@1), NULL, $1); }
  | tuple_elems T_COMMA expr { $$ = arg_list(pc, $1, LOC(@3), NULL, $3); }
  ;

/* `let (a, b) = ...`: the names ride in Arg.kw */
names:
    name T_COMMA name {
      $$ = arg_list(pc, arg_list(pc, (ArgList){NULL, NULL, 0}, LOC(@1), $1, NULL), LOC(@3), $3, NULL);
    }
  | names T_COMMA name  { $$ = arg_list(pc, $1, LOC(@3), $3, NULL); }
  ;

/* v2: x[i], x[a:b], x[idx], several separated by commas */
indices:
    index               { $$ = (IndexList){$1, $1, 1}; }
  | indices T_COMMA index {
      $$ = $1;
      $$.tail->next = $3;
      $$.tail = $3;
      $$.n++;
    }
  ;

index:
    expr                { $$ = mk_index(pc, LOC(@1), false, $1, NULL, NULL); }
  | T_COLON             { $$ = mk_index(pc, LOC(@1), true, NULL, NULL, NULL); }
  | expr T_COLON        { $$ = mk_index(pc, LOC(@1), true, NULL, $1, NULL); }
  | T_COLON expr        { $$ = mk_index(pc, LOC(@1), true, NULL, NULL, $2); }
  | expr T_COLON expr   { $$ = mk_index(pc, LOC(@1), true, NULL, $1, $3); }
  ;

args_opt:
    %empty              { $$ = (ArgList){NULL, NULL, 0}; }
  | args                { $$ = $1; }
  ;

args:
    arg                 { $$ = (ArgList){$1, $1, 1}; }
  | args T_COMMA arg {
      $$ = $1;
      $$.tail->next = $3;
      $$.tail = $3;
      $$.n++;
    }
  ;

arg:
    expr {
      $$ = ARENA_NEW(pc->arena, Arg);
      $$->loc = LOC(@1);
      $$->value = $1;
    }
  | T_IDENT T_ASSIGN expr {
      $$ = ARENA_NEW(pc->arena, Arg);
      $$->loc = LOC(@1);
      $$->kw = $1;
      $$->value = $3;
    }
  ;

%%

/* ---- Syntax error messages ---- */

/* How the lookahead reads in a message: identifier 'x', number '1.5',
 * 'fn', end of file. */
static void describe_found(const ParseCtx *pc, yysymbol_kind_t tok, char *buf, size_t size) {
  if (tok == YYSYMBOL_YYEOF) {
    snprintf(buf, size, "end of file");
  } else if ((tok == YYSYMBOL_T_IDENT || tok == YYSYMBOL_T_NUMBER) && pc->cur_text) {
    size_t n = strlen(pc->cur_text);
    snprintf(buf, size, "%s '%.*s%s'", tok == YYSYMBOL_T_IDENT ? "identifier" : "number",
             n > 40 ? 40 : (int)n, pc->cur_text, n > 40 ? "..." : "");
  } else {
    snprintf(buf, size, "%s", yysymbol_name(tok));
  }
}

static bool is_operator(yysymbol_kind_t k) {
  switch (k) {
  case YYSYMBOL_T_PLUS: case YYSYMBOL_T_MINUS: case YYSYMBOL_T_STAR:
  case YYSYMBOL_T_SLASH: case YYSYMBOL_T_AT: case YYSYMBOL_T_POW:
  case YYSYMBOL_T_LT: case YYSYMBOL_T_LE: case YYSYMBOL_T_GT:
  case YYSYMBOL_T_GE: case YYSYMBOL_T_EQ: case YYSYMBOL_T_NE:
  case YYSYMBOL_T_IDIV: case YYSYMBOL_T_PERCENT: case YYSYMBOL_T_AND:
  case YYSYMBOL_T_OR: case YYSYMBOL_T_LPAREN:
    return true;
  default:
    return false;
  }
}

/* Tokens after which an unclosed '(' or '[' is the likely mistake. */
static bool ends_construct(yysymbol_kind_t k) {
  switch (k) {
  case YYSYMBOL_YYEOF: case YYSYMBOL_T_SEMI: case YYSYMBOL_T_LBRACE:
  case YYSYMBOL_T_RBRACE: case YYSYMBOL_T_LET: case YYSYMBOL_T_RETURN: case YYSYMBOL_T_VAR:
  case YYSYMBOL_T_FN: case YYSYMBOL_T_EXPORT: case YYSYMBOL_T_ARROW:
    return true;
  default:
    return false;
  }
}

static int yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner, ParseCtx *pc) {
  (void)scanner;
  Diag *d = pc->diag;
  Loc loc = LOC(*yypcontext_location(ctx));
  yysymbol_kind_t tok = yypcontext_token(ctx);

  pc->last_err_tok = pc->ntok;
  /* The lexer already reported this token or the one before it. */
  if (pc->lex_err_tok > 0 && (pc->ntok == pc->lex_err_tok || pc->ntok == pc->lex_err_tok + 1))
    return 0;
  int max = d->max_errors ? d->max_errors : 50;
  if (d->errors >= max) { /* will not be printed: just count it */
    diag_error(d, loc, "syntax error");
    return 0;
  }

  yysymbol_kind_t exp[YYNTOKENS];
  int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
  bool E[YYNTOKENS];
  memset(E, 0, sizeof E);
  for (int i = 0; i < n; i++)
    E[exp[i]] = true;
  char found[128];
  describe_found(pc, tok, found, sizeof found);
  const char *prev = pc->prev_text ? pc->prev_text : "?";
  Bracket open = pc->open_before;
  char closer = open.ch == '(' ? ')' : open.ch == '[' ? ']' : 0;

  if ((tok == YYSYMBOL_T_RPAREN || tok == YYSYMBOL_T_RBRACK || tok == YYSYMBOL_T_RBRACE) &&
      pc->cur_unmatched) {
    diag_error(d, loc, "unmatched %s", yysymbol_name(tok));
  } else if (closer && ends_construct(tok) &&
             (tok == YYSYMBOL_YYEOF || E[closer == ')' ? YYSYMBOL_T_RPAREN : YYSYMBOL_T_RBRACK])) {
    diag_error(d, loc, "%smissing '%c' to close the '%c' opened at line %d, column %d",
               tok == YYSYMBOL_YYEOF ? "unexpected end of file: " : "", closer, open.ch,
               open.loc.line, open.loc.col);
  } else if (E[YYSYMBOL_T_SEMI]) {
    if (tok == YYSYMBOL_T_ASSIGN && E[YYSYMBOL_T_EQ])
      diag_error(d, loc, "unexpected '=' after the expression (to compare two values, use '==')");
    else /* a line that lacks it: at its end, not at the next line's token */
      diag_error(d, pc->cur_first && pc->prev_end.line > 0 ? pc->prev_end : loc,
                 "expected ';' after the expression");
  } else if (pc->prev_kind == T_LET && E[YYSYMBOL_T_IDENT]) {
    diag_error(d, loc, "expected a name after 'let', found %s", found);
  } else if (pc->prev_kind == T_FN && E[YYSYMBOL_T_IDENT]) {
    diag_error(d, loc, "expected the function's name after 'fn', found %s", found);
  } else if (E[YYSYMBOL_T_FN] && !E[YYSYMBOL_T_EXPORT] && !E[YYSYMBOL_T_IDENT]) {
    diag_error(d, loc, "expected 'fn' after 'export', found %s", found);
  } else if (E[YYSYMBOL_T_COLON] && !E[YYSYMBOL_T_ASSIGN]) {
    if (tok == YYSYMBOL_T_F32 || tok == YYSYMBOL_T_F64 || tok == YYSYMBOL_T_I32 ||
        tok == YYSYMBOL_T_CONST)
      diag_error(d, loc, "expected ':' between parameter '%s' and its type", prev);
    else
      diag_error(d, loc, "parameter '%s' has no type; write '%s: f32' or '%s: f32[n]'", prev, prev,
                 prev);
  } else if (E[YYSYMBOL_T_COMMA] && E[YYSYMBOL_T_RPAREN] && E[YYSYMBOL_T_PLUS]) {
    diag_error(d, loc, "expected ',' or ')' after the argument, found %s", found);
  } else if (E[YYSYMBOL_T_ASSIGN] && E[YYSYMBOL_T_PLUSEQ]) {
    diag_error(d, loc, "expected '=', '+=', '-=' or '*=' after '%.40s%s' to assign it, found %s",
               prev, strlen(prev) > 40 ? "..." : "", found);
  } else if (E[YYSYMBOL_T_ASSIGN]) {
    diag_error(d, loc, "expected '=' and a value in this '%s', found %s",
               pc->decl_kind == T_VAR ? "var" : "let", found);
  } else if (E[YYSYMBOL_T_IDENT] && E[YYSYMBOL_T_FN]) { /* a parameter name */
    if (tok == YYSYMBOL_T_CONST)
      diag_error(d, loc, "'const' goes after the colon, as in 'x: const f32'");
    else
      diag_error(d, loc, "expected a parameter name, found %s", found);
  } else if (E[YYSYMBOL_T_F32] && !E[YYSYMBOL_T_NUMBER]) {
    diag_error(d, loc, "expected a type ('f32', 'f64' or 'i32'), found %s", found);
  } else if (E[YYSYMBOL_T_ARROW]) {
    diag_error(d, loc, "expected '->' and the return type after the parameter list, found %s",
               found);
  } else if (E[YYSYMBOL_T_LBRACE]) {
    diag_error(d, loc, "expected '{' to start the function body, found %s", found);
  } else if (E[YYSYMBOL_T_NUMBER] && E[YYSYMBOL_T_LPAREN] && E[YYSYMBOL_T_NOT]) {
    diag_error(d, loc, "expected an expression, found %s", found);
  } else if (E[YYSYMBOL_T_NUMBER]) {
    diag_error(d, loc, "expected a size (an integer or a name), found %s", found);
  } else if (E[YYSYMBOL_T_LET] && E[YYSYMBOL_T_RETURN]) {
    diag_error(d, loc, "expected a statement ('let', 'var', an assignment or 'return') or '}', found %s", found);
  } else if (E[YYSYMBOL_T_FN] && E[YYSYMBOL_T_EXPORT]) {
    diag_error(d, loc, "expected a function definition ('fn' or 'export fn'), found %s", found);
  } else {
    /* Generic: list what could come next, leaving out the operators that
     * could continue an expression when something else could end it. */
    char list[256] = "";
    int shown = 0, total = 0;
    for (int i = 0; i < n; i++)
      if (!(E[YYSYMBOL_T_PLUS] && is_operator(exp[i])))
        total++;
    if (total > 0 && total <= 4) {
      size_t len = 0;
      for (int i = 0; i < n; i++) {
        if (E[YYSYMBOL_T_PLUS] && is_operator(exp[i]))
          continue;
        shown++;
        const char *sep = shown == 1 ? "" : shown == total ? " or " : ", ";
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", sep, yysymbol_name(exp[i]));
        if (len >= sizeof list)
          break;
      }
      diag_error(d, loc, "expected %s, found %s", list, found);
    } else {
      diag_error(d, loc, "unexpected %s", found);
    }
  }
  return 0;
}

static void yyerror(YYLTYPE *loc, yyscan_t scanner, ParseCtx *pc, const char *msg) {
  (void)scanner;
  if (strcmp(msg, "memory exhausted") == 0)
    diag_error(pc->diag, LOC(*loc), "expression nested too deeply");
  else
    diag_error(pc->diag, LOC(*loc), "%s", msg);
}

int parse_program(Arena *arena, Diag *diag, const char *src, size_t len, Program *out) {
  int before = diag->errors;
  out->funcs = NULL;
  out->nfuncs = 0;
  if (len > (size_t)INT_MAX - 2) {
    diag_error(diag, (Loc){.line = 0}, "input file is too large");
    return diag->errors - before;
  }
  ParseCtx pc;
  memset(&pc, 0, sizeof pc);
  pc.arena = arena;
  pc.diag = diag;
  pc.line = 1;
  pc.col = 1;
  pc.cur_kind = pc.prev_kind = YYEMPTY;
  yyscan_t scanner;
  if (yylex_init(&scanner) != 0)
    die("cannot initialise the lexer");
  YY_BUFFER_STATE buf = yy_scan_bytes(src ? src : "", (int)len, scanner);
  yyparse(scanner, &pc);
  yy_delete_buffer(buf, scanner);
  yylex_destroy(scanner);
  free(pc.br);
  out->funcs = pc.funcs;
  out->nfuncs = pc.nfuncs;
  return diag->errors - before;
}
