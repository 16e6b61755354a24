/* Finding and loading libcupti (cupti_load.c). */
#ifndef GPUTRACE_CUPTI_LOAD_H
#define GPUTRACE_CUPTI_LOAD_H

#include <stddef.h>

/* Loads libcupti: GPUTRACE_CUPTI_PATH alone if set; else a copy already
 * loaded, the one beside the program's libcudart, $CUDA_HOME, $CUDA_PATH,
 * /usr/local/cuda, the loader's path. Returns its handle and writes where it
 * lies into path; NULL with why (one line) when none loads. */
void *gt_cupti_load(char *path, size_t path_cap, char *why, size_t why_cap);

#endif
