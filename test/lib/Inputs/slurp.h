/* The whole of a file as a string (NULL if it cannot be read), for the
 * libsgc test programs, which compile sources from memory. */
#ifndef SLURP_H
#define SLURP_H

#include <stdio.h>
#include <stdlib.h>

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

#endif
