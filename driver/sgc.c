/* sgc: the compiler driver (spec section 8). Reads one .sg file, runs the
 * stages in order (parse, check and lower, inline and AD, optimize, LLVM),
 * and writes an object file, assembly, LLVM IR, SSA IR and/or a C header
 * (through driver/files.c: never over the input, all or nothing).
 * Exit status: 0 success, 1 errors in the program or a failed write,
 * 2 bad usage. The flags (options.c) and the stages (pipeline_compile) are
 * shared with libsgc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/cg.h"
#include "../ir/dot.h"
#include "../passes/passes.h"
#include "files.h"
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

/* The header, in memory (written with the object by files_write_all). */
static void make_header(Module *m, OutFile *out, long long ad_memory) {
  FILE *f = open_memstream(&out->data, &out->len);
  if (!f)
    die("cannot make a memory stream");
  char *guard = cg_header_guard(out->path);
  int rc = cg_write_header(m, f, guard, ad_memory);
  free(guard);
  if (fclose(f) != 0 || rc)
    die("cannot write the header to memory");
}

/* The outputs, named before compiling so that files_check_outputs can
 * refuse to overwrite the input: the header, then the object (assembly,
 * LLVM IR) unless --emit-ir, --emit-dot or --emit-plan prints instead. */
typedef struct Outputs {
  OutFile files[2];
  OutFile *header, *object;
  int n;
  char *default_path;
} Outputs;

static void name_outputs(const Options *o, Outputs *outs) {
  memset(outs, 0, sizeof *outs);
  bool prints = o->emit_ir != STAGE_NONE || o->emit_dot != STAGE_NONE || o->emit_plan;
  if (o->header) {
    outs->header = &outs->files[outs->n++];
    *outs->header = (OutFile){.what = "--header", .path = o->header};
  }
  if (!prints || o->output) {
    OutFile *obj = &outs->files[outs->n++];
    *obj = (OutFile){.what = "-o", .path = o->output};
    if (!o->output) {
      obj->what = "the default output";
      obj->path = o->emit_llvm ? "-"
                               : (outs->default_path =
                                      default_output(o->input, o->emit_asm ? ".s" : ".o"));
    }
    if (!prints)
      outs->object = obj;
  }
}

/* --emit-ir, --emit-dot or --emit-plan: the IR as text or as a picture,
 * or the code generator's plan of it. */
static int print_module(const Options *o, Module *m) {
  if (o->emit_ir || o->emit_plan) { /* (a failed write: files_close_stdout) */
    if (o->emit_ir)
      ir_print_module(stdout, m);
    else
      cg_print_plans(m, o->ad_memory, stdout);
    return 0;
  }
  pass_activity(m); /* the picture shades what the gradient treats as constant */
  if (ir_print_dot_module(stdout, m)) {
    fprintf(stderr, "sgc: error: cannot write the graph to standard output: %s\n", strerror(errno));
    return 1;
  }
  return 0;
}

static int compile(const Options *o, Outputs *outs, const char *src, size_t len) {
  Diag diag;
  diag_init(&diag, o->input, src, len);
  Stage print = o->emit_ir ? o->emit_ir : o->emit_plan ? STAGE_OPT : o->emit_dot;
  Stage until = print == STAGE_NONE ? STAGE_OPT : print;
  Module *m = pipeline_compile(&diag, src, len, o, until);
  if (!m)
    return 1;
  int rc = 0;
  bool header = until == STAGE_OPT && outs->header;
  if (header)
    make_header(m, outs->header, o->ad_memory);
  if (print != STAGE_NONE) {
    rc = print_module(o, m);
  } else {
    CgOptions cg = {o->opt_level, o->cpu, o->emit_asm, o->emit_llvm, o->verify, o->debug, o->ad_memory};
    rc = cg_emit(m, o->input, &cg, &outs->object->data, &outs->object->len);
  }
  /* All or nothing: no file is written unless everything compiled. The
   * header comes first in outs->files; -o is unused when printing. */
  if (rc == 0 && (header || outs->object)) {
    OutFile *w = header ? outs->files : outs->object;
    rc = files_write_all("sgc", w, (header ? 1 : 0) + (outs->object ? 1 : 0));
  }
  ir_module_free(m);
  return rc;
}

typedef struct Job {
  const Options *o;
  Outputs *outs;
  const char *src;
  size_t len;
  int rc;
} Job;

static void *run_job(void *arg) {
  Job *j = arg;
  j->rc = compile(j->o, j->outs, j->src, j->len);
  return NULL;
}

static int run(const Options *o) {
  Outputs outs;
  name_outputs(o, &outs);
  int rc = files_check_outputs("sgc", o->input, outs.files, outs.n);
  size_t len;
  char *src = rc ? NULL : files_read_input("sgc", o->input, &len);
  if (src) {
    Job job = {o, &outs, src, len, 1};
    run_with_big_stack(run_job, &job);
    rc = job.rc;
  } else if (!rc) {
    rc = 1;
  }
  for (int k = 0; k < outs.n; k++)
    free(outs.files[k].data);
  free(outs.default_path);
  free(src);
  return rc;
}

int main(int argc, char **argv) {
  Options o = {0};
  int rc = options_parse(argc, argv, &o, OPTIONS_COMMAND, stdout, stderr);
  if (rc < 0) {
    cg_command_options();
    rc = run(&o);
  }
  /* --emit-ir, --emit-dot, --emit-plan, --help and --version print to standard output:
   * a failed write there is an error too. */
  if (rc == 0 && files_close_stdout("sgc")) /* once: a failure may be reported already */
    rc = 1;
  return rc;
}
