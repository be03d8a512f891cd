"""Tasks dealt over hosts in the fleet's mix (``planner/dealt.py``): every task once, every host one that holds its
pattern, and past the host-level LP's exact limits a plan within its gap where the staged plan is far above it."""

from __future__ import annotations

import collections
import dataclasses
import math

import pytest

from ecs_gpu_sharing.core import host_lp
from ecs_gpu_sharing.core.allocation import AllocationNote
from ecs_gpu_sharing.core.planner import HOST_LP_GAP, exact_gpus, lp_problem, packing, plan
from ecs_gpu_sharing.core.planner.dealt import dealt
from ecs_gpu_sharing.core.planner.dealt import one_by_one as one_by_one_dealt

from conftest import benchmarks_on_path

with benchmarks_on_path():
    import fleet_generator


def _varied(seed: int, tasks: int):  # type: ignore[no-untyped-def]
    """A generated fleet, and the same with awsvpc tasks, isolation groups (one on hosts of its own) and interfaces
    that bind."""
    fleet = fleet_generator.generate(seed, tasks)
    varied = [
        dataclasses.replace(
            s,
            shape=dataclasses.replace(s.shape, network_interfaces=i % 2),
            allocation=AllocationNote(1, 1, shared_failure="-", isolation_group=f"g{i % 3}", isolate_host=False)
            if i % 3
            else None,
        )
        for i, s in enumerate(fleet.services)
    ]
    awsvpc = dataclasses.replace(fleet.capacity, task_network_interfaces=12)
    return [(fleet.capacity, fleet.services), (awsvpc, varied)]


@pytest.mark.parametrize("seed", range(6))  # one, four and eight GPUs a host; whole-GPU tasks among them
def test_every_task_is_dealt_once_onto_hosts_that_hold_their_patterns(seed: int) -> None:
    from test_host_lp import _holds

    for capacity, services in _varied(seed, 1000):
        items, spec = lp_problem(capacity, [(s, s.tasks) for s in services])
        for hosts in (1, len(items), 10 * len(items)):  # fewer hosts than the tasks need, about as many, more
            patterns = dealt(items, spec, hosts)
            assert patterns is not None
            assert all(k > 0 and _holds(p, items, spec) for p, k in patterns)
            for i, it in enumerate(items):
                assert sum(p.counts[i] * k for p, k in patterns) == it.demand, (seed, it.name)


def _dealt_plainly(items, host, hosts):  # type: ignore[no-untyped-def]
    """``one_by_one`` as a plain loop over every item for every host: the dealing's definition, which the arrays of
    ``one_by_one`` must deal as."""
    from ecs_gpu_sharing.core.host_lp.model import shares
    from ecs_gpu_sharing.core.host_lp.patterns import _Builder

    left = [it.demand for it in items]
    share = [shares(it, host) for it in items]
    by_gpu = sorted((i for i in range(len(items)) if left[i]), key=lambda i: (-share[i][0], i))
    by_most = sorted(by_gpu, key=lambda i: (-max(share[i]), i))
    carried = [0.0] * len(items)
    out = []
    while sum(left):
        hosts_left = max(hosts - len(out), 1)
        b = _Builder(items, host)
        for i in by_gpu:
            carried[i] += left[i] / hosts_left
            take = min(int(carried[i]), left[i])
            if take:
                b.add(i, take)
                carried[i] -= b.counts[i]
        b.fill(by_most, left)
        if not any(b.counts):
            return None
        left = [n - k for n, k in zip(left, b.counts, strict=True)]
        by_gpu = [i for i in by_gpu if left[i]]
        by_most = [i for i in by_most if left[i]]
        out.append(b.pattern())
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_dealing_deals_as_a_plain_loop_over_every_item_would(seed: int) -> None:
    """Whole-GPU tasks, isolation groups, interfaces that bind and tasks without a GPU among them; over fewer hosts
    than the tasks need, about as many and more."""
    for capacity, services in _varied(seed, 1000):
        items, spec = lp_problem(capacity, [(s, s.tasks) for s in services])
        for hosts in (1, len(items), 10 * len(items)):
            assert one_by_one_dealt(items, spec, hosts) == _dealt_plainly(items, spec, hosts), (seed, hosts)


def test_past_dealt_hosts_a_scaled_fleets_hosts_are_copied() -> None:
    """Held-out 1008 at 100,000 tasks over 1,461 hosts: a fleet of an eleventh of each service's tasks dealt over 132
    hosts, each but its last three copied eleven times, and the rest dealt one by one. Every task once, onto hosts that
    hold their patterns, and 173 layouts where dealing each host one by one gave 1,452 (on 1,453 hosts, not 1,452)."""
    from test_host_lp import _holds

    fleet = fleet_generator.generate(1008, 100_000, "g6.48xlarge")
    items, spec = lp_problem(fleet.capacity, [(s, s.tasks) for s in fleet.services])
    patterns = dealt(items, spec, 1461)
    assert patterns is not None
    assert all(_holds(p, items, spec) for p, _ in patterns)
    for i, it in enumerate(items):
        assert sum(p.counts[i] * k for p, k in patterns) == it.demand
    assert sorted({k for _, k in patterns}) == [1, 11]
    assert len(patterns) == 173
    one_by_one = one_by_one_dealt(items, spec, 1461)
    assert one_by_one is not None and len(set(one_by_one)) == len(one_by_one) == 1452
    assert sum(k for _, k in patterns) == 1453


