/* sgc_jit FILE.sg [FLAGS...]: compile FILE.sg with sgc_compile (the flags
 * joined into its options string), then print sgc_header to stdout; on
 * failure print the errors text to stderr and exit 1, as sgc would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sgc.h>

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (fread(s, 1, (size_t)n, f) != (size_t)n)
    n = 0;
  s[n] = 0;
  fclose(f);
  return s;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: sgc_jit FILE.sg [FLAGS...]\n");
    return 2;
  }
  char *src = slurp(argv[1]);
  if (!src) {
    perror(argv[1]);
    return 2;
  }
  char options[4096] = "";
  for (int k = 2; k < argc; k++) {
    strncat(options, argv[k], sizeof options - strlen(options) - 2);
    strcat(options, " ");
  }
  char *errors = (char *)"untouched";
  sgc_module *m = sgc_compile(src, argv[1], options, &errors);
  free(src);
  if (!m) {
    fputs(errors, stderr);
    free(errors);
    return 1;
  }
  if (errors)
    printf("errors should be NULL after a success\n");
  fputs(sgc_header(m), stdout);
  sgc_free(m);
  return 0;
}
