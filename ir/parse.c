/* The textual IR reader: turns what ir/print.c writes back into a Module, so
 * that sgc-opt (driver/sgc_opt.c) can run single passes on .ir files and lit
 * tests can feed hand-written IR to them. Printing a module this file parsed
 * from printer output gives the same text byte for byte.
 *
 *   export func @f(%x: f32[n], %y: const f32) -> (out: f32, d_x: f32[n]) {
 *     %0 = exp %x : f32[n]            # comments run to the end of the line
 *     %1 = sum %0 {axes=[0]} : f32
 *     ret %1, %0
 *   }
 *
 * Layout is free: newlines are whitespace like any other. A hand-written
 * lexer makes tokens on demand and a recursive-descent parser (one function
 * per rule, the rule in a comment above it) builds the IR with the builders
 * of ir/ir.c. `%N` is just a name: values are looked up in a hash table per
 * function, and `@callee` may name a function defined further down (callees
 * are resolved once every function is read).
 *
 * Every instruction's type is recomputed with ir_infer_type and must equal
 * the written one, except for ops whose shape rule is SH_GIVEN, where the
 * written type is the type. Semantic errors (unknown names, wrong types) are
 * reported and parsing goes on, so one run shows several; a syntax error
 * ends the parse (longjmp back to ir_parse). On any error the module is
 * freed and NULL returned. Nothing here recurses on the input's structure,
 * and every read is bounded by the input's length, so no input, however
 * large or malformed, can crash the parser or make it hang. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* ---- tokens ---- */

typedef enum {
  T_EOF,
  T_IDENT,  /* [A-Za-z_][A-Za-z0-9_]*: keywords, ops, dtypes, sizes */
  T_NUM,    /* 12, 0.5, -1.5e-07, -inf (numbers as %.17g prints them) */
  T_VALUE,  /* %name */
  T_GLOBAL, /* @name */
  T_ARROW,  /* -> */
  T_PUNCT,  /* one of ( ) [ ] { } , : = ^ */
} TokKind;

typedef struct Token {
  TokKind kind;
  const char *s; /* the text, sigil included */
  size_t len;
  Loc loc;
} Token;

/* ---- name tables: open addressing, keys point into the source ---- */

typedef enum { E_FREE, E_DEFINED, E_PENDING, E_REPORTED } EntryState;

typedef struct Entry {
  const char *key; /* NULL: empty slot */
  size_t len;
  void *val;        /* Inst* or Function* */
  EntryState state; /* values: E_PENDING = used before any definition */
  Loc use;          /* values: the first such use */
} Entry;

typedef struct Map {
  Entry *slots;
  size_t cap, n; /* cap is 0 or a power of two */
} Map;

/* A name to report or resolve later. */
typedef struct Ref {
  const char *name;
  size_t len;
  Loc loc;
  Inst *inst; /* call/grad whose callee this is; NULL for pending values */
  Function *fn; /* a derived function whose base this is, or whose rule */
  bool jvp;     /* a rule: the jvp one (else the vjp one) */
} Ref;

typedef struct RefVec {
  Ref *data;
  int len, cap;
} RefVec;

typedef struct Parser {
  Diag *diag;
  const char *pos, *end; /* the lexer's position in the input */
  int line, col;
  Token tok;     /* the current token */
  Loc prev_end;  /* just after the previous token: where "missing X" points */
  jmp_buf bail;  /* taken on a syntax error */
  Module *m;
  Map funcs;     /* @name -> Function */
  Map vals;      /* %name -> Inst, for the function being read */
  RefVec callees;/* call/grad instructions, resolved at the end */
  RefVec bases;  /* the bases of derived functions, resolved at the end */
  RefVec rules;  /* functions' rules, resolved at the end */
  RefVec pending;/* values used before definition in this function */
  Inst *poison;  /* stands in for an operand that could not be resolved */
  /* Scratch lists, reused and freed at the end: a syntax error can leave
   * the parse in the middle of filling one, and nothing may leak. */
  PtrVec args, params, rets;
  Loc *ret_locs;
  int cap_ret_locs;
  Region *region;    /* the block being read (NULL: the function body) */
  int depth;         /* how many regions it is nested in */
  PtrVec yields;
  Type *tup;         /* the result types of the region op being read */
  int cap_tup;
  PtrVec res_names;  /* the declared results of the function being read */
  Type *res_types;
  int cap_res_types;
} Parser;

enum { MAX_SHOWN = 40 }; /* longest token quoted in a message */

/* "%.*s" arguments for a token or name, cut to a readable length. */
#define SHOW(s, n) (int)((n) > MAX_SHOWN ? MAX_SHOWN : (n)), (s)

/* ---- errors ---- */

