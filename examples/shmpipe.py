#!/usr/bin/env python3
"""shmpipe.py - simulate a two-stage serving pipeline that passes chunks
through POSIX shared memory in /dev/shm, the way vllm-omni's SHM chunk
connector does.

This is the Python twin of examples/shmpipe.c: same command line, same
files in /dev/shm, same stdout, same stderr messages, same exit status.
Keep the two in sync.  Standard library only.

Model
-----
Request i (0 <= i < N) has the ID  P<i>  and C chunks.  Chunk c of request i
lives in the shared memory segment "/<P><i>_0_<c>" (/dev/shm/<P><i>_0_<c>),
guarded by the lock file /dev/shm/shm_<P><i>_0_<c>_lockfile.lock, and every
byte of it is (i*31 + c) & 0xff.

Each request has a fate that depends only on the command line:
  aborted   if K > 0 and i % K == K-1
  held      else if i >= N - H  (produced, never consumed, still live)
  consumed  otherwise

The process forks once.  The parent is stage 0 (the producer): it creates
every chunk of every request and, for consumed requests only, tells the
child about each chunk with a "PUT <key>\\n" line on a pipe, then ends with
"END\\n".  The child is stage 1 (the consumer): for every PUT it takes the
lock, verifies the segment, then unlinks the segment and the lock file.  So
when the run is over, exactly the segments and lock files of aborted and
held requests are left in /dev/shm -- unless something (the shim) removed
them.

With --abort-dir D, the producer marks each aborted request by creating the
empty file D/<id> (the pipeline's "abort hook", like `touch D/<id>`): after
all its chunks, or with --late-puts right after chunk 0 so that chunks
1..C-1 are "late puts after abort".

Python specifics
----------------
Segments are made with multiprocessing.shared_memory.SharedMemory, as a real
Python server would.  In Python 3.11 every SharedMemory() -- created *or*
attached -- registers its name with multiprocessing's resource tracker,
a helper process that unlinks all still-registered names when its owners
exit.  A real server's segment names outlive the producer, and segments are
removed by the consumer (or by the shim), never by the tracker, so each
SharedMemory is unregistered right after it is opened.  For the same reason
the consumer removes segments with _posixshmem.shm_unlink() rather than
SharedMemory.unlink(), which would unregister a second time and make the
tracker print a KeyError traceback.
"""

import fcntl
import os
import re
import signal
import sys
import traceback

import _posixshmem
from multiprocessing import resource_tracker
from multiprocessing.shared_memory import SharedMemory

SHM_DIR = "/dev/shm"

# The longest lock file name, "shm_<key>_lockfile.lock", must fit in one
# directory entry.
MAX_NAME = 255

INT_MAX = 2147483647

USAGE = """\
Usage: shmpipe --prefix P --requests N [options]

Simulate a two-stage serving pipeline that passes chunks through POSIX
shared memory in /dev/shm, like vllm-omni's SHM chunk connector.
Request i has the ID P<i>; chunk c of it is the segment /dev/shm/P<i>_0_<c>
guarded by /dev/shm/shm_P<i>_0_<c>_lockfile.lock.

Options:
  --prefix P        request ID prefix (required; printable ASCII,
                    no '/' or ':')
  --requests N      number of requests, N >= 1 (required)
  --chunks C        chunks per request, C >= 1 (default 2)
  --chunk-size B    bytes per chunk, B >= 1 (default 4096)
  --abort-every K   request i is aborted if K > 0 and i % K == K-1
                    (default 0: none)
  --hold H          requests i >= N-H that are not aborted are produced
                    but never consumed (default 0)
  --abort-dir D     create the empty file D/<id> for each aborted request
                    (D is created, mode 0755, if missing)
  --late-puts       create that file right after chunk 0, so chunks
                    1..C-1 are put after the abort
  --wait-stdin      after the summary line, block until EOF on stdin
  --help            show this help and exit

Numbers are decimal, 0..2147483647.  Prints one line on stdout:
  done requests=N consumed=X aborted=Y held=Z chunks=C
Exit status: 0 on success, 1 if anything failed, 2 on bad usage.
"""

CONSUMED, ABORTED, HELD = "consumed", "aborted", "held"


class Opts:
    prefix = None       # --prefix P (required)
    requests = None     # --requests N (required)
    chunks = 2          # --chunks C
    chunk_size = 4096   # --chunk-size B
    abort_every = 0     # --abort-every K
    hold = 0            # --hold H
    abort_dir = None    # --abort-dir D
    late_puts = False   # --late-puts
    wait_stdin = False  # --wait-stdin


