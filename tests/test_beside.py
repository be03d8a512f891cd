"""Work beside the caller's (core.beside): a fork gives the same answer sooner, or the work runs here; never another.

A pytest worker runs threads (xdist's), where the module never forks, so each fork is tried in a fresh interpreter of
one thread (``_fresh``), with the cores it may use set to two (CI's machines have two; a machine of one would not fork).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from ecs_gpu_sharing.core import beside
from ecs_gpu_sharing.core.beside import Beside

PRELUDE = """
import os, sys
from ecs_gpu_sharing.core import beside
from ecs_gpu_sharing.core.beside import Beside
beside.cores = lambda: 2
parent = os.getpid()
"""


def _fresh(code: str) -> str:
    """``code`` run after PRELUDE in a new interpreter: its standard output (the test fails on its error)."""
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_fork_gives_the_works_answer_from_another_process() -> None:
    assert _fresh("print(beside.threads(), beside.can_fork())") == "1 True"  # a fresh interpreter: one thread
    out = _fresh("""
        with Beside(lambda: (os.getpid(), [1, 2, 3]), worth=True) as pending:
            started = pending.started
            pid, answer = pending.result()
        print(started, pending.forked, pid != parent, answer)
    """)
    assert out == "True True True [1, 2, 3]"


def test_no_fork_where_it_is_not_worth_it_or_not_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not asked (``worth``), one core, or a second thread (a CDK app's jsii reader, a BLAS pool): the work runs here,
    when asked."""
    here = os.getpid()
    monkeypatch.setattr(beside, "cores", lambda: 2)
    monkeypatch.setattr(beside, "threads", lambda: 1)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    with Beside(os.getpid, worth=False) as pending:
        assert not pending.started
        assert pending.result() == here and not pending.forked
    monkeypatch.setattr(beside, "cores", lambda: 1)
    assert not beside.can_fork()
    monkeypatch.setattr(beside, "cores", lambda: 2)
    monkeypatch.setattr(beside, "threads", lambda: 2)  # a native library's thread, which Python does not count
    assert not beside.can_fork()
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    with Beside(os.getpid, worth=True) as pending:
        assert not pending.started and pending.result() == here


def test_a_child_that_fails_leaves_the_work_to_the_caller() -> None:
    """Work that raises in the child, or whose answer does not pickle, runs again here: the caller gets the answer, or
    the exception as it would have raised it without a fork."""
    out = _fresh("""
        def only_here():
            if os.getpid() != parent:
                raise RuntimeError("in the child")
            return "here"
        with Beside(only_here, worth=True) as pending:
            print(pending.started, pending.result(), pending.forked)
        with Beside(lambda: (lambda: 1), worth=True) as pending:  # a lambda does not pickle
            print(pending.result()(), pending.forked)
        def always():
            raise ValueError(f"raised in {'the caller' if os.getpid() == parent else 'the child'}")
        try:
            with Beside(always, worth=True) as pending:
                pending.result()
        except ValueError as error:
            print(error)
    """)
    assert out.splitlines() == ["True here False", "1 False", "raised in the caller"]


def test_a_caller_that_fails_first_leaves_no_child_behind() -> None:
    """The caller's own work raises before it asks for the answer: the child is killed and reaped, at once."""
    out = _fresh("""
        import time
        started = time.monotonic()
        try:
            with Beside(lambda: time.sleep(60), worth=True) as pending:
                child = pending.pid
                raise KeyError("the caller's plan failed")
        except KeyError:
            pass
        try:
            os.waitpid(child, os.WNOHANG)
            print("a child is left")
        except ChildProcessError:
            print("no child", time.monotonic() - started < 30)
    """)
    assert out == "no child True"


def test_claims_hand_each_number_to_one_process_of_those_that_ask() -> None:
    """Three children and their caller take numbers of one Claims as fast as each can: every number is taken once,
    by one of them, and more than one process took some (each child sleeps a little after a number)."""
    out = _fresh("""
        import time
        from ecs_gpu_sharing.core.beside import Claims
        def taking(claims):
            taken = []
            while (n := claims.take()) is not None:
                taken.append(n)
                time.sleep(0.002)
            return os.getpid(), taken
        with Claims(300) as claims:
            print(claims.shared)
            pending = [Beside(lambda: taking(claims), worth=True) for _ in range(3)]
            for p in pending:
                p.__enter__()
            mine = taking(claims)
            parts = [mine] + [p.result() for p in pending]
        numbers = sorted(n for _, taken in parts for n in taken)
        print(numbers == list(range(300)), all(p.forked for p in pending), sum(1 for _, t in parts if t) >= 2)
    """)
    assert out.splitlines() == ["True", "True True True"]


