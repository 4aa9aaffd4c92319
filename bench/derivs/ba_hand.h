/* bench/derivs/ba_hand.c: the bundle-adjustment Jacobian derived by hand. */
#ifndef BA_HAND_H
#define BA_HAND_H
#include <stdint.h>
void ba_hand(int64_t p, const double *cams, const double *pts, const double *w,
             const int32_t *obs, const double *feats, double *res, double *J);
#endif
