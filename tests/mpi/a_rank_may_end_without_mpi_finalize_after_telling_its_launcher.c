/* SPDX-License-Identifier: MIT */
/* A rank that ends without MPI_Finalize (strata's ranks across nodes do: MPICH 4.0.2's
 * finalize can deadlock there) ends cleanly once strata_launcher_finalize() told the
 * launcher so: the launcher acknowledges, and mpiexec exits 0.
 *
 * After the call the rank's PMI socket is closed while the rank lives on for a moment: a
 * launcher that had not taken the finalize would see a live rank close its socket, record
 * the rank as failed and kill the job's ranks (Hydra's pmi_cb), so mpiexec would fail. */
#include "mpi_test.h"

#include <strata/launcher.h>
#include <time.h>

int main(int argc, char** argv) {
    CHECK_MPI(MPI_Init(&argc, &argv));
    int rank = 0;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    fflush(NULL);
    if (strata_launcher_finalize(30000) != 1) {
        fprintf(stderr, "rank %d: the launcher did not acknowledge cmd=finalize on PMI_FD=%s\n", rank,
                getenv("PMI_FD") ? getenv("PMI_FD") : "(unset)");
        _exit(1);
    }
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    printf("rank %d: the launcher acknowledged; exiting without MPI_Finalize\n", rank);
    fflush(NULL);
    _exit(0);
}