def test_claims_the_pipe_cannot_hold_are_counted_here_and_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """More numbers than a pipe's buffer takes (64 KiB on Linux: the write does not wait for a reader), more than two
    bytes count, no pipe to be had, or no fork: a counter in this process, not shared (the caller forks nothing),
    which hands out each number once; none once closed. None of none. Every replay of a fleet of ECS's most capacity providers a
    cluster holds (20), each replayed the most ways (33), fits."""
    from ecs_gpu_sharing.core import placement, quotas

    most = quotas.CAPACITY_PROVIDERS_PER_CLUSTER.number * max(len(placement._runs(10, g)) for g in (1, 4, 8))
    with beside.Claims(most) as claims:
        assert claims.shared
        assert [claims.take() for _ in range(3)] == [0, 1, 2]
    assert claims.take() is None
    for count in (40_000, 1 << 16):
        big = beside.Claims(count)
        assert not big.shared
        assert [big.take() for _ in range(big.count)] == list(range(big.count)) and big.take() is None

    def refused() -> tuple[int, int]:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "pipe", refused)
    with beside.Claims(5) as claims:
        assert not claims.shared and [claims.take() for _ in range(6)] == [0, 1, 2, 3, 4, None]
    assert beside.Claims(0).take() is None
    monkeypatch.undo()
    monkeypatch.delattr(os, "fork")  # as on Windows: no child to share them with
    assert beside.Claims(3).shared is False and beside.Claims(3).take() == 0


def test_assess_replays_beside_its_plans_with_the_same_answer() -> None:
    """A fleet of a capacity replayed whole and one replayed scaled down (past WHOLE_TASKS), assessed with the replays
    (taken by two children, by the child of the scaled fleet's packing once that is done, and by the process after its
    plans) and without a fork: the same assessment, field for field; with, each child ran (without, the process works
    every replay out itself), and each child's answer is the one used (the replays' most instances marked a hundred
    times over wherever they ran). A child that dies with a replay it took leaves its capacity to be replayed after
    the plans: the same assessment again."""
    out = _fresh("""
        import tempfile
        from dataclasses import replace
        from ecs_gpu_sharing.core import rules
        from ecs_gpu_sharing.core.capacity_facts import host_facts
        from ecs_gpu_sharing.core.plan_inputs import capacity_input
        from ecs_gpu_sharing.core.planner import ServiceInput
        from ecs_gpu_sharing.core.placement_strategies import LIBRARY_STRATEGY
        from ecs_gpu_sharing.core.shape import TaskShape

        caps = [
            capacity_input("quad", host_facts(["g6.12xlarge"])),
            replace(capacity_input("one", host_facts(["g6.2xlarge"])), max_instances=30),
        ]
        def svc(name, cap, tasks, budget):
            return ServiceInput(name, cap, TaskShape(512, 2048, (budget,)), tasks, placement=LIBRARY_STRATEGY)
        services = [svc("a", "quad", 2500, 6000), svc("b", "quad", 1500, 3000), svc("c", "one", 90, 5000)]
        replay, scale = rules.replay_claimed, rules.scale_capacities
        def recorded(work, name):
            def run(*args):
                found = work(*args)
                with open(record, "a") as out:
                    out.write(f"{name} {os.getpid()}\\n")
                return found
            return run
        record = tempfile.mktemp()
        rules.replay_claimed, rules.scale_capacities = recorded(replay, "replays"), recorded(scale, "scaled")
        forked = rules.assess(caps, services)
        beside.can_fork = lambda: False
        alone = rules.assess(caps, services)
        ran = sorted(line.split() for line in open(record))
        print(forked == alone, forked.placement["quad"].scaled_from, [name for name, pid in ran if int(pid) != parent])
        beside.can_fork = lambda: True  # and each child's answer is the one used: a marked one shows in the plan
        def marked_replays(*args):
            found, failed = replay(*args)
            return {k: {n: replace(o, peak=100 * o.peak) for n, o in v.items()} for k, v in found.items()}, failed
        rules.replay_claimed = marked_replays
        rules.scale_capacities = lambda *args: {k: (1, 1) for k in scale(*args)}  # the full fleet over one host
        marked = rules.assess(caps, services)
        print(sorted(p.replays for p in marked.placement.values()), sorted(p.replays for p in alone.placement.values()))
        print([marked.placement[k].needed > 10 * alone.placement[k].needed for k in ("quad", "one")])
        rules.scale_capacities = scale
        def dying(caps, services, jobs, claims):  # a child takes a replay and dies with it
            if os.getpid() != parent:
                with open(record, "a") as out:
                    out.write(f"lost {jobs[claims.take()]}\\n")
                os._exit(1)
            return replay(caps, services, jobs, claims)
        rules.replay_claimed = dying
        print(rules.assess(caps, services) == alone, sum(1 for line in open(record) if line.startswith("lost")))
    """)
    assert out.splitlines() == [
        "True 4000 ['replays', 'replays', 'replays', 'scaled']",
        "[9, 11] [9, 11]",
        "[True, True]",
        "True 3",
    ]


