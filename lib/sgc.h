/* sgc.h: the sgc compiler as a library (spec section 10). A program builds
 * and differentiates models at run time: sgc_compile compiles a whole .sg
 * source in memory with LLVM's ORC JIT, through the same stages and flags
 * as the sgc command, and sgc_lookup returns each export and its gradient
 * with the C ABI of sg_runtime.h.
 *
 *   char *errors;
 *   sgc_module *m = sgc_compile(source, "model.sg", "-O3", &errors);
 *   if (!m) { fputs(errors, stderr); free(errors); return 1; }
 *   int (*xent_grad)(const sg_tensor *, const sg_tensor *, const sg_tensor *,
 *                    sg_tensor *, sg_tensor *) = sgc_lookup(m, "xent_grad");
 *   ...
 *   sgc_free(m);
 *
 * What sgc_compile compiles is kept in a cache directory ($SGC_CACHE_DIR,
 * else $XDG_CACHE_HOME/sgc or ~/.cache/sgc; SGC_CACHE_DIR= turns it off):
 * compiling the same source with the same options again, in any process,
 * takes the object from there and does no LLVM work.
 *
 * Link with: pkg-config --cflags --libs sgc (-lsgc -lsgrt and LLVM 19).
 * Every function may be called from several threads at once; a module's
 * entry points stay valid until sgc_free. */
#ifndef SGC_H
#define SGC_H

#include <sg_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of sgc (the command's --version, the .pc files, the Python
 * module's sgc.__version__ and sgc_version() all give this one). */
#define SGC_VERSION "0.3.0"

typedef struct sgc_module sgc_module;

/* Compiles `source` (a whole .sg file; `filename` is used in messages) in
 * memory with LLVM's JIT. `options` holds sgc flags such as "-O3
 * --ad-memory=64M", or NULL. Returns NULL on failure and sets *errors (if
 * errors is non-NULL) to the diagnostics exactly as sgc prints them; free
 * it with free(). */
sgc_module *sgc_compile(const char *source, const char *filename,
                        const char *options, char **errors);

/* The entry point of an export or of its gradient ("xent", "xent_grad"),
 * with the C ABI of section 9; NULL if there is none. */
void *sgc_lookup(sgc_module *m, const char *name);

/* The declarations `--header` would write. */
const char *sgc_header(sgc_module *m);

void sgc_free(sgc_module *m);

/* SGC_VERSION of the library linked in (which may be newer than the
 * header a program was compiled with). */
const char *sgc_version(void);

#ifdef __cplusplus
}
#endif

#endif
