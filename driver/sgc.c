/* sgc: the compiler driver (spec section 8). Reads one .sg file, runs the
 * stages in order (parse, check and lower, inline and AD, optimize, LLVM),
 * and writes an object file, assembly, LLVM IR, SSA IR and/or a C header.
 * Exit status: 0 success, 1 errors in the program, 2 bad usage. The flags
 * (options.c) and the stages (pipeline_compile) are shared with libsgc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/cg.h"
#include "../ir/dot.h"
#include "../passes/passes.h"
#include "options.h"
#include "pipeline.h"

/* FILE.sg -> FILE<ext> in the current directory. */
static char *default_output(const char *input, const char *ext) {
  const char *base = strrchr(input, '/');
  base = base ? base + 1 : input;
  size_t n = strlen(base);
  if (n > 3 && strcmp(base + n - 3, ".sg") == 0)
    n -= 3;
  char *out = xmalloc(n + strlen(ext) + 1);
  memcpy(out, base, n);
  strcpy(out + n, ext);
  return out;
}

static int write_header(Module *m, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "sgc: error: cannot write '%s': %s\n", path, strerror(errno));
    return 1;
  }
  char *guard = cg_header_guard(path);
  int rc = cg_write_header(m, f, guard);
  free(guard);
  if (fclose(f) != 0 || rc) {
    fprintf(stderr, "sgc: error: cannot write '%s'\n", path);
    return 1;
  }
  return 0;
}

/* --emit-ir or --emit-dot: the IR as text or as a picture. */
static int print_module(const Options *o, Module *m) {
  if (o->emit_ir) {
    ir_print_module(stdout, m);
    return 0;
  }
  pass_activity(m); /* the picture shades what the gradient treats as constant */
  if (ir_print_dot_module(stdout, m)) {
    fprintf(stderr, "sgc: error: cannot write the graph to standard output: %s\n", strerror(errno));
    return 1;
  }
  return 0;
}

static int compile(const Options *o, const char *src, size_t len) {
  Diag diag;
  diag_init(&diag, o->input, src, len);
  Stage print = o->emit_ir ? o->emit_ir : o->emit_dot;
  Stage until = print == STAGE_NONE ? STAGE_OPT : print;
  Module *m = pipeline_compile(&diag, src, len, o, until);
  if (!m)
    return 1;
  int rc = 0;
  if (until == STAGE_OPT && o->header && (rc = write_header(m, o->header)))
    goto done;
  if (print != STAGE_NONE) {
    rc = print_module(o, m);
    goto done;
  }
  CgOptions cg = {o->opt_level, o->cpu, o->output, o->emit_asm, o->emit_llvm, o->verify, o->debug};
  char *def = NULL;
  if (!cg.out_path)
    cg.out_path = o->emit_llvm ? "-" : (def = default_output(o->input, o->emit_asm ? ".s" : ".o"));
  rc = cg_emit(m, o->input, &cg);
  free(def);
done:
  ir_module_free(m);
  return rc;
}

typedef struct Job {
  const Options *o;
  const char *src;
  size_t len;
  int rc;
} Job;

static void *run_job(void *arg) {
  Job *j = arg;
  j->rc = compile(j->o, j->src, j->len);
  return NULL;
}

int main(int argc, char **argv) {
  Options o = {0};
  int rc = options_parse(argc, argv, &o, OPTIONS_COMMAND, stdout, stderr);
  if (rc >= 0)
    return rc;
  size_t len;
  char *src = read_file(o.input, &len);
  if (!src) {
    fprintf(stderr, "sgc: error: cannot read '%s': %s\n", o.input, strerror(errno));
    return 1;
  }
  Job job = {&o, src, len, 1};
  run_with_big_stack(run_job, &job);
  free(src);
  return job.rc;
}