# ---------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------

def usage_error(msg):
    """Print "shmpipe: <msg>" and a hint on stderr, exit 2."""
    sys.stderr.write("shmpipe: %s\nTry 'shmpipe --help' for more information.\n"
                     % msg)
    sys.stderr.flush()
    sys.exit(2)


def report(stage, subject, what, err=0):
    """Report one failure on stderr:
    shmpipe: <stage>: <subject>: <what>[: <strerror(err)>]"""
    if err:
        sys.stderr.write("shmpipe: %s: %s: %s: %s\n"
                         % (stage, subject, what, os.strerror(err)))
    else:
        sys.stderr.write("shmpipe: %s: %s: %s\n" % (stage, subject, what))
    sys.stderr.flush()


def parse_num(s):
    """A number made only of ASCII digits, at most INT_MAX, else None.
    (No sign, blanks, underscores or base prefix: the C twin accepts exactly
    the same strings.)"""
    if not re.fullmatch(r"[0-9]+", s, re.ASCII):
        return None
    v = int(s)
    return v if v <= INT_MAX else None


def fate_of(o, i):
    if o.abort_every > 0 and i % o.abort_every == o.abort_every - 1:
        return ABORTED
    if i >= o.requests - o.hold:
        return HELD
    return CONSUMED


def fill_byte(i, c):
    """The byte every position of chunk c of request i is filled with."""
    return (i * 31 + c) & 0xFF


def lock_path_of(key):
    return "%s/shm_%s_lockfile.lock" % (SHM_DIR, key)


def write_all(fd, data):
    while data:
        n = os.write(fd, data)
        data = data[n:]


# ---------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------

NUM_OPTS = {
    "--requests": "requests",
    "--chunks": "chunks",
    "--chunk-size": "chunk_size",
    "--abort-every": "abort_every",
    "--hold": "hold",
}
STR_OPTS = {"--prefix": "prefix", "--abort-dir": "abort_dir"}
FLAGS = ("--help", "--late-puts", "--wait-stdin")


def parse_args(argv):
    """Accepts "--opt VALUE" and "--opt=VALUE"; later options override
    earlier ones; --help wins if it comes before any error."""
    o = Opts()
    a = 0
    while a < len(argv):
        arg = argv[a]
        a += 1
        if not arg.startswith("--") or arg == "--":
            usage_error("unexpected argument '%s'" % arg)

        # Split "--opt=VALUE" into name and value.
        if "=" in arg:
            name, value = arg.split("=", 1)
        else:
            name, value = arg, None

        if name in FLAGS:
            if value is not None:
                usage_error("option '%s' takes no value" % name)
            if name == "--help":
                sys.stdout.write(USAGE)
                sys.stdout.flush()
                sys.exit(0)
            if name == "--late-puts":
                o.late_puts = True
            else:
                o.wait_stdin = True
            continue

        if name not in NUM_OPTS and name not in STR_OPTS:
            usage_error("unknown option '%s'" % name)
        if value is None:
            if a >= len(argv):
                usage_error("option '%s' requires a value" % name)
            value = argv[a]
            a += 1

        if name in STR_OPTS:
            setattr(o, STR_OPTS[name], value)
        else:
            v = parse_num(value)
            if v is None:
                usage_error("invalid number for %s: '%s'" % (name, value))
            setattr(o, NUM_OPTS[name], v)

    if o.prefix is None:
        usage_error("missing required option '--prefix'")
    if o.requests is None:
        usage_error("missing required option '--requests'")

    # The prefix ends up in file names and in the messages Python's resource
    # tracker exchanges ("CMD:name:type", ASCII only), so keep it to
    # printable ASCII without '/' or ':' in both implementations.
    if o.prefix == "":
        usage_error("--prefix must not be empty")
    if any(ch < " " or ch > "~" or ch in "/:" for ch in o.prefix):
        usage_error("invalid --prefix '%s': use printable ASCII "
                    "without '/' or ':'" % o.prefix)
    if o.abort_dir == "":
        usage_error("--abort-dir must not be empty")
    if o.requests < 1:
        usage_error("--requests must be >= 1")
    if o.chunks < 1:
        usage_error("--chunks must be >= 1")
    if o.chunk_size < 1:
        usage_error("--chunk-size must be >= 1")

    # Longest lock file name: "shm_" P (N-1) "_0_" (C-1) "_lockfile.lock".
    longest = "shm_%s%d_0_%d_lockfile.lock" % (o.prefix, o.requests - 1,
                                               o.chunks - 1)
    if len(longest) > MAX_NAME:
        usage_error("--prefix too long: file names would exceed 255 bytes")
    return o


