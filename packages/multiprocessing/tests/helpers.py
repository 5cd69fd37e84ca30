"""Functions run in child processes (importable by spawned interpreters)."""

import os
import signal
import time

import ember_core as ec


def echo(q_in, q_out, n):
    """Send n objects back, then wait for the parent's None: a sender must stay
    alive until what it sent has been received."""
    for _ in range(n):
        q_out.put(q_in.get())
    q_in.get()


def write_first(q, done):
    t = q.get()
    t.view(-1)[0] = 99
    done.put(True)


def describe(q_in, q_out):
    a, b = q_in.get()
    q_out.put(
        (
            a.untyped_storage() is b.untyped_storage(),
            a.is_shared(),
            b.is_shared(),
            a.data_ptr() + 5 * 4 == b.data_ptr(),
        )
    )
    q_in.get()


def pipe_child(conn):
    t = conn.recv()
    conn.send(t * 2)
    conn.send(t)
    conn.recv()
    conn.close()


def square(t):
    return t * t


def make_tensor(i):
    return ec.arange(6.0).reshape(2, 3) + i


def die_after_get(q):
    q.get()
    os.kill(os.getpid(), signal.SIGKILL)


def sum_all(q, out, n):
    total = 0.0
    for _ in range(n):
        total += q.get().sum().item()
    out.put(total)


def fail_on_one(i):
    if i == 1:
        raise ValueError(f"worker {i} failed on purpose")
    time.sleep(60)


def exit_with_signal(i):
    if i == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)


def exit_with_code(i):
    if i == 1:
        os._exit(3)
    time.sleep(60)


def put_rank(i, out):
    out.put(i)


def add_rank(i, t):
    t[i] += i + 1


class Marked(ec.Tensor):
    """A Tensor subclass (as nn.Parameter is one)."""


def hold(q, done):
    """Keep the received tensor until the parent says so."""
    t = q.get()
    done.put(t.sum().item())
    q.get()


def send_and_exit(q):
    q.put(ec.arange(4.0))
    q.close()
    q.join_thread()  # the message is in the pipe; now the sender is gone


def send_then_wait(q, ack):
    q.put(ec.arange(3.0))
    ack.get()


def send_many_then_wait(q, ack, n):
    """Send n small tensors (in this process's shared segments), then wait."""
    for i in range(n):
        q.put(ec.full((64,), float(i)))
    ack.get()
