/* libsgc: sgc_compile, sgc_lookup, sgc_header, sgc_free (spec section 10).
 * The flags go through the command's parser (driver/options.c, library
 * mode) and the source through the command's stages (pipeline_compile)
 * up to the object file the command would write (cg_emit); only the end
 * differs: the object goes to LLVM's JIT (lib/jit.c) instead of a file,
 * and to the compile cache (lib/cache.c), from which a later compile of
 * the same source with the same options, in any process, takes it instead
 * of running any stage. Diagnostics are written to a memory stream
 * instead of stderr, so *errors holds exactly what sgc prints. Nothing
 * here is global: each call has its own arena, IR and LLVM context, so
 * any number of threads may compile at once. */
#include "sgc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../driver/options.h"
#include "../driver/pipeline.h"
#include "cache.h"
#include "jit.h"

struct sgc_module {
  Jit *jit;
  char *header;
};

typedef struct Job {
  const char *source, *filename;
  const Options *o;
  FILE *err;
  CacheItem item; /* what the compile made, when `made` */
  bool made;
} Job;

/* The header --header would write for FILE.sg: its guard is that of the
 * file the command would be asked to write, FILE.h. */
static char *header_text(Module *m, const char *filename, long long ad_memory) {
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
  cg_write_header(m, f, guard, ad_memory);
  fclose(f);
  free(guard);
  return text;
}

/* The names of m's entry points, each NUL-terminated, one after another. */
static char *entry_names(Module *m, size_t *len) {
  size_t n = 0;
  for (Function *f = m->funcs; f; f = f->next)
    n += f->exported ? strlen(f->name) + 1 : 0;
  char *names = xmalloc(n + 1), *p = names;
  for (Function *f = m->funcs; f; f = f->next)
    if (f->exported) {
      size_t k = strlen(f->name) + 1;
      memcpy(p, f->name, k);
      p += k;
    }
  *len = n;
  return names;
}

static void *compile_job(void *arg) {
  Job *job = arg;
  Diag diag;
  diag_init(&diag, job->filename, job->source, strlen(job->source));
  diag.out = job->err;
  Module *m = pipeline_compile(&diag, job->source, diag.len, job->o, STAGE_OPT);
  if (!m)
    return NULL;
  CgOptions cg = {.opt_level = job->o->opt_level, .cpu = job->o->cpu, .verify = job->o->verify,
                  .ad_memory = job->o->ad_memory};
  CacheItem *item = &job->item;
  if (cg_emit(m, job->filename, &cg, &item->object, &item->object_len) == 0) {
    item->header = header_text(m, job->filename, job->o->ad_memory);
    item->names = entry_names(m, &item->names_len);
    job->made = true;
  } else {
    fprintf(job->err, "sgc: error: code generation failed\n");
  }
  ir_module_free(m);
  return NULL;
}

/* The module of a compile's result (which it takes the header of), or
 * NULL after an error on err. */
static sgc_module *load(CacheItem *item, FILE *err) {
  Jit *jit = jit_load(item->object, item->object_len, item->names, item->names_len, err);
  if (!jit)
    return NULL;
  sgc_module *m = xmalloc(sizeof *m);
  m->jit = jit;
  m->header = item->header;
  item->header = NULL;
  return m;
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
  sgc_module *result = NULL;
  if (!source) {
    fprintf(err, "sgc: error: no source (NULL)\n");
  } else if (options_parse(argc, argv, &o, OPTIONS_LIBRARY, err, err) < 0) {
    Cache *cache = cache_open(source, filename, argv, argc, o.cpu);
    Job job = {source, filename, &o, err, {0}, false};
    if (cache && cache_load(cache, &job.item) && !(result = load(&job.item, err)))
      cache_reject(cache, "the JIT refused it");
    cache_item_free(&job.item);
    if (!result) {
      run_with_big_stack(compile_job, &job);
      if (job.made && cache)
        cache_store(cache, &job.item);
      if (job.made)
        result = load(&job.item, err);
      cache_item_free(&job.item);
    }
    cache_close(cache);
  }
  free(argv);
  fclose(err);
  if (errors)
    *errors = result ? NULL : text;
  if (!errors || result)
    free(text);
  return result;
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
