// zlib (Debian's zlib1g-dev): the web page's gzip copies, made once when the page is first served.
#include <zlib.h>

// deflateInit2 is a macro: a gzip stream (window 15, +16 for the gzip wrapper), best compression.
static inline int tonearm_gzip_init(z_streamp stream) {
    return deflateInit2(stream, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
}
