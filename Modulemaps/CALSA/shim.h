// ALSA helpers Swift cannot express: snd_lib_error_handler_t is variadic, so the
// handler that silences ALSA's own "ALSA lib pcm.c:..." lines must be written in C.
#ifndef TONEARM_CALSA_SHIM_H
#define TONEARM_CALSA_SHIM_H

#include <errno.h>
#include <alsa/asoundlib.h>

static inline void tonearm_alsa_discard_message(const char *file, int line, const char *function,
                                                int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

/// ALSA prints to stderr on its own; the daemon reports the same errors through its logger.
static inline void tonearm_alsa_silence_errors(void) {
    snd_lib_error_set_handler(tonearm_alsa_discard_message);
}

static inline int tonearm_errno_epipe(void) { return EPIPE; }
static inline int tonearm_errno_eagain(void) { return EAGAIN; }
static inline int tonearm_errno_ebadfd(void) { return EBADFD; }
static inline int tonearm_errno_enodev(void) { return ENODEV; }
static inline int tonearm_errno_eintr(void) { return EINTR; }

#endif
