/* scratch.c: the scratch memory the hand-written baselines keep between
 * calls, as an expert's library would (and as sgc's workspace does): a
 * repeated call allocates nothing and takes no page fault. */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <stdlib.h>

#include "hand.h"

void *hand_scratch(int slot, size_t bytes) {
  static void *buf[HS_SLOTS];
  static size_t cap[HS_SLOTS];
  if (bytes > cap[slot]) {
    free(buf[slot]);
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0)
      return buf[slot] = NULL, cap[slot] = 0, NULL;
    buf[slot] = p, cap[slot] = bytes;
  }
  return buf[slot];
}
