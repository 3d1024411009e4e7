/*
 * tonearmfault: an ALSA external PCM (snd_pcm_ioplug) that behaves like a sound card and fails
 * on command. Test equipment for Tonearm; never installed.
 *
 * Like hardware, it consumes frames at real time x `speed` from the moment it starts, reports the
 * true delay (frames accepted but not yet "played"), blocks a writer whose buffer is full (a
 * timerfd wakes it when `avail_min` frames are free again) and underruns when the writer is late.
 *
 * Configuration (an ALSA config the test writes):
 *     pcm_type.tonearmfault { lib "/abs/libasound_module_pcm_tonearmfault.so" }
 *     pcm.fault { type tonearmfault control "/tmp/x/control" record "/tmp/x/rec.raw" speed 4 pause true }
 *   record  append every frame received to this file (optional)
 *   speed   consume at real time x speed (default 1)
 *   pause   false hides snd_pcm_pause, like devices that cannot pause (default true)
 *
 * The control file, read at every open (missing = no faults), one command per line:
 *     refuse_open EBUSY|ENOENT|ENODEV|EIO   snd_pcm_open fails with that error
 *     underrun_after FRAMES                 once FRAMES were received, the device runs dry (xrun)
 *     vanish_after FRAMES                   after exactly FRAMES received, the device is unplugged
 *     stall_after FRAMES MS                 once FRAMES were received, one write blocks for MS ms
 * "Unplugged" is the file CONTROL.unplugged: while it exists, open fails with ENOENT and every
 * call on an open handle fails with ENODEV (the state is DISCONNECTED). The device creates it
 * when it vanishes; a test may create it at any time (unplug now) and deletes it to plug back.
 */
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    snd_pcm_ioplug_t io;
    int timer_fd;
    int record_fd;
    double speed;
    char *unplug_path;

    /* Faults, from the control file at open; -1 = off. Counted in frames received since open. */
    long long underrun_after;
    long long vanish_after;
    long long stall_after;
    long stall_ms;
    long long received;

    /* The device clock, reset by prepare: frames accepted, and frames played at `base_time`. */
    uint64_t written;
    uint64_t played_base;
    double base_time;
    int running;
    int xrun_pending;
    int vanished;
    snd_pcm_uframes_t avail_min;
} fault_pcm;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double frames_per_second(const fault_pcm *dev)
{
    return (double)dev->io.rate * dev->speed;
}

/* Frames played by now: never more than were written (a dry device stops there). */
static uint64_t played(const fault_pcm *dev)
{
    if (!dev->running)
        return dev->played_base;
    uint64_t advanced = (uint64_t)((now_seconds() - dev->base_time) * frames_per_second(dev));
    uint64_t total = dev->played_base + advanced;
    return total < dev->written ? total : dev->written;
}

/* True when the device is gone: it vanished, or the test unplugged it. */
static int unplugged(fault_pcm *dev)
{
    if (!dev->vanished && access(dev->unplug_path, F_OK) == 0)
        dev->vanished = 1;
    if (dev->vanished)
        snd_pcm_ioplug_set_state(&dev->io, SND_PCM_STATE_DISCONNECTED);
    return dev->vanished;
}

static void vanish(fault_pcm *dev)
{
    int fd = open(dev->unplug_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    dev->vanished = 1;
    snd_pcm_ioplug_set_state(&dev->io, SND_PCM_STATE_DISCONNECTED);
}

/* A running device whose writer fell behind has run dry: that is an underrun, as on hardware. */
static int ran_dry(fault_pcm *dev)
{
    if (!dev->running || dev->io.state == SND_PCM_STATE_DRAINING)
        return 0;
    double due = dev->base_time + (double)(dev->written - dev->played_base) / frames_per_second(dev);
    return now_seconds() >= due;
}

/* Wakes a blocked writer when `frames_needed` more frames will have been played. */
static void arm_timer(fault_pcm *dev, uint64_t frames_needed)
{
    double wait = (double)frames_needed / frames_per_second(dev);
    if (wait < 0.0005)
        wait = 0.0005;
    struct itimerspec spec = { { 0, 0 }, { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) } };
    timerfd_settime(dev->timer_fd, 0, &spec, NULL);
}

