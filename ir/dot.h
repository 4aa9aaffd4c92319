/* The graph picture of a module (ir/dot.c, spec section 11). */
#ifndef SGC_DOT_H
#define SGC_DOT_H

#include "ir.h"

/* Write one Graphviz digraph per function of m to out. Reads Inst.active,
 * so run the activity analysis first (pass_activity). Returns 0, or -1 if
 * writing failed. */
int ir_print_dot_module(FILE *out, Module *m);

#endif
