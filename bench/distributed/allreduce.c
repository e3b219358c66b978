/* The baseline of distributed_bench.py: MPI_Allreduce (sum) of N floats,
 * called directly. Prints the median seconds of ITERS timed calls (after
 * warm-up) on rank 0.  Usage: allreduce N ITERS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long n = argc > 1 ? atol(argv[1]) : 16L << 20;
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    double *t = malloc(iters * sizeof(double));
    for (long i = 0; i < n; i++) x[i] = (float)(i % 7);
    for (int w = 0; w < 2; w++)
        MPI_Allreduce(x, y, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double s = MPI_Wtime();
        MPI_Allreduce(x, y, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[i] = MPI_Wtime() - s;
    }
    qsort(t, iters, sizeof(double), cmp);
    if (rank == 0) printf("%.6f\n", t[iters / 2]);
    free(x); free(y); free(t);
    MPI_Finalize();
    return 0;
}
