"""The host-level LP in parts: past the exact LP's tasks and services, many services are dealt into parts of one mix."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from ecs_gpu_sharing.core import host_lp
from ecs_gpu_sharing.core.allocation import AllocationNote
from ecs_gpu_sharing.core.planner import lp_problem, packing, plan
from ecs_gpu_sharing.core.planner.ffd import normalized

from conftest import benchmarks_on_path


def _fleet(seed: int, tasks: int):  # type: ignore[no-untyped-def]
    with benchmarks_on_path():
        import fleet_generator
    return fleet_generator.generate(seed, tasks)


def _solved_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The items of each host-level LP the planner solves from now on."""
    sizes: list[int] = []
    solve = host_lp.solve

    def counted(items, *args, **kwargs):  # type: ignore[no-untyped-def]
        sizes.append(len(items))
        return solve(items, *args, **kwargs)

    monkeypatch.setattr(packing.host_lp, "solve", counted)
    return sizes


def test_the_services_are_dealt_into_parts_of_the_fleets_mix(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = _fleet(49, 40_000)  # 439 services on one L40S a host, each binding its own resource
    items, spec = lp_problem(fleet.capacity, [(s, s.tasks) for s in fleet.services])
    monkeypatch.setattr(packing, "SPLIT_SERVICES", 100)
    parts = packing._parts(items, spec)
    assert [len(p) for p in parts] == [88, 88, 88, 88, 87]
    assert sorted(i for p in parts for i in p) == list(range(len(items)))

    def binds(i: int) -> int:  # from the fleet's own figures, as a share of the host
        s, cap = fleet.services[i], fleet.capacity
        gpu, cpu, mem = normalized(s, cap)
        taken = (s.whole_gpus or gpu) / cap.gpus_per_instance, cpu, mem
        return taken.index(max(taken))

    mixes = [Counter(binds(i) for i in p) for p in parts]
    for resource in range(3):  # each part has as many services binding each resource as any other, or one fewer
        counts = [mix[resource] for mix in mixes]
        assert max(counts) - min(counts) <= 1


def test_past_the_exact_lp_two_parts_then_one_lp_from_their_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tuning seed 49 at 40,000 tasks, 439 services: one LP over all of them plans 22,272 hosts, two parts 22,158, and
    the LP over all of them started from the parts' plan 22,119."""
    from test_planner import _assert_valid

    fleet = _fleet(49, 40_000)
    sizes = _solved_sizes(monkeypatch)
    result = plan([fleet.capacity], fleet.services)
    _assert_valid(result, fleet.services)
    assert sizes == [220, 219, 439]
    assert result.instances <= 22_119
    sizes.clear()
    monkeypatch.setattr(packing, "SPLIT_SERVICES", 10_000)
    assert plan([fleet.capacity], fleet.services).instances >= 22_272
    assert sizes == [439]


def test_within_the_exact_lp_the_services_are_one_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = _fleet(2015, 1_000)  # 1,000 tasks: the LP with HiGHS's MILP pricings, whatever its services
    sizes = _solved_sizes(monkeypatch)
    monkeypatch.setattr(packing, "SPLIT_SERVICES", 5)
    plan([fleet.capacity], fleet.services)
    assert sizes and set(sizes) == {len(fleet.services)}


def test_a_plan_in_parts_keeps_isolation_groups_interfaces_and_whole_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of four services on small generated fleets (one, four and eight GPUs a host; whole-GPU tasks), with
    isolation groups (one on hosts of its own) and awsvpc tasks: every plan valid; after two parts the LP over all of
    them, after more, none. Not dealt first (``dealt``, tests/test_dealt.py): dealt over the hosts of a gap of 1.0, some
    of these fleets are planned on their bounds without the LP, parts or not."""
    from test_planner import _assert_valid

    for name, value in (("HOST_LP_TASKS", 0), ("HOST_LP_SERVICES", 0), ("HOST_LP_GAP", 1.0), ("SPLIT_SERVICES", 4)):
        monkeypatch.setattr(packing, name, value)
    monkeypatch.setattr(packing, "dealt", lambda *args: None)
    sizes = _solved_sizes(monkeypatch)
    dealt: list[tuple[int, list[int]]] = []  # (LPs solved before, each part's items)
    parts = packing._parts

    def recorded(*args):  # type: ignore[no-untyped-def]
        dealt.append((len(sizes), [len(p) for p in parts(*args)]))
        return parts(*args)

    monkeypatch.setattr(packing, "_parts", recorded)
    for seed in range(4):
        fleet = _fleet(seed, 300)
        varied = [
            dataclasses.replace(
                s,
                shape=dataclasses.replace(s.shape, network_interfaces=i % 2),
                allocation=AllocationNote(1, 1, shared_failure="-", isolation_group=f"g{i % 3}", isolate_host=i == 1)
                if i % 3
                else None,
            )
            for i, s in enumerate(fleet.services)
        ]
        awsvpc = dataclasses.replace(fleet.capacity, task_network_interfaces=12)
        for capacity, services in ((fleet.capacity, fleet.services), (awsvpc, varied)):
            _assert_valid(plan([capacity], services), services)
    assert {len(p) for _, p in dealt} & {2} and {len(p) for _, p in dealt} & {3, 4, 5}
    for before, part_sizes in dealt:
        solved = sizes[before : before + len(part_sizes) + 1]
        assert solved[: len(part_sizes)] == part_sizes and max(part_sizes) <= 4
        if len(part_sizes) <= packing.WHOLE_AFTER_PARTS:
            assert solved[-1] == sum(part_sizes)  # then the LP over all of them
        else:
            assert len(solved) == len(part_sizes) or solved[-1] <= 4  # no LP over all: the next is another's
