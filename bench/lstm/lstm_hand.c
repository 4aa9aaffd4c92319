/* examples/lstm.sg's loss and gradient written by hand in C, as an expert
 * would (forward keeping each step's gates, then backpropagation through
 * time), in f32 (for make bench: lstm_hand_f32) and f64 (a reference the
 * tests check sgc's gradient against: lstm_hand_f64). Scratch memory is
 * kept per thread between calls, as sgc's workspace is. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lstm_hand.h"

#define T float
#define SUF(x) x##_f32
#define EXP expf
#define LOG logf
#define TANH tanhf
#include "lstm_hand_impl.h"
#undef T
#undef SUF
#undef EXP
#undef LOG
#undef TANH

#define T double
#define SUF(x) x##_f64
#define EXP exp
#define LOG log
#define TANH tanh
#include "lstm_hand_impl.h"
