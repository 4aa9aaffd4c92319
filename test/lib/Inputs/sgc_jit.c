/* sgc_jit FILE.sg [FLAGS...]: compile FILE.sg with sgc_compile (the flags
 * joined into its options string), then print sgc_header to stdout; on
 * failure print the errors text to stderr and exit 1, as sgc would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sgc.h>

#include "slurp.h"

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
