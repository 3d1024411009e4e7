// ALSA helpers Swift cannot express: snd_lib_error_handler_t is variadic, so the handler
// that keeps ALSA's own "ALSA lib pcm.c:..." lines off stderr must be written in C.
#ifndef TONEARM_CALSA_SHIM_H
#define TONEARM_CALSA_SHIM_H

#include <errno.h>
#include <alsa/asoundlib.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// ALSA's own complaint ("open /x/out.raw for writing failed: No such file or directory") is
// the only place that says why a plugin failed, where the call returns a bare -EIO. The
// handler formats it and hands it to Swift (`AlsaMessages`, defined there with @_cdecl), on the
// thread that made the failing call.
void tonearm_alsa_message_kept(const char *message);

static inline void tonearm_alsa_keep_message(const char *file, int line, const char *function,
                                             int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function;
    char message[256];
    va_list args;
    va_start(args, fmt);
    int used = vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    if (err != 0 && used >= 0 && (size_t)used < sizeof message) {
        snprintf(message + used, sizeof message - (size_t)used, ": %s", snd_strerror(err < 0 ? err : -err));
    }
    tonearm_alsa_message_kept(message);
}

/// ALSA prints to stderr on its own; the daemon reports the same errors through its logger,
/// with the message kept.
static inline void tonearm_alsa_silence_errors(void) {
    snd_lib_error_set_handler(tonearm_alsa_keep_message);
}

static inline int tonearm_errno_epipe(void) { return EPIPE; }
static inline int tonearm_errno_eagain(void) { return EAGAIN; }
static inline int tonearm_errno_ebadfd(void) { return EBADFD; }
static inline int tonearm_errno_enodev(void) { return ENODEV; }
static inline int tonearm_errno_eintr(void) { return EINTR; }

#endif
