"""The planner: exact small cases, lower bounds, and properties over random fleets (hypothesis)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_gpu_sharing import PlanError
from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.mps import MAX_CLIENTS_PER_GPU
from ecs_gpu_sharing.core.planner import CapacityInput, Plan, ServiceInput, bin_lower_bound, plan
from ecs_gpu_sharing.core.shape import TaskShape

from conftest import REPO

L4 = CapacityInput.from_facts("l4", host_facts(["g6.2xlarge"]))  # 1 GPU, 22307 usable, 8192 units, 30801 MiB
L40S = CapacityInput.from_facts("l40s", host_facts(["g6e.12xlarge"]))  # 4 GPUs


def si(name: str, cap: str, count: int, cpu: int, mem: int, mib: tuple[int, ...], **kw: int) -> ServiceInput:
    whole = kw.pop("whole_gpus", 0)
    return ServiceInput(name, cap, TaskShape(cpu, mem, mib, whole), count, **kw)


def svc(name: str, count: int, *mib: int, cpu: int = 256, mem: int = 512, cap: str = "l4") -> ServiceInput:
    return si(name, cap, count, cpu, mem, tuple(mib))


def test_identical_tasks_fill_gpus_by_memory() -> None:
    result = plan([L4], [svc("emb", 7, 6000)])  # 3 per GPU
    assert result.fits and result.instances == 3 and result.gpus == 3
    assert [len(g.tasks) for h in result.capacity("l4").instances for g in h.gpus] == [3, 3, 1]


def test_a_tasks_containers_stay_on_one_gpu() -> None:
    result = plan([L40S], [svc("pair", 3, 10000, 10000, cap="l40s")])
    for host in result.capacity("l40s").instances:
        for gpu in host.gpus:
            assert gpu.used_gpu_memory_mib in (0, 20000, 40000)
            assert gpu.clients == 2 * len(gpu.tasks)


def test_small_tasks_fill_the_gaps_of_large_ones() -> None:
    result = plan([L4], [svc("big", 2, 14000), svc("small", 2, 6000)])
    assert result.gpus == 2 and result.gpu_lower_bound == 2


def test_host_cpu_binds() -> None:
    result = plan([L4], [svc("cpu", 4, 1000, cpu=4096)])  # 2 per 8192-unit host
    assert result.instances == 2
    assert all(h.cpu_units_used <= L4.host_cpu_units for h in result.capacity("l4").instances)


def test_host_memory_binds() -> None:
    result = plan([L4], [svc("mem", 3, 1000, mem=16000)])  # one per host of 30801 MiB
    assert result.instances == 3


def test_mps_client_limit_caps_a_gpu() -> None:
    result = plan([L4], [svc("tiny", 100, 100, cpu=64, mem=64)])
    clients = [g.clients for h in result.capacity("l4").instances for g in h.gpus]
    assert max(clients) == MAX_CLIENTS_PER_GPU and result.gpus == 3 and result.gpu_lower_bound == 3


def test_whole_gpu_tasks_take_gpus_exclusively() -> None:
    whole = si("whole", "l40s", 3, 1024, 1024, (), whole_gpus=1)
    result = plan([L40S], [whole, svc("mps", 2, 1000, cap="l40s")])
    gpus = [g for h in result.capacity("l40s").instances for g in h.gpus if g.tasks]
    assert sum(1 for g in gpus if g.whole) == 3
    assert all(len(g.tasks) == 1 for g in gpus if g.whole)
    assert result.gpus == 4 and result.instances == 1


def test_a_task_larger_than_a_gpu_is_unplaced_with_the_reason() -> None:
    result = plan([L4], [svc("huge", 2, 30000)])
    assert not result.fits and result.placed == {"huge": 0}
    assert "30000 MiB of GPU memory on one GPU, more than the 22307 MiB usable" in result.unplaced_of("huge")[0].reason


def test_max_instances_bounds_the_plan_and_reports_what_is_needed() -> None:
    bounded = CapacityInput(**{**L4.__dict__, "max_instances": 2})
    result = plan([bounded], [svc("emb", 9, 6000)])
    cap = result.capacity("l4")
    assert len(cap.instances) == 2 and result.placed == {"emb": 6} and cap.instances_needed == 3


def test_surge_plans_desired_times_max_percent() -> None:
    services = [svc("emb", 3, 6000), si("r", "l4", 3, 256, 512, (6000,), max_percent=150)]
    assert plan([L4], services, surge=True).counts == {"emb": 6, "r": 4}


def test_zero_desired_count_plans_nothing() -> None:
    result = plan([L4], [svc("off", 0, 6000)])
    assert result.instances == 0 and result.fits


def test_refuses_a_service_on_a_capacity_that_is_not_planned() -> None:
    with pytest.raises(PlanError, match="names capacity 'h100', which is not among the planned capacities \\(l4\\)"):
        plan([L4], [svc("x", 1, 100, cap="h100")])


def test_bin_lower_bound() -> None:
    assert bin_lower_bound({}, 100) == 0
    assert bin_lower_bound({60: 3}, 100) == 3  # each item needs its own bin
    assert bin_lower_bound({50: 4}, 100) == 2
    assert bin_lower_bound({512: 41}, 20840) == 2  # 20840 holds 40 items of 512, not 40.7


def _plan_json(result: Plan) -> str:
    return json.dumps(
        [[[[(t.service, t.replica) for t in g.tasks] for g in h.gpus] for h in c.instances] for c in result.capacities]
    )


shapes = st.lists(
    st.tuples(
        st.integers(0, 30),  # desired count
        st.lists(st.integers(1, 22000), min_size=1, max_size=3),  # container MiB
        st.sampled_from([128, 256, 1024, 4096, 9000]),  # cpu units
        st.sampled_from([128, 1024, 8192, 40000]),  # memory MiB
        st.sampled_from(["l4", "l40s"]),
    ),
    min_size=1,
    max_size=8,
)


def _services(drawn: list[tuple[int, list[int], int, int, str]]) -> list[ServiceInput]:
    return [si(f"s{i}", cap, n, cpu, mem, tuple(mib)) for i, (n, mib, cpu, mem, cap) in enumerate(drawn)]


@settings(max_examples=60, deadline=None)
@given(shapes, st.one_of(st.none(), st.integers(1, 5)))
def test_plans_never_exceed_a_gpu_or_a_host(
    drawn: list[tuple[int, list[int], int, int, str]], bound: int | None
) -> None:
    caps = [CapacityInput(**{**c.__dict__, "max_instances": bound}) for c in (L4, L40S)]
    services = _services(drawn)
    result = plan(caps, services)
    by_name = {s.name: s for s in services}
    seen: dict[tuple[str, int], int] = {}
    for cap in result.capacities:
        c = cap.capacity
        if bound is not None:
            assert len(cap.instances) <= bound
        for host in cap.instances:
            assert host.cpu_units_used <= c.host_cpu_units and host.memory_mib_used <= c.host_memory_mib
            tasks = [t for g in host.gpus for t in g.tasks if not g.whole] + host.tasks_without_gpu
            assert host.cpu_units_used == sum(by_name[t.service].cpu_units for t in tasks)
            for gpu in host.gpus:
                assert gpu.used_gpu_memory_mib <= c.usable_gpu_memory_mib
                assert gpu.clients <= MAX_CLIENTS_PER_GPU
                assert gpu.used_gpu_memory_mib == sum(by_name[t.service].task_gpu_budget_mib for t in gpu.tasks)
                for t in gpu.tasks:
                    seen[(t.service, t.replica)] = seen.get((t.service, t.replica), 0) + 1
        for u in cap.unplaced:
            seen[(u.service, u.replica)] = seen.get((u.service, u.replica), 0) + 1
    expected = {(s.name, r) for s in services for r in range(s.tasks)}
    assert set(seen) == expected and all(n == 1 for n in seen.values()), "every replica placed once or unplaced"
    assert result.gpus >= result.gpu_lower_bound or not result.fits


@settings(max_examples=25, deadline=None)
@given(shapes)
def test_the_same_input_gives_the_same_plan(drawn: list[tuple[int, list[int], int, int, str]]) -> None:
    services = _services(drawn)
    assert _plan_json(plan([L4, L40S], services)) == _plan_json(plan([L40S, L4], list(reversed(services))))


def test_benchmark_script_runs_and_reports_ratios() -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/plan_benchmark.py", "--sizes", "200"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    row = out.strip().splitlines()[-1].split("|")
    assert row[1].strip() == "200" and float(row[6]) >= 1.0 and float(row[9]) >= 1.0