# ---------------------------------------------------------------------
# Stage 0: producer
# ---------------------------------------------------------------------

def create_segment(o, key, fill):
    """Create, size and fill the segment "/<key>".  (If it is created but
    cannot be sized or mapped, SharedMemory unlinks it again.)  Returns True
    on success, False on failure (reported)."""
    try:
        shm = SharedMemory(name=key, create=True, size=o.chunk_size)
    except OSError as e:
        report("producer", key, "create segment", e.errno)
        return False
    # Keep the tracker from unlinking the segment when we exit: the name
    # must outlive the producer, as in a real server.
    resource_tracker.unregister(shm._name, "shared_memory")
    shm.buf[:] = bytes((fill,)) * len(shm.buf)
    shm.close()
    return True


def produce_chunk(o, key, i, c):
    """Produce chunk c of request i under its lock file.  Returns True on
    success, False on failure (reported)."""
    # 1. Take the chunk's lock.
    try:
        lock_fd = os.open(lock_path_of(key),
                          os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError as e:
        report("producer", key, "open lock file", e.errno)
        return False
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
    except OSError as e:
        report("producer", key, "lock", e.errno)
        os.close(lock_fd)
        return False

    # 2. Create and fill the segment.
    ok = create_segment(o, key, fill_byte(i, c))

    # 3. Release the lock.
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_UN)
    except OSError as e:
        report("producer", key, "unlock", e.errno)
        ok = False
    os.close(lock_fd)
    return ok


def mark_aborted(o, rid):
    """The abort hook: create the empty file D/<id> (D made if missing).
    Returns True on success, False on failure (reported)."""
    try:
        os.mkdir(o.abort_dir, 0o755)
    except FileExistsError:
        pass
    except OSError as e:
        report("producer", rid, "create abort dir", e.errno)
        return False
    try:
        fd = os.open("%s/%s" % (o.abort_dir, rid),
                     os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644)
    except OSError as e:
        report("producer", rid, "create abort marker", e.errno)
        return False
    os.close(fd)
    return True


def run_producer(o, pipe_fd, counts):
    """Stage 0.  Returns the number of failures."""
    failures = 0
    pipe_ok = True

    for i in range(o.requests):
        fate = fate_of(o, i)
        marker = fate == ABORTED and o.abort_dir is not None
        rid = "%s%d" % (o.prefix, i)

        counts[fate] += 1
        for c in range(o.chunks):
            key = "%s_0_%d" % (rid, c)

            if not produce_chunk(o, key, i, c):
                failures += 1
            elif fate == CONSUMED and pipe_ok:
                # 4. Hand the chunk to stage 1.  Held and aborted requests
                # are never announced, so never consumed.
                try:
                    write_all(pipe_fd, ("PUT %s\n" % key).encode("ascii"))
                except OSError as e:
                    report("producer", "pipe", "write", e.errno)
                    pipe_ok = False
                    failures += 1

            # --late-puts: abort right after chunk 0, so the remaining
            # chunks are put after the abort.
            if marker and o.late_puts and c == 0 and not mark_aborted(o, rid):
                failures += 1
        if marker and not o.late_puts and not mark_aborted(o, rid):
            failures += 1

    if pipe_ok:
        try:
            write_all(pipe_fd, b"END\n")
        except OSError as e:
            report("producer", "pipe", "write", e.errno)
            failures += 1
    return failures


# ---------------------------------------------------------------------
# Stage 1: consumer
# ---------------------------------------------------------------------

def parse_key(o, key):
    """Split key = P<i>_0_<c> into (i, c); None if it is not one of the keys
    this run can produce."""
    if not key.startswith(o.prefix):
        return None
    rest = key[len(o.prefix):]
    if "_0_" not in rest:
        return None
    digits_i, digits_c = rest.split("_0_", 1)
    i, c = parse_num(digits_i), parse_num(digits_c)
    if i is None or c is None or i >= o.requests or c >= o.chunks:
        return None
    return i, c


def verify_data(o, key, data, want):
    """Check size and contents of a mapped segment.  Returns True if it is
    exactly what the producer wrote, False otherwise (reported)."""
    if len(data) != o.chunk_size:
        report("consumer", key, "size mismatch (%d bytes, expected %d)"
               % (len(data), o.chunk_size))
        return False
    # Everything after the longest run of the expected byte is wrong.
    off = len(data) - len(data.lstrip(bytes((want,))))
    if off < len(data):
        report("consumer", key,
               "data mismatch at offset %d (got 0x%02x, expected 0x%02x)"
               % (off, data[off], want))
        return False
    return True


