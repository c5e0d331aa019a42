/*
 * shmpipe.c - simulate a two-stage serving pipeline that passes chunks
 * through POSIX shared memory in /dev/shm, the way vllm-omni's SHM chunk
 * connector does.
 *
 * This is an example / test driver for shmguard: it produces a fully
 * deterministic set of segments, lock files and abort markers, so that an
 * LD_PRELOAD shim that sweeps the segments of aborted requests can be
 * demonstrated and tested.  examples/shmpipe.py is a line-for-line Python
 * twin with the same command line and the same observable behaviour; keep
 * the two in sync.
 *
 * Build:  gcc -std=gnu11 -Wall -Wextra -O2 -o shmpipe shmpipe.c
 *
 * Model
 * -----
 * Request i (0 <= i < N) has the ID  P<i>  and C chunks.  Chunk c of request
 * i lives in the shared memory segment "/<P><i>_0_<c>" (that is,
 * /dev/shm/<P><i>_0_<c>), guarded by the lock file
 * /dev/shm/shm_<P><i>_0_<c>_lockfile.lock, and every byte of it is
 * (i*31 + c) & 0xff.
 *
 * Each request has a fate that depends only on the command line:
 *   aborted   if K > 0 and i % K == K-1
 *   held      else if i >= N - H  (produced, never consumed, still live)
 *   consumed  otherwise
 *
 * The process forks once.  The parent is stage 0 (the producer): it creates
 * every chunk of every request and, for consumed requests only, tells the
 * child about each chunk with a "PUT <key>\n" line on a pipe, then ends with
 * "END\n".  The child is stage 1 (the consumer): for every PUT it takes the
 * lock, verifies the segment, then unlinks the segment and the lock file.
 * So when the run is over, exactly the segments and lock files of aborted
 * and held requests are left in /dev/shm -- unless something (the shim)
 * removed them.
 *
 * With --abort-dir D, the producer marks each aborted request by creating
 * the empty file D/<id> (the pipeline's "abort hook", like `touch D/<id>`):
 * after all its chunks, or with --late-puts right after chunk 0 so that
 * chunks 1..C-1 are "late puts after abort".
 *
 * Output: one summary line on stdout,
 *   done requests=N consumed=X aborted=Y held=Z chunks=C
 * and, for every failure, one line on stderr.  Exit status 0 if everything
 * worked, 1 if anything failed, 2 on bad usage.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf, getline, pipe2 */
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHM_DIR "/dev/shm"

/* The longest lock file name, "shm_<key>_lockfile.lock", must fit in one
 * directory entry. */
#define MAX_NAME 255

static const char usage_text[] =
    "Usage: shmpipe --prefix P --requests N [options]\n"
    "\n"
    "Simulate a two-stage serving pipeline that passes chunks through POSIX\n"
    "shared memory in /dev/shm, like vllm-omni's SHM chunk connector.\n"
    "Request i has the ID P<i>; chunk c of it is the segment /dev/shm/P<i>_0_<c>\n"
    "guarded by /dev/shm/shm_P<i>_0_<c>_lockfile.lock.\n"
    "\n"
    "Options:\n"
    "  --prefix P        request ID prefix (required; printable ASCII,\n"
    "                    no '/' or ':')\n"
    "  --requests N      number of requests, N >= 1 (required)\n"
    "  --chunks C        chunks per request, C >= 1 (default 2)\n"
    "  --chunk-size B    bytes per chunk, B >= 1 (default 4096)\n"
    "  --abort-every K   request i is aborted if K > 0 and i % K == K-1\n"
    "                    (default 0: none)\n"
    "  --hold H          requests i >= N-H that are not aborted are produced\n"
    "                    but never consumed (default 0)\n"
    "  --abort-dir D     create the empty file D/<id> for each aborted request\n"
    "                    (D is created, mode 0755, if missing)\n"
    "  --rate R          start R requests a second (default 0: as fast as\n"
    "                    possible)\n"
    "  --late-puts       create that file right after chunk 0, so chunks\n"
    "                    1..C-1 are put after the abort\n"
    "  --wait-stdin      after the summary line, block until EOF on stdin\n"
    "  --help            show this help and exit\n"
    "\n"
    "Numbers are decimal, 0..2147483647.  Prints one line on stdout:\n"
    "  done requests=N consumed=X aborted=Y held=Z chunks=C\n"
    "Exit status: 0 on success, 1 if anything failed, 2 on bad usage.\n";