def test_a_child_yields_the_core_to_its_caller() -> None:
    """The child runs CHILD_NICENESS steps below its caller (the caller's plans are what it waits for): where both
    want a core, the caller's work comes first, and the child has whatever is left."""
    out = _fresh("""
        with Beside(lambda: os.nice(0), worth=True) as pending:
            print(pending.result() - os.nice(0), pending.forked)
    """)
    assert out == f"{beside.CHILD_NICENESS} True"


def test_an_urgent_child_keeps_the_callers_priority_until_it_steps_back() -> None:
    """A child made urgent (the scaled packing, one piece of work the caller waits for) runs at its caller's priority
    until its work calls step_back, then CHILD_NICENESS below; a second step back changes nothing. Where the work runs
    here (no child), step_back leaves the caller's priority alone."""
    out = _fresh("""
        def work():
            before = os.nice(0)
            beside.step_back()
            beside.step_back()
            return before, os.nice(0)

        with Beside(work, worth=True, urgent=True) as pending:
            before, after = pending.result()
        print(before - os.nice(0), after - os.nice(0), pending.forked)
        with Beside(work, worth=False, urgent=True) as here:
            print(here.result() == (os.nice(0), os.nice(0)), here.forked)
    """)
    assert out.splitlines() == [f"0 {beside.CHILD_NICENESS} True", "True False"]


def test_a_fork_the_system_refuses_leaves_the_work_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process limit (EAGAIN) or no file descriptor left: no child, the work runs here, nothing leaks."""
    monkeypatch.setattr(beside, "can_fork", lambda: True)

    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    before = len(os.listdir("/proc/self/fd"))
    with Beside(lambda: "here", worth=True) as pending:
        assert not pending.started and pending.result() == "here"
    assert len(os.listdir("/proc/self/fd")) == before
    monkeypatch.setattr(os, "pipe", lambda: refused())
    with Beside(lambda: "here too", worth=True) as pending:
        assert not pending.started and pending.result() == "here too"


@pytest.mark.parametrize(
    ("counts", "worth"),
    [((2000, 2000), [True, True, False]), ((3001, 10), [True, True, True]), ((20, 20), [False, False, False])],
)
def test_assess_asks_for_a_child_only_where_its_work_is_worth_one(
    monkeypatch: pytest.MonkeyPatch, counts: tuple[int, int], worth: list[bool]
) -> None:
    """The replays are worth their two children from BESIDE_TASKS tasks on EC2 capacities; the scaled fleet's packing
    (then the replays left) only where one capacity has more than WHOLE_TASKS (two capacities of 2,000 have none to
    pack)."""
    from ecs_gpu_sharing.core import rules
    from ecs_gpu_sharing.core.capacity_facts import host_facts
    from ecs_gpu_sharing.core.placement_strategies import LIBRARY_STRATEGY
    from ecs_gpu_sharing.core.plan_inputs import capacity_input
    from ecs_gpu_sharing.core.planner import ServiceInput
    from ecs_gpu_sharing.core.shape import TaskShape

    asked: list[bool] = []

    class Recorded(Beside):  # type: ignore[type-arg]
        def __init__(self, work: object, *, worth: bool, urgent: bool = False) -> None:
            asked.append(worth)
            super().__init__(work, worth=worth, urgent=urgent)  # type: ignore[arg-type]

    monkeypatch.setattr(beside, "can_fork", lambda: False)
    monkeypatch.setattr(rules, "Beside", Recorded)
    caps = [capacity_input(name, host_facts(["g6.12xlarge"])) for name in ("a", "b")]
    services = [
        ServiceInput(f"s-{cap.name}", cap.name, TaskShape(256, 1024, (2000,)), n, placement=LIBRARY_STRATEGY)
        for cap, n in zip(caps, counts, strict=True)
    ]
    rules.assess(caps, services)
    assert asked == worth
