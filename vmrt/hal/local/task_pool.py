"""The worker threads of ``local-task`` and how a grid is shared among them.

:func:`run_workers` runs ``body(t)`` for ``t`` = 1 .. n-1 on the process's
persistent worker threads (``vmrt-task_N``, started on first use, plain
``threading`` threads: no ``concurrent.futures``, whose import pulls in
``logging`` and costs the first dispatch milliseconds) and ``body(0)`` on
the calling thread at once, so the caller starts running workgroups while
the workers wake up (or, the first time, start).

:class:`Chunks` hands a grid out in chunks of consecutive workgroups from
one shared counter (IREE's local-task hands out tiles the same way): a
worker takes the next chunk when it finished its last, so every worker gets
work while there is some, and one that starts late (a new thread, an
emulated machine still being created) just takes fewer.  Which worker runs
a workgroup varies from run to run; what it computes does not (workgroups
are independent), so results are those of one thread.
"""
from __future__ import annotations

import _thread
import itertools
import threading
from queue import SimpleQueue

from .fpu_state import keep_denormals

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    #: a worker's job: (body, its t, the call's _Done, the claim the worker
    #: pops before it starts; None: no claim, it always runs)
    _Job: TypeAlias = "tuple[Callable[[int], None], int, _Done, list[int] | None]"

#: chunks per worker a grid is cut into at least (when it has enough workgroups)
CHUNKS_PER_WORKER = 8

#: the fewest workgroups a chunk of a native dispatch has (unless a worker's
#: even share is smaller): each chunk is one call into the library, with the
#: FPU state pushed and popped and the interpreter lock handed over around
#: it, so one-workgroup chunks made a small native grid slower on two
#: threads than on one (an LSTM's 8-workgroup dispatches: 2.3x)
NATIVE_MIN_CHUNK = 4