struct opts {
    const char *prefix;    /* --prefix P (required) */
    long requests;         /* --requests N (required) */
    long chunks;           /* --chunks C */
    long chunk_size;       /* --chunk-size B */
    long abort_every;      /* --abort-every K */
    long hold;             /* --hold H */
    long rate;             /* --rate R: requests per second, 0 as fast as possible */
    const char *abort_dir; /* --abort-dir D, or NULL */
    int late_puts;         /* --late-puts */
    int wait_stdin;        /* --wait-stdin */
};

enum fate { FATE_CONSUMED, FATE_ABORTED, FATE_HELD };

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

/* Print "shmpipe: <message>" and a hint on stderr, exit 2. */
static void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static void usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("shmpipe: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'shmpipe --help' for more information.\n", stderr);
    exit(2);
}

/* Report one failure on stderr:
 *   shmpipe: <stage>: <subject>: <what>[: <strerror(err)>]  */
static void report(const char *stage, const char *subject, const char *what,
                   int err)
{
    if (err)
        fprintf(stderr, "shmpipe: %s: %s: %s: %s\n", stage, subject, what,
                strerror(err));
    else
        fprintf(stderr, "shmpipe: %s: %s: %s\n", stage, subject, what);
}

/* asprintf() that cannot fail (out of memory is fatal here). */
static char *xasprintf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0) {
        fprintf(stderr, "shmpipe: out of memory\n");
        exit(1);
    }
    va_end(ap);
    return s;
}

/* Parse a number made only of ASCII digits, at most INT_MAX.  No sign, no
 * blanks, no base prefix: the Python twin accepts exactly the same strings. */
static int parse_num(const char *s, long *out)
{
    long v = 0;

    if (*s == '\0')
        return -1;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
        if (v > INT_MAX)
            return -1;
    }
    *out = v;
    return 0;
}

