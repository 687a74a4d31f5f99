"""Known work and measured truth for the pytest example: burn(units) spins about 10 ms of
CPU per unit; record(nodeid, seconds) appends "NODEID SECONDS" to $CIPROF_TRUTH."""
import os
import time

# Loop iterations per unit of work (about 10 ms of CPython 3.11 on a 2020s x86-64 core).
ITERS_PER_UNIT = 60000


def mix(x):
    """One step of a 64-bit mixer, in pure Python."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 27
    return x


def burn(units):
    h = units
    for i in range(units * ITERS_PER_UNIT):
        h = mix(h + i)
    return h


def record(name, seconds):
    path = os.environ.get("CIPROF_TRUTH")
    if not path:
        return
    # One write() per line on an O_APPEND file: lines of concurrent processes never mix.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{name} {seconds:.6f}\n".encode())
    finally:
        os.close(fd)


def run_test(nodeid, units):
    """Burns units of work as test nodeid and records the thread's CPU time."""
    t0 = time.thread_time()
    h = burn(units)
    record(nodeid, time.thread_time() - t0)
    return h
