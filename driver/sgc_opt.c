/* sgc-opt: placeholder until the IR parser lands (issue 4). */
#include <stdio.h>

int main(void) {
  fprintf(stderr, "sgc-opt: not built yet\n");
  return 2;
}