/* Length of the decimal representation of v >= 0. */
static size_t num_len(long v)
{
    size_t n = 1;

    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static enum fate fate_of(const struct opts *o, long i)
{
    if (o->abort_every > 0 && i % o->abort_every == o->abort_every - 1)
        return FATE_ABORTED;
    if (i + o->hold >= o->requests) /* i >= N - H, without underflow */
        return FATE_HELD;
    return FATE_CONSUMED;
}

/* The byte every position of chunk c of request i is filled with. */
static unsigned char fill_byte(long i, long c)
{
    return (unsigned char)((i * 31 + c) & 0xff);
}

/* Write all of buf to fd. */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Command line                                                        */
/* ------------------------------------------------------------------ */

/* Accepts "--opt VALUE" and "--opt=VALUE"; later options override earlier
 * ones; --help wins if it comes before any error. */
static void parse_args(int argc, char **argv, struct opts *o)
{
    static const char *const num_opts[] = {
        "--requests", "--chunks", "--chunk-size", "--abort-every", "--hold", "--rate",
    };
    long *const num_dest[] = {
        &o->requests, &o->chunks, &o->chunk_size, &o->abort_every, &o->hold, &o->rate,
    };
    int have_requests = 0;

    o->prefix = NULL;
    o->requests = 0;
    o->chunks = 2;
    o->chunk_size = 4096;
    o->abort_every = 0;
    o->hold = 0;
    o->rate = 0;
    o->abort_dir = NULL;
    o->late_puts = 0;
    o->wait_stdin = 0;

    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        const char *eq = strchr(arg, '=');
        const char *value = NULL;
        char *name;
        int takes_value = 0;
        size_t k;

        if (strncmp(arg, "--", 2) != 0 || strlen(arg) == 2)
            usage_error("unexpected argument '%s'", arg);

        /* Split "--opt=VALUE" into name and value. */
        if (eq != NULL) {
            name = strndup(arg, (size_t)(eq - arg));
            value = eq + 1;
        } else {
            name = strdup(arg);
        }
        if (name == NULL) {
            fprintf(stderr, "shmpipe: out of memory\n");
            exit(1);
        }

        /* Flags. */
        if (strcmp(name, "--help") == 0 || strcmp(name, "--late-puts") == 0 ||
            strcmp(name, "--wait-stdin") == 0) {
            if (value != NULL)
                usage_error("option '%s' takes no value", name);
            if (strcmp(name, "--help") == 0) {
                fputs(usage_text, stdout);
                fflush(stdout);
                exit(0);
            }
            if (strcmp(name, "--late-puts") == 0)
                o->late_puts = 1;
            else
                o->wait_stdin = 1;
            free(name);
            continue;
        }

        for (k = 0; k < sizeof(num_opts) / sizeof(num_opts[0]); k++)
            if (strcmp(name, num_opts[k]) == 0)
                takes_value = 1;
        if (strcmp(name, "--prefix") == 0 || strcmp(name, "--abort-dir") == 0)
            takes_value = 1;
        if (!takes_value)
            usage_error("unknown option '%s'", name);

        if (value == NULL) {
            if (a + 1 >= argc)
                usage_error("option '%s' requires a value", name);
            value = argv[++a];
        }

        if (strcmp(name, "--prefix") == 0)
            o->prefix = value;
        if (strcmp(name, "--abort-dir") == 0)
            o->abort_dir = value;
        for (k = 0; k < sizeof(num_opts) / sizeof(num_opts[0]); k++) {
            if (strcmp(name, num_opts[k]) == 0) {
                if (parse_num(value, num_dest[k]) < 0)
                    usage_error("invalid number for %s: '%s'", name, value);
                if (k == 0)
                    have_requests = 1;
            }
        }
        free(name);
    }

    if (o->prefix == NULL)
        usage_error("missing required option '%s'", "--prefix");
    if (!have_requests)
        usage_error("missing required option '%s'", "--requests");

    /* The prefix ends up in file names and in the messages Python's
     * resource tracker exchanges ("CMD:name:type", ASCII only), so keep it
     * to printable ASCII without '/' or ':' in both implementations. */
    if (o->prefix[0] == '\0')
        usage_error("%s must not be empty", "--prefix");
    for (const char *p = o->prefix; *p != '\0'; p++)
        if (*p < 0x20 || *p > 0x7e || *p == '/' || *p == ':')
            usage_error("invalid --prefix '%s': use printable ASCII "
                        "without '/' or ':'", o->prefix);
    if (o->abort_dir != NULL && o->abort_dir[0] == '\0')
        usage_error("%s must not be empty", "--abort-dir");
    if (o->requests < 1)
        usage_error("%s must be >= 1", "--requests");
    if (o->chunks < 1)
        usage_error("%s must be >= 1", "--chunks");
    if (o->chunk_size < 1)
        usage_error("%s must be >= 1", "--chunk-size");

    /* Longest lock file name: "shm_" P (N-1) "_0_" (C-1) "_lockfile.lock". */
    if (strlen("shm_") + strlen(o->prefix) + num_len(o->requests - 1) +
            strlen("_0_") + num_len(o->chunks - 1) +
            strlen("_lockfile.lock") > MAX_NAME)
        usage_error("%s too long: file names would exceed 255 bytes",
                    "--prefix");
}

