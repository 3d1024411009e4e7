#ifndef TONEARM_LINUX_SHIM_H
#define TONEARM_LINUX_SHIM_H
/* glibc calls that Swift's Glibc module leaves out (GNU extensions). */
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <errno.h>
#include <malloc.h>

/* A GNU extension: the Glibc module is built without _GNU_SOURCE, so declare it here. */
extern int pthread_setname_np(pthread_t thread, const char *name);

/// Gives the memory every thread freed back to the system (glibc keeps a thread's freed memory
/// for its own next allocations): after a scan, which frees what it held all at once.
static inline void tonearm_release_freed_memory(void) { malloc_trim(0); }

/// Names the calling thread for top -H, perf and /proc (the kernel keeps 15 bytes).
static inline int tonearm_name_current_thread(const char *name) {
    char truncated[16];
    int i = 0;
    for (; name[i] != 0 && i < 15; i++) truncated[i] = name[i];
    truncated[i] = 0;
    return pthread_setname_np(pthread_self(), truncated);
}

/// Lowers the calling thread to idle CPU priority (SCHED_IDLE: it runs only when nothing else
/// wants the CPU) and the idle I/O class (its reads wait for everyone else's). syscall(2) is
/// variadic, which Swift cannot call. Returns 0, or -1 with errno.
static inline int tonearm_idle_priority_current_thread(void) {
    struct sched_param param = { .sched_priority = 0 };
    if (sched_setscheduler(0, 5 /* SCHED_IDLE */, &param) != 0) return -1;
    return (int)syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, 3 << 13 /* IOPRIO_CLASS_IDLE, level 0 */);
}

/// A file descriptor that becomes readable when process `pid` exits (Linux 5.3+), so a parent
/// can wait for a child with a timeout in poll(2) instead of polling waitpid. -1 with errno
/// where the kernel has none.
static inline int tonearm_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* glibc 2.34+, a GNU extension like the one above: spawn.h declares it only under _GNU_SOURCE. */
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

/// Adds to `actions` a close, in the child, of every descriptor from `from` up (glibc does it
/// with close_range(2)), so a spawned program inherits none of the daemon's sockets, files,
/// epoll, inotify or eventfd descriptors whatever their close-on-exec flag. 0 or an errno value.
static inline int tonearm_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

#endif