def test_where_the_copies_need_more_hosts_than_given_every_host_is_dealt_one_by_one() -> None:
    """Held-out 1008 at 100,000 tasks over 1,300 hosts, fewer than its bound of 1,433: the copies cannot fit, the LP
    will run, and it starts from a host a layout, each host dealt one by one."""
    fleet = fleet_generator.generate(1008, 100_000, "g6.48xlarge")
    items, spec = lp_problem(fleet.capacity, [(s, s.tasks) for s in fleet.services])
    every = one_by_one_dealt(items, spec, 1300)
    assert every is not None
    assert dict(dealt(items, spec, 1300) or []) == collections.Counter(every)
    assert len(set(every)) > 1000


def test_a_task_no_host_takes_is_not_dealt() -> None:
    items = [host_lp.Item("big", "", 0, 0, 0, 5, 1, 0, 3)]  # 5 CPU units on a host of 4
    assert dealt(items, host_lp.HostSpec(1, 22000, 4, 1000, 7), 3) is None


def test_past_the_exact_lp_a_plan_within_the_gap_spares_the_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held-out 1008 at 100,000 tasks (eight L4s a host, 154 services, each binding its own resource): 1,787 hosts over
    a bound of 1,433 without the host-level LP, which takes seconds for 1,433. The GPU stage's GPUs balanced onto the
    fewest of the counts from the bound to the 1,461 hosts HOST_LP_GAP allows (``exact_gpus.SCALED_STEPS``): 1,438
    (0.3% above), and nothing dealt. Without that, the tasks dealt: 1,453 (1.4% above). Without either, the LP runs.
    What the plan says it would have without the LP (``instances_without_lp``, 1,780) and the plan without it (1,787)
    are as they were: these plans are the LP's stand-ins, not among the other strategies."""
    fleet = fleet_generator.generate(1008, 100_000, "g6.48xlarge")

    def refused(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the host-level LP ran")

    monkeypatch.setattr(packing.host_lp, "solve", refused)
    calls: list[int] = []
    monkeypatch.setattr(packing, "dealt", lambda *args: calls.append(args[2]) or dealt(*args))
    c = plan([fleet.capacity], fleet.services).capacities[0]
    assert (c.instance_count, c.instance_lower_bound, c.instances_without_lp) == (1438, 1433, 1780)
    assert calls == []
    assert plan([fleet.capacity], fleet.services, host_lp=False).instances == 1787
    monkeypatch.setattr(exact_gpus, "pack_hosts_scaled", lambda *args: None)
    c = plan([fleet.capacity], fleet.services).capacities[0]
    assert (c.instance_count, calls) == (1453, [math.floor(HOST_LP_GAP * 1433)])
    monkeypatch.setattr(packing, "dealt", lambda *args: None)
    with pytest.raises(AssertionError, match="the host-level LP ran"):
        plan([fleet.capacity], fleet.services)


def test_past_the_exact_lp_the_gpu_stages_plan_within_the_gap_spares_the_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tuning seed 26 at 40,000 tasks on eight H100s a host: the exact GPU stage packs 1,232 hosts over a bound of 1,231,
    the tasks dealt 1,303, outside the gap. The stage's plan is within it, so the LP does not run (it took 44 s for the
    same 1,232)."""
    fleet = fleet_generator.generate(26, 40_000, "p5.48xlarge")
    monkeypatch.setattr(packing.host_lp, "solve", lambda *args, **kwargs: pytest.fail("the host-level LP ran"))
    c = plan([fleet.capacity], fleet.services).capacities[0]
    assert (c.instance_count, c.instance_lower_bound) == (1232, 1231)


def test_within_the_exact_lp_nothing_is_dealt(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 1,000 tasks the LP runs wherever the plan is above its bound (held-out 1008 there: 58 services on eight L4s a host, above its
    bound without the LP), and nothing is dealt."""

    def refused(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("dealt")

    monkeypatch.setattr(packing, "dealt", refused)
    fleet = fleet_generator.generate(1008, 1000, "g6.48xlarge")
    without = plan([fleet.capacity], fleet.services, host_lp=False)
    assert without.instances > without.instance_lower_bound  # so the LP runs
    plan([fleet.capacity], fleet.services)


def test_a_dealt_plan_of_alike_services_gives_each_its_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held-out 1008 at 100,000 tasks with each service run as three alike ones (462 services, the LP's 154 items): the
    GPU stage's GPUs balanced onto 1,440 hosts, a valid plan; without that, dealt as 154 items and given back to the
    462 services (``alike.named_back``), a valid plan too; neither the LP's."""
    from test_planner import _assert_valid

    monkeypatch.setattr(packing.host_lp, "solve", lambda *args, **kwargs: pytest.fail("the host-level LP ran"))
    fleet = fleet_generator.copies(fleet_generator.generate(1008, 100_000, "g6.48xlarge"), 3)
    result = plan([fleet.capacity], fleet.services)
    _assert_valid(result, fleet.services)
    assert (result.instances, result.instance_lower_bound) == (1440, 1433)
    monkeypatch.setattr(exact_gpus, "pack_hosts_scaled", lambda *args: None)
    result = plan([fleet.capacity], fleet.services)
    _assert_valid(result, fleet.services)
    assert (result.instances, result.instance_lower_bound) == (1453, 1433)


def test_a_scaled_fleet_is_copied_as_many_times_as_its_leftovers_allow() -> None:
    """``hosts.scale``: the most copies asked for where the counts leave little modulo them; fewer where they leave
    more than the share allowed (30 tasks, 2% of them 0.6: 8 leaves 6, 7 leaves 9, 6 leaves 12, 5 leaves none); one at
    least."""
    from ecs_gpu_sharing.core.planner.hosts import scale

    assert scale([3003, 2002, 3003, 1], 4, 0.05) == 4
    assert scale([10, 10, 10], 8, 0.02) == 5
    assert scale([10, 10, 10], 0, 0.02) == scale([7], 3, 0.0) == 1
