/* The graph picture (spec section 11): `sgc --emit-dot` writes one Graphviz
 * digraph per function, one node per IR value (labelled with its id, op and
 * type), edges from operands to users, so that a reader sees at a glance
 * what the gradient flows through:
 *
 *   white boxes, bold black edges    values the gradient flows through
 *                                    (Inst.active, passes/activity.c)
 *   grey boxes, thin grey edges      constants for differentiation: under
 *                                    stop_gradient, fed only by const
 *                                    parameters or literals, or leading
 *                                    nowhere the result depends on
 *   red octagon                      stop_gradient, the boundary itself
 *   blue boxes and edges             the reverse sweep of f_grad / f_vjp:
 *                                    adjoint values; dashed blue edges are
 *                                    forward values the reverse sweep reads
 *   green / grey "invhouse"          parameters (grey: const)
 *   "house" at the bottom            results, with their C ABI names
 *
 * The caller marks activity first (pass_activity); this file only reads it.
 * The reverse sweep is found from the IR itself, so it is right at every
 * stage, after optimization included: in a gradient function, the values the
 * gradient results depend on and the primal result `out` does not. (A grad()
 * expression inlined into an ordinary function is drawn as ordinary values.)
 *
 * Instructions are drawn block by block (print_block), so that a nested
 * region (a loop or branch body) becomes one `subgraph cluster_...` around
 * its block. */
#include <string.h>

#include "dot.h"

/* Colours: fill, border or edge. */
#define C_ACTIVE_FILL "white"
#define C_CONST_FILL "#d9d9d9"
#define C_CONST_LINE "#8c8c8c"
#define C_STOP_FILL "#f4cccc"
#define C_STOP_LINE "#cc0000"
#define C_ADJ_FILL "#cfe2f3"
#define C_ADJ_LINE "#1c5fa8"
#define C_PARAM_FILL "#d9ead3"
#define C_PARAM_LINE "#38761d"

/* A space in a label. A label line is one font: Graphviz places each span
 * by its own estimate of the widths, so a bold word overlaps the next span. */
#define SP "&#160;"

typedef enum { K_ACTIVE, K_CONST, K_STOP, K_ADJOINT } Kind;

typedef struct Dot {
  FILE *out;
  Module *m;
  Function *f;
  unsigned char *adj;  /* by Inst.id: 1 if in the reverse sweep */
  unsigned char *padj; /* by parameter index */
} Dot;

/* Names are identifiers, but the label is HTML: escape anyway. */
static void put_html(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", out);
    else if (*s == '>')
      fputs("&gt;", out);
    else if (*s == '&')
      fputs("&amp;", out);
    else if (*s == '"')
      fputs("&quot;", out);
    else
      fputc(*s, out);
  }
}

static bool is_adjoint(const Dot *d, const Inst *v) {
  return v->op == OP_param ? d->padj[v->wrt] : d->adj[v->id];
}

static Kind kind_of(const Dot *d, const Inst *v) {
  if (is_adjoint(d, v))
    return K_ADJOINT;
  if (v->op == OP_stop_gradient)
    return K_STOP;
  return v->active ? K_ACTIVE : K_CONST;
}

static void node_id(FILE *out, const Inst *v) {
  if (v->op == OP_param)
    fprintf(out, "p%d", v->wrt);
  else
    fprintf(out, "v%d", v->id);
}

static void mark_value(const Inst *v, unsigned char *mark, unsigned char *pmark) {
  if (v->op == OP_param)
    pmark[v->wrt] = 1;
  else
    mark[v->id] = 1;
}

/* i is in the cone: so are its operands and, for a loop or branch, its
 * whole bodies and every value they capture (a body is drawn as one piece:
 * a loop in the primal sweep is primal, an `unloop` is adjoint). */
static void mark_inst(const Inst *i, unsigned char *mark, unsigned char *pmark) {
  for (int k = 0; k < i->nargs; k++)
    mark_value(i->args[k], mark, pmark);
  for (int r = 0; r < i->nregions; r++) {
    const Region *rg = &i->regions[r];
    for (int k = 0; k < rg->nparams; k++)
      mark_value(rg->params[k], mark, pmark);
    for (const Inst *j = rg->first; j; j = j->next) {
      mark_value(j, mark, pmark);
      mark_inst(j, mark, pmark);
    }
  }
}

