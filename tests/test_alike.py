"""Alike services as one item of the host-level LP (``planner.alike``), and its hosts given back to each service."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from test_planner import _assert_valid, _svc

from ecs_gpu_sharing.core.allocation import AllocationNote
from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.plan_inputs import capacity_input
from ecs_gpu_sharing.core.planner import ServiceInput, plan
from ecs_gpu_sharing.core.planner.alike import merged, named_back
from ecs_gpu_sharing.core.planner.hosts import Host
from ecs_gpu_sharing.core.planner.model import GpuLoad
from ecs_gpu_sharing.core.shape import TaskShape

from conftest import FIVE_LLMS, benchmarks_on_path


def _s(name: str, tasks: int, cpu: int = 256, mib: int = 2048, group: str = "") -> ServiceInput:
    note = AllocationNote(1024, 512, shared_failure="restarts", isolation_group=group) if group else None
    return ServiceInput(name, "l4", TaskShape(cpu, 1024, (mib,), 0), tasks, allocation=note)


def test_alike_services_are_one_with_their_tasks_summed_and_others_stay_apart() -> None:
    a, b, c, d = _s("a", 3), _s("b", 5), _s("c", 2, cpu=512), _s("d", 4)
    groups, kinds = merged([[(a, 3), (b, 5), (c, 2), (d, 4)]])
    assert [[(s.name, s.tasks, n) for s, n in g] for g in groups] == [[("a", 12, 12), ("c", 2, 2)]]
    assert kinds == {"a": [("a", 3), ("b", 5), ("d", 4)]}


def test_alike_services_of_two_isolation_groups_are_two_and_a_few_twins_are_not_merged() -> None:
    a, a2, b, b2 = _s("a", 3), _s("a2", 1), _s("b", 5, group="g"), _s("b2", 2, group="g")
    groups, kinds = merged([[(a, 3), (a2, 1)], [(b, 5), (b2, 2)]])
    assert [[(s.name, n) for s, n in g] for g in groups] == [[("a", 4)], [("b", 7)]]
    assert kinds == {"a": [("a", 3), ("a2", 1)], "b": [("b", 5), ("b2", 2)]}
    # five services of four kinds: more kinds than MERGED_SHARE of the services, left as they are
    five = [
        (_s("a", 1), 1),
        (_s("b", 1), 1),
        (_s("c", 1, cpu=512), 1),
        (_s("d", 1, mib=1024), 1),
        (_s("e", 1, mib=512), 1),
    ]
    assert merged([five]) == ([five], {})


def test_services_of_tasks_of_several_whole_gpus_are_not_merged_those_of_one_are() -> None:
    """A task of two whole GPUs is on each of them: given back GPU by GPU, its two GPUs could go to two services."""
    whole = [ServiceInput(f"{'ab'[g - 1]}{i}", "l4", TaskShape(256, 1024, (), g), 2) for g in (1, 2) for i in range(3)]
    whole.append(ServiceInput("a3", "l4", TaskShape(256, 1024, (), 1), 2))
    groups, kinds = merged([[(s, 2) for s in whole]])
    assert [(s.name, n) for s, n in groups[0]] == [("a0", 8), ("b0", 2), ("b1", 2), ("b2", 2)]
    assert kinds == {"a0": [("a0", 2), ("a1", 2), ("a2", 2), ("a3", 2)]}


def _one(name: str, k: int) -> Host:
    return Host(1, [GpuLoad(tasks=((name, k),), used_gpu_memory_mib=2048 * k, clients=k)], cpu=256 * k, mem=1024 * k)


def test_hosts_are_given_back_a_run_at_a_time_and_a_copy_split_where_a_service_runs_out() -> None:
    """Six copies of a host of two tasks of the merged ``a``, given back to a (5 tasks), b (4) and d (3): two copies to
    a whole, one split a/b, one to b whole, one split b/d, one to d whole. Each service gets its tasks exactly."""
    host = dataclasses.replace(_one("a", 2), count=6)
    hosts = named_back([host, _one("x", 1)], {"a": [("a", 5), ("b", 4), ("d", 3)]})
    assert [(h.count, h.gpus[0].tasks) for h in hosts] == [
        (2, (("a", 2),)),
        (1, (("a", 1), ("b", 1))),
        (1, (("b", 2),)),
        (1, (("b", 1), ("d", 1))),
        (1, (("d", 2),)),
        (1, (("x", 1),)),
    ]
    assert all(h.gpus[0].used_gpu_memory_mib == 4096 and h.cpu == 512 for h in hosts[:5])
    assert named_back([host], {}) == [host]


def test_a_fleet_of_many_copies_of_a_few_models_is_planned_as_the_few(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held-out seed 1017 of the generated benchmark at 1,000 tasks (eight H100s a host, each service binding its own
    resource), each of its 16 services split in eight (those of fewer tasks in as many): 119 services of 16 kinds. The
    LP sees 16 items and plans 209 hosts, its bound, as it does on the unsplit fleet; kept apart, 119 items gave 211
    hosts over a bound of 208 in ten times the time. Fails where the LP is given the copies apart."""
    from ecs_gpu_sharing.core import host_lp

    with benchmarks_on_path():
        import fleet_generator

    fleet = fleet_generator.generate(1017, 1000)
    services = fleet_generator.copies(fleet, 8).services
    assert len(services) == 119 and sum(s.tasks for s in services) == 1000
    seen: list[int] = []
    solve = host_lp.solve

    def spied(items: Any, *args: Any, **kwargs: Any) -> host_lp.Solution:
        seen.append(len(items))
        return solve(items, *args, **kwargs)

    monkeypatch.setattr(host_lp, "solve", spied)
    result = plan([fleet.capacity], services)
    _assert_valid(result, services)
    assert seen == [len(fleet.services)] == [16]
    assert result.instances == result.instance_lower_bound == 209


def test_past_the_lps_tasks_many_copies_of_few_models_get_the_whole_lp_as_the_few(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past HOST_LP_TASKS the whole host-level LP (HiGHS's MILP pricings too) is kept for partitions of at most
    HOST_LP_SERVICES services, since its cost grows with its items: alike services are one item, so they are counted
    as one. FIVE_LLMS at twelve times their counts (23,976 tasks), each model run as twelve services (60, past 48):
    the whole LP runs on five items and plans 1,062 hosts, the bound, as for the five services. Fails where the
    services are counted, not the kinds (the LP then runs without its MILP pricings, or not at all)."""
    from ecs_gpu_sharing.core import host_lp
    from ecs_gpu_sharing.core.planner import packing

    p5 = capacity_input("h100", host_facts(["p5.48xlarge"]))
    services = [
        _svc(f"s{i}-{j}", n, cpu, mem, gpus, "h100")
        for i, ((cpu, mem, gpus), n) in enumerate(FIVE_LLMS)
        for j in range(12)
    ]
    assert len(services) > packing.HOST_LP_SERVICES and sum(s.tasks for s in services) > packing.HOST_LP_TASKS
    calls: list[tuple[int, object]] = []
    solve = host_lp.solve

    def spied(items: Any, *args: Any, **kwargs: Any) -> host_lp.Solution:
        calls.append((len(items), kwargs.get("exact_calls")))
        return solve(items, *args, **kwargs)

    monkeypatch.setattr(host_lp, "solve", spied)
    result = plan([p5], services)
    _assert_valid(result, services)
    assert calls == [(5, None)]
    assert result.instances == result.capacity("h100").instance_lower_bound == 1062