/* ------------------------------------------------------------------ */
/* Stage 0: producer                                                   */
/* ------------------------------------------------------------------ */

/* Create, size and fill the segment "/<key>".  If it was created but could
 * not be sized or mapped, it is unlinked again (as Python's SharedMemory
 * does).  Returns 0 on success, -1 on failure (reported). */
static int create_segment(const struct opts *o, const char *key,
                          unsigned char fill)
{
    char *name = xasprintf("/%s", key);
    size_t size = (size_t)o->chunk_size;
    void *map;
    int fd, err;

    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        report("producer", key, "create segment", errno);
        free(name);
        return -1;
    }
    if (ftruncate(fd, (off_t)size) < 0)
        goto fail;
    map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        goto fail;
    memset(map, fill, size);
    munmap(map, size);
    close(fd);
    free(name);
    return 0;

fail:
    err = errno;
    report("producer", key, "create segment", err);
    close(fd);
    shm_unlink(name);
    free(name);
    return -1;
}

/* Produce chunk c of request i under its lock file.  Returns 0 on success,
 * -1 on failure (reported). */
static int produce_chunk(const struct opts *o, const char *key, long i,
                         long c)
{
    char *lock_path = xasprintf(SHM_DIR "/shm_%s_lockfile.lock", key);
    int lock_fd, rc;

    /* 1. Take the chunk's lock. */
    lock_fd = open(lock_path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    free(lock_path);
    if (lock_fd < 0) {
        report("producer", key, "open lock file", errno);
        return -1;
    }
    if (flock(lock_fd, LOCK_EX) < 0) {
        report("producer", key, "lock", errno);
        close(lock_fd);
        return -1;
    }

    /* 2. Create and fill the segment. */
    rc = create_segment(o, key, fill_byte(i, c));

    /* 3. Release the lock. */
    if (flock(lock_fd, LOCK_UN) < 0) {
        report("producer", key, "unlock", errno);
        rc = -1;
    }
    close(lock_fd);
    return rc;
}

/* The abort hook: create the empty file D/<id> (D made if missing).
 * Returns 0 on success, -1 on failure (reported). */
static int mark_aborted(const struct opts *o, const char *id)
{
    char *path;
    int fd;

    if (mkdir(o->abort_dir, 0755) < 0 && errno != EEXIST) {
        report("producer", id, "create abort dir", errno);
        return -1;
    }
    path = xasprintf("%s/%s", o->abort_dir, id);
    fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    free(path);
    if (fd < 0) {
        report("producer", id, "create abort marker", errno);
        return -1;
    }
    close(fd);
    return 0;
}

/* Stage 0.  Returns the number of failures. */
/* --rate: request i starts i/R seconds after the first. */
static void pace(const struct opts *o, const struct timespec *start, long i)
{
    struct timespec at = *start;
    long long ns = (long long)i * 1000000000LL / o->rate;

    at.tv_sec += (time_t)(ns / 1000000000LL);
    at.tv_nsec += (long)(ns % 1000000000LL);
    if (at.tv_nsec >= 1000000000L) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
}

static int run_producer(const struct opts *o, int pipe_fd, long counts[3])
{
    int failures = 0, pipe_ok = 1;
    struct timespec start;

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long i = 0; i < o->requests; i++) {
        if (o->rate > 0)
            pace(o, &start, i);
        enum fate fate = fate_of(o, i);
        int marker = fate == FATE_ABORTED && o->abort_dir != NULL;
        char *id = xasprintf("%s%ld", o->prefix, i);

        counts[fate]++;
        for (long c = 0; c < o->chunks; c++) {
            char *key = xasprintf("%s_0_%ld", id, c);

            if (produce_chunk(o, key, i, c) < 0) {
                failures++;
            } else if (fate == FATE_CONSUMED && pipe_ok) {
                /* 4. Hand the chunk to stage 1.  Held and aborted
                 * requests are never announced, so never consumed. */
                char *line = xasprintf("PUT %s\n", key);

                if (write_all(pipe_fd, line, strlen(line)) < 0) {
                    report("producer", "pipe", "write", errno);
                    pipe_ok = 0;
                    failures++;
                }
                free(line);
            }
            free(key);

            /* --late-puts: abort right after chunk 0, so the remaining
             * chunks are put after the abort. */
            if (marker && o->late_puts && c == 0 && mark_aborted(o, id) < 0)
                failures++;
        }
        if (marker && !o->late_puts && mark_aborted(o, id) < 0)
            failures++;
        free(id);
    }

    if (pipe_ok && write_all(pipe_fd, "END\n", 4) < 0) {
        report("producer", "pipe", "write", errno);
        failures++;
    }
    return failures;
}

