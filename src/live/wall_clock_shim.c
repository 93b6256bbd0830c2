/* locksim's wall-clock shim for redis-server in live mode (LD_PRELOAD).
 *
 * Offsets only the wall clock: clock_gettime(CLOCK_REALTIME[_COARSE]), gettimeofday and
 * time read the real clock with the raw syscall and add the offset in milliseconds that
 * the file named by LOCKSIM_CLOCK_FILE holds (a signed decimal, rewritten in place by
 * locksim, read again on every call). CLOCK_MONOTONIC is left alone, so Redis's event
 * loop timers stay true while key expiry, WAIT and replication timeouts follow the
 * shifted clock (live-mode-facts.md section 1). No dlsym and no malloc: libfaketime
 * deadlocks Debian's redis-server, whose jemalloc calls clock_gettime while it
 * initialises. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int offset_fd = -2;

static long long offset_ms(void) {
    if (offset_fd == -2) {
        const char *path = getenv("LOCKSIM_CLOCK_FILE");
        offset_fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    }
    if (offset_fd < 0) return 0;
    char text[32];
    ssize_t read = pread(offset_fd, text, sizeof text - 1, 0);
    if (read <= 0) return 0;
    text[read] = 0;
    return strtoll(text, NULL, 10);
}

static int real_time(clockid_t clock, struct timespec *now) {
    return (int) syscall(SYS_clock_gettime, clock, now);
}

static void shift(struct timespec *now) {
    long long ns = (long long) now->tv_sec * 1000000000LL + now->tv_nsec + offset_ms() * 1000000LL;
    now->tv_sec = ns / 1000000000LL;
    now->tv_nsec = ns % 1000000000LL;
}

int clock_gettime(clockid_t clock, struct timespec *now) {
    int result = real_time(clock, now);
    if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) shift(now);
    return result;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void) tz;
    struct timespec now;
    int result = real_time(CLOCK_REALTIME, &now);
    if (result == 0) {
        shift(&now);
        tv->tv_sec = now.tv_sec;
        tv->tv_usec = now.tv_nsec / 1000;
    }
    return result;
}

time_t time(time_t *out) {
    struct timespec now;
    if (real_time(CLOCK_REALTIME, &now) != 0) return (time_t) -1;
    shift(&now);
    if (out) *out = now.tv_sec;
    return now.tv_sec;
}
