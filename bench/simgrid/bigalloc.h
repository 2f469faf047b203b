/* The drivers' large buffers: under SMPI, SMPI_SHARED_MALLOC gives every simulated rank
 * the same physical pages (their contents are never checked here), so P = 1024 fits in
 * this machine's memory; with a real mpicc, plain malloc. */
#ifndef DR_SIMGRID_BIGALLOC_H
#define DR_SIMGRID_BIGALLOC_H
#include <stdlib.h>

#ifdef SMPI_SHARED_MALLOC
#define BIGALLOC(n) SMPI_SHARED_MALLOC(n)
#define BIGFREE(p) SMPI_SHARED_FREE(p)
#else
#define BIGALLOC(n) malloc(n)
#define BIGFREE(p) free(p)
#endif

#endif
