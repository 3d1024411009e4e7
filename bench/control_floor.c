/*
 * The control path's floor: the least a server can spend answering a request on a Unix socket.
 * One thread, epoll, non-blocking sockets; every line received is answered with the same
 * 300-byte reply in MPD's framing ("key: value" lines, then "OK"). No parsing, no state.
 * tonearm-bench runs it beside tonearmd and Debian's MPD and measures it as it measures them.
 *
 * Usage: control_floor SOCKET_PATH   (serves until killed)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_EVENTS 128
#define BUFFER 65536

struct connection {
    int fd;
    /* Replies not yet written (a client that reads slowly). */
    char *pending;
    size_t pending_length, pending_capacity;
    /* Whether epoll watches for writability (only while replies are pending). */
    int watching_output;
};

static char reply[301];
static size_t reply_length;

static void make_reply(void) {
    /* Eleven status-like lines padded to 300 bytes with the final OK. */
    const char *lines =
        "volume: 100\nrepeat: 0\nrandom: 0\nsingle: 0\nconsume: 0\nplaylist: 2\n"
        "playlistlength: 0\nmixrampdb: 0.000000\nstate: stop\nxfade: 0\n";
    size_t used = strlen(lines);
    memcpy(reply, lines, used);
    const char *pad = "padding: ";
    size_t room = 300 - used - strlen(pad) - 1 - 3;
    memcpy(reply + used, pad, strlen(pad));
    used += strlen(pad);
    memset(reply + used, 'x', room);
    used += room;
    reply[used++] = '\n';
    memcpy(reply + used, "OK\n", 3);
    used += 3;
    reply_length = used;
}

static int set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL, 0);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void append(struct connection *c, const char *bytes, size_t length) {
    if (c->pending_length + length > c->pending_capacity) {
        size_t capacity = c->pending_capacity ? c->pending_capacity * 2 : 4096;
        while (capacity < c->pending_length + length) capacity *= 2;
        c->pending = realloc(c->pending, capacity);
        if (!c->pending) { perror("realloc"); exit(1); }
        c->pending_capacity = capacity;
    }
    memcpy(c->pending + c->pending_length, bytes, length);
    c->pending_length += length;
}

/* Writes what is pending; returns -1 when the connection is gone. */
static int flush(struct connection *c) {
    size_t written = 0;
    while (written < c->pending_length) {
        ssize_t n = write(c->fd, c->pending + written, c->pending_length - written);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR) continue;
            return -1;
        }
        written += (size_t)n;
    }
    memmove(c->pending, c->pending + written, c->pending_length - written);
    c->pending_length -= written;
    return 0;
}

static void drop(int epoll, struct connection *c) {
    epoll_ctl(epoll, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->pending);
    free(c);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s SOCKET_PATH\n", argv[0]); return 2; }
    signal(SIGPIPE, SIG_IGN);
    make_reply();
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    if (strlen(argv[1]) >= sizeof(address.sun_path)) { fprintf(stderr, "socket path too long\n"); return 2; }
    strcpy(address.sun_path, argv[1]);
    unlink(argv[1]);
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof(address)) < 0 || listen(listener, 512) < 0) {
        perror("listen");
        return 1;
    }
    set_nonblocking(listener);
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = { .events = EPOLLIN, .data.ptr = NULL };
    epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);
    printf("ready\n");
    fflush(stdout);

    static char input[BUFFER];
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int count = epoll_wait(epoll, events, MAX_EVENTS, -1);
        if (count < 0) { if (errno == EINTR) continue; perror("epoll_wait"); return 1; }
        for (int i = 0; i < count; i++) {
            struct connection *c = events[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    c = calloc(1, sizeof(*c));
                    c->fd = fd;
                    struct epoll_event added = { .events = EPOLLIN, .data.ptr = c };
                    epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &added);
                    /* MPD's greeting, so MPD clients connect to it unchanged. */
                    append(c, "OK MPD 0.23.5\n", 14);
                    if (flush(c) < 0) drop(epoll, c);
                }
                continue;
            }
            if (events[i].events & (EPOLLERR | EPOLLHUP)) { drop(epoll, c); continue; }
            int gone = 0;
            if (events[i].events & EPOLLIN) {
                for (;;) {
                    ssize_t n = read(c->fd, input, sizeof(input));
                    if (n == 0) { gone = 1; break; }
                    if (n < 0) {
                        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
                        if (errno == EINTR) continue;
                        gone = 1;
                        break;
                    }
                    for (ssize_t k = 0; k < n; k++) if (input[k] == '\n') append(c, reply, reply_length);
                }
            }
            if (gone || flush(c) < 0) { drop(epoll, c); continue; }
            int want_output = c->pending_length > 0;
            if (want_output != c->watching_output) {
                struct epoll_event changed = { .events = EPOLLIN | (want_output ? EPOLLOUT : 0), .data.ptr = c };
                epoll_ctl(epoll, EPOLL_CTL_MOD, c->fd, &changed);
                c->watching_output = want_output;
            }
        }
    }
}