/* ------------------------------------------------------------------ */
/* Stage 1: consumer                                                   */
/* ------------------------------------------------------------------ */

/* Split key = P<i>_0_<c> into i and c.  Returns -1 if it is not one of the
 * keys this run can produce. */
static int parse_key(const struct opts *o, const char *key, long *i, long *c)
{
    size_t plen = strlen(o->prefix);
    const char *rest, *sep;
    char *digits;
    int rc;

    if (strncmp(key, o->prefix, plen) != 0)
        return -1;
    rest = key + plen;
    sep = strstr(rest, "_0_");
    if (sep == NULL)
        return -1;
    digits = strndup(rest, (size_t)(sep - rest));
    if (digits == NULL)
        return -1;
    rc = parse_num(digits, i);
    free(digits);
    if (rc < 0 || parse_num(sep + 3, c) < 0)
        return -1;
    if (*i >= o->requests || *c >= o->chunks)
        return -1;
    return 0;
}

/* Check size and contents of an open segment.  Returns 0 if it is exactly
 * what the producer wrote, -1 otherwise (reported). */
static int verify_segment(const struct opts *o, const char *key, int fd,
                          unsigned char want)
{
    struct stat st;
    const unsigned char *bytes;
    void *map;
    size_t size;
    char what[128];
    int rc = 0;

    if (fstat(fd, &st) < 0) {
        report("consumer", key, "open segment", errno);
        return -1;
    }
    size = (size_t)st.st_size;
    if (size == 0) { /* cannot be mapped */
        snprintf(what, sizeof(what), "size mismatch (0 bytes, expected %ld)",
                 o->chunk_size);
        report("consumer", key, what, 0);
        return -1;
    }
    map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        report("consumer", key, "open segment", errno);
        return -1;
    }
    bytes = map;
    if (size != (size_t)o->chunk_size) {
        snprintf(what, sizeof(what), "size mismatch (%zu bytes, expected %ld)",
                 size, o->chunk_size);
        report("consumer", key, what, 0);
        rc = -1;
    } else {
        for (size_t off = 0; off < size; off++) {
            if (bytes[off] != want) {
                snprintf(what, sizeof(what),
                         "data mismatch at offset %zu (got 0x%02x, "
                         "expected 0x%02x)", off, bytes[off], want);
                report("consumer", key, what, 0);
                rc = -1;
                break;
            }
        }
    }
    munmap(map, size);
    return rc;
}

/* Consume one chunk: lock, verify, unlink segment, unlink lock file.  Every
 * step is attempted even if an earlier one failed.  Returns 0 on success,
 * -1 on any failure (reported). */
