/* The one parser of sgc's flags. The command line and sgc_compile's
 * options string go through it, so "-O3" or "--target-cpu=generic" mean
 * the same thing to both; flags about files (-o, --header, --emit-*, -S, -g)
 * and the input file exist only for the command and are refused, with a
 * message, in the library. */
#include "options.h"

#include <stdlib.h>
#include <string.h>

#include "../codegen/cg.h"
#include "../ir/ir.h"

/* SGC_VERSION comes from lib/sgc.h, through the Makefile (the one place
 * the version is written). */

static const char usage[] =
    "usage: sgc FILE.sg [-o OUT] [--header H] [-O0|-O1|-O2|-O3] [--emit-ir[=STAGE]]\n"
    "           [--emit-llvm] [-S] [--emit-dot[=STAGE]] [--emit-plan] [-g]\n"
    "           [--ad-memory=SIZE] [--target-cpu=CPU] [--exports=LIST] [--verify]\n"
    "           [--version] [--help]\n";

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
    "  --emit-dot[=STAGE]   print a Graphviz graph of every function instead of\n"
    "                       writing an object; STAGE as for --emit-ir (default ad)\n"
    "  --emit-plan          print the code generator's plan of every export (its\n"
    "                       kernels: loops, groups, calls) instead of an object\n"
    "  --ad-memory=SIZE     gradients through loops hold at most SIZE bytes of\n"
    "                       saved loop state per call (K, M, G: KiB, MiB, GiB),\n"
    "                       recomputing from checkpoints; same results bit for bit\n"
    "  -g                   DWARF debug information: gdb shows .sg lines and the\n"
    "                       values lets and vars name; perf shows .sg lines\n"
    "  --target-cpu=CPU     CPU to generate code for (default: this machine;\n"
    "                       generic: portable x86-64)\n"
    "  --exports=LIST       derivative entry points of each export, a comma-\n"
    "                       separated list of grad (f_grad or f_vjp), jvp (f_jvp:\n"
    "                       forward mode), hvp (f_hvp: Hessian-vector products,\n"
    "                       scalar exports only), or none (default grad)\n"
    "  --verify             run the IR verifier between passes (and LLVM's)\n"
    "  --version            print the version\n"
    "  -h, --help           print this help\n"
    "\n"
    "Environment:\n"
    "  SG_NUM_THREADS       threads a generated function may use (default: every\n"
    "                       core; sg_set_num_threads overrides it)\n"
    "  SGC_VERIFY           1: as --verify\n"
    "  SGC_CACHE_DIR        the compile cache of libsgc (sgc_compile and the\n"
    "                       Python module): its directory (default\n"
    "                       $XDG_CACHE_HOME/sgc, else ~/.cache/sgc); set and\n"
    "                       empty: no cache\n"
    "  SGC_CACHE_SIZE       the cache's bound (K, M, G: KiB, MiB, GiB; default 256M)\n"
    "  SGC_CACHE_TRACE      1: report each decision of the cache on stderr\n"
    "  SGC_LIBRARY          the libsgc.so the Python module loads (default: its own)\n"
    "  SG_SPLIT_DEBUG       1: print how big function bodies are split\n"
    "\n"
    "The manual: man sgc.\n";

/* --exports=LIST: grad, jvp, hvp, comma-separated, or none alone. */
static bool parse_exports(const char *list, unsigned *out) {
  static const struct { const char *name; unsigned flag; } words[] = {
      {"grad", EXPORT_GRAD}, {"jvp", EXPORT_JVP}, {"hvp", EXPORT_HVP}, {"none", 0}};
  unsigned flags = 0;
  bool none = false;
  int n = 0;
  for (const char *s = list;; s++) {
    size_t len = strcspn(s, ",");
    int w = -1;
    for (int k = 0; k < 4; k++)
      if (strlen(words[k].name) == len && strncmp(words[k].name, s, len) == 0)
        w = k;
    if (w < 0)
      return false;
    none |= words[w].flag == 0;
    flags |= words[w].flag;
    n++;
    s += len;
    if (!*s)
      break;
  }
  if (none && n > 1)
    return false;
  *out = flags;
  return true;
}

