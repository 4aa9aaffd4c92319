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

/* The runtime functions generated code may call, by name, NULL-ended:
 * the rows of runtime/rt_functions.def (lib/rt_symbols.c). */
typedef void JitRtFunction(void);
typedef struct JitRtSymbol {
  const char *name;
  JitRtFunction *fn;
} JitRtSymbol;
extern const JitRtSymbol jit_rt_symbols[];

#endif
