/* SPDX-License-Identifier: MIT */
/* With one rank nothing distributed runs and no MPI is loaded: an EDT reads
 * /proc/self/maps. With more ranks the same check finds MPI (so it can fail). */
#include <stdio.h>
#include <string.h>

#include "dist_test.h"

static int mpi_loaded(void) {
    FILE* maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
        if (strstr(line, "libmpi") != NULL || strstr(line, "strata-ocr-dist") != NULL) found = 1;
    }
    if (maps != NULL) fclose(maps);
    return found;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const int loaded = mpi_loaded();
    CHECK(loaded == (rank_count() > 1), "%llu rank(s), MPI %s", (unsigned long long)rank_count(),
          loaded ? "loaded" : "not loaded");
    ocrPrintf("%llu rank(s): MPI %s\n", (unsigned long long)rank_count(), loaded ? "loaded" : "not loaded");
    ocrShutdown();
    return NULL_GUID;
}
