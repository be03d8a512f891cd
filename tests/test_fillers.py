"""Tasks without a GPU balanced with a plan's GPUs onto hosts just above the bound (``planner.fillers``)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from test_balanced_hosts import _placed

from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.plan_inputs import capacity_input, service_input
from ecs_gpu_sharing.core.planner import ServiceInput, packing, plan
from ecs_gpu_sharing.core.planner.fillers import _units, with_fillers
from ecs_gpu_sharing.core.planner.hosts import Host, pack_hosts, plan_size
from ecs_gpu_sharing.core.planner.model import CapacityInput
from ecs_gpu_sharing.core.shape import TaskShape

from conftest import benchmarks_on_path


def _gpuless(seed: int, size: int = 1000) -> tuple[CapacityInput, list[ServiceInput]]:
    """``shaped_fleets.py``'s ``gpuless`` fleet: a fifth to a half of its services ask for no GPU."""
    with benchmarks_on_path():
        import shaped_fleets

    cap, services, _ = shaped_fleets.fleet("gpuless", seed, size)
    return cap, services


def _first_fit(cap: CapacityInput, services: list[ServiceInput]) -> tuple[list[Host], int]:
    """The plan without the host-level LP, as stage 2's hosts, and its bound on the hosts."""
    capacity = plan([cap], services, host_lp=False).capacities[0]
    hosts = [
        Host(
            g.count,
            [gpu for gpu in g.gpus if not gpu.idle],
            g.cpu_units_used,
            g.memory_mib_used,
            dict(g.tasks_without_gpu),
        )
        for g in capacity.instances
    ]
    return hosts, capacity.instance_lower_bound


def _gap(bound: int) -> int:
    """The most hosts the planner lets the balance try: the host-level LP's gap above ``bound``."""
    return math.floor(packing.HOST_LP_GAP * bound)


def test_tasks_without_a_gpu_balanced_with_the_gpus_need_fewer_hosts_than_first_fit() -> None:
    """Seed 4 at 1,000 tasks, eight H100s a host, host CPU binding: first fit needs 88 hosts over a bound of 74, and
    the same GPUs and tasks balance onto 75. Every task is placed once, each host within its room."""
    cap, services = _gpuless(4)
    assert cap.gpus_per_instance == 8
    hosts, bound = _first_fit(cap, services)
    assert (plan_size(hosts)[0], bound) == (88, 74)
    filled = with_fillers(cap, [(s, s.tasks) for s in services], hosts, bound, _gap(bound))
    assert plan_size(filled)[0] == 75
    assert plan_size(filled)[1] == plan_size(hosts)[1]  # the same GPUs
    # whole-GPU tasks count once per task in a plan's GPUs, not once per GPU
    assert _placed(filled, cap) == {s.name: s.tasks * max(s.whole_gpus, 1) for s in services}


def test_without_tasks_that_take_no_gpu_on_one_gpu_a_host_or_within_the_gap_the_plan_is_as_it_was() -> None:
    """Where no task is without a GPU, where a host holds one GPU (its contents choose its host), or where the plan is
    already within one host of the counts tried (2% above the bound), the plan is given back as it was."""
    cap, services = _gpuless(4)
    hosts, bound = _first_fit(cap, services)
    pairs = [(s, s.tasks) for s in services]
    with_gpus = [(s, n) for s, n in pairs if s.clients or s.whole_gpus]
    assert with_fillers(cap, with_gpus, hosts, bound, _gap(bound)) is hosts
    one_gpu = dataclasses.replace(cap, gpus_per_instance=1)
    assert with_fillers(one_gpu, pairs, hosts, bound, _gap(bound)) is hosts
    assert with_fillers(cap, pairs, hosts, plan_size(hosts)[0] - 1, _gap(plan_size(hosts)[0] - 1)) is hosts


def test_past_the_lps_exact_limits_a_balance_within_its_gap_spares_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 402 at 100,000 tasks (eight H100s a host, 132 services): first fit is 7,593 hosts over a bound of 6,339,
    which the host-level LP brought to 6,339 in about 3 s. Balanced, the plan is within the LP's 2% gap of its bound,
    and the LP does not run (``packing.host_lp_runs``)."""
    cap, services = _gpuless(402, 100_000)
    called: list[int] = []
    monkeypatch.setattr(packing, "_pack_host_lp", lambda *a, **k: called.append(1) or (None, 0))
    planned = plan([cap], services)
    bound = planned.instance_lower_bound
    assert bound == 6339 and bound < planned.instances <= packing.HOST_LP_GAP * bound
    assert not called
    from test_planner import _assert_valid

    _assert_valid(planned, services)


def test_within_the_lps_exact_limits_it_starts_from_the_balanced_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 4 at 1,000 tasks: the host-level LP runs (the plan is above its bound, and the fleet within the LP's exact
    limits), from the 75 hosts the balance found, not first fit's 88, and ends on the bound of 74."""
    cap, services = _gpuless(4)
    started: list[int] = []
    lp = packing._pack_host_lp

    def spied(capacity: CapacityInput, groups: object, kinds: object, best: list[Host], *rest: object) -> object:
        started.append(plan_size(best)[0])
        return lp(capacity, groups, kinds, best, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(packing, "_pack_host_lp", spied)
    planned = plan([cap], services)
    assert started == [75]
    assert (planned.instances, planned.instance_lower_bound) == (74, 74)
    from test_planner import _assert_valid

    _assert_valid(planned, services)


def test_a_plans_units_are_its_gpus_as_they_are_its_whole_gpu_tasks_and_its_tasks_without_a_gpu() -> None:
    """The units balanced: each kind of MPS GPU the plan fills, as many as it has (its CPU and memory its tasks'), each
    whole-GPU task as one unit of its GPUs, each task without a GPU as one of its own; packed again, every task once."""
    cap = capacity_input("l40s", host_facts(["g6e.12xlarge"]))  # four GPUs a host
    services = [
        service_input("llm", cap.name, TaskShape(4096, 16384, whole_gpus=2), 3, count_source="test"),
        service_input("embed", cap.name, TaskShape(1024, 4096, (6144,)), 10, count_source="test"),
        service_input("tokenizer", cap.name, TaskShape(2048, 2048), 5, count_source="test"),
    ]
    hosts, _ = _first_fit(cap, services)
    units = _units(hosts, [(s, s.tasks) for s in services])
    whole = [u for u in units if u.gpus and u.gpus[0].whole]
    assert [(len(u.gpus), u.count, u.cpu, u.mem) for u in whole] == [(2, 3, 4096, 16384)]
    assert [(u.count, u.without_gpu) for u in units if not u.gpus] == [(5, (("tokenizer", 1),))]
    mps = [u for u in units if u.gpus and not u.gpus[0].whole]
    assert sum(u.count for u in mps) == plan_size(hosts)[1] - 6  # the plan's busy GPUs less the whole-GPU tasks'
    assert sum(u.cpu * u.count for u in mps) == 10 * 1024 and sum(u.mem * u.count for u in mps) == 10 * 4096
    packed = pack_hosts(units, cap)
    assert _placed(packed, cap) == {"llm": 6, "embed": 10, "tokenizer": 5}  # a whole-GPU task on each of its GPUs
