/* Prints SGC_VERSION as sgc.h defines it. */
#include <stdio.h>

#include <sgc.h>

int main(void) {
  printf("sgc.h: %s\n", SGC_VERSION);
  return 0;
}
