/* libFuzzer harnesses for sgc: every input is a .sg source file, pushed
 * through the same stages as `sgc FILE.sg` (driver/sgc.c, compile()).
 * One source, two targets (tools/fuzz.sh builds both):
 *
 *  - fuzz_sgc_front (SGC_FUZZ_LLVM=0): parse, check and lower, inline + AD
 *    and the -O2 optimization pipeline, the verifier after every pass, and
 *    the IR printer once at the end; no LLVM at all (not even linked), so
 *    it runs thousands of inputs a second.
 *  - fuzz_sgc (SGC_FUZZ_LLVM=1): the same, then LLVM code generation (at
 *    LLVM's -O0, which is fast) to memory; a valid program is compiled
 *    twice, through the -O2 and the -O0 IR pipelines, so code generation
 *    sees both kinds of IR. SGC_FUZZ_CODEGEN=0 in the environment skips
 *    the code generation (the old way to run the front end alone).
 *
 * A finding is anything but a clean accept or a clean rejection: a sanitizer
 * report, a die() (internal error, which aborts), a hang, a leak, or an IR
 * verifier failure after lowering or after any pass (the harness aborts).
 * Diagnostics are formatted (caret lines and all) into /dev/null through a
 * buffered stream: a rejected input costs no system call.
 *
 * Like sgc, each input is compiled on a thread with a 1 GiB stack (reserved,
 * not touched): the stages recurse over expression trees, and sgc promises
 * only that inputs it accepts fit in that much stack. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../driver/pipeline.h"
#include "../../frontend/ast.h"
#include "../../frontend/lower.h"
#if SGC_FUZZ_LLVM
#include "../../codegen/cg.h"
#endif

static FILE *devnull; /* where the IR printer and the diagnostics write */
static bool with_codegen = SGC_FUZZ_LLVM;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  devnull = fopen("/dev/null", "w");
  if (!devnull)
    abort();
  const char *cg = getenv("SGC_FUZZ_CODEGEN");
  if (cg && strcmp(cg, "0") == 0)
    with_codegen = false;
  return 0;
}

static void check(int verifier_errors, const char *stage) {
  if (verifier_errors) {
    fprintf(stderr, "fuzz_sgc: the IR does not verify after %s\n", stage);
    abort();
  }
}

/* One run of the stages at IR optimization level `opt` (0 or 2: the two
 * pipelines of driver/pipeline.c). Returns whether the program was valid. */
static bool compile(const char *src, size_t len, int opt) {
  Diag diag;
  diag_init(&diag, "fuzz.sg", src, len);
  diag.out = devnull;
  diag.max_errors = 4; /* quoting the line of each of 50 stray bytes dominated */
  Arena *arena = arena_new();
  Program prog;
  parse_program(arena, &diag, src, len, &prog);
  Module *m = diag.errors ? NULL : lower_program(&prog, &diag);
  arena_free(arena);
  if (!m)
    return false; /* a clean rejection */

  check(ir_verify(m, "lowering"), "lowering");
  check(pipeline_to_ad(m, true), "inlining and AD");
  check(pipeline_optimize(m, opt, true), "optimization");
  ir_print_module(devnull, m);
#if SGC_FUZZ_LLVM
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
#endif
  ir_module_free(m);
  return true;
}

typedef struct Job {
  const char *src;
  size_t len;
} Job;

static void *run_job(void *arg) {
  Job *j = arg;
  /* the -O0 IR pipeline (strip-stop, dce) is a prefix of -O2's: only code
   * generation sees anything new in it */
  if (compile(j->src, j->len, 2) && with_codegen)
    compile(j->src, j->len, 0);
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Job job = {(const char *)data, size};
  run_with_big_stack(run_job, &job);
  return 0;
}