/* Marks in `mark` (by id, params in pmark) every value that one of the
 * results in [from, to) depends on. One backward walk: the body is in
 * definition order, so users come after their operands. */
static void mark_cone(const Function *f, int from, int to, unsigned char *mark,
                      unsigned char *pmark) {
  for (int k = from; k < to; k++) {
    const Inst *r = f->results[k];
    if (r->op == OP_param)
      pmark[r->wrt] = 1;
    else
      mark[r->id] = 1;
  }
  for (Inst *i = f->last; i; i = i->prev)
    if (mark[i->id])
      mark_inst(i, mark, pmark);
}

/* The reverse sweep of a gradient function: what the gradients (results
 * 1..n) depend on and the value (result 0) does not. */
static void find_adjoints(Dot *d, int n) {
  const Function *f = d->f;
  size_t nv = (size_t)n + 1, np = (size_t)f->nparams + 1;
  d->adj = xmalloc(nv);
  d->padj = xmalloc(np);
  memset(d->adj, 0, nv);
  memset(d->padj, 0, np);
  if (f->kind == FN_PLAIN || f->nresults < 2)
    return;
  unsigned char *primal = xmalloc(nv), *pprimal = xmalloc(np);
  memset(primal, 0, nv);
  memset(pprimal, 0, np);
  mark_cone(f, 0, 1, primal, pprimal);
  mark_cone(f, 1, f->nresults, d->adj, d->padj);
  for (size_t k = 0; k < nv; k++)
    d->adj[k] &= !primal[k];
  for (size_t k = 0; k < np; k++)
    d->padj[k] &= !pprimal[k];
  free(primal);
  free(pprimal);
}

static void print_axes(FILE *out, unsigned axes) {
  fputs(SP "axes=[", out);
  const char *sep = "";
  for (int k = 0; k < IR_MAX_RANK; k++)
    if (axes & (1u << k)) {
      fprintf(out, "%s%d", sep, k);
      sep = ",";
    }
  fputc(']', out);
}

/* The label's first line: "%3 exp", "%0 const 1", "%4 sum axes=[0]". */
static void print_op(Dot *d, const Inst *i) {
  FILE *out = d->out;
  fprintf(out, "%%%d" SP "%s", i->id, ir_ops[i->op].name);
  if (i->op == OP_call) {
    fputs(SP "@", out);
    put_html(out, i->callee->name);
  }
  if (i->op == OP_const)
    fprintf(out, SP "%.6g", i->num);
  if (i->op == OP_count) {
    char buf[512];
    fputs(SP, out);
    put_html(out, ir_dims_str(d->m, &i->attr, buf, sizeof buf));
  }
  if (ir_ops[i->op].shape == SH_REDUCE)
    print_axes(out, i->axes);
  if (ir_ops[i->op].shape == SH_TRANSPOSE) {
    fputs(SP "perm=[", out);
    for (int k = 0; k < i->type.rank; k++)
      fprintf(out, "%s%d", k ? "," : "", i->perm[k]);
    fputc(']', out);
  }
}

static void print_type_line(Dot *d, const Type *t) {
  char buf[512];
  if (t->dtype == IR_TUPLE) /* a loop or branch: its results are the projs */
    return;
  fputs("<br/><font point-size=\"10\">", d->out);
  put_html(d->out, ir_type_str(d->m, t, buf, sizeof buf));
  fputs("</font>", d->out);
}

/* Fill, border and text colour of a kind of value (the shape is separate:
 * parameters keep theirs whatever their colour). */
static void node_colours(FILE *out, Kind k) {
  switch (k) {
  case K_ACTIVE:
    fputs("fillcolor=\"" C_ACTIVE_FILL "\", penwidth=1.5", out);
    break;
  case K_CONST:
    fputs("fillcolor=\"" C_CONST_FILL "\", color=\"" C_CONST_LINE "\", fontcolor=\"#404040\"", out);
    break;
  case K_STOP:
    fputs("fillcolor=\"" C_STOP_FILL "\", color=\"" C_STOP_LINE "\", penwidth=2.5", out);
    break;
  case K_ADJOINT:
    fputs("fillcolor=\"" C_ADJ_FILL "\", color=\"" C_ADJ_LINE "\", fontcolor=\"" C_ADJ_LINE "\"", out);
    break;
  }
}

