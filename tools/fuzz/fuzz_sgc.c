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
 * only that inputs it accepts fit in that much stack. The thread is made
 * once and handed one input after another (making one per input, with its
 * stack mapped and unmapped, took a fifth of the front end target's time). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../driver/pipeline.h"
#include "../../frontend/ast.h"
#include "../../frontend/lower.h"
#include "../../ir/util.h"
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
  m->diag = &diag; /* a pass's own errors (ir_error) go where the parser's do */
  m->exports = EXPORT_GRAD; /* what sgc makes by default */
  int bad = pipeline_to_ad(m, true);
  if (bad && m->errors) { /* a clean rejection by a pass: reverse over reverse, a missing rule */
    ir_module_free(m);
    return false;
  }
  check(bad, "inlining and AD");
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

/* The input being compiled, handed to the worker and back under `lock`. */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  const char *src;
  size_t len;
  bool pending; /* set by the fuzzer's thread, cleared by the worker */
} job = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, false};

static void *worker(void *arg) {
  (void)arg;
  pthread_mutex_lock(&job.lock);
  for (;;) {
    while (!job.pending)
      pthread_cond_wait(&job.changed, &job.lock);
    pthread_mutex_unlock(&job.lock);
    /* the -O0 IR pipeline (strip-stop, dce) is a prefix of -O2's: only code
     * generation sees anything new in it */
    if (compile(job.src, job.len, 2) && with_codegen)
      compile(job.src, job.len, 0);
    pthread_mutex_lock(&job.lock);
    job.pending = false;
    pthread_cond_broadcast(&job.changed);
  }
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static pthread_t tid;
  static bool started;
  if (!started) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, IR_BIG_STACK);
    if (pthread_create(&tid, &attr, worker, NULL) != 0)
      abort();
    pthread_attr_destroy(&attr);
    started = true;
  }
  pthread_mutex_lock(&job.lock);
  job.src = (const char *)data;
  job.len = size;
  job.pending = true;
  pthread_cond_broadcast(&job.changed);
  while (job.pending)
    pthread_cond_wait(&job.changed, &job.lock);
  pthread_mutex_unlock(&job.lock);
  return 0;
}
