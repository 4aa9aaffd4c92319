/* libsgc's JIT: one ORC LLJIT per compiled module, loading its object. */
#ifndef SGC_JIT_H
#define SGC_JIT_H

#include <stdio.h>

#include "../codegen/cg.h"

typedef struct Jit Jit;

/* Link `object` (what cg_emit writes: the sgc command's object) in memory
 * against the runtime and resolve every entry point in `names` (each
 * NUL-terminated, one after another, names_len bytes in all). NULL after
 * "sgc: error: ..." on err. */
Jit *jit_load(const char *object, size_t len, const char *names, size_t names_len, FILE *err);

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