typedef struct Parser {
  OptionsMode mode;
  FILE *err;
} Parser;

bool options_parse_size(const char *a, long long *out) {
  long long v = 0;
  const char *s = a;
  if (*s < '0' || *s > '9')
    return false;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > ((1LL << 62) - (*s - '0')) / 10)
      return false;
    v = v * 10 + (*s - '0');
  }
  int shift = 0;
  if (*s == 'K' || *s == 'k')
    shift = 10;
  else if (*s == 'M' || *s == 'm')
    shift = 20;
  else if (*s == 'G' || *s == 'g')
    shift = 30;
  if (shift)
    s++;
  if (*s || v == 0 || v > (1LL << 62) >> shift)
    return false;
  *out = v << shift;
  return true;
}

static int bad_usage(const Parser *p, const char *fmt, const char *arg) {
  fprintf(p->err, "sgc: error: ");
  fprintf(p->err, fmt, arg);
  fprintf(p->err, "\n%s", p->mode == OPTIONS_COMMAND ? usage : "");
  return 2;
}

/* A flag that reads or writes files, or prints: the command's alone. */
static int command_only(const Parser *p, const char *flag) {
  if (p->mode == OPTIONS_COMMAND)
    return -1;
  return bad_usage(p, "option '%s' is for the sgc command; sgc_compile takes code-generation "
                      "flags only",
                   flag);
}

