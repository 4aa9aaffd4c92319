/* examples/lstm.sg written by hand (lstm_hand.c): the loss of lstm_loss
 * and, when d_main is not NULL, its gradient, as lstm_loss_grad computes
 * them; main [4,4,b], extra [3,b], state [4,b], seq [c,b], row-major.
 * Returns 0, or -1 if scratch memory could not be had. */
#ifndef LSTM_HAND_H
#define LSTM_HAND_H

#include <stdint.h>

int lstm_hand_f32(int64_t b, int64_t c, const float *mainp, const float *extra,
                  const float *state, const float *seq, float *loss, float *d_main,
                  float *d_extra);
int lstm_hand_f64(int64_t b, int64_t c, const double *mainp, const double *extra,
                  const double *state, const double *seq, double *loss, double *d_main,
                  double *d_extra);

#endif