static int consume_chunk(const struct opts *o, const char *key)
{
    char *lock_path, *name;
    long i, c;
    int lock_fd, fd, rc = 0;

    if (parse_key(o, key, &i, &c) < 0) {
        report("consumer", key, "malformed key", 0);
        return -1;
    }
    lock_path = xasprintf(SHM_DIR "/shm_%s_lockfile.lock", key);
    name = xasprintf("/%s", key);

    /* Take the lock (the producer created the lock file). */
    lock_fd = open(lock_path, O_RDWR | O_CLOEXEC);
    if (lock_fd < 0) {
        report("consumer", key, "open lock file", errno);
        rc = -1;
    } else if (flock(lock_fd, LOCK_EX) < 0) {
        report("consumer", key, "lock", errno);
        rc = -1;
    }

    /* Read and check the segment, then remove it. */
    fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        report("consumer", key, "open segment", errno);
        rc = -1;
    } else {
        if (verify_segment(o, key, fd, fill_byte(i, c)) < 0)
            rc = -1;
        close(fd);
        if (shm_unlink(name) < 0) {
            report("consumer", key, "unlink segment", errno);
            rc = -1;
        }
    }

    /* Remove the lock file, then drop the lock by closing it. */
    if (lock_fd >= 0) {
        if (unlink(lock_path) < 0) {
            report("consumer", key, "unlink lock file", errno);
            rc = -1;
        }
        close(lock_fd);
    }

    free(name);
    free(lock_path);
    return rc;
}

/* Stage 1.  Returns the exit status: 0 if every chunk verified, else 1. */
static int run_consumer(const struct opts *o, int pipe_fd)
{
    FILE *in = fdopen(pipe_fd, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int failed = 0, got_end = 0;

    if (in == NULL) {
        report("consumer", "pipe", "fdopen", errno);
        return 1;
    }
    while ((len = getline(&line, &cap, in)) > 0) {
        if (line[len - 1] != '\n') { /* truncated: producer died mid-line */
            report("consumer", "pipe", "truncated message", 0);
            failed = 1;
            break;
        }
        line[len - 1] = '\0';
        if (strcmp(line, "END") == 0) {
            got_end = 1;
            break;
        }
        if (strncmp(line, "PUT ", 4) == 0) {
            if (consume_chunk(o, line + 4) < 0)
                failed = 1;
        } else {
            report("consumer", "pipe", "unexpected message", 0);
            failed = 1;
        }
    }
    if (!got_end) {
        report("consumer", "pipe", "closed before END", 0);
        failed = 1;
    }
    free(line);
    fclose(in);
    return failed;
}

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    struct opts o;
    long counts[3] = {0, 0, 0};
    int fds[2], status, failures, consumer_ok;
    pid_t pid;

    parse_args(argc, argv, &o);

    /* A dead consumer must show up as a write error, not kill us.  (Python
     * ignores SIGPIPE at startup too, and the child inherits this.) */
    signal(SIGPIPE, SIG_IGN);

    if (pipe2(fds, O_CLOEXEC) < 0) {
        report("producer", "pipe", "create", errno);
        return 1;
    }
    /* Nothing has been written to stdout yet, so the child cannot inherit
     * (and later duplicate) buffered output. */
    pid = fork();
    if (pid < 0) {
        report("producer", "fork", "create consumer", errno);
        return 1;
    }
    if (pid == 0) {
        /* Child: stage 1. */
        close(fds[1]);
        _exit(run_consumer(&o, fds[0]));
    }

    /* Parent: stage 0. */
    close(fds[0]);
    failures = run_producer(&o, fds[1], counts);
    close(fds[1]); /* EOF for the consumer */

    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            report("producer", "consumer", "wait", errno);
            status = 1 << 8; /* treat as "exited 1" */
            break;
        }
    }
    consumer_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;

    printf("done requests=%ld consumed=%ld aborted=%ld held=%ld chunks=%ld\n",
           o.requests, counts[FATE_CONSUMED], counts[FATE_ABORTED],
           counts[FATE_HELD], o.chunks);
    fflush(stdout);

    if (o.wait_stdin) {
        /* Stay alive (with everything still in /dev/shm) until the test
         * closes our stdin. */
        char buf[4096];

        for (;;) {
            ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

            if (n > 0 || (n < 0 && errno == EINTR))
                continue;
            break;
        }
    }

    return (consumer_ok && failures == 0) ? 0 : 1;
}
