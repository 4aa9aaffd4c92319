/* Data-parallel training with MPI: every rank holds the same parameters,
 * computes the gradient of the loss on its own shard of the batch with the
 * generated shard_loss_grad (model.sg), and MPI_Allreduce sums the shards'
 * gradients, so every rank takes the same step as one process holding the
 * whole batch would. Rank 0 checks that: it also computes the whole batch's
 * gradient alone and compares at every step, and prints the final
 * parameters.
 *
 *   sgc model.sg -o model.o --header model.h
 *   mpicc -O2 -I. -Ibuild/include train.c model.o -Lbuild/lib -lsgrt -lm -o train
 *   mpirun -np 4 ./train [STEPS]          (or: NP=4 examples/mpi/run.sh)
 *
 * The data set is synthetic and the same on every rank (a seeded generator):
 * a real program would have each rank read only its own shard. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

enum { N = 1024, D = 16, C = 4 }; /* batch rows, features, classes */
static const float LEARNING_RATE = 0.5f;

static uint64_t rng = 12345;
static float uniform(void) { /* in [-1, 1) */
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* x: N rows of features; y: one-hot labels of a random linear teacher. */
static void make_data(float *x, float *y) {
  float teacher[D][C];
  for (int i = 0; i < D; i++)
    for (int k = 0; k < C; k++)
      teacher[i][k] = 2 * uniform();
  for (int r = 0; r < N; r++) {
    float score[C] = {0};
    for (int i = 0; i < D; i++) {
      x[r * D + i] = uniform();
      for (int k = 0; k < C; k++)
        score[k] += x[r * D + i] * teacher[i][k];
    }
    int best = 0;
    for (int k = 1; k < C; k++)
      if (score[k] > score[best])
        best = k;
    for (int k = 0; k < C; k++)
      y[r * C + k] = k == best;
  }
}

/* loss, d_w, d_b of rows [lo, hi) into g = {loss, d_w[D*C], d_b[C]}. */
static void gradient(const float *w, const float *b, const float *x, const float *y, int lo, int hi,
                     float *g) {
  sg_tensor tw = {(void *)w, {D, C}, 2, SG_F32}, tb = {(void *)b, {C}, 1, SG_F32};
  sg_tensor tx = {(void *)(x + (size_t)lo * D), {hi - lo, D}, 2, SG_F32};
  sg_tensor ty = {(void *)(y + (size_t)lo * C), {hi - lo, C}, 2, SG_F32};
  sg_tensor out = {g, {0}, 0, SG_F32}, dw = {g + 1, {D, C}, 2, SG_F32};
  sg_tensor db = {g + 1 + D * C, {C}, 1, SG_F32};
  if (shard_loss_grad(&tw, &tb, &tx, &ty, &out, &dw, &db) != SG_OK) {
    fprintf(stderr, "shard_loss_grad: %s\n", sg_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* f32 sums of N terms in another order (per shard, then across ranks)
 * differ from one process's by up to about N * 2^-24 of their magnitude. */
static const double TOLERANCE = 1e-4;
static int failures;

/* Compares the summed gradient with one process's, entry by entry relative
 * to the largest entry of its kind (the loss; the gradient), and prints
 * both values with the file and line on failure. Returns the largest
 * relative difference. */
static double compare(const float *got, const float *want, int n, int step, int line) {
  double worst = 0, scale[2] = {1e-30, 1e-30};
  for (int k = 0; k < n; k++)
    scale[k > 0] = fmax(scale[k > 0], fabs((double)want[k]));
  for (int k = 0; k < n; k++) {
    double rel = fabs((double)got[k] - want[k]) / scale[k > 0];
    worst = fmax(worst, rel);
    if (rel > TOLERANCE && failures++ < 10)
      printf("%s:%d: step %d, %s[%d]: allreduced %.9g, one process %.9g\n", __FILE__, line, step,
             k ? "gradient" : "loss", k, got[k], want[k]);
  }
  return worst;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int steps = argc > 1 ? atoi(argv[1]) : 20;

  static float x[N * D], y[N * C], w[D * C], b[C];
  make_data(x, y);
  memset(w, 0, sizeof w);
  memset(b, 0, sizeof b);
  /* this rank's shard: rows [lo, hi), as even as the division allows */
  int lo = (int)((int64_t)N * rank / size), hi = (int)((int64_t)N * (rank + 1) / size);

  enum { G = 1 + D * C + C };
  float g[G], sum[G], whole[G];
  double worst = 0;
  for (int step = 0; step < steps; step++) {
    gradient(w, b, x, y, lo, hi, g);
    MPI_Allreduce(g, sum, G, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) { /* what one process with the whole batch computes */
      gradient(w, b, x, y, 0, N, whole);
      worst = fmax(worst, compare(sum, whole, G, step, __LINE__));
      if (step == 0 || step == steps - 1)
        printf("step %d: loss %.5f (one process: %.5f)\n", step, sum[0] / N, whole[0] / N);
    }
    for (int k = 0; k < D * C; k++)
      w[k] -= LEARNING_RATE * sum[1 + k] / N;
    for (int k = 0; k < C; k++)
      b[k] -= LEARNING_RATE * sum[1 + D * C + k] / N;
  }
  if (rank == 0) {
    /* f32 sums in another order differ in the last bits, no more */
    printf("ranks %d, largest relative difference from one process: %.2g (%s)\n", size, worst,
           failures ? "FAILED" : "ok");
    printf("final parameters:");
    for (int k = 0; k < D * C; k++)
      printf(" %.9g", w[k]);
    for (int k = 0; k < C; k++)
      printf(" %.9g", b[k]);
    printf("\n");
  }
  int ok = failures == 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return ok ? 0 : 1;
}
