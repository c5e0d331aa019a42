#!/usr/bin/env python3
"""Python's multiprocessing.shared_memory as tests/integration/test_orphans.c
drives it: the segments are /dev/shm/PREFIX... (the test mounts a /dev/shm
of its own).

  psm_pool.py pool PREFIX N     a pool: the parent makes N segments, each of
                                two workers attaches them and makes its own;
                                "ready" when all exist, then runs until killed
  psm_pool.py live PREFIX N     N segments, "ready", at EOF on stdin closes
                                and unlinks them (a natural finish)
  psm_pool.py handoff PREFIX    a worker makes PREFIX-handoff, hands the name
                                to its parent through a pipe and exits; the
                                parent prints "ready", opens the segment on
                                "open" (prints "payload ok"), unlinks at EOF
"""
import multiprocessing as mp
import sys
import time
from multiprocessing import resource_tracker, shared_memory

SIZE = 64 << 10
PAYLOAD = b"handed over"


def make(name):
    seg = shared_memory.SharedMemory(create=True, size=SIZE, name=name)
    seg.buf[:] = b"\x5a" * SIZE  # every page: the bytes a leak costs
    return seg


def worker_segment(args):
    prefix, names = args
    if not hasattr(worker_segment, "own"):
        worker_segment.attached = [shared_memory.SharedMemory(name=n) for n in names]  # mapped for good
        worker_segment.own = make("%s-w%d" % (prefix, mp.current_process().pid))
    time.sleep(0.05)  # long enough for the other worker to take a task too
    return worker_segment.own.name


def pool(prefix, n):
    segs = [make("%s-main%d" % (prefix, i)) for i in range(n)]
    with mp.get_context("fork").Pool(2) as p:
        made = set()
        # Each worker makes one segment: ask until both have.
        while len(made) < 2:
            made |= set(p.map(worker_segment, [(prefix, [s.name for s in segs])] * 4, chunksize=1))
        print("ready", flush=True)
        time.sleep(3600)


def live(prefix, n):
    segs = [make("%s-live%d" % (prefix, i)) for i in range(n)]
    print("ready", flush=True)
    sys.stdin.read()
    for s in segs:
        s.close()
        s.unlink()


def handoff_worker(prefix, conn):
    seg = shared_memory.SharedMemory(create=True, size=SIZE, name=prefix + "-handoff")
    seg.buf[: len(PAYLOAD)] = PAYLOAD
    # The parent owns it now: not the resource tracker's to remove.
    resource_tracker.unregister(seg._name, "shared_memory")
    conn.send(seg.name)
    seg.close()


def handoff(prefix):
    parent, child = mp.Pipe()
    w = mp.get_context("fork").Process(target=handoff_worker, args=(prefix, child))
    w.start()
    name = parent.recv()
    w.join()
    print("ready", flush=True)
    seg = None
    for line in sys.stdin:
        if line.strip() == "open":
            seg = shared_memory.SharedMemory(name=name)
            ok = bytes(seg.buf[: len(PAYLOAD)]) == PAYLOAD
            print("payload ok" if ok else "payload wrong", flush=True)
    if seg:
        seg.close()
        seg.unlink()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "pool":
        pool(sys.argv[2], int(sys.argv[3]))
    elif mode == "live":
        live(sys.argv[2], int(sys.argv[3]))
    elif mode == "handoff":
        handoff(sys.argv[2])
    else:
        sys.exit("unknown mode " + mode)
