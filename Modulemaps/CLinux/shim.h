#ifndef TONEARM_LINUX_SHIM_H
#define TONEARM_LINUX_SHIM_H
/* glibc calls that Swift's Glibc module leaves out (GNU extensions). */
#include <pthread.h>

/* A GNU extension: the Glibc module is built without _GNU_SOURCE, so declare it here. */
extern int pthread_setname_np(pthread_t thread, const char *name);

/// Names the calling thread for top -H, perf and /proc (the kernel keeps 15 bytes).
static inline int tonearm_name_current_thread(const char *name) {
    char truncated[16];
    int i = 0;
    for (; name[i] != 0 && i < 15; i++) truncated[i] = name[i];
    truncated[i] = 0;
    return pthread_setname_np(pthread_self(), truncated);
}

#endif
