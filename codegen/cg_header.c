/* --header: a C header declaring every export with the calling convention
 * of spec section 9, each with its .sg signature (shapes included) in a
 * comment above it. */
#include <stdlib.h>
#include <string.h>

#include "cg.h"

/* Parameter names are the .sg names, unless C would reject them. */
static const char *c_name(const char *name, char *buf, size_t len) {
  static const char *const kw[] = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
      "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
      "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
      "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
      "true", "false", "alignas", "alignof", "static_assert", "thread_local", NULL};
  for (int k = 0; kw[k]; k++)
    if (strcmp(kw[k], name) == 0 || name[0] == '_') {
      snprintf(buf, len, "%s_", name);
      return buf;
    }
  return name;
}

static void signature_comment(FILE *out, Module *m, Function *f) {
  char buf[512];
  fprintf(out, "/* %s(", f->name);
  for (int k = 0; k < f->nparams; k++)
    fprintf(out, "%s%s: %s%s", k ? ", " : "", f->params[k]->name,
            f->params[k]->is_const ? "const " : "",
            ir_type_str(m, &f->params[k]->type, buf, sizeof buf));
  fprintf(out, ")\n   -> ");
  for (int k = 0; k < f->nresults; k++)
    fprintf(out, "%s%s: %s", k ? ", " : "", f->result_names[k],
            ir_type_str(m, &f->results[k]->type, buf, sizeof buf));
  fprintf(out, " */\n");
}

/* A sum of sizes in bytes with like terms together: "16*b + 4". */
typedef struct Sum {
  char (*terms)[256];
  int64_t *coef;
  int n, cap;
  int64_t lit;
} Sum;

/* size bytes times the element count of t */
static void add_numel(Module *m, Sum *s, const Type *t, int64_t size) {
  char term[256];
  size_t tn = 0;
  term[0] = 0;
  for (int j = 0; j < t->rank; j++) {
    if (t->dim[j].sym < 0)
      size *= t->dim[j].size;
    else if (tn < sizeof term)
      tn += (size_t)snprintf(term + tn, sizeof term - tn, "*%s", m->syms[t->dim[j].sym]);
  }
  if (!tn) {
    s->lit += size;
    return;
  }
  int q = 0;
  while (q < s->n && strcmp(s->terms[q], term) != 0)
    q++;
  if (q == s->n) {
    if (s->n == s->cap) {
      s->cap = 2 * s->cap + 4;
      s->terms = xrealloc(s->terms, sizeof *s->terms * (size_t)s->cap);
      s->coef = xrealloc(s->coef, sizeof *s->coef * (size_t)s->cap);
    }
    snprintf(s->terms[s->n], sizeof s->terms[0], "%s", term);
    s->coef[s->n++] = 0;
  }
  s->coef[q] += size;
}

static int64_t elem_bytes(DType dt) { return dt == DT_F64 ? 8 : dt == DT_BOOL ? 1 : 4; }

/* The state one iteration of a loop saves for its adjoint: each carried
 * value, or for one the body updates by a chain of updates (without
 * --ad-memory, whose snapshots hold whole values) their undo logs: the
 * starts and positions (8 bytes each) and the old values
 * (codegen/cg_region.c). */
static void state_bytes(Module *m, const Inst *loop, bool snapshots, char *buf, size_t len) {
  int nc = ir_num_results(loop);
  Sum s = {0};
  const Region *body = &loop->regions[loop->op == OP_while ? 1 : 0];
  int most = 1; /* a chain is at most the body's top-level instructions */
  for (const Inst *i = body->first; i; i = i->next)
    most++;
  const Inst **links = xmalloc(sizeof(Inst *) * (size_t)most);
  for (int k = 0; k < nc; k++) {
    Type t = ir_result_type(loop, k);
    int nl = snapshots ? 0 : cg_tape_links(loop, k, links);
    if (!nl)
      add_numel(m, &s, &t, elem_bytes(t.dtype));
    for (int j = 0; j < nl; j++) {
      const Inst *u = links[j]->args[1];
      for (int a = 2; a < links[j]->nargs; a++)
        add_numel(m, &s, &links[j]->args[a]->type, 8);
      add_numel(m, &s, &u->type, elem_bytes(u->type.dtype));
    }
  }
  free(links);
  size_t n = 0;
  buf[0] = 0;
  for (int q = 0; q < s.n && n < len; q++)
    n += (size_t)snprintf(buf + n, len - n, "%s%lld%s", n ? " + " : "", (long long)s.coef[q], s.terms[q]);
  if ((s.lit || !n) && n < len)
    snprintf(buf + n, len - n, "%s%lld", n ? " + " : "", (long long)s.lit);
  free(s.terms);
  free(s.coef);
}

/* Spec section 7: per export, the saved-state bytes per iteration of each
 * loop its gradient reverses (nested loops: per run of the inner loop). */
static void loop_memory_comment(FILE *out, Module *m, Function *f, bool snapshots) {
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    if (i->op == OP_unloop) {
      char buf[1024];
      state_bytes(m, i->args[0], snapshots, buf, sizeof buf);
      Loc at = i->args[0]->loc;
      if (at.src_line) /* inlined: where the loop is written, and the call */
        fprintf(out, "/* %s: the loop at line %d (in %s, called at line %d) saves %s bytes per "
                     "iteration */\n", f->name, at.src_line, at.inlined, at.line, buf);
      else
        fprintf(out, "/* %s: the loop at line %d saves %s bytes per iteration */\n", f->name,
                at.line, buf);
    }
}

char *cg_header_guard(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  char *g = xmalloc(n + 4);
  size_t j = 0;
  if (!(base[0] >= 'A' && base[0] <= 'Z') && !(base[0] >= 'a' && base[0] <= 'z'))
    g[j++] = 'H', g[j++] = '_';
  for (size_t k = 0; k < n; k++) {
    char c = base[k];
    g[j++] = (c >= 'a' && c <= 'z') ? (char)(c - 32)
             : ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
  }
  g[j] = 0;
  return g;
}

int cg_write_header(Module *m, FILE *out, const char *guard, long long ad_memory) {
  fprintf(out, "/* Generated by sgc. Each function returns SG_OK or an SG_ERR_ code;\n"
               " * sg_last_error() says what was wrong. Outputs are overwritten. */\n");
  fprintf(out, "#ifndef %s\n#define %s\n\n#include <sg_runtime.h>\n\n", guard, guard);
  fprintf(out, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  for (Function *f = m->funcs; f; f = f->next) {
    if (!f->exported)
      continue;
    signature_comment(out, m, f);
    loop_memory_comment(out, m, f, ad_memory > 0);
    fprintf(out, "int %s(", f->name);
    /* Names are unique already (ir_unique_name); C keywords get a '_'. */
    for (int k = 0; k < f->nparams + f->nresults; k++) {
      bool is_out = k >= f->nparams;
      const char *name = is_out ? f->result_names[k - f->nparams] : f->params[k]->name;
      char buf[256];
      fprintf(out, "%s%ssg_tensor *%s", k ? ", " : "", is_out ? "" : "const ",
              c_name(name, buf, sizeof buf));
    }
    fprintf(out, ");\n\n");
  }
  fprintf(out, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
  return ferror(out) ? 1 : 0;
}