def consume_chunk(o, key):
    """Consume one chunk: lock, verify, unlink segment, unlink lock file.
    Every step is attempted even if an earlier one failed.  Returns True on
    success, False on any failure (reported)."""
    parsed = parse_key(o, key)
    if parsed is None:
        report("consumer", key, "malformed key")
        return False
    i, c = parsed
    lock_path = lock_path_of(key)
    ok = True

    # Take the lock (the producer created the lock file).
    lock_fd = -1
    try:
        lock_fd = os.open(lock_path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        report("consumer", key, "open lock file", e.errno)
        ok = False
    if lock_fd >= 0:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
        except OSError as e:
            report("consumer", key, "lock", e.errno)
            ok = False

    # Read and check the segment, then remove it.
    opened = True
    try:
        shm = SharedMemory(name=key)
    except ValueError:
        # mmap() refuses an empty segment; it is open and must be removed.
        report("consumer", key, "size mismatch (0 bytes, expected %d)"
               % o.chunk_size)
        ok = False
    except OSError as e:
        # Failing shm_open leaves nothing to remove; failing fstat/mmap
        # makes SharedMemory unlink the segment itself.
        report("consumer", key, "open segment", e.errno)
        ok = False
        opened = False
    else:
        resource_tracker.unregister(shm._name, "shared_memory")
        if not verify_data(o, key, shm.buf.tobytes(), fill_byte(i, c)):
            ok = False
        shm.close()
    if opened:
        try:
            _posixshmem.shm_unlink("/" + key)
        except OSError as e:
            report("consumer", key, "unlink segment", e.errno)
            ok = False

    # Remove the lock file, then drop the lock by closing it.
    if lock_fd >= 0:
        try:
            os.unlink(lock_path)
        except OSError as e:
            report("consumer", key, "unlink lock file", e.errno)
            ok = False
        os.close(lock_fd)
    return ok


def run_consumer(o, pipe_fd):
    """Stage 1.  Returns the exit status: 0 if every chunk verified, else 1."""
    failed = False
    got_end = False

    with os.fdopen(pipe_fd, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):  # truncated: producer died mid-line
                report("consumer", "pipe", "truncated message")
                failed = True
                break
            line = os.fsdecode(raw[:-1])
            if line == "END":
                got_end = True
                break
            if line.startswith("PUT "):
                if not consume_chunk(o, line[4:]):
                    failed = True
            else:
                report("consumer", "pipe", "unexpected message")
                failed = True
    if not got_end:
        report("consumer", "pipe", "closed before END")
        failed = True
    return 1 if failed else 0


# ---------------------------------------------------------------------
# main
# ---------------------------------------------------------------------

def main(argv):
    o = parse_args(argv)
    counts = {CONSUMED: 0, ABORTED: 0, HELD: 0}

    # Python already ignores SIGPIPE (a dead consumer shows up as EPIPE);
    # say so explicitly, as the C twin does.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    # Start the resource tracker now, so that parent and child share one
    # tracker process (started before any segment exists) instead of each
    # lazily spawning its own on first use.
    resource_tracker.ensure_running()

    try:
        r, w = os.pipe()
    except OSError as e:
        report("producer", "pipe", "create", e.errno)
        return 1
    # Nothing has been written to stdout yet, so the child cannot inherit
    # (and later duplicate) buffered output.
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError as e:
        report("producer", "fork", "create consumer", e.errno)
        return 1
    if pid == 0:
        # Child: stage 1.  Always leave through os._exit, never through the
        # parent's Python-level cleanup.
        status = 1
        try:
            os.close(w)
            status = run_consumer(o, r)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(status)

    # Parent: stage 0.
    os.close(r)
    failures = run_producer(o, w, counts)
    os.close(w)  # EOF for the consumer

    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except OSError as e:
            report("producer", "consumer", "wait", e.errno)
            status = 1 << 8  # treat as "exited 1"
            break
    consumer_ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

    sys.stdout.write("done requests=%d consumed=%d aborted=%d held=%d chunks=%d\n"
                     % (o.requests, counts[CONSUMED], counts[ABORTED],
                        counts[HELD], o.chunks))
    sys.stdout.flush()

    if o.wait_stdin:
        # Stay alive (with everything still in /dev/shm) until the test
        # closes our stdin.
        while True:
            try:
                if not os.read(0, 4096):
                    break
            except InterruptedError:
                continue
            except OSError:
                break

    return 0 if consumer_ok and failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
