/* The pass registry and the standard pipeline, shared by sgc and sgc-opt. */
#ifndef SGC_PIPELINE_H
#define SGC_PIPELINE_H

#include "../ir/ir.h"
#include "options.h"

typedef struct PassInfo {
  const char *name; /* as given to sgc-opt --passes= */
  void (*run)(Module *m);
  const char *what;
} PassInfo;

extern const PassInfo sg_passes[];
const PassInfo *pipeline_find(const char *name);

/* Run passes by name, verifying after each when `verify`. Returns the
 * number of verifier errors, or of the program's errors a pass reported
 * (m->errors: it stops after that pass); 0: fine. */
int pipeline_run(Module *m, const char *const *names, int n, bool verify);

/* The stages of sgc: lowering is done; these bring the module to "ad" and
 * then to "opt" at the given -O level. */
int pipeline_to_ad(Module *m, bool verify);
int pipeline_optimize(Module *m, int opt_level, bool verify);

/* The whole of sgc up to LLVM, for the command and the library alike:
 * parse src, check and lower it, then run the passes up to `until` (AD,
 * then the optimizer at o->opt_level). Returns NULL after reporting the
 * program's errors through diag. */
Module *pipeline_compile(Diag *diag, const char *src, size_t len, const Options *o, Stage until);

#endif
