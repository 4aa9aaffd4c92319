/* Compiles only if the generated header (seed.h) is valid C. */
#include "seed.h"

int main(void) { return 0; }
