"""Child-process functions (importable by spawned interpreters)."""

import os
import signal

import ember_core as ec


def echo(q_in, q_out, n):
    """Send n tensors back, then wait for the parent's None: with the
    file_descriptor strategy a sender must outlive the receipt of its messages."""
    for _ in range(n):
        q_out.put(q_in.get())
    q_in.get()


def write_first(q, done):
    t = q.get()
    t.view(-1)[0] = 99
    done.put(True)


def describe(q_in, q_out):
    a, b = q_in.get()
    q_out.put((a.untyped_storage() is b.untyped_storage(), a.is_shared(), b.is_shared()))


def pipe_child(conn):
    t = conn.recv()
    conn.send(t * 2)
    conn.recv()
    conn.close()


def square(t):
    return t * t


def die_after_get(q):
    q.get()
    os.kill(os.getpid(), signal.SIGKILL)


def sum_all(q, out, n):
    total = 0.0
    for _ in range(n):
        total += float(q.get().sum())
    out.put(total)


def fail_on_one(i):
    if i == 1:
        raise ValueError(f"worker {i} failed on purpose")
    import time

    time.sleep(30)


def exit_with_signal(i):
    if i == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    import time

    time.sleep(30)


def ok(i, out):
    out.put(i)


def make_tensor(_):
    return ec.arange(6.0).reshape(2, 3)
