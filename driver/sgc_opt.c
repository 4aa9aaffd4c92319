/* sgc-opt: the IR tool, in the spirit of LLVM's opt. Reads a module in the
 * textual IR that `sgc --emit-ir` prints (ir/parse.c), verifies it, runs the
 * passes named by --passes= in order through the registry of
 * driver/pipeline.c (verifying after each one unless --no-verify), and
 * prints the result (ir/print.c), or with --print-plan the code
 * generator's plan of it (codegen/cg_plan.c). Lit tests use it to test one pass at a
 * time on hand-written IR, and to check that printing and parsing the IR of
 * every stage round-trips.
 * Exit status: 0 success, 1 errors in the input or a failed verification,
 * 2 bad usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/cg.h"
#include "files.h"
#include "pipeline.h"

static const char usage[] =
    "usage: sgc-opt FILE.ir [--passes=a,b,c] [--no-verify] [--print-plan] [-o OUT]\n"
    "               [--list-passes] [--help]\n";

static const char help[] =
    "Parse textual sgc IR (FILE - for standard input), run passes on it and\n"
    "print the result.\n"
    "\n"
    "  --passes=a,b,c   the passes to run, in order (empty: none);\n"
    "                   --list-passes shows them\n"
    "  --no-verify      do not run the verifier after each pass (the input\n"
    "                   is always verified)\n"
    "  --print-plan     print the code generator's plan of every export (as\n"
    "                   sgc --emit-plan) instead of the IR\n"
    "  -o OUT           write the IR to OUT instead of standard output\n"
    "  --list-passes    print the name and description of every pass\n"
    "  --help\n";

typedef struct OptOptions {
  const char *input, *output;
  PtrVec passes; /* names, pointing into argv */
  bool verify;
  bool print_plan;
} OptOptions;

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "sgc-opt: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n%s", usage);
  return 2;
}

static int unknown_pass(const char *name, size_t len) {
  fprintf(stderr, "sgc-opt: error: unknown pass '%.*s' (available: ", (int)len, name);
  for (const PassInfo *p = sg_passes; p->name; p++)
    fprintf(stderr, "%s%s", p == sg_passes ? "" : ", ", p->name);
  fprintf(stderr, ")\n");
  return 2;
}

/* "a,b,c" -> the pass names, each checked against the registry. Empty
 * items are skipped, so --passes= runs nothing. */
static int add_passes(OptOptions *o, const char *list) {
  const char *s = list;
  while (*s) {
    size_t n = strcspn(s, ",");
    if (n > 0) {
      const PassInfo *found = NULL;
      for (const PassInfo *p = sg_passes; p->name; p++)
        if (strlen(p->name) == n && memcmp(p->name, s, n) == 0)
          found = p;
      if (!found)
        return unknown_pass(s, n);
      vec_push(&o->passes, (void *)found->name);
    }
    s += n;
    if (*s == ',')
      s++;
  }
  return -1;
}

/* Returns -1 to go on, or an exit status. */
static int parse_args(int argc, char **argv, OptOptions *o) {
  o->verify = true;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("%s\n%s", usage, help);
      return 0;
    } else if (strcmp(a, "--list-passes") == 0) {
      for (const PassInfo *p = sg_passes; p->name; p++)
        printf("%-12s %s\n", p->name, p->what);
      return 0;
    } else if (strncmp(a, "--passes=", 9) == 0) {
      int rc = add_passes(o, a + 9);
      if (rc >= 0)
        return rc;
    } else if (strcmp(a, "--no-verify") == 0) {
      o->verify = false;
    } else if (strcmp(a, "--print-plan") == 0) {
      o->print_plan = true;
    } else if (strcmp(a, "-o") == 0) {
      if (i + 1 >= argc)
        return bad_usage("%s needs a file name", a);
      o->output = argv[++i];
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
  return -1;
}

/* The printed module goes through files_write_all, like sgc's outputs:
 * never over the input, never half a file. */
static int write_module(Module *m, const char *path, bool plan) {
  OutFile out = {.what = "-o", .path = path ? path : "-"};
  FILE *f = open_memstream(&out.data, &out.len);
  if (!f)
    die("cannot make a memory stream");
  if (plan)
    cg_print_plans(m, 0, f);
  else
    ir_print_module(f, m);
  if (fclose(f) != 0)
    die("cannot print the module to memory");
  return files_write_all("sgc-opt", &out, 1);
}

static int run(const OptOptions *o) {
  if (o->output) {
    OutFile out = {.what = "-o", .path = o->output};
    if (files_check_outputs("sgc-opt", o->input, &out, 1))
      return 2;
  }
  size_t len;
  char *src = files_read_input("sgc-opt", o->input, &len);
  if (!src)
    return 1;
  Diag diag;
  diag_init(&diag, strcmp(o->input, "-") == 0 ? "<stdin>" : o->input, src, len);
  Module *m = ir_parse(&diag, src, len);
  if (m)
    m->diag = &diag;
  int rc = 1;
  /* The input is always verified: the passes assume a valid module. */
  if (m && ir_verify(m, NULL) == 0 &&
      pipeline_run(m, (const char *const *)o->passes.data, o->passes.len, o->verify) == 0)
    rc = write_module(m, o->output, o->print_plan);
  ir_module_free(m);
  free(src);
  return rc;
}

int main(int argc, char **argv) {
  OptOptions o;
  memset(&o, 0, sizeof o);
  int rc = parse_args(argc, argv, &o);
  if (rc < 0)
    rc = run(&o);
  vec_free(&o.passes);
  /* --help and --list-passes print to standard output too. */
  if (rc == 0 && files_close_stdout("sgc-opt")) /* once: a failure may be reported already */
    rc = 1;
  return rc;
}
