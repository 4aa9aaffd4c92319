/* sgc: the compiler driver (spec section 8). Reads one .sg file, runs the
 * stages in order (parse, check and lower, inline and AD, optimize, LLVM),
 * and writes an object file, assembly, LLVM IR, SSA IR and/or a C header
 * (through driver/files.c: never over the input, all or nothing).
 * Exit status: 0 success, 1 errors in the program or a failed write,
 * 2 bad usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/cg.h"
#include "../frontend/ast.h"
#include "../frontend/lower.h"
#include "files.h"
#include "pipeline.h"

#ifndef SGC_VERSION
#define SGC_VERSION "0.1.0"
#endif

static const char usage[] =
    "usage: sgc FILE.sg [-o OUT] [--header H] [-O0|-O1|-O2|-O3] [--emit-ir[=STAGE]]\n"
    "           [--emit-llvm] [-S] [--target-cpu=CPU] [--version] [--help]\n";

static const char help[] =
    "Compile a .sg program to a native object with a reverse-mode gradient\n"
    "(f_grad, or f_vjp for tensor results) for every exported function.\n"
    "\n"
    "  -o OUT               output file (default: FILE.o, or FILE.s with -S)\n"
    "  --header H           also write a C header declaring every export\n"
    "  -O0 -O1 -O2 -O3      optimization level (default -O2)\n"
    "  --emit-ir[=STAGE]    print the SSA IR instead of writing an object;\n"
    "                       STAGE is parsed, ad or opt (default opt)\n"
    "  --emit-llvm          print the LLVM IR (to OUT with -o)\n"
    "  -S                   write assembly instead of an object\n"
    "  --target-cpu=CPU     CPU to generate code for (default: this machine;\n"
    "                       generic: portable x86-64)\n"
    "  --verify             run the IR verifier between passes\n"
    "  --version, --help\n";

typedef enum { STAGE_NONE, STAGE_PARSED, STAGE_AD, STAGE_OPT } Stage;

typedef struct Options {
  const char *input, *output, *header, *cpu;
  int opt_level;
  Stage emit_ir;
  bool emit_llvm, emit_asm, verify;
} Options;

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "sgc: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n%s", usage);
  return 2;
}

/* Returns -1 to go on, or an exit status. */
static int parse_args(int argc, char **argv, Options *o) {
  o->opt_level = 2;
  const char *env = getenv("SGC_VERIFY");
  o->verify = env && *env && strcmp(env, "0") != 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("%s\n%s", usage, help);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("sgc %s (LLVM 19)\n", SGC_VERSION);
      return 0;
    } else if (strcmp(a, "-o") == 0 || strcmp(a, "--header") == 0) {
      if (i + 1 >= argc)
        return bad_usage("%s needs a file name", a);
      *(a[1] == 'o' ? &o->output : &o->header) = argv[++i];
    } else if (strncmp(a, "-O", 2) == 0 && strlen(a) == 3 && a[2] >= '0' && a[2] <= '3') {
      o->opt_level = a[2] - '0';
    } else if (strcmp(a, "--emit-ir") == 0 || strcmp(a, "--emit-ir=opt") == 0) {
      o->emit_ir = STAGE_OPT;
    } else if (strcmp(a, "--emit-ir=parsed") == 0) {
      o->emit_ir = STAGE_PARSED;
    } else if (strcmp(a, "--emit-ir=ad") == 0) {
      o->emit_ir = STAGE_AD;
    } else if (strncmp(a, "--emit-ir=", 10) == 0) {
      return bad_usage("unknown IR stage '%s' (expected parsed, ad or opt)", a + 10);
    } else if (strcmp(a, "--emit-llvm") == 0) {
      o->emit_llvm = true;
    } else if (strcmp(a, "-S") == 0) {
      o->emit_asm = true;
    } else if (strncmp(a, "--target-cpu=", 13) == 0 && a[13]) {
      o->cpu = a + 13;
    } else if (strcmp(a, "--verify") == 0) {
      o->verify = true;
    } else if (a[0] == '-' && a[1]) {
      return bad_usage("unknown option '%s'", a);
    } else if (o->input) {
      return bad_usage("more than one input file ('%s')", a);
    } else {
      o->input = a;
    }
  }
  if (!o->input)
    return bad_usage("%s", "no input file");
  if (!cg_cpu_known(o->cpu)) {
    fprintf(stderr, "sgc: error: unknown target CPU '%s' (try 'native' or 'generic')\n", o->cpu);
    return 2;
  }
  return -1;
}

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

