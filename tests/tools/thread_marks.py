"""Two threads, each marked with @TIME begin/end lines on CIPROF_CONTROL_FD around a burn of its
own CPU time: "threaded" 0.4 s (then it returns and ends), "main_thread" 0.2 s (then it joins).
Used by tests/integration/test_preload_attribution.sh and
bench/attribution/preload_thread_marks.sh. Run under `ciprof run`."""
import os
import threading
import time

fd = int(os.environ["CIPROF_CONTROL_FD"])


def mark(what, tid, name):
    # @TIME: the mark takes effect when it was made, however late ciprof reads it
    os.write(fd, f"@{time.monotonic_ns()} {what} {tid} {name}\n".encode())


def burn(name, seconds):
    tid = threading.get_native_id()
    mark("begin", tid, name)
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < seconds:
        x += 1
    mark("end", tid, name)


t = threading.Thread(target=burn, args=("threaded", 0.4))
t.start()
burn("main_thread", 0.2)
t.join()
