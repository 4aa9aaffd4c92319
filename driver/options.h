/* sgc's flags (spec section 8), parsed by one parser for both users: the
 * command line of driver/sgc.c and the options string of sgc_compile
 * (lib/libsgc.c), so a flag means the same thing in both. */
#ifndef SGC_OPTIONS_H
#define SGC_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

/* How far the pipeline runs (--emit-ir=STAGE stops early). */
typedef enum { STAGE_NONE, STAGE_PARSED, STAGE_AD, STAGE_OPT } Stage;

typedef struct Options {
  const char *input, *output, *header, *cpu;
  int opt_level;
  Stage emit_ir, emit_dot; /* --emit-dot=STAGE: the graph picture (ir/dot.c) */
  bool emit_plan;          /* the code generator's kernel plan (codegen/cg_plan.c) */
  bool emit_llvm, emit_asm, verify;
  bool debug; /* -g: DWARF line information (codegen/cg_debug.c) */
  long long ad_memory; /* --ad-memory=SIZE in bytes: checkpointed loop gradients; 0: off */
  unsigned exports;    /* --exports=LIST: EXPORT_* flags (ir/ir.h); default EXPORT_GRAD */
} Options;

typedef enum {
  OPTIONS_COMMAND, /* the sgc command: files, --help, --version */
  OPTIONS_LIBRARY, /* sgc_compile: code-generation flags only, no files */
} OptionsMode;

/* Parse argv[1..argc). Returns -1 to go on, or an exit status: 0 after
 * --help or --version (printed to out), 2 after "sgc: error: ..." on err. */
int options_parse(int argc, char *const *argv, Options *o, OptionsMode mode, FILE *out,
                  FILE *err);

/* A size in bytes (--ad-memory=SIZE, SGC_CACHE_SIZE): decimal with an
 * optional K, M or G (binary multiples). False on anything else, zero, or
 * past 2^62. */
bool options_parse_size(const char *text, long long *bytes);

/* Split a string of flags at white space into argv[1..], argv[0] = "sgc",
 * for options_parse. Returns argc; free(*argv) frees everything. */
int options_split(const char *flags, char ***argv);

#endif
