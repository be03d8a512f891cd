"""Work run in a second process beside the caller's own, where that can pay. Pure Python, standard library only.

``plan`` on a large fleet spends its time replaying ECS's placement, packing the fleet scaled down for those replays'
ratios, and planning, and none needs another's answer (``rules.assess``). On a machine of two cores or more each half
of the replays and the scaled packing run in forked children while the plans run here, and each child's answer comes
back through a pipe, pickled. The answer is the same either way: the work is deterministic (the replays are seeded) and
a child runs the same function on a copy of the same memory. A child runs CHILD_NICENESS steps below its caller, so
where they want more cores than there are, the caller's plans, which the answer waits for anyway, go first; a child
made ``urgent`` (one piece of work the caller will wait for, ahead of work any process may take) keeps the caller's
priority until its work calls ``step_back``.

A fork is taken only where it is safe and can pay; otherwise the work runs here, when its answer is asked for:

- ``os.fork`` exists (not on Windows), and this process runs one thread, as Python and (on Linux) the kernel count
  them. Forking a process of several threads copies only the caller's, with any lock another held (Python's
  documentation of ``os.fork``; Python 3.12 warns of it). A CDK app synthesizing runs a thread that reads the jsii
  kernel's standard error, so a synth never forks: the CLI does.
- The process may run on two cores or more (``os.sched_getaffinity``, else ``os.cpu_count``).
- The caller says the work is large enough (a fork and its pipe cost about a millisecond).

The child never returns into the caller's code: it writes its answer and leaves with ``os._exit``, so no ``atexit``
hook, no buffered output and no ``finally`` of the caller runs twice. If the work raises, the child dies, or its answer
cannot be read, the work runs here instead: a fork can make the answer sooner, never different.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar, cast

T = TypeVar("T")
CHILD_NICENESS = 10  # a child yields a core to the caller, whose plans it waits for anyway, where both want it


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on macOS or Windows
        return os.cpu_count() or 1


def threads() -> int:
    """The threads this process runs: on Linux the kernel's count, which also sees the threads of native libraries
    that Python does not know of (a BLAS's pool, once numpy has run); elsewhere Python's."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return threading.active_count()


def can_fork() -> bool:
    """Whether a fork is safe and can run beside this process (the module's list)."""
    return hasattr(os, "fork") and threading.active_count() == 1 and threads() == 1 and cores() >= 2


class Beside(Generic[T]):
    """``work`` started in a forked child on entering (``with Beside(work, worth=...) as pending``), where ``worth``
    and ``can_fork`` allow; ``result()`` its answer, read from the child, or computed here where no child ran or its
    answer was lost. Leaving the block reaps the child, killing it first where its answer was never asked for."""

    def __init__(self, work: Callable[[], T], *, worth: bool, urgent: bool = False) -> None:
        self.work = work
        self.worth = worth
        self.urgent = urgent  # the child starts at the caller's priority and steps back when its work says so
        self.pid = 0
        self.read_end = -1
        self.forked = False  # whether the answer came from a child (for tests and benchmarks)

    @property
    def started(self) -> bool:
        """Whether a child was forked for the work (its answer not yet read)."""
        return self.pid != 0

    def __enter__(self) -> Beside[T]:
        if not (self.worth and can_fork()):
            return self
        sys.stdout.flush()  # a child never flushes (os._exit), but buffered output must not be copied into it either
        sys.stderr.flush()
        try:
            read_end, write_end = os.pipe()
        except OSError:  # out of file descriptors: the work runs here
            return self
        try:
            pid = os.fork()
        except OSError:  # a limit on processes (EAGAIN), or memory: the work runs here
            os.close(read_end)
            os.close(write_end)
            return self
        if pid == 0:  # the child
            os.close(read_end)
            _child(self.work, write_end, self.urgent)
        os.close(write_end)
        self.pid, self.read_end = pid, read_end
        return self

    def result(self) -> T:
        if self.pid:
            answer = self._read()
            if answer is not None:
                self.forked = True
                return cast(T, answer[0])
        return self.work()

    def _read(self) -> tuple[object] | None:
        chunks = []
        with os.fdopen(self.read_end, "rb") as pipe:
            self.read_end = -1
            while chunk := pipe.read(1 << 16):
                chunks.append(chunk)
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            return None
        try:
            answer = pickle.loads(b"".join(chunks))
        except Exception:  # an answer that cannot be read is computed here instead
            return None
        return answer if isinstance(answer, tuple) and len(answer) == 1 else None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.read_end = _closed(self.read_end)
        if self.pid:  # the caller failed before asking: the child's work is not wanted
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = 0


CLAIM_BYTES = 2  # one number of a Claims, as it waits in the pipe (a pipe's buffer holds 64 KiB on Linux)


class Claims:
    """The numbers 0 to ``count`` - 1, each taken once (``take``) by whichever process asks first: this one, or a
    child forked after the numbers were made (``Beside``). Work split so is balanced as it runs, where halves fixed
    beforehand leave a core idle while the longer half ends.

    The numbers wait in a pipe, CLAIM_BYTES each, written before any fork and then closed for writing: a read of
    CLAIM_BYTES takes one number for one process (the kernel reads a pipe for one reader at a time), and an empty pipe
    reads as its end, so ``take`` never blocks. Where the pipe's buffer does not take them all (the write does not
    wait: no one reads yet) or no pipe can be made, a counter in this process hands them out and ``shared`` is False:
    a child forked then would take every number itself, so the caller forks none. A number taken by a child that dies
    is taken by no one: the caller checks that every number's work came back (``rules.assess`` replays a capacity
    again where one did not)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.counted = 0  # the numbers handed out by the counter, where there is no pipe
        self.read_end = -1
        if not (hasattr(os, "fork") and 0 < count < 1 << (8 * CLAIM_BYTES)):
            return  # no child can share them (Windows, which has no fork, has no os.set_blocking for a pipe either)
        try:
            read_end, write_end = os.pipe()
        except OSError:  # out of file descriptors: the counter
            return
        numbers = b"".join(n.to_bytes(CLAIM_BYTES, "little") for n in range(count))
        try:
            os.set_blocking(write_end, False)  # a pipe's buffer that cannot take them all says so, not waits
            written = os.write(write_end, numbers)
        except OSError:  # BlockingIOError among them
            written = 0
        finally:
            os.close(write_end)
        if written == len(numbers):
            self.read_end = read_end
        else:
            os.close(read_end)

    @property
    def shared(self) -> bool:
        """Whether forked children may take numbers too (through the pipe)."""
        return self.read_end >= 0

    def take(self) -> int | None:
        """A number no process has taken, or None when all are taken."""
        if self.read_end < 0:
            if self.counted >= self.count:
                return None
            self.counted += 1
            return self.counted - 1
        data = os.read(self.read_end, CLAIM_BYTES)
        return int.from_bytes(data, "little") if data else None

    def __enter__(self) -> Claims:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.read_end = _closed(self.read_end)
        self.counted = self.count  # nothing more to take


def _closed(descriptor: int) -> int:
    """``descriptor`` closed where it is open (not -1); -1, to keep in its place."""
    if descriptor >= 0:
        os.close(descriptor)
    return -1


_STEPS_BACK = False  # set in a child made ``urgent``: ``step_back`` lowers its priority once


def step_back() -> None:
    """In a child made ``urgent`` (``Beside(..., urgent=True)``), CHILD_NICENESS steps below the caller from here on:
    the part of its work the caller waits on is done. Nothing elsewhere (in the caller, or where the work runs here)."""
    global _STEPS_BACK
    if _STEPS_BACK:
        _STEPS_BACK = False
        with contextlib.suppress(OSError):
            os.nice(CHILD_NICENESS)


def _child(work: Callable[[], object], write_end: int, urgent: bool = False) -> None:
    """Runs in the forked child: the answer pickled to ``write_end``, then leaves at once. Where the work raises (or
    its answer does not pickle, or an interrupt comes), it leaves with status 1 and writes nothing: the caller runs the
    work itself, so an exception is raised there as it would have been without a fork, with its traceback. An
    ``urgent`` child keeps the caller's priority until its work calls ``step_back``."""
    global _STEPS_BACK
    code = 0
    try:
        if urgent:
            _STEPS_BACK = True
        else:
            with contextlib.suppress(OSError):
                os.nice(CHILD_NICENESS)
        data = pickle.dumps((work(),))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
    except BaseException:  # whatever went wrong, the caller runs the work again
        code = 1
    finally:
        os._exit(code)