static void arm_for_space(fault_pcm *dev)
{
    if (!dev->running)
        return;
    uint64_t queued = dev->written - played(dev);
    uint64_t free_frames = dev->io.buffer_size > queued ? dev->io.buffer_size - queued : 0;
    uint64_t want = dev->avail_min ? dev->avail_min : dev->io.period_size;
    arm_timer(dev, free_frames >= want ? 0 : want - free_frames);
}

static int fault_start(snd_pcm_ioplug_t *io)
{
    fault_pcm *dev = io->private_data;
    if (unplugged(dev))
        return -ENODEV;
    dev->base_time = now_seconds();
    dev->running = 1;
    arm_for_space(dev);
    return 0;
}

static int fault_stop(snd_pcm_ioplug_t *io)
{
    fault_pcm *dev = io->private_data;
    dev->played_base = played(dev);
    dev->running = 0;
    return 0;
}

static snd_pcm_sframes_t fault_pointer(snd_pcm_ioplug_t *io)
{
    fault_pcm *dev = io->private_data;
    if (unplugged(dev))
        return (snd_pcm_sframes_t)(dev->played_base % io->buffer_size);
    if (dev->xrun_pending) {
        /* The injected underrun: everything queued was played, then nothing came. */
        dev->xrun_pending = 0;
        dev->played_base = dev->written;
        dev->running = 0;
        return -EPIPE;
    }
    if (ran_dry(dev)) {
        dev->played_base = dev->written;
        dev->running = 0;
        return -EPIPE;
    }
    return (snd_pcm_sframes_t)(played(dev) % io->buffer_size);
}

static snd_pcm_sframes_t fault_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
                                        snd_pcm_uframes_t offset, snd_pcm_uframes_t size)
{
    fault_pcm *dev = io->private_data;
    if (unplugged(dev))
        return -ENODEV;
    if (dev->vanish_after >= 0) {
        long long left = dev->vanish_after - dev->received;
        if (left <= 0) {
            vanish(dev);
            return -ENODEV;
        }
        if ((long long)size > left)
            size = (snd_pcm_uframes_t)left;
    }
    if (dev->stall_after >= 0 && dev->received >= dev->stall_after) {
        dev->stall_after = -1;
        struct timespec pause = { dev->stall_ms / 1000, (dev->stall_ms % 1000) * 1000000L };
        nanosleep(&pause, NULL);
    }
    if (dev->record_fd >= 0) {
        const char *data = (const char *)areas[0].addr + (areas[0].first + areas[0].step * offset) / 8;
        size_t bytes = (size_t)snd_pcm_frames_to_bytes(io->pcm, size);
        while (bytes > 0) {
            ssize_t n = write(dev->record_fd, data, bytes);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return -EIO;
            data += n;
            bytes -= (size_t)n;
        }
    }
    dev->written += size;
    dev->received += (long long)size;
    if (dev->underrun_after >= 0 && dev->received >= dev->underrun_after) {
        dev->underrun_after = -1;
        dev->xrun_pending = 1;
    }
    arm_for_space(dev);
    return (snd_pcm_sframes_t)size;
}

static int fault_prepare(snd_pcm_ioplug_t *io)
{
    fault_pcm *dev = io->private_data;
    if (unplugged(dev))
        return -ENODEV;
    dev->written = 0;
    dev->played_base = 0;
    dev->running = 0;
    dev->xrun_pending = 0;
    return 0;
}

static int fault_drain(snd_pcm_ioplug_t *io)
{
    fault_pcm *dev = io->private_data;
    while (!unplugged(dev)) {
        uint64_t queued = dev->written - played(dev);
        if (queued == 0 || !dev->running)
            return 0;
        double wait = (double)queued / frames_per_second(dev);
        struct timespec pause = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) + 100000L };
        if (pause.tv_nsec >= 1000000000L) {
            pause.tv_sec += 1;
            pause.tv_nsec -= 1000000000L;
        }
        nanosleep(&pause, NULL);
    }
    return -ENODEV;
}

static int fault_pause(snd_pcm_ioplug_t *io, int enable)
{
    fault_pcm *dev = io->private_data;
    if (unplugged(dev))
        return -ENODEV;
    if (enable) {
        dev->played_base = played(dev);
        dev->running = 0;
    } else {
        dev->base_time = now_seconds();
        dev->running = 1;
        arm_for_space(dev);
    }
    return 0;
}

static int fault_sw_params(snd_pcm_ioplug_t *io, snd_pcm_sw_params_t *params)
{
    fault_pcm *dev = io->private_data;
    snd_pcm_sw_params_get_avail_min(params, &dev->avail_min);
    return 0;
}

