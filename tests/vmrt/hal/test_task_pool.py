"""The local-task worker threads and the shared chunk counter
(:mod:`vmrt.hal.local.task_pool`): every workgroup is handed out exactly
once, every worker gets work when the others wait for it, and the error
raised is that of the first failing chunk in grid order, as on one thread."""
from __future__ import annotations

import threading

import pytest

from vmrt.hal.local.task_pool import (
    CHUNKS_PER_WORKER,
    NATIVE_MIN_CHUNK,
    Chunks,
    native_chunk,
    run_workers,
)


@pytest.mark.parametrize("total,workers", [(1, 4), (16, 2), (16, 3), (1000, 4), (7, 7)])
def test_every_workgroup_handed_out_once(total, workers):
    chunks = Chunks(total, workers)
    seen: list[int] = []
    lock = threading.Lock()

    def body(t: int) -> None:
        def run(chunk: range) -> None:
            with lock:
                seen.extend(chunk)
        chunks.run(t, run)
    assert run_workers(workers, body) == []
    assert sorted(seen) == list(range(total))
    assert sum(chunks.taken) == total
    assert chunks.size == max(1, total // (workers * CHUNKS_PER_WORKER))


def test_every_worker_gets_work():
    """Each worker holds its first chunk until all have one: with enough
    chunks every worker runs some, whatever the scheduling."""
    workers = 4
    chunks = Chunks(64, workers)
    barrier = threading.Barrier(workers, timeout=30)
    first = [True] * workers

    def body(t: int) -> None:
        def run(chunk: range) -> None:
            if first[t]:
                first[t] = False
                barrier.wait()
        chunks.run(t, run)
    assert run_workers(workers, body) == []
    assert all(n > 0 for n in chunks.taken), chunks.taken
    assert sum(chunks.taken) == 64


def test_first_failing_chunk_in_grid_order_is_raised():
    """Chunks 3 and 9 fail; 9 fails first in time (the thread holding 3
    waits for it, while the other one takes 4 to 9), yet the error of
    chunk 3 (what one thread meets first) is raised."""
    chunks = Chunks(16, 2, size=1)
    nine_failed = threading.Event()

    def body(t: int) -> None:
        def run(chunk: range) -> None:
            if chunk.start == 9:
                nine_failed.set()
                raise ValueError("chunk 9")
            if chunk.start == 3:
                nine_failed.wait(30)
                raise ValueError("chunk 3")
        chunks.run(t, run)
    with pytest.raises(ValueError) as info:
        chunks.check(run_workers(2, body, chunks.stop))
    assert info.value.args == ("chunk 3",)
    assert sum(chunks.taken) == 10          # none handed out after chunk 9 failed


def test_errors_of_workers_are_returned():
    def body(t: int) -> None:
        if t == 2:
            raise KeyError("worker 2")
    errors = run_workers(3, body)
    assert [type(e) for e in errors] == [KeyError]
    chunks = Chunks(4, 3)
    with pytest.raises(KeyError):
        chunks.check(errors)


@pytest.mark.parametrize("total,workers", [(1, 2), (3, 2), (8, 2), (8, 4), (16, 2), (64, 2),
                                           (1000, 2), (4096, 4)])
def test_native_chunks_are_never_tiny_and_large_grids_still_share(total, workers):
    """A native chunk is one library call with the FPU state and the
    interpreter lock handed around it: small grids are split evenly (no
    one-workgroup chunks: an LSTM's 8-workgroup dispatches ran 2.3x slower
    on two threads), large ones still in about CHUNKS_PER_WORKER per worker."""
    size = native_chunk(total, workers)
    chunks = -(-total // size)
    share = -(-total // workers)
    assert size >= min(share, NATIVE_MIN_CHUNK)
    if total <= workers * NATIVE_MIN_CHUNK:
        assert chunks <= workers
    if total >= workers * CHUNKS_PER_WORKER * NATIVE_MIN_CHUNK:
        assert chunks >= workers * CHUNKS_PER_WORKER


def test_optional_workers_not_started_are_not_waited_for():
    """run_workers(optional=True): a worker still busy with an earlier call
    when the caller's own part is done is not waited for, and does not run
    the body when it gets to it (the caller ran every chunk)."""
    busy, started = threading.Event(), threading.Event()

    def blocking(t: int) -> None:
        if t == 1:
            started.set()
            busy.wait(30)
    earlier = threading.Thread(target=run_workers, args=(2, blocking))
    earlier.start()
    assert started.wait(30)             # worker 1 is inside the earlier call
    chunks = Chunks(8, 2, size=1)
    ran: list[int] = []
    try:
        assert run_workers(2, lambda t: chunks.run(t, lambda c: ran.append(t)),
                           chunks.stop, optional=True) == []
        assert ran == [0] * 8 and chunks.taken == [8, 0]
    finally:
        busy.set()
        earlier.join(30)
    # worker 1 got to the optional call's job by now (one queue, in order)
    assert run_workers(2, lambda t: None) == []
    assert ran == [0] * 8


def test_optional_workers_that_started_are_waited_for():
    """A worker that started (claimed its part) is waited for, as without
    optional: its chunk has run when run_workers returns."""
    gate = threading.Event()
    chunks = Chunks(2, 2, size=1)
    done: list[int] = []

    def run(t: int, chunk: range) -> None:
        if t == 0:
            gate.wait(30)               # the caller waits until the worker took its chunk
        else:
            gate.set()
            done.append(chunk.start)

    def body(t: int) -> None:
        chunks.run(t, lambda c: run(t, c))
    assert run_workers(2, body, chunks.stop, optional=True) == []
    assert sorted(chunks.taken) == [1, 1] and len(done) == 1