static void print_param(Dot *d, const Inst *p) {
  FILE *out = d->out;
  node_id(out, p);
  fputs(" [shape=invhouse, style=filled, label=<", out);
  if (p->is_const)
    fputs("const" SP, out);
  put_html(out, p->name);
  print_type_line(d, &p->type);
  fputs(">, ", out);
  if (is_adjoint(d, p))
    node_colours(out, K_ADJOINT);
  else if (p->active)
    fputs("fillcolor=\"" C_PARAM_FILL "\", color=\"" C_PARAM_LINE "\", penwidth=2", out);
  else
    node_colours(out, K_CONST);
  fputs("];\n", out);
}

/* Whether the gradient flows backward along operand k of i. */
static bool carries_gradient(const Inst *i, int k) {
  const Inst *a = i->args[k];
  if (!i->active || !a->active || i->op == OP_stop_gradient)
    return false;
  if (i->op == OP_select && k == 0)
    return false;
  if (i->op == OP_call && k < i->callee->nparams)
    return !i->callee->params[k]->is_const;
  return true;
}

static void print_edge(Dot *d, const Inst *from, const Inst *to, bool gradient) {
  FILE *out = d->out;
  node_id(out, from);
  fputs(" -> ", out);
  node_id(out, to);
  if (is_adjoint(d, to))
    fputs(is_adjoint(d, from) ? " [color=\"" C_ADJ_LINE "\", penwidth=1.5]"
                              : " [color=\"" C_ADJ_LINE "\", style=dashed]", out);
  else if (gradient)
    fputs(" [penwidth=2.5]", out);
  else
    fputs(" [color=\"" C_CONST_LINE "\"]", out);
  fputs(";\n", out);
}

static void print_inst(Dot *d, const Inst *i) {
  FILE *out = d->out;
  node_id(out, i);
  fputs(" [label=<", out);
  print_op(d, i);
  print_type_line(d, &i->type);
  Kind kind = kind_of(d, i);
  fputs(kind == K_STOP ? ">, shape=octagon, style=filled, " : ">, shape=box, style=\"rounded,filled\", ", out);
  node_colours(out, kind);
  if (i->loc.line > 0)
    fprintf(out, ", tooltip=\"line %d\"", i->loc.line);
  fputs("];\n", out);
  for (int k = 0; k < i->nargs; k++)
    print_edge(d, i->args[k], i, carries_gradient(i, k));
}

static void print_block(Dot *d, const Inst *first);

/* The bodies of a loop or branch, each a cluster holding its block
 * arguments (the loop index, the carried values) and its instructions; a
 * dashed edge takes each yielded value back to the op. */
static void print_regions(Dot *d, const Inst *op) {
  static const char *const names[][2] = {
      [OP_for] = {"for", NULL},       [OP_while] = {"while: condition", "while: body"},
      [OP_if] = {"if: then", "else"}, [OP_unloop] = {"reverse loop", NULL}};
  FILE *out = d->out;
  for (int r = 0; r < op->nregions; r++) {
    const Region *rg = &op->regions[r];
    const char *name = (size_t)op->op < sizeof names / sizeof names[0] && names[op->op][r > 0]
                           ? names[op->op][r > 0] : ir_ops[op->op].name;
    bool adj = is_adjoint(d, op);
    fprintf(out, "subgraph cluster_%d_%d {\nlabel=<<b>%s</b>>; labeljust=l; style=\"rounded,dashed\"; "
                 "color=\"%s\";\n", op->id, r, name, adj ? C_ADJ_LINE : "#555555");
    for (int k = 0; k < rg->nparams; k++) {
      const Inst *p = rg->params[k];
      node_id(out, p);
      fprintf(out, " [shape=ellipse, style=filled, label=<%%%d", p->id);
      print_type_line(d, &p->type);
      fputs(">, ", out);
      node_colours(out, kind_of(d, p));
      fputs("];\n", out);
    }
    print_block(d, rg->first);
    for (int k = 0; k < rg->nyields; k++) {
      node_id(out, rg->yields[k]);
      fputs(" -> ", out);
      node_id(out, op);
      fputs(" [style=dashed, constraint=false];\n", out);
    }
    fputs("}\n", out);
  }
}