static int fault_delay(snd_pcm_ioplug_t *io, snd_pcm_sframes_t *delay)
{
    fault_pcm *dev = io->private_data;
    if (unplugged(dev))
        return -ENODEV;
    *delay = (snd_pcm_sframes_t)(dev->written - played(dev));
    return 0;
}

static int fault_poll_count(snd_pcm_ioplug_t *io)
{
    (void)io;
    return 1;
}

static int fault_poll_descriptors(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int space)
{
    fault_pcm *dev = io->private_data;
    if (space < 1)
        return -EINVAL;
    pfd[0].fd = dev->timer_fd;
    pfd[0].events = POLLIN;
    pfd[0].revents = 0;
    return 1;
}

static int fault_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int nfds, unsigned short *revents)
{
    fault_pcm *dev = io->private_data;
    (void)pfd;
    (void)nfds;
    uint64_t expirations;
    while (read(dev->timer_fd, &expirations, sizeof expirations) > 0) {
    }
    if (unplugged(dev) || dev->xrun_pending || ran_dry(dev)) {
        *revents = POLLERR;
        return 0;
    }
    uint64_t queued = dev->written - played(dev);
    uint64_t want = dev->avail_min ? dev->avail_min : io->period_size;
    if (io->buffer_size - queued >= want || !dev->running) {
        *revents = POLLOUT;
    } else {
        *revents = 0;
        arm_for_space(dev);
    }
    return 0;
}

static int fault_close(snd_pcm_ioplug_t *io)
{
    fault_pcm *dev = io->private_data;
    if (dev->record_fd >= 0)
        close(dev->record_fd);
    close(dev->timer_fd);
    free(dev->unplug_path);
    free(dev);
    return 0;
}

static const snd_pcm_ioplug_callback_t with_pause = {
    .start = fault_start, .stop = fault_stop, .pointer = fault_pointer, .transfer = fault_transfer,
    .close = fault_close, .sw_params = fault_sw_params, .prepare = fault_prepare, .drain = fault_drain,
    .pause = fault_pause, .poll_descriptors_count = fault_poll_count,
    .poll_descriptors = fault_poll_descriptors, .poll_revents = fault_poll_revents, .delay = fault_delay,
};

static const snd_pcm_ioplug_callback_t without_pause = {
    .start = fault_start, .stop = fault_stop, .pointer = fault_pointer, .transfer = fault_transfer,
    .close = fault_close, .sw_params = fault_sw_params, .prepare = fault_prepare, .drain = fault_drain,
    .poll_descriptors_count = fault_poll_count,
    .poll_descriptors = fault_poll_descriptors, .poll_revents = fault_poll_revents, .delay = fault_delay,
};

static int error_named(const char *name)
{
    if (strcmp(name, "EBUSY") == 0) return -EBUSY;
    if (strcmp(name, "ENOENT") == 0) return -ENOENT;
    if (strcmp(name, "ENODEV") == 0) return -ENODEV;
    if (strcmp(name, "EIO") == 0) return -EIO;
    return -EINVAL;
}

/* Reads the control file; returns 0, or the error `refuse_open` asks for. */
static int read_control(fault_pcm *dev, const char *path)
{
    FILE *file = fopen(path, "re");
    if (!file)
        return 0;
    char line[256];
    int refuse = 0;
    while (fgets(line, sizeof line, file)) {
        char name[64], word[64];
        long long frames;
        long ms;
        if (sscanf(line, "refuse_open %63s", name) == 1)
            refuse = error_named(name);
        else if (sscanf(line, "underrun_after %lld", &frames) == 1)
            dev->underrun_after = frames;
        else if (sscanf(line, "vanish_after %lld", &frames) == 1)
            dev->vanish_after = frames;
        else if (sscanf(line, "stall_after %lld %ld", &frames, &ms) == 2) {
            dev->stall_after = frames;
            dev->stall_ms = ms;
        } else if (sscanf(line, "%63s", word) == 1 && word[0] != '#') {
            SNDERR("tonearmfault: unknown control line: %s", line);
            refuse = -EINVAL;
        }
    }
    fclose(file);
    return refuse;
}