static void error_at(Parser *p, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void error_at(Parser *p, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(p->diag, loc, fmt, ap);
  va_end(ap);
}

/* A syntax error: report it and abandon the parse. */
_Noreturn static void fail_at(Parser *p, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn static void fail_at(Parser *p, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(p->diag, loc, fmt, ap);
  va_end(ap);
  longjmp(p->bail, 1);
}

/* "expected X, found Y", pointing at Y (or after the last token at EOF). */
_Noreturn static void fail_expected(Parser *p, const char *what) {
  const Token *t = &p->tok;
  if (t->kind == T_EOF)
    fail_at(p, p->prev_end, "expected %s, found end of input", what);
  fail_at(p, t->loc, "expected %s, found '%.*s%s'", what, SHOW(t->s, t->len),
          t->len > MAX_SHOWN ? "..." : "");
}

/* ---- lexer ---- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(char c) { return is_alpha(c) || is_digit(c) || c == '.'; }

static void bump(Parser *p) {
  if (*p->pos == '\n') {
    p->line++;
    p->col = 1;
  } else {
    p->col++;
  }
  p->pos++;
}

static void skip_space(Parser *p) {
  while (p->pos < p->end) {
    char c = *p->pos;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      bump(p);
    } else if (c == '#') {
      while (p->pos < p->end && *p->pos != '\n')
        bump(p);
    } else {
      break;
    }
  }
}

/* Read the next token into p->tok. */
static void next(Parser *p) {
  if (p->tok.len)
    p->prev_end = (Loc){.line = p->line, .col = p->col};
  skip_space(p);
  Token *t = &p->tok;
  t->s = p->pos;
  t->loc = (Loc){.line = p->line, .col = p->col};
  const char *start = p->pos;
  if (p->pos == p->end) {
    t->kind = T_EOF;
    t->len = 0;
    return;
  }
  char c = *p->pos;
  char c1 = p->pos + 1 < p->end ? p->pos[1] : 0;
  if (c == '%' || c == '@') {
    bump(p);
    while (p->pos < p->end && is_name_char(*p->pos))
      bump(p);
    if (p->pos - start == 1)
      fail_at(p, t->loc, "expected a name after '%c'", c);
    t->kind = c == '%' ? T_VALUE : T_GLOBAL;
  } else if (is_alpha(c)) {
    while (p->pos < p->end && (is_alpha(*p->pos) || is_digit(*p->pos)))
      bump(p);
    t->kind = T_IDENT;
  } else if (c == '-' && c1 == '>') {
    bump(p);
    bump(p);
    t->kind = T_ARROW;
  } else if (is_digit(c) || (c == '.' && is_digit(c1)) ||
             ((c == '-' || c == '+') && (is_digit(c1) || c1 == '.' || is_alpha(c1)))) {
    /* A sign, then letters, digits and dots, with a sign after an exponent
     * marker: "12", "0.5", "1e+300", "-inf", "nan" is an identifier. */
    if (c == '-' || c == '+')
      bump(p);
    bool numeric = p->pos < p->end && (is_digit(*p->pos) || *p->pos == '.');
    while (p->pos < p->end) {
      char d = *p->pos;
      if (is_name_char(d) ||
          ((d == '+' || d == '-') && numeric && (p->pos[-1] == 'e' || p->pos[-1] == 'E')))
        bump(p);
      else
        break;
    }
    t->kind = T_NUM;
  } else if (c != 0 && strchr("()[]{},:=^*+-", c)) { /* + - * in size expressions */
    bump(p);
    t->kind = T_PUNCT;
  } else {
    unsigned char u = (unsigned char)c;
    if (u >= 32 && u < 127)
      fail_at(p, t->loc, "unexpected character '%c'", c);
    fail_at(p, t->loc, "unexpected byte 0x%02x", u);
  }
  t->len = (size_t)(p->pos - start);
}

static bool is_punct(const Parser *p, char c) {
  return p->tok.kind == T_PUNCT && p->tok.s[0] == c;
}

static bool is_word(const Parser *p, const char *w) {
  size_t n = strlen(w);
  return p->tok.kind == T_IDENT && p->tok.len == n && memcmp(p->tok.s, w, n) == 0;
}

static bool accept(Parser *p, char c) {
  if (!is_punct(p, c))
    return false;
  next(p);
  return true;
}

static void expect(Parser *p, char c) {
  if (!accept(p, c)) {
    char what[4] = {'\'', c, '\'', 0};
    fail_expected(p, what);
  }
}

static void expect_word(Parser *p, const char *w) {
  if (!is_word(p, w)) {
    char what[32];
    snprintf(what, sizeof what, "'%s'", w);
    fail_expected(p, what);
  }
  next(p);
}

/* ---- tables ---- */

static size_t hash(const char *s, size_t n) {
  size_t h = 1469598103934665603u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return h;
}

static Entry *probe(Entry *slots, size_t cap, const char *key, size_t len) {
  size_t i = hash(key, len) & (cap - 1);
  while (slots[i].key && (slots[i].len != len || memcmp(slots[i].key, key, len) != 0))
    i = (i + 1) & (cap - 1);
  return &slots[i];
}

/* The entry for key, made (state E_FREE, val NULL) when missing. */
static Entry *map_get(Map *mp, const char *key, size_t len) {
  if (2 * (mp->n + 1) > mp->cap) {
    size_t cap = mp->cap ? 2 * mp->cap : 64;
    Entry *slots = xmalloc(sizeof(Entry) * cap);
    memset(slots, 0, sizeof(Entry) * cap);
    for (size_t i = 0; i < mp->cap; i++)
      if (mp->slots[i].key)
        *probe(slots, cap, mp->slots[i].key, mp->slots[i].len) = mp->slots[i];
    free(mp->slots);
    mp->slots = slots;
    mp->cap = cap;
  }
  Entry *e = probe(mp->slots, mp->cap, key, len);
  if (!e->key) {
    e->key = key;
    e->len = len;
    mp->n++;
  }
  return e;
}

static void map_free(Map *mp) {
  free(mp->slots);
  memset(mp, 0, sizeof *mp);
}

static void ref_push(RefVec *v, Ref r) {
  if (v->len == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 16;
    v->data = xrealloc(v->data, sizeof(Ref) * (size_t)v->cap);
  }
  v->data[v->len++] = r;
}

/* ---- small pieces ---- */

/* A non-negative integer token, at most `max`. */
static int64_t parse_int(Parser *p, int64_t max, const char *what) {
  const Token *t = &p->tok;
  if (t->kind != T_NUM)
    fail_expected(p, what);
  int64_t v = 0;
  for (size_t i = 0; i < t->len; i++) {
    if (!is_digit(t->s[i]))
      fail_at(p, t->loc, "expected %s, found '%.*s'", what, SHOW(t->s, t->len));
    if (v > (max - (t->s[i] - '0')) / 10)
      fail_at(p, t->loc, "%s '%.*s' is too large", what, SHOW(t->s, t->len));
    v = v * 10 + (t->s[i] - '0');
  }
  next(p);
  return v;
}

/* literal = NUM | "inf" | "nan" | "infinity"   (anything strtod reads whole) */
static double parse_literal(Parser *p) {
  const Token *t = &p->tok;
  char buf[64];
  if ((t->kind != T_NUM && t->kind != T_IDENT) || t->len >= sizeof buf)
    fail_expected(p, "a number");
  memcpy(buf, t->s, t->len);
  buf[t->len] = 0;
  char *endp;
  errno = 0;
  double v = strtod(buf, &endp);
  if (endp != buf + t->len || (t->kind == T_IDENT && !isinf(v) && !isnan(v)))
    fail_expected(p, "a number");
  if (errno == ERANGE && isinf(v))
    fail_at(p, t->loc, "number '%s' is out of range", buf);
  next(p);
  return v;
}

/* size   = sterm (("+" | "-") sterm)*      (ir/size.c spells them so)
 * sterm  = sfactor ("*" sfactor)*
 * sfactor = NUM | IDENT | "-"IDENT | "(" size ")" */
static SizePoly parse_size(Parser *p);

static SizePoly parse_size_factor(Parser *p) {
  if (accept(p, '(')) {
    SizePoly r = parse_size(p);
    expect(p, ')');
    return r;
  }
  bool neg = p->tok.kind == T_NUM && p->tok.len > 1 && p->tok.s[0] == '-' && is_alpha(p->tok.s[1]);
  if (p->tok.kind == T_IDENT || neg) {
    const char *s = p->tok.s + neg;
    size_t len = p->tok.len - neg;
    int sym = ir_sym(p->m, arena_strndup(p->m->arena, s, len));
    if (ir_sym_derived(p->m, sym))
      fail_at(p, p->tok.loc, "'%.*s' is not a size name", SHOW(s, len));
    next(p);
    SizePoly r = ir_poly_of(p->m, (Dim){0, sym});
    if (neg)
      r.t[0].coef = -1;
    return r;
  }
  return ir_poly_const(parse_int(p, INT64_MAX, "a size"));
}

static SizePoly parse_size_term(Parser *p) {
  Loc at = p->tok.loc;
  SizePoly r = parse_size_factor(p);
  while (accept(p, '*')) {
    SizePoly f = parse_size_factor(p);
    if (!ir_poly_mul(p->m, &r, &f, &r))
      fail_at(p, at, "size expression too large");
  }
  return r;
}

static SizePoly parse_size(Parser *p) {
  Loc at = p->tok.loc;
  SizePoly r = parse_size_term(p);
  for (;;) {
    int sign = is_punct(p, '+') ? 1 : is_punct(p, '-') ? -1 : 0;
    if (!sign)
      return r;
    next(p);
    SizePoly t = parse_size_term(p);
    if (!ir_poly_add(p->m, &r, &t, sign, &r))
      fail_at(p, at, "size expression too large");
  }
}

/* dims = "[" (dim ("," dim)*)? "]"
 * dim  = size                (a literal, a symbolic name, or an expression) */
static void parse_dims(Parser *p, Type *t) {
  expect(p, '[');
  t->rank = 0;
  if (accept(p, ']'))
    return;
  do {
    if (t->rank == IR_MAX_RANK)
      fail_at(p, p->tok.loc, "more than %d dimensions", IR_MAX_RANK);
    Dim *d = &t->dim[t->rank++];
    Loc at = p->tok.loc;
    SizePoly poly = parse_size(p);
    *d = ir_poly_dim(p->m, &poly);
    if (d->sym < 0 && d->size < 0)
      fail_at(p, at, "a size cannot be negative");
  } while (accept(p, ','));
  expect(p, ']');
}

/* type = ("f32" | "f64" | "i32" | "bool") dims? */
static Type parse_type(Parser *p) {
  Type t;
  memset(&t, 0, sizeof t);
  if (is_word(p, "f32"))
    t.dtype = DT_F32;
  else if (is_word(p, "f64"))
    t.dtype = DT_F64;
  else if (is_word(p, "i32"))
    t.dtype = DT_I32;
  else if (is_word(p, "bool"))
    t.dtype = DT_BOOL;
  else
    fail_expected(p, "a type");
  next(p);
  if (is_punct(p, '['))
    parse_dims(p, &t);
  return t;
}

static const char *type_str(Parser *p, const Type *t, char *buf, size_t len) {
  return ir_type_str(p->m, t, buf, len);
}

/* ---- values ---- */

/* Bind %name (the token t) to v in the current function. */
static void define_value(Parser *p, const Token *t, Inst *v) {
  Entry *e = map_get(&p->vals, t->s + 1, t->len - 1);
  if (e->state == E_DEFINED)
    error_at(p, t->loc, "redefinition of %.*s", SHOW(t->s, t->len));
  else if (e->state == E_PENDING)
    error_at(p, e->use, "%.*s is used before its definition", SHOW(t->s, t->len));
  e->state = E_DEFINED;
  e->val = v;
}

/* value = VALUE, defined earlier in the function. NULL when it is not: the
 * error comes later, from define_value if the name is defined further down
 * ("used before its definition"), else when the function ends ("unknown"). */
static Inst *parse_value(Parser *p) {
  if (p->tok.kind != T_VALUE)
    fail_expected(p, "a value (%name)");
  Token t = p->tok;
  next(p);
  Entry *e = map_get(&p->vals, t.s + 1, t.len - 1);
  if (e->state == E_DEFINED)
    return e->val;
  if (e->state == E_FREE) {
    e->state = E_PENDING;
    e->use = t.loc;
    ref_push(&p->pending, (Ref){.name = t.s + 1, .len = t.len - 1, .loc = t.loc});
  }
  return NULL;
}

/* Values used but never defined in the function just read. */
static void report_unknown_values(Parser *p) {
  for (int k = 0; k < p->pending.len; k++) {
    Ref *r = &p->pending.data[k];
    Entry *e = map_get(&p->vals, r->name, r->len);
    if (e->state == E_PENDING) {
      error_at(p, r->loc, "unknown value %%%.*s", SHOW(r->name, r->len));
      e->state = E_REPORTED;
    }
  }
  p->pending.len = 0;
}

/* ---- instructions ---- */

static Op find_op(const Token *t) {
  for (int k = 0; k < OP_COUNT; k++)
    if (strlen(ir_ops[k].name) == t->len && memcmp(ir_ops[k].name, t->s, t->len) == 0)
      return (Op)k;
  return OP_COUNT;
}

/* The attributes an instruction carries, as written. */
typedef struct Attrs {
  bool has_axes, has_perm, has_wrt, has_index, has_rules;
  unsigned axes;
  int perm[IR_MAX_RANK], nperm;
  int wrt, index;
  bool bad; /* an error was reported: skip the type check */
} Attrs;

/* attr    = "{" ( "axes" "=" intlist | "perm" "=" intlist | "wrt" "=" NUM
 *               | "index" "=" NUM | "result" "=" NUM ) "}"
 * intlist = "[" (NUM ("," NUM)*)? "]"      (each below IR_MAX_RANK) */
static void parse_attr(Parser *p, Attrs *a) {
  expect(p, '{');
  Token key = p->tok;
  bool axes = is_word(p, "axes"), perm = is_word(p, "perm"), wrt = is_word(p, "wrt");
  bool index = is_word(p, "index"), rules = is_word(p, "rules");
  bool result = is_word(p, "result"); /* a call's result index: kept in wrt */
  wrt |= result;
  if (!axes && !perm && !wrt && !index && !rules)
    fail_expected(p, "an attribute (axes, perm, wrt, index, result or rules)");
  next(p);
  if ((axes && a->has_axes) || (perm && a->has_perm) || (wrt && a->has_wrt) ||
      (index && a->has_index) || (rules && a->has_rules)) {
    error_at(p, key.loc, "%.*s given twice", SHOW(key.s, key.len));
    a->bad = true;
  }
  expect(p, '=');
  if (wrt) {
    a->has_wrt = true;
    a->wrt = (int)parse_int(p, 1000000000, "a parameter index");
  } else if (index) {
    a->has_index = true;
    a->index = (int)parse_int(p, 1000000000, "a result index");
  } else if (rules) { /* custom: which rules it has, kept in index */
    a->has_rules = true;
    a->index = (int)parse_int(p, CUSTOM_VJP | CUSTOM_JVP, "a set of rules (0 to 3)");
  } else {
    if (axes) {
      a->has_axes = true;
      a->axes = 0;
    } else {
      a->has_perm = true;
      a->nperm = 0;
    }
    expect(p, '[');
    if (!is_punct(p, ']')) {
      do {
        Loc loc = p->tok.loc;
        int n = 0;
        if (perm && a->nperm == IR_MAX_RANK)
          fail_at(p, loc, "perm lists more than %d axes", IR_MAX_RANK);
        n = (int)parse_int(p, IR_MAX_RANK - 1, "an axis (0 to 7)");
        if (perm) {
          a->perm[a->nperm++] = n;
        } else {
          if (a->axes & (1u << n)) {
            error_at(p, loc, "axis %d listed twice", n);
            a->bad = true;
          }
          a->axes |= 1u << n;
        }
      } while (accept(p, ','));
    }
    expect(p, ']');
  }
  expect(p, '}');
}

/* Whether the written attributes and operands suit op; reports what does not. */
static bool check_form(Parser *p, Op op, const Token *optok, const Attrs *a, bool callee) {
  bool ok = true;
  const char *name = ir_ops[op].name;
  bool reduce = ir_ops[op].shape == SH_REDUCE || ir_op_is(op, F_AXIS),
       transpose = op == OP_transpose;
  bool calls = op == OP_call || op == OP_custom; /* custom: the name alone */
  if (calls && !callee) {
    error_at(p, optok->loc, "%s needs a callee (@name)", name);
    ok = false;
  } else if (!calls && callee) {
    error_at(p, optok->loc, "%s takes no callee", name);
    ok = false;
  }
  if (reduce != a->has_axes) {
    error_at(p, optok->loc, reduce ? "%s needs {axes=[...]}" : "%s takes no axes", name);
    ok = false;
  }
  if (transpose != a->has_perm) {
    error_at(p, optok->loc, transpose ? "%s needs {perm=[...]}" : "%s takes no perm", name);
    ok = false;
  }
  if (op != OP_call && a->has_wrt) {
    error_at(p, optok->loc, "%s takes no wrt", name);
    ok = false;
  }
  if ((op == OP_custom) != a->has_rules) {
    error_at(p, optok->loc, op == OP_custom ? "%s needs {rules=N}" : "%s takes no rules", name);
    ok = false;
  }
  bool indexed = op == OP_proj || op == OP_polygamma;
  if (indexed != a->has_index) {
    error_at(p, optok->loc, indexed ? "%s needs {index=N}" : "%s takes no index", name);
    ok = false;
  }
  return ok;
}

static void parse_inst(Parser *p, Function *f);

enum { MAX_REGION_DEPTH = 10000 };

/* region = "{" ("^" "(" VALUE ":" type ("," VALUE ":" type)* ")" ":")? inst*
 *          "yield" (value ("," value)*)? "}" */
static void parse_region(Parser *p, Function *f, Region *r) {
  expect(p, '{');
  if (accept(p, '^')) {
    expect(p, '(');
    do {
      Token name = p->tok;
      if (name.kind != T_VALUE)
        fail_expected(p, "a block argument (%name)");
      next(p);
      expect(p, ':');
      Inst *a = ir_add_region_param(p->m, r, parse_type(p));
      a->loc = name.loc;
      define_value(p, &name, a);
    } while (accept(p, ','));
    expect(p, ')');
    expect(p, ':');
  }
  Region *outer = p->region;
  p->region = r;
  if (++p->depth > MAX_REGION_DEPTH)
    fail_at(p, p->tok.loc, "regions nested more than %d deep", MAX_REGION_DEPTH);
  while (p->tok.kind == T_VALUE)
    parse_inst(p, f);
  p->depth--;
  p->region = outer;
  expect_word(p, "yield");
  PtrVec *ys = &p->yields;
  ys->len = 0;
  if (p->tok.kind == T_VALUE) {
    do {
      Inst *v = parse_value(p);
      vec_push(ys, v ? v : p->poison);
    } while (accept(p, ','));
  }
  ir_set_yields(p->m, r, (Inst **)ys->data, ys->len);
  expect(p, '}');
}

/* The tuple of a region op's result types: "(" (type ("," type)*)? ")" */
static int parse_tuple(Parser *p) {
  int n = 0;
  expect(p, '(');
  if (!is_punct(p, ')')) {
    do {
      if (n == p->cap_tup) {
        p->cap_tup = p->cap_tup ? 2 * p->cap_tup : 8;
        p->tup = xrealloc(p->tup, sizeof(Type) * (size_t)p->cap_tup);
      }
      p->tup[n++] = parse_type(p);
    } while (accept(p, ','));
  }
  expect(p, ')');
  return n;
}

/* After ": (types)": the regions, then a check of the written result types. */
static void parse_regions(Parser *p, Function *f, Inst *i, const Token *res, int ntup,
                          bool ok) {
  Type *tup = ARENA_ARRAY(p->m->arena, Type, ntup + 1);
  memcpy(tup, p->tup, sizeof(Type) * (size_t)ntup);
  i->nregions = i->op == OP_for || i->op == OP_unloop ? 1 : i->op == OP_custom ? 3 : 2;
  i->regions = ARENA_ARRAY(p->m->arena, Region, i->nregions);
  for (int k = 0; k < i->nregions; k++) {
    i->regions[k].owner = i;
    if (k >= 1)
      expect_word(p, i->op == OP_while    ? "do"
                     : i->op != OP_custom ? "else"
                     : k == 1             ? "vjp"
                                          : "jvp");
    parse_region(p, f, &i->regions[k]);
  }
  if (!ok)
    return;
  bool shaped = i->op != OP_if || i->regions[0].nyields == i->regions[1].nyields;
  int n = shaped ? ir_num_results(i) : -1;
  if ((i->op == OP_for && i->nargs < 2) || (i->op == OP_unloop && i->nargs < 1)) {
    error_at(p, res->loc, "%s needs more operands", ir_ops[i->op].name);
    return;
  }
  if (n != ntup) {
    error_at(p, res->loc, "%.*s has %d results, but its type lists %d", SHOW(res->s, res->len),
             n, ntup);
    return;
  }
  for (int k = 0; k < n; k++) {
    Type t = ir_result_type(i, k);
    if (!ir_type_eq(&t, &tup[k])) {
      char s1[256], s2[256];
      error_at(p, res->loc, "result %d of %.*s has type %s, not %s", k, SHOW(res->s, res->len),
               type_str(p, &t, s1, sizeof s1), type_str(p, &tup[k], s2, sizeof s2));
    }
  }
}

/* inst    = VALUE "=" IDENT GLOBAL? literal? dims? (value ("," value)*)? attr* ":"
 *           ( type | tuple region ("do"|"else" region)? )
 *   the literal only (and always) for const, the dims only for count, the
 *   tuple and regions only for for, while and if */
static void parse_inst(Parser *p, Function *f) {
  Token res = p->tok; /* the %name being defined */
  next(p);
  expect(p, '=');
  if (p->tok.kind != T_IDENT)
    fail_expected(p, "an operation");
  Token optok = p->tok;
  Op op = find_op(&optok);
  bool ok = true;
  if (op == OP_COUNT) {
    error_at(p, optok.loc, "unknown operation '%.*s'", SHOW(optok.s, optok.len));
    ok = false;
  } else if (op == OP_param) {
    error_at(p, optok.loc, "parameters are declared in the signature, not by 'param'");
    ok = false;
  }
  next(p);

  Token callee = {0};
  if (p->tok.kind == T_GLOBAL) {
    callee = p->tok;
    next(p);
  }
  double num = 0;
  if (op == OP_const)
    num = parse_literal(p);
  Type attr;
  memset(&attr, 0, sizeof attr);
  if (op == OP_count && !is_punct(p, '['))
    fail_expected(p, "'[' (the dims count multiplies)");
  if (is_punct(p, '[')) {
    Loc loc = p->tok.loc;
    parse_dims(p, &attr);
    if (ok && op != OP_count) {
      error_at(p, loc, "only count takes a list of dims");
      ok = false;
    }
  }
  PtrVec *args = &p->args;
  args->len = 0;
  if (p->tok.kind == T_VALUE) {
    do {
      Inst *v = parse_value(p);
      if (!v)
        ok = false;
      vec_push(args, v ? v : p->poison);
    } while (accept(p, ','));
  }
  Attrs a;
  memset(&a, 0, sizeof a);
  while (is_punct(p, '{'))
    parse_attr(p, &a);
  expect(p, ':');
  if (op != OP_COUNT && ir_ops[op].shape == SH_REGION) {
    int ntup = parse_tuple(p);
    if (ok)
      ok = check_form(p, op, &optok, &a, callee.kind == T_GLOBAL);
    Builder b = {p->m, f, NULL, res.loc, p->region};
    Inst *i = ir_new_inst(&b, op, ir_scalar(IR_TUPLE), (Inst **)args->data, args->len);
    i->index = a.index;
    if (callee.kind == T_GLOBAL && op == OP_custom)
      i->name = arena_strndup(p->m->arena, callee.s + 1, callee.len - 1);
    define_value(p, &res, i);
    parse_regions(p, f, i, &res, ntup, ok && !a.bad);
    return;
  }
  Type type = parse_type(p);
  if (a.bad)
    ok = false;

  if (op == OP_COUNT || op == OP_param) { /* keep the name defined */
    Inst *i = ARENA_NEW(p->m->arena, Inst);
    i->op = OP_const;
    i->type = type;
    define_value(p, &res, i);
    return;
  }
  if (ok)
    ok = check_form(p, op, &optok, &a, callee.kind == T_GLOBAL);
  Builder b = {p->m, f, NULL, res.loc, p->region};
  Inst *i = ir_new_inst(&b, op, type, (Inst **)args->data, args->len);
  i->num = num;
  if (op == OP_const && type.dtype == DT_F32) /* as ir_const */
    i->num = (double)(float)num;
  else if (op == OP_const && type.dtype == DT_I32)
    i->num = ir_wrap_i32(num);
  i->axes = a.axes;
  memcpy(i->perm, a.perm, sizeof i->perm);
  i->wrt = a.wrt;
  i->index = a.index;
  attr.dtype = type.dtype;
  i->attr = attr;
  if (callee.kind == T_GLOBAL && op == OP_call)
    ref_push(&p->callees, (Ref){.name = callee.s + 1, .len = callee.len - 1, .loc = callee.loc, .inst = i});

  if (ok && op == OP_transpose && i->nargs == 1 && a.nperm != i->args[0]->type.rank) {
    error_at(p, res.loc, "perm lists %d axes, but the operand has rank %d", a.nperm,
             i->args[0]->type.rank);
    ok = false;
  }
  if (ok) {
    Type want;
    char err[256], s1[256], s2[256];
    if (!ir_infer_type(p->m, i, &want, err, sizeof err))
      error_at(p, res.loc, "%s", err);
    else if (!ir_type_eq(&want, &type))
      error_at(p, res.loc, "type of %.*s should be %s, not %s", SHOW(res.s, res.len),
               type_str(p, &want, s1, sizeof s1), type_str(p, &type, s2, sizeof s2));
  }
  define_value(p, &res, i);
}

/* ---- functions ---- */

/* param = VALUE ":" "const"? type */
static Inst *parse_param(Parser *p, int index) {
  Token name = p->tok;
  if (name.kind != T_VALUE)
    fail_expected(p, "a parameter (%name)");
  next(p);
  if (!is_alpha(name.s[1]))
    error_at(p, name.loc, "parameter name %.*s must start with a letter or '_'",
             SHOW(name.s, name.len));
  expect(p, ':');
  bool is_const = is_word(p, "const");
  if (is_const)
    next(p);
  Inst *v = ARENA_NEW(p->m->arena, Inst);
  v->op = OP_param;
  v->type = parse_type(p);
  v->name = arena_strndup(p->m->arena, name.s + 1, name.len - 1);
  v->is_const = is_const;
  v->wrt = index;
  v->loc = name.loc;
  Entry *e = map_get(&p->vals, name.s + 1, name.len - 1);
  if (e->state == E_DEFINED)
    error_at(p, name.loc, "duplicate parameter %.*s", SHOW(name.s, name.len));
  e->state = E_DEFINED;
  e->val = v;
  return v;
}

/* Append a declared result to p->res_names / p->res_types. */
static void add_result(Parser *p, const char *name, Type t) {
  if (p->res_names.len == p->cap_res_types) {
    p->cap_res_types = p->cap_res_types ? 2 * p->cap_res_types : 8;
    p->res_types = xrealloc(p->res_types, sizeof(Type) * (size_t)p->cap_res_types);
  }
  p->res_types[p->res_names.len] = t;
  vec_push(&p->res_names, (void *)name);
}

/* results = type | "(" (IDENT ":" type ("," IDENT ":" type)*)? ")"
 *   a lone type is the one result `out` */
static void parse_results(Parser *p) {
  p->res_names.len = 0;
  if (!accept(p, '(')) {
    add_result(p, "out", parse_type(p));
    return;
  }
  if (accept(p, ')'))
    return;
  do {
    if (p->tok.kind != T_IDENT)
      fail_expected(p, "a result name");
    char *name = arena_strndup(p->m->arena, p->tok.s, p->tok.len);
    next(p);
    expect(p, ':');
    add_result(p, name, parse_type(p));
  } while (accept(p, ','));
  expect(p, ')');
}

/* ret = "ret" (value ("," value)*)?      (then the function's "}") */
static void parse_ret(Parser *p, Function *f) {
  Loc loc = p->tok.loc;
  next(p);
  PtrVec *vals = &p->rets;
  vals->len = 0;
  bool ok = true;
  if (p->tok.kind == T_VALUE) {
    do {
      if (vals->len == p->cap_ret_locs) {
        p->cap_ret_locs = p->cap_ret_locs ? 2 * p->cap_ret_locs : 8;
        p->ret_locs = xrealloc(p->ret_locs, sizeof(Loc) * (size_t)p->cap_ret_locs);
      }
      p->ret_locs[vals->len] = p->tok.loc;
      Inst *v = parse_value(p);
      ok &= v != NULL;
      vec_push(vals, v ? v : p->poison);
    } while (accept(p, ','));
  }
  int n = p->res_names.len;
  if (vals->len != n) {
    error_at(p, loc, "ret gives %d value%s, but @%s declares %d result%s", vals->len,
             vals->len == 1 ? "" : "s", f->name, n, n == 1 ? "" : "s");
    return;
  }
  for (int k = 0; k < n && ok; k++) {
    Inst *v = vals->data[k];
    if (!ir_type_eq(&v->type, &p->res_types[k])) {
      char s1[256], s2[256];
      error_at(p, p->ret_locs[k], "result %s has type %s, but the signature says %s",
               (const char *)p->res_names.data[k], type_str(p, &v->type, s1, sizeof s1),
               type_str(p, &p->res_types[k], s2, sizeof s2));
    }
  }
  ir_set_results(p->m, f, (Inst **)vals->data, (const char **)p->res_names.data, n);
}

/* derived = KIND GLOBAL "{" "wrt" "=" NUM "}", after "func" GLOBAL "=":
 * a derived function (ir/derive.c), its signature made once its base is
 * known (resolve_bases). */
static void parse_derived(Parser *p, Function *f, Loc at) {
  int kind = 0;
  for (int k = 1; k < DV_COUNT; k++)
    if (is_word(p, ir_derive_names[k]))
      kind = k;
  if (!kind)
    fail_expected(p, "a transform (grad, jvp, vjp, jacobian or hessian)");
  next(p);
  if (p->tok.kind != T_GLOBAL)
    fail_expected(p, "the function it transforms (@name)");
  Token base = p->tok;
  next(p);
  Attrs a = {0};
  parse_attr(p, &a);
  if (!a.has_wrt)
    fail_expected(p, "{wrt=N}");
  if (f->exported)
    error_at(p, at, "a derived function cannot be exported");
  f->derive = (DeriveKind)kind;
  f->wrt = a.wrt;
  ref_push(&p->bases, (Ref){.name = base.s + 1, .len = base.len - 1, .loc = base.loc, .fn = f});
}

/* rules = "rules" "(" ("vjp" | "jvp") "=" GLOBAL ("," ...)? ")": a function's
 * derivative rules, resolved at the end like callees. */
static void parse_rules(Parser *p, Function *f) {
  next(p);
  expect(p, '(');
  do {
    bool jvp = is_word(p, "jvp");
    if (!jvp && !is_word(p, "vjp"))
      fail_expected(p, "vjp= or jvp=");
    next(p);
    expect(p, '=');
    if (p->tok.kind != T_GLOBAL)
      fail_expected(p, "a function (@name)");
    ref_push(&p->rules, (Ref){.name = p->tok.s + 1, .len = p->tok.len - 1, .loc = p->tok.loc,
                              .fn = f, .jvp = jvp});
    next(p);
  } while (accept(p, ','));
  expect(p, ')');
}

/* function = "export"? "func" GLOBAL ( "=" derived
 *            | "(" (param ("," param)*)? ")" "->" results "{" inst* ret "}" ) */
static void parse_function(Parser *p) {
  Loc loc = p->tok.loc;
  bool exported = is_word(p, "export");
  if (exported)
    next(p);
  expect_word(p, "func");
  if (p->tok.kind != T_GLOBAL)
    fail_expected(p, "a function name (@name)");
  Token name = p->tok;
  next(p);
  Entry *fe = map_get(&p->funcs, name.s + 1, name.len - 1);
  if (fe->val)
    error_at(p, name.loc, "redefinition of %.*s", SHOW(name.s, name.len));
  Function *f = ir_func_new(p->m, arena_strndup(p->m->arena, name.s + 1, name.len - 1));
  if (!fe->val)
    fe->val = f;
  f->exported = exported;
  f->kind = FN_PLAIN;
  f->loc = loc;
  if (accept(p, '=')) {
    parse_derived(p, f, name.loc);
    return;
  }

  map_free(&p->vals);
  p->pending.len = 0;
  expect(p, '(');
  PtrVec *params = &p->params;
  params->len = 0;
  if (!is_punct(p, ')')) {
    do
      vec_push(params, parse_param(p, params->len));
    while (accept(p, ','));
  }
  expect(p, ')');
  f->nparams = params->len;
  f->params = ARENA_ARRAY(p->m->arena, Inst *, params->len > 0 ? params->len : 1);
  if (params->len)
    memcpy(f->params, params->data, sizeof(Inst *) * (size_t)params->len);

  if (p->tok.kind != T_ARROW)
    fail_expected(p, "'->'");
  next(p);
  parse_results(p);
  if (is_word(p, "rules")) /* rules(vjp=@g, jvp=@h) */
    parse_rules(p, f);
  expect(p, '{');
  while (p->tok.kind == T_VALUE)
    parse_inst(p, f);
  if (!is_word(p, "ret"))
    fail_expected(p, "an instruction or 'ret'");
  parse_ret(p, f);
  expect(p, '}');
  report_unknown_values(p);
}

/* module = function* EOF */
static void parse_module(Parser *p) {
  while (p->tok.kind != T_EOF) {
    if (!is_word(p, "func") && !is_word(p, "export"))
      fail_expected(p, "'func' or 'export func'");
    parse_function(p);
  }
}

/* ---- after the last function ---- */

/* Point each call at its function (operand counts are the verifier's). */
static void resolve_callees(Parser *p) {
  for (int k = 0; k < p->callees.len; k++) {
    Ref *r = &p->callees.data[k];
    Entry *e = map_get(&p->funcs, r->name, r->len);
    Function *g = e->val;
    Inst *i = r->inst;
    i->callee = g;
    if (!g)
      error_at(p, r->loc, "unknown function @%.*s", SHOW(r->name, r->len));
  }
}

/* Each derived function's base, then its signature, bases first (a
 * derivation that leads back to itself is an error). */
static void sign_derived(Parser *p, Function *f, Loc loc) {
  if (!f->derive || f->nresults || !f->base || f->mark == 2)
    return;
  if (f->mark) {
    error_at(p, loc, "@%s is derived from itself", f->name);
    return;
  }
  f->mark = 1;
  sign_derived(p, f->base, loc);
  char err[512];
  /* a base whose signature failed has none: say nothing more about it */
  if (!f->base->derive || f->base->nresults) {
    if (!ir_derive_signature(p->m, f, err, sizeof err))
      error_at(p, loc, "%s", err);
  }
  f->mark = 2;
}

static void resolve_rules(Parser *p) {
  for (int k = 0; k < p->rules.len; k++) {
    Ref *r = &p->rules.data[k];
    Function *g = map_get(&p->funcs, r->name, r->len)->val;
    if (!g)
      error_at(p, r->loc, "unknown function @%.*s", SHOW(r->name, r->len));
    else if (r->jvp)
      r->fn->jvp_rule = g;
    else
      r->fn->vjp_rule = g;
  }
}

static void resolve_bases(Parser *p) {
  for (int k = 0; k < p->bases.len; k++) {
    Ref *r = &p->bases.data[k];
    Entry *e = map_get(&p->funcs, r->name, r->len);
    r->fn->base = e->val;
    if (!e->val)
      error_at(p, r->loc, "unknown function @%.*s", SHOW(r->name, r->len));
  }
  for (int k = 0; k < p->bases.len; k++)
    if (p->bases.data[k].fn->base)
      sign_derived(p, p->bases.data[k].fn, p->bases.data[k].loc);
  for (int k = 0; k < p->bases.len; k++)
    p->bases.data[k].fn->mark = 0;
}

/* The language has no recursion and the inliner relies on that: find a
 * cycle of calls with an explicit stack (no recursion on deep call chains). */
static void check_recursion(Parser *p) {
  enum { NEW = 0, BUSY, DONE };
  typedef struct Frame {
    Function *f;
    Inst *at;
  } Frame;
  int n = 0;
  for (Function *f = p->m->funcs; f; f = f->next, n++)
    f->mark = NEW;
  Frame *stack = xmalloc(sizeof(Frame) * (size_t)(n + 1));
  for (Function *root = p->m->funcs; root; root = root->next) {
    if (root->mark != NEW)
      continue;
    int sp = 0;
    stack[sp++] = (Frame){root, root->first};
    root->mark = BUSY;
    while (sp > 0) {
      Frame *top = &stack[sp - 1];
      while (top->at && !(top->at->op == OP_call && top->at->callee))
        top->at = top->at->next;
      if (!top->at) {
        top->f->mark = DONE;
        sp--;
        continue;
      }
      Inst *i = top->at;
      top->at = i->next;
      Function *g = i->callee;
      if (g->mark == BUSY) {
        error_at(p, i->loc, "recursive call to @%s", g->name);
        goto out;
      }
      if (g->mark == NEW) {
        g->mark = BUSY;
        stack[sp++] = (Frame){g, g->first};
      }
    }
  }
out:
  for (Function *f = p->m->funcs; f; f = f->next)
    f->mark = 0;
  free(stack);
}

Module *ir_parse(Diag *diag, const char *src, size_t len) {
  Parser *p = xmalloc(sizeof *p);
  memset(p, 0, sizeof *p);
  p->diag = diag;
  p->pos = src;
  p->end = src + len;
  p->line = p->col = 1;
  p->prev_end = (Loc){.line = 1, .col = 1};
  p->m = ir_module_new();
  p->poison = ARENA_NEW(p->m->arena, Inst);
  p->poison->op = OP_param;
  p->poison->name = "?";
  int errors = diag->errors;
  if (setjmp(p->bail) == 0) {
    next(p);
    parse_module(p);
    resolve_bases(p);
    resolve_rules(p);
    resolve_callees(p);
    if (diag->errors == errors)
      check_recursion(p);
  }
  map_free(&p->funcs);
  map_free(&p->vals);
  free(p->callees.data);
  free(p->bases.data);
  free(p->rules.data);
  free(p->pending.data);
  vec_free(&p->args);
  vec_free(&p->params);
  vec_free(&p->rets);
  vec_free(&p->yields);
  free(p->tup);
  vec_free(&p->res_names);
  free(p->ret_locs);
  free(p->res_types);
  Module *m = p->m;
  free(p);
  if (diag->errors > errors) {
    ir_module_free(m);
    return NULL;
  }
  return m;
}
