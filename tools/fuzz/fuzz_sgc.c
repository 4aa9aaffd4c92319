/* libFuzzer harness for sgc: every input is a .sg source file, pushed
 * through the same stages as `sgc FILE.sg` (driver/sgc.c, compile()):
 * parse, check and lower, inline + AD, the optimization pipeline and,
 * unless SGC_FUZZ_CODEGEN=0, LLVM code generation (at LLVM's -O0, which is
 * fast) to a scratch file. A valid program is compiled twice, through the
 * -O2 and the -O0 IR pipelines, so code generation sees both kinds of IR.
 *
 * A finding is anything but a clean accept or a clean rejection: a sanitizer
 * report, a die() (internal error, which aborts), a hang, a leak, or an IR
 * verifier failure after lowering or after any pass (the harness aborts).
 * The IR is also printed (to /dev/null) after each stage, so the printer
 * sees every shape of module the passes produce.
 *
 * Like sgc, each input is compiled on a thread with a 1 GiB stack (reserved,
 * not touched): the stages recurse over expression trees, and sgc promises
 * only that inputs it accepts fit in that much stack.
 *
 * Built and run by tools/fuzz.sh (`make fuzz`). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../codegen/cg.h"
#include "../../driver/pipeline.h"
#include "../../frontend/ast.h"
#include "../../frontend/lower.h"

static FILE *devnull;         /* where the IR printer writes */
static bool with_codegen = true;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  devnull = fopen("/dev/null", "w");
  if (!devnull)
    abort();
  const char *cg = getenv("SGC_FUZZ_CODEGEN");
  with_codegen = !(cg && strcmp(cg, "0") == 0);
  return 0;
}

static void check(Module *m, int verifier_errors, const char *stage) {
  if (verifier_errors) {
    fprintf(stderr, "fuzz_sgc: the IR does not verify after %s\n", stage);
    abort();
  }
  ir_print_module(devnull, m);
}

/* One run of the stages at IR optimization level `opt` (0 or 2: the two
 * pipelines of driver/pipeline.c). Returns whether the program was valid. */
static bool compile(const char *src, size_t len, int opt) {
  Diag diag;
  diag_init(&diag, "fuzz.sg", src, len);
  Arena *arena = arena_new();
  Program prog;
  parse_program(arena, &diag, src, len, &prog);
  Module *m = diag.errors ? NULL : lower_program(&prog, &diag);
  arena_free(arena);
  if (!m)
    return false; /* a clean rejection */

  check(m, ir_verify(m, "lowering"), "lowering");
  check(m, pipeline_to_ad(m, true), "inlining and AD");
  check(m, pipeline_optimize(m, opt, true), "optimization");
  if (with_codegen) {
    CgOptions cg = {.opt_level = 0, .verify = true};
    char *obj;
    size_t obj_len;
    if (cg_emit(m, "fuzz.sg", &cg, &obj, &obj_len) != 0) {
      fprintf(stderr, "fuzz_sgc: code generation failed for a valid program\n");
      abort();
    }
    free(obj);
  }
  ir_module_free(m);
  return true;
}

typedef struct Job {
  const char *src;
  size_t len;
} Job;

static void *run_job(void *arg) {
  Job *j = arg;
  if (compile(j->src, j->len, 2))
    compile(j->src, j->len, 0); /* a valid program: the -O0 pipeline too */
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Job job = {(const char *)data, size};
  run_with_big_stack(run_job, &job);
  return 0;
}