/* One block of instructions, nested regions as clusters. */
static void print_block(Dot *d, const Inst *first) {
  for (const Inst *i = first; i; i = i->next) {
    print_inst(d, i);
    if (i->nregions)
      print_regions(d, i);
  }
}

static void print_results(Dot *d) {
  FILE *out = d->out;
  const Function *f = d->f;
  fputs("{ rank=sink;\n", out);
  for (int k = 0; k < f->nresults; k++) {
    const Inst *r = f->results[k];
    bool adj = k > 0 && f->kind != FN_PLAIN;
    fprintf(out, "r%d [shape=house, style=filled, penwidth=2, label=<<b>", k);
    put_html(out, f->result_names[k]);
    fputs("</b>", out);
    print_type_line(d, &r->type);
    fputs(adj ? ">, fillcolor=\"" C_ADJ_FILL "\", color=\"" C_ADJ_LINE "\", fontcolor=\"" C_ADJ_LINE "\"];\n"
              : ">, fillcolor=\"white\"];\n", out);
  }
  fputs("}\n", out);
  for (int k = 0; k < f->nresults; k++) {
    node_id(out, f->results[k]);
    fprintf(out, " -> r%d [penwidth=2%s];\n", k,
            k > 0 && f->kind != FN_PLAIN ? ", color=\"" C_ADJ_LINE "\"" : "");
  }
}

/* The key, as the graph's label: one swatch per kind of node. */
static void print_legend(FILE *out, bool gradient) {
  fputs("label=<<table border=\"0\" cellspacing=\"4\"><tr>"
        "<td bgcolor=\"" C_PARAM_FILL "\" border=\"1\" color=\"" C_PARAM_LINE "\">parameter</td>"
        "<td bgcolor=\"" C_ACTIVE_FILL "\" border=\"1\">gradient flows (bold edges)</td>"
        "<td bgcolor=\"" C_CONST_FILL "\" border=\"1\" color=\"" C_CONST_LINE "\">constant for the gradient</td>"
        "<td bgcolor=\"" C_STOP_FILL "\" border=\"1\" color=\"" C_STOP_LINE "\">stop_gradient</td>",
        out);
  if (gradient)
    fputs("<td bgcolor=\"" C_ADJ_FILL "\" border=\"1\" color=\"" C_ADJ_LINE "\">"
          "<font color=\"" C_ADJ_LINE "\">adjoint (reverse sweep)</font></td>", out);
  fputs("</tr></table>>;\nlabelloc=b;\n", out);
}

static void print_func(FILE *out, Module *m, Function *f) {
  Dot d = {out, m, f, NULL, NULL};
  int n = ir_renumber(f);
  find_adjoints(&d, n);
  fputs("digraph \"", out);
  fputs(f->name, out); /* an identifier: no quote to escape */
  fputs("\" {\n", out);
  fprintf(out, "graph [fontname=\"Helvetica\", fontsize=12, ranksep=0.3, nodesep=0.25];\n"
               "node [fontname=\"Helvetica\", fontsize=11, margin=\"0.08,0.03\", height=0.3];\n"
               "edge [arrowsize=0.6];\n");
  print_legend(out, f->kind != FN_PLAIN);
  fputs("title [shape=plaintext, label=<<b>", out);
  fputs(f->exported ? "export" SP : "", out);
  fputs("@", out);
  put_html(out, f->name);
  fputs("</b>>, fontsize=14];\n{ rank=source; title;", out);
  for (int k = 0; k < f->nparams; k++) {
    fputc(' ', out);
    node_id(out, f->params[k]);
    fputc(';', out);
  }
  fputs(" }\n", out);
  for (int k = 0; k < f->nparams; k++)
    print_param(&d, f->params[k]);
  /* parameters left to right in declaration order */
  for (int k = 0; k + 1 < f->nparams; k++)
    fprintf(out, "p%d -> p%d [style=invis];\n", k, k + 1);
  print_block(&d, f->first);
  print_results(&d);
  fputs("}\n", out);
  free(d.adj);
  free(d.padj);
}

int ir_print_dot_module(FILE *out, Module *m) {
  for (Function *f = m->funcs; f; f = f->next)
    print_func(out, m, f);
  return fflush(out) != 0 || ferror(out) ? -1 : 0;
}
