/* Checking and lowering: AST -> IR (frontend/lower.c). */
#ifndef SGC_LOWER_H
#define SGC_LOWER_H

#include "../ir/ir.h"
#include "ast.h"

/* Check the whole program (names, dtypes, shapes, calls, recursion) and lower
 * every function to an IR function of the same name. Calls between user
 * functions stay `call` instructions and grad(...) stays `grad`; the passes
 * inline and expand them. Reports errors to `diag` and returns NULL if any. */
Module *lower_program(Program *prog, Diag *diag);

#endif
