/* SPDX-License-Identifier: MIT */
/* strata-mpi-probe: started by `strata doctor` as `mpiexec -n 1 strata-mpi-probe`.
 * Proves that the launcher can start a rank of this MPI library and that
 * MPI_Init/MPI_Finalize complete; prints the first line of the library
 * version, prefixed so the doctor can pick it out of launcher chatter. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
    MPI_Get_library_version(version, &length);
    version[strcspn(version, "\r\n")] = '\0';
    printf("strata-mpi-probe: %s\n", version);
    fflush(stdout);
    return MPI_Finalize() == MPI_SUCCESS ? 0 : 2;
}