int options_parse(int argc, char *const *argv, Options *o, OptionsMode mode, FILE *out,
                  FILE *err) {
  Parser p = {mode, err};
  o->opt_level = 2;
  o->exports = EXPORT_GRAD;
  const char *env = getenv("SGC_VERIFY");
  o->verify = env && *env && strcmp(env, "0") != 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int rc = -1;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if ((rc = command_only(&p, a)) >= 0)
        return rc;
      fprintf(out, "%s\n%s", usage, help);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      if ((rc = command_only(&p, a)) >= 0)
        return rc;
      fprintf(out, "sgc %s (LLVM 19)\n", SGC_VERSION);
      return 0;
    } else if (strcmp(a, "-o") == 0 || strcmp(a, "--header") == 0) {
      if ((rc = command_only(&p, a)) >= 0)
        return rc;
      if (i + 1 >= argc)
        return bad_usage(&p, "%s needs a file name", a);
      *(a[1] == 'o' ? &o->output : &o->header) = argv[++i];
    } else if (strncmp(a, "-O", 2) == 0 && strlen(a) == 3 && a[2] >= '0' && a[2] <= '3') {
      o->opt_level = a[2] - '0';
    } else if (strncmp(a, "--emit-", 7) == 0 || strcmp(a, "-S") == 0) {
      if ((rc = command_only(&p, a)) >= 0)
        return rc;
      if (strcmp(a, "--emit-ir") == 0 || strcmp(a, "--emit-ir=opt") == 0)
        o->emit_ir = STAGE_OPT;
      else if (strcmp(a, "--emit-ir=parsed") == 0)
        o->emit_ir = STAGE_PARSED;
      else if (strcmp(a, "--emit-ir=ad") == 0)
        o->emit_ir = STAGE_AD;
      else if (strncmp(a, "--emit-ir=", 10) == 0)
        return bad_usage(&p, "unknown IR stage '%s' (expected parsed, ad or opt)", a + 10);
      else if (strcmp(a, "--emit-dot") == 0 || strcmp(a, "--emit-dot=ad") == 0)
        o->emit_dot = STAGE_AD;
      else if (strcmp(a, "--emit-dot=parsed") == 0)
        o->emit_dot = STAGE_PARSED;
      else if (strcmp(a, "--emit-dot=opt") == 0)
        o->emit_dot = STAGE_OPT;
      else if (strncmp(a, "--emit-dot=", 11) == 0)
        return bad_usage(&p, "unknown IR stage '%s' (expected parsed, ad or opt)", a + 11);
      else if (strcmp(a, "--emit-plan") == 0)
        o->emit_plan = true;
      else if (strcmp(a, "--emit-llvm") == 0)
        o->emit_llvm = true;
      else if (strcmp(a, "-S") == 0)
        o->emit_asm = true;
      else
        return bad_usage(&p, "unknown option '%s'", a);
    } else if (strcmp(a, "-g") == 0) { /* for objects; the JIT registers no debug info */
      if ((rc = command_only(&p, a)) >= 0)
        return rc;
      o->debug = true;
    } else if (strncmp(a, "--target-cpu=", 13) == 0 && a[13]) {
      o->cpu = a + 13;
    } else if (strncmp(a, "--ad-memory", 11) == 0 && (a[11] == '=' || !a[11])) {
      if (!a[11] || !a[12])
        return bad_usage(&p, "%s needs a size in bytes, e.g. --ad-memory=64M", a);
      if (!options_parse_size(a + 12, &o->ad_memory))
        return bad_usage(&p, "invalid size '%s' for --ad-memory (expected a positive number of "
                             "bytes below 2^62, with an optional K, M or G suffix, e.g. 64M)",
                         a + 12);
    } else if (strncmp(a, "--exports", 9) == 0 && (a[9] == '=' || !a[9])) {
      if (!a[9] || !parse_exports(a + 10, &o->exports))
        return bad_usage(&p, "invalid --exports list '%s' (expected grad, jvp and hvp separated "
                             "by commas, or none)", a[9] ? a + 10 : "");
    } else if (strcmp(a, "--verify") == 0) {
      o->verify = true;
    } else if (a[0] == '-' && a[1]) {
      return bad_usage(&p, "unknown option '%s'", a);
    } else if (mode == OPTIONS_LIBRARY) {
      return bad_usage(&p, "unexpected '%s' in the options (sgc_compile takes the source "
                           "as a string)",
                       a);
    } else if (o->input) {
      return bad_usage(&p, "more than one input file ('%s')", a);
    } else {
      o->input = a;
    }
  }
  if (!o->input && mode == OPTIONS_COMMAND)
    return bad_usage(&p, "%s", "no input file");
  const char *prints[3];
  int nprints = 0;
  if (o->emit_ir)
    prints[nprints++] = "--emit-ir";
  if (o->emit_dot)
    prints[nprints++] = "--emit-dot";
  if (o->emit_plan)
    prints[nprints++] = "--emit-plan";
  if (nprints > 1) {
    char both[64];
    snprintf(both, sizeof both, "%s and %s", prints[0], prints[1]);
    return bad_usage(&p, "%s cannot be combined", both);
  }
  if (!cg_cpu_known(o->cpu)) {
    fprintf(err, "sgc: error: unknown target CPU '%s' (try 'native' or 'generic')\n", o->cpu);
    return 2;
  }
  return -1;
}

int options_split(const char *flags, char ***argv_out) {
  /* One block: the pointer array, then a copy of the string cut at blanks. */
  size_t len = strlen(flags), words = 0;
  for (size_t k = 0; k < len; k++)
    words += !strchr(" \t\n\r\f\v", flags[k]) && (k == 0 || strchr(" \t\n\r\f\v", flags[k - 1]));
  char **argv = xmalloc((words + 2) * sizeof *argv + sizeof "sgc" + len + 1);
  char *text = (char *)(argv + words + 2);
  strcpy(text, "sgc");
  argv[0] = text;
  text += sizeof "sgc";
  memcpy(text, flags, len + 1);
  int argc = 1;
  for (char *s = text; *s;) {
    s += strspn(s, " \t\n\r\f\v");
    if (!*s)
      break;
    argv[argc++] = s;
    s += strcspn(s, " \t\n\r\f\v");
    if (*s)
      *s++ = 0;
  }
  argv[argc] = NULL;
  *argv_out = argv;
  return argc;
}