static char *header_guard(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  char *g = xmalloc(n + 4);
  size_t j = 0;
  if (!(base[0] >= 'A' && base[0] <= 'Z') && !(base[0] >= 'a' && base[0] <= 'z'))
    g[j++] = 'H', g[j++] = '_';
  for (size_t k = 0; k < n; k++) {
    char c = base[k];
    g[j++] = (c >= 'a' && c <= 'z') ? (char)(c - 32)
             : ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
  }
  g[j] = 0;
  return g;
}

/* The header, in memory (written with the object by files_write_all). */
static int make_header(Module *m, OutFile *out) {
  FILE *f = open_memstream(&out->data, &out->len);
  if (!f)
    die("cannot make a memory stream");
  char *guard = header_guard(out->path);
  int rc = cg_write_header(m, f, guard);
  free(guard);
  if (fclose(f) != 0 || rc)
    die("cannot write the header to memory");
  return 0;
}

/* The outputs, named before compiling so that files_check_outputs can
 * refuse to overwrite the input: the header, then the object (assembly,
 * LLVM IR) unless --emit-ir prints IR instead. */
typedef struct Outputs {
  OutFile files[2];
  OutFile *header, *object;
  int n;
  char *default_path;
} Outputs;

static void name_outputs(const Options *o, Outputs *outs) {
  memset(outs, 0, sizeof *outs);
  if (o->header) {
    outs->header = &outs->files[outs->n++];
    *outs->header = (OutFile){.what = "--header", .path = o->header};
  }
  if (o->emit_ir == STAGE_NONE || o->output) {
    OutFile *obj = &outs->files[outs->n++];
    *obj = (OutFile){.what = "-o", .path = o->output};
    if (!o->output) {
      obj->what = "the default output";
      obj->path = o->emit_llvm ? "-"
                               : (outs->default_path =
                                      default_output(o->input, o->emit_asm ? ".s" : ".o"));
    }
    if (o->emit_ir == STAGE_NONE)
      outs->object = obj;
  }
}

static int compile(const Options *o, Outputs *outs, const char *src, size_t len) {
  Diag diag;
  diag_init(&diag, o->input, src, len);
  Arena *arena = arena_new();
  Program prog;
  parse_program(arena, &diag, src, len, &prog);
  Module *m = diag.errors ? NULL : lower_program(&prog, &diag);
  arena_free(arena);
  if (!m)
    return 1;
  int rc = 0;
  if (o->verify && ir_verify(m, "lowering"))
    die("the lowered IR does not verify");
  if (o->emit_ir == STAGE_PARSED) {
    ir_print_module(stdout, m);
    goto done;
  }
  if (pipeline_to_ad(m, o->verify))
    die("the IR does not verify after AD");
  if (o->emit_ir == STAGE_AD) {
    ir_print_module(stdout, m);
    goto done;
  }
  if (pipeline_optimize(m, o->opt_level, o->verify))
    die("the IR does not verify after optimization");
  if (outs->header)
    make_header(m, outs->header);
  if (o->emit_ir == STAGE_OPT) {
    ir_print_module(stdout, m);
  } else {
    CgOptions cg = {o->opt_level, o->cpu, o->emit_asm, o->emit_llvm, o->verify};
    rc = cg_emit(m, o->input, &cg, &outs->object->data, &outs->object->len);
  }
  /* All or nothing: no file is written unless everything compiled. */
  if (rc == 0) {
    OutFile *w = outs->files;
    int n = outs->n;
    if (!outs->object && o->output) /* -o is unused with --emit-ir */
      n--;
    rc = files_write_all("sgc", w, n);
  }
done:
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
  int rc = parse_args(argc, argv, &o);
  if (rc < 0)
    rc = run(&o);
  /* --emit-ir, --help and --version print to standard output: a failed
   * write there is an error too. */
  if (files_close_stdout("sgc") && rc == 0)
    rc = 1;
  return rc;
}
