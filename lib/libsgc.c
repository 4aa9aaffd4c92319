/* libsgc: sgc_compile, sgc_lookup, sgc_header, sgc_free (spec section 10).
 * The flags go through the command's parser (driver/options.c, library
 * mode) and the source through the command's stages (pipeline_compile);
 * only the end differs: the optimized module goes to LLVM's JIT
 * (lib/jit.c) instead of a file. Diagnostics are written to a memory
 * stream instead of stderr, so *errors holds exactly what sgc prints.
 * Nothing here is global: each call has its own arena, IR and LLVM
 * context, so any number of threads may compile at once. */
#include "sgc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../driver/options.h"
#include "../driver/pipeline.h"
#include "jit.h"

struct sgc_module {
  Jit *jit;
  char *header;
};

typedef struct Job {
  const char *source, *filename;
  const Options *o;
  FILE *err;
  sgc_module *result;
} Job;

/* The header --header would write for FILE.sg: its guard is that of the
 * file the command would be asked to write, FILE.h. */
static char *header_text(Module *m, const char *filename) {
  size_t n = strlen(filename);
  char *h = xmalloc(n + 3);
  memcpy(h, filename, n + 1);
  if (n > 3 && strcmp(h + n - 3, ".sg") == 0)
    n -= 3;
  strcpy(h + n, ".h");
  char *guard = cg_header_guard(h);
  free(h);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f)
    die("out of memory");
  cg_write_header(m, f, guard);
  fclose(f);
  free(guard);
  return text;
}

static void *compile_job(void *arg) {
  Job *job = arg;
  Diag diag;
  diag_init(&diag, job->filename, job->source, strlen(job->source));
  diag.out = job->err;
  Module *m = pipeline_compile(&diag, job->source, diag.len, job->o, STAGE_OPT);
  if (!m)
    return NULL;
  CgOptions cg = {job->o->opt_level, job->o->cpu, false, false, job->o->verify, false, job->o->ad_memory};
  Jit *jit = jit_compile(m, job->filename, &cg, job->err);
  if (jit) {
    job->result = xmalloc(sizeof *job->result);
    job->result->jit = jit;
    job->result->header = header_text(m, job->filename);
  }
  ir_module_free(m);
  return NULL;
}

sgc_module *sgc_compile(const char *source, const char *filename, const char *options,
                        char **errors) {
  char *text = NULL;
  size_t len = 0;
  FILE *err = open_memstream(&text, &len);
  if (errors)
    *errors = NULL;
  if (!err)
    return NULL;
  if (!filename)
    filename = "<source>";
  Options o = {0};
  char **argv;
  int argc = options_split(options ? options : "", &argv);
  Job job = {source, filename, &o, err, NULL};
  if (!source)
    fprintf(err, "sgc: error: no source (NULL)\n");
  else if (options_parse(argc, argv, &o, OPTIONS_LIBRARY, err, err) < 0)
    run_with_big_stack(compile_job, &job);
  free(argv);
  fclose(err);
  if (errors)
    *errors = job.result ? NULL : text;
  if (!errors || job.result)
    free(text);
  return job.result;
}

void *sgc_lookup(sgc_module *m, const char *name) {
  return m && name ? jit_lookup(m->jit, name) : NULL;
}

const char *sgc_header(sgc_module *m) { return m ? m->header : NULL; }

const char *sgc_version(void) { return SGC_VERSION; }

void sgc_free(sgc_module *m) {
  if (!m)
    return;
  jit_free(m->jit);
  free(m->header);
  free(m);
}