def native_chunk(total: int, workers: int) -> int:
    """The chunk size for a native grid of ``total`` workgroups on ``workers``."""
    share = -(-total // max(1, workers))
    return max(total // (max(1, workers) * CHUNKS_PER_WORKER), min(share, NATIVE_MIN_CHUNK), 1)

_LOCK = threading.Lock()
_QUEUES: list[SimpleQueue[_Job | None]] = []


class Chunks:
    """Workgroups ``0 .. total-1`` in chunks of ``size`` (default: about
    :data:`CHUNKS_PER_WORKER` per worker), handed out once each from any
    thread; :attr:`taken` counts the workgroups each worker took."""

    def __init__(self, total: int, workers: int, size: int = 0):
        self.total = total
        self.size = size or max(1, total // (max(1, workers) * CHUNKS_PER_WORKER))
        # next() of an itertools.count is atomic under the GIL: no lock
        self._next = itertools.count(0, self.size).__next__
        self.taken = [0] * max(1, workers)
        self.failed: list[tuple[int, BaseException]] = []

    def take(self, worker: int) -> range | None:
        """The next chunk for ``worker`` (None: none left)."""
        start = self._next()
        if start >= self.total:
            return None
        chunk = range(start, min(start + self.size, self.total))
        self.taken[worker] += len(chunk)
        return chunk

    def stop(self) -> None:
        """Hand out no more chunks (a worker failed or was interrupted)."""
        self.total = 0

    def run(self, worker: int, fn: Callable[[range], object]) -> None:
        """``fn(chunk)`` for the chunks ``worker`` takes, until none is
        left; a chunk that raises stops the handing out (the chunks taken
        run to their end) and is kept for :meth:`check`."""
        while (chunk := self.take(worker)) is not None:
            try:
                fn(chunk)
            except BaseException as e:
                self.stop()
                with _LOCK:
                    self.failed.append((chunk.start, e))
                raise

    def check(self, errors: list[BaseException]) -> None:
        """Raise the error of the failed chunk that comes first in the grid
        (chunks are handed out in order, so every chunk before it ran: the
        error one thread would raise), else the first of ``errors`` (those
        :func:`run_workers` returned)."""
        if self.failed:
            raise min(self.failed, key=lambda f: f[0])[1]
        if errors:
            raise errors[0]


class _Done:
    """The workers of one :func:`run_workers` call still running, and their errors."""

    def __init__(self, count: int):
        self.left = count
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.event = threading.Event()
        if not count:
            self.event.set()

    def finish(self, error: BaseException | None) -> None:
        with self.lock:
            if error is not None:
                self.errors.append(error)
            self.left -= 1
            if not self.left:
                self.event.set()


def _worker(queue: SimpleQueue[_Job | None],
            name: str) -> None:
    threading.current_thread().name = name
    keep_denormals()        # not the FPU state of the dispatch that started it
    while (job := queue.get()) is not None:
        body, t, done, claim = job
        if claim is not None:
            try:
                claim.pop()     # atomic under the GIL: this worker or the caller wins
            except IndexError:  # the caller finished without this worker: nothing to do
                del job, body, done, claim
                continue
        error = None
        try:
            body(t)
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            error = e
        done.finish(error)
        del job, body, done, claim, error   # (no reference to the dispatch kept while idle)


def _queues(count: int
            ) -> list[SimpleQueue[_Job | None]]:
    """The queues of the first ``count`` worker threads (started when missing)."""
    with _LOCK:
        while len(_QUEUES) < count:
            q: SimpleQueue[_Job | None] = \
                SimpleQueue()
            # not threading.Thread.start, which waits until the new thread
            # runs (milliseconds on a busy machine): the caller has work to do
            _thread.start_new_thread(_worker, (q, f"vmrt-task_{len(_QUEUES)}"))
            _QUEUES.append(q)
        return _QUEUES[:count]


def started_workers() -> int:
    """How many worker threads the process has started so far."""
    return len(_QUEUES)


def post(t: int, body: Callable[[int], None]) -> None:
    """``body(t)`` on worker thread ``t`` (1 ..) when it gets to it; nobody
    waits for it and what it raises is dropped."""
    _queues(t)[t - 1].put((body, t, _Done(1), None))


def run_workers(count: int, body: Callable[[int], None],
                waiting: Callable[[], None] | None = None,
                optional: bool = False) -> list[BaseException]:
    """``body(t)`` for every ``t`` < ``count``: ``t`` = 0 on the calling
    thread, the others on worker threads, all at once; returns once every
    one ended, with the exceptions they raised (the caller's first).  When
    waiting for the workers is interrupted (Ctrl-C), ``waiting()`` is called
    (to stop them) and the wait goes on.

    ``optional``: the workers only help (``body`` takes shared chunks, the
    caller's ``body(0)`` runs whatever is left): a worker that has not
    started when ``body(0)`` returns does not run ``body`` at all, and the
    caller does not wait for it.  On a machine whose cores are busy a
    worker can take milliseconds to be scheduled; the caller then runs the
    whole grid and goes on (an LSTM's 8-workgroup dispatches, 40 us alone,
    had waited ~2 ms each for a worker with nothing left to do)."""
    done = _Done(count - 1)
    claims: list[list[int]] = []
    # worker thread t-1 runs body(t); a call made while another one keeps
    # that thread busy waits its turn there (its chunks go to the others)
    for t, q in enumerate(_queues(count - 1), 1):
        claim = [t] if optional else None
        if claim is not None:
            claims.append(claim)
        q.put((body, t, done, claim))
    errors: list[BaseException] = []
    try:
        body(0)
    except BaseException as e:  # noqa: BLE001 - reported after the workers ended
        errors.append(e)
    for claim in claims:
        try:
            claim.pop()             # not started: it never will
        except IndexError:          # started: wait for it below
            continue
        done.finish(None)
    while True:
        try:
            done.event.wait()
            break
        except BaseException as e:  # noqa: BLE001 - Ctrl-C while waiting
            errors.append(e)
            if waiting is not None:
                waiting()
    return errors + done.errors


__all__ = ["CHUNKS_PER_WORKER", "NATIVE_MIN_CHUNK", "Chunks", "native_chunk", "post",
           "run_workers", "started_workers"]
