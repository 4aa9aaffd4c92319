/* libsgc's JIT: one ORC LLJIT per compiled module. */
#ifndef SGC_JIT_H
#define SGC_JIT_H

#include <stdio.h>

#include "../codegen/cg.h"

typedef struct Jit Jit;

/* Generate m's exports with cg_build (the code sgc would write to an
 * object), link them in memory against the runtime and resolve every
 * export. NULL after "sgc: error: ..." on err. */
Jit *jit_compile(Module *m, const char *module_name, const CgOptions *o, FILE *err);

/* An export's address, or NULL. Reads only, so any thread may call it. */
void *jit_lookup(const Jit *j, const char *name);

void jit_free(Jit *j);

/* Every function of libsgrt, by name: what generated code may call.
 * Written by the Makefile from the library (tools/rt_symbols.sh). */
typedef void JitRtFunction(void);
typedef struct JitRtSymbol {
  const char *name;
  JitRtFunction *fn;
} JitRtSymbol;
extern const JitRtSymbol jit_rt_symbols[];

#endif