SND_PCM_PLUGIN_DEFINE_FUNC(tonearmfault)
{
    snd_config_iterator_t i, next;
    const char *control = NULL, *record = NULL;
    double speed = 1.0;
    int can_pause = 1;
    (void)root;

    snd_config_for_each(i, next, conf) {
        snd_config_t *n = snd_config_iterator_entry(i);
        const char *id;
        if (snd_config_get_id(n, &id) < 0)
            continue;
        if (strcmp(id, "comment") == 0 || strcmp(id, "type") == 0 || strcmp(id, "hint") == 0)
            continue;
        if (strcmp(id, "control") == 0) {
            if (snd_config_get_string(n, &control) < 0) return -EINVAL;
        } else if (strcmp(id, "record") == 0) {
            if (snd_config_get_string(n, &record) < 0) return -EINVAL;
        } else if (strcmp(id, "speed") == 0) {
            if (snd_config_get_ireal(n, &speed) < 0 || speed <= 0) return -EINVAL;
        } else if (strcmp(id, "pause") == 0) {
            if ((can_pause = snd_config_get_bool(n)) < 0) return -EINVAL;
        } else {
            SNDERR("tonearmfault: unknown field %s", id);
            return -EINVAL;
        }
    }
    if (!control) {
        SNDERR("tonearmfault: the control field is required");
        return -EINVAL;
    }
    if (stream != SND_PCM_STREAM_PLAYBACK)
        return -EINVAL;

    fault_pcm *dev = calloc(1, sizeof *dev);
    if (!dev)
        return -ENOMEM;
    dev->timer_fd = -1;
    dev->record_fd = -1;
    dev->speed = speed;
    dev->underrun_after = dev->vanish_after = dev->stall_after = -1;
    size_t length = strlen(control) + sizeof ".unplugged";
    dev->unplug_path = malloc(length);
    int err = -ENOMEM;
    if (!dev->unplug_path)
        goto fail;
    snprintf(dev->unplug_path, length, "%s.unplugged", control);

    if (access(dev->unplug_path, F_OK) == 0) {
        err = -ENOENT;
        goto fail;
    }
    if ((err = read_control(dev, control)) < 0)
        goto fail;
    dev->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (dev->timer_fd < 0) {
        err = -errno;
        goto fail;
    }
    if (record) {
        dev->record_fd = open(record, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (dev->record_fd < 0) {
            err = -errno;
            goto fail;
        }
    }

    dev->io.version = SND_PCM_IOPLUG_VERSION;
    dev->io.name = "Tonearm fault-injecting test device";
    dev->io.flags = SND_PCM_IOPLUG_FLAG_MONOTONIC;
    dev->io.mmap_rw = 0;
    dev->io.callback = can_pause ? &with_pause : &without_pause;
    dev->io.private_data = dev;
    if ((err = snd_pcm_ioplug_create(&dev->io, name, stream, mode)) < 0)
        goto fail;

    static const unsigned int accesses[] = { SND_PCM_ACCESS_RW_INTERLEAVED };
    static const unsigned int formats[] = { SND_PCM_FORMAT_S16_LE, SND_PCM_FORMAT_S32_LE, SND_PCM_FORMAT_FLOAT_LE };
    if ((err = snd_pcm_ioplug_set_param_list(&dev->io, SND_PCM_IOPLUG_HW_ACCESS, 1, accesses)) < 0 ||
        (err = snd_pcm_ioplug_set_param_list(&dev->io, SND_PCM_IOPLUG_HW_FORMAT, 3, formats)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&dev->io, SND_PCM_IOPLUG_HW_CHANNELS, 1, 8)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&dev->io, SND_PCM_IOPLUG_HW_RATE, 8000, 192000)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&dev->io, SND_PCM_IOPLUG_HW_PERIOD_BYTES, 64, 1 << 20)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&dev->io, SND_PCM_IOPLUG_HW_PERIODS, 2, 64)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&dev->io, SND_PCM_IOPLUG_HW_BUFFER_BYTES, 128, 1 << 22)) < 0) {
        snd_pcm_ioplug_delete(&dev->io);  /* calls fault_close, which frees dev */
        return err;
    }
    *pcmp = dev->io.pcm;
    return 0;

fail:
    if (dev->record_fd >= 0)
        close(dev->record_fd);
    if (dev->timer_fd >= 0)
        close(dev->timer_fd);
    free(dev->unplug_path);
    free(dev);
    return err;
}

SND_PCM_PLUGIN_SYMBOL(tonearmfault);
