"""The planner: exact small cases, lower bounds, and properties over random fleets (hypothesis)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import math
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_gpu_sharing import PlanError
from ecs_gpu_sharing.core.allocation import AllocationNote
from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.mps import MAX_CLIENTS_PER_GPU
from ecs_gpu_sharing.core.plan_inputs import capacity_input, service_input
from ecs_gpu_sharing.core.planner import (
    CapacityInput,
    GpuLoad,
    Plan,
    ServiceInput,
    bin_lower_bound,
    interfaces_used,
    plan,
    tasks_on_a_host,
)
from ecs_gpu_sharing.core.shape import TaskShape

from conftest import FIVE_LLMS, REPO, benchmarks_on_path

L4 = capacity_input("l4", host_facts(["g6.2xlarge"]))  # 1 GPU, 22307 usable, 8192 units, 30801 MiB
L40S = capacity_input("l40s", host_facts(["g6e.12xlarge"]))  # 4 GPUs


def si(name: str, cap: str, count: int, cpu: int, mem: int, mib: tuple[int, ...], **kw: int) -> ServiceInput:
    whole = kw.pop("whole_gpus", 0)
    return ServiceInput(name, cap, TaskShape(cpu, mem, mib, whole), count, **kw)


def svc(name: str, count: int, *mib: int, cpu: int = 256, mem: int = 512, cap: str = "l4") -> ServiceInput:
    return si(name, cap, count, cpu, mem, tuple(mib))


def _gpus(result: Plan, cap: str = "l4") -> list[GpuLoad]:
    """Every GPU of the plan, one entry per instance (groups of identical instances expanded)."""
    return [gpu for g in result.capacity(cap).instances for _ in range(g.count) for gpu in g.gpus]


def test_identical_tasks_fill_gpus_by_memory() -> None:
    result = plan([L4], [svc("emb", 7, 6000)])  # 3 per GPU
    assert result.fits and result.instances == 3 and result.gpus == 3
    assert sorted(n for gpu in _gpus(result) for _, n in gpu.tasks) == [1, 3, 3]
    assert result.capacity("l4").optimal


def test_identical_instances_are_one_group() -> None:
    result = plan([L4], [svc("emb", 3000, 6000)])
    (group,) = result.capacity("l4").instances
    assert group.count == 1000 and group.gpus[0].tasks == (("emb", 3),)


def test_a_tasks_containers_stay_on_one_gpu() -> None:
    result = plan([L40S], [svc("pair", 3, 10000, 10000, cap="l40s")])
    for gpu in _gpus(result, "l40s"):
        assert gpu.used_gpu_memory_mib in (0, 20000, 40000)
        assert gpu.clients == 2 * sum(n for _, n in gpu.tasks)


def test_small_tasks_fill_the_gaps_of_large_ones() -> None:
    result = plan([L4], [svc("big", 2, 14000), svc("small", 2, 6000)])
    assert result.gpus == 2 and result.gpu_lower_bound == 2


def test_host_cpu_binds() -> None:
    result = plan([L4], [svc("cpu", 4, 1000, cpu=4096)])  # 2 per 8192-unit host
    assert result.instances == 2 and result.capacity("l4").optimal
    assert all(h.cpu_units_used <= L4.host_cpu_units for h in result.capacity("l4").instances)


def test_host_memory_binds() -> None:
    result = plan([L4], [svc("mem", 3, 1000, mem=16000)])  # one per host of 30801 MiB
    assert result.instances == 3


def test_one_shape_is_planned_optimally_where_rounding_defeats_the_volume_bound() -> None:
    # 3000 CPU units a task: 2 per 8192-unit host, though 8192 / 3000 = 2.7; the one-shape bound knows that.
    result = plan([L4], [svc("cpu", 9, 1000, cpu=3000)])
    cap = result.capacity("l4")
    assert (result.instances, cap.instance_lower_bound, cap.optimal) == (5, 5, True)


def test_mps_client_limit_caps_a_gpu() -> None:
    result = plan([L4], [svc("tiny", 100, 100, cpu=64, mem=64)])
    assert max(gpu.clients for gpu in _gpus(result)) == MAX_CLIENTS_PER_GPU
    assert result.gpus == 3 and result.gpu_lower_bound == 3 and result.capacity("l4").optimal


def test_whole_gpu_tasks_take_gpus_exclusively() -> None:
    whole = si("whole", "l40s", 3, 1024, 1024, (), whole_gpus=1)
    result = plan([L40S], [whole, svc("mps", 2, 1000, cap="l40s")])
    gpus = [g for g in _gpus(result, "l40s") if not g.idle]
    assert sum(1 for g in gpus if g.whole) == 3
    assert all(g.tasks == (("whole", 1),) for g in gpus if g.whole)
    assert result.gpus == 4 and result.instances == 1


def test_tasks_without_a_gpu_take_host_room_only() -> None:
    cpu_only = si("sidecar", "l4", 4, 1024, 1024, ())
    result = plan([L4], [cpu_only, svc("emb", 2, 6000)])
    assert sum(g.count * n for g in result.capacity("l4").instances for _, n in g.tasks_without_gpu) == 4
    assert result.instances == 1


def test_a_task_larger_than_a_gpu_is_unplaced_with_the_reason() -> None:
    result = plan([L4], [svc("huge", 2, 30000)])
    assert not result.fits and result.placed == {"huge": 0}
    (unplaced,) = result.unplaced_of("huge")
    assert unplaced.tasks == 2 and "30000 MiB of GPU memory on one GPU, more than the 22307 MiB" in unplaced.reason


def test_a_container_budget_below_a_measured_cuda_context_is_unplaced_with_the_reason() -> None:
    """docs/gpu-measured.md: on an H200 (driver 580) a CUDA context takes 514 MiB of an MPS client's pinned limit, and
    under a limit of 512 MiB the context itself is refused. A budget at or below the context can never run there."""
    h200 = capacity_input("h200", host_facts(["p5e.48xlarge"]))
    assert h200.cuda_context_mib == 514 and "gpu-measured.md" in h200.cuda_context_source
    result = plan([h200], [svc("tiny", 2, 4096, 514, cap="h200"), svc("fine", 2, 4096, 515, cap="h200")])
    assert result.placed == {"tiny": 0, "fine": 2}
    (unplaced,) = result.unplaced_of("tiny")
    assert "a container's GPU budget of 514 MiB cannot hold a CUDA context and a model" in unplaced.reason
    assert (
        "the context alone takes 514 MiB of an MPS client's limit on a p5e.48xlarge's GPU (measured" in unplaced.reason
    )
    # A GPU without a measured context is not judged by it.
    assert L4.cuda_context_mib == 0 and plan([L4], [svc("small", 1, 256)]).placed == {"small": 1}


def test_max_instances_bounds_the_plan_and_reports_what_is_needed() -> None:
    bounded = CapacityInput(**{**L4.__dict__, "max_instances": 2})
    result = plan([bounded], [svc("emb", 9, 6000)])
    cap = result.capacity("l4")
    assert cap.instance_count == 2 and result.placed == {"emb": 6} and cap.instances_needed == 3


def test_surge_plans_desired_times_max_percent() -> None:
    services = [svc("emb", 3, 6000), si("r", "l4", 3, 256, 512, (6000,), max_percent=150)]
    assert plan([L4], services, surge=True).counts == {"emb": 6, "r": 4}


def test_zero_desired_count_plans_nothing() -> None:
    result = plan([L4], [svc("off", 0, 6000)])
    assert result.instances == 0 and result.fits


def test_on_one_gpu_hosts_isolation_groups_are_bounded_each_on_its_own_hosts() -> None:
    """A host of one GPU holds one isolation group's GPU tasks, so where every task takes a GPU the groups never share
    a host and the plan's bound is their own bounds summed. Two groups of three tasks of 3,000 CPU units (two a host):
    four hosts, where the CPU summed over both says three, and four GPUs, where their memory says two. A task without a
    GPU may ride on any group's host: there the groups share a partition, and that task takes no host of its own."""

    def grouped(name: str, group: str, count: int, cap: str = "l4") -> ServiceInput:
        note = AllocationNote(1, 1, shared_failure="-", isolation_group=group)
        return si(name, cap, count, 3000, 1024, (4096,), allocation=note)  # type: ignore[arg-type]

    apart = plan([L4], [grouped("x", "gx", 3), grouped("y", "gy", 3)]).capacity("l4")
    assert (apart.instance_count, apart.instance_lower_bound, apart.optimal) == (4, 4, True)
    assert apart.gpu_lower_bound == 4  # each of those hosts uses its one GPU
    riding = plan([L4], [grouped("x", "gx", 3), grouped("y", "gy", 3), svc("z", 1, cpu=128)]).capacity("l4")
    assert riding.instance_count == 4 and riding.instance_lower_bound <= 4
    shared = plan([L40S], [grouped("x", "gx", 3, "l40s"), grouped("y", "gy", 3, "l40s")])  # four GPUs: one host
    assert shared.instances == 1 and shared.capacity("l40s").optimal


def test_refuses_a_service_on_a_capacity_that_is_not_planned() -> None:
    with pytest.raises(PlanError, match="names capacity 'h100', which is not among the planned capacities \\(l4\\)"):
        plan([L4], [svc("x", 1, 100, cap="h100")])


def test_bin_lower_bound() -> None:
    assert bin_lower_bound({}, 100) == 0
    assert bin_lower_bound({60: 3}, 100) == 3  # each item needs its own bin
    assert bin_lower_bound({50: 4}, 100) == 2
    assert bin_lower_bound({512: 41}, 20840) == 2  # 20840 holds 40 items of 512, not 40.7


def _fewest_bins(items: list[int], capacity: int) -> int:
    """The fewest bins of ``capacity`` that hold ``items``, by search (a few items only)."""
    best = len(items)

    def place(i: int, bins: list[int]) -> None:
        nonlocal best
        if len(bins) >= best:
            return
        if i == len(items):
            best = len(bins)
            return
        for b in range(len(bins)):
            if bins[b] + items[i] <= capacity:
                bins[b] += items[i]
                place(i + 1, bins)
                bins[b] -= items[i]
        place(i + 1, [*bins, items[i]])

    place(0, [])
    return best


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.integers(1, 100), st.integers(0, 3), max_size=5), st.integers(40, 100))
def test_bin_lower_bound_is_martello_toth_l2_and_never_above_the_optimum(sizes: dict[int, int], capacity: int) -> None:
    """The bound, read from prefix sums, equals L2 written from its definition (each threshold k: items that fit
    nothing of size k, items over half, and the volume from k to half less the room those leave), and no instance
    needs fewer bins than it says."""
    items = sorted(size for size, n in sizes.items() for _ in range(n))
    if any(size > capacity for size in items):
        return
    g = 0
    for size in items:
        g = math.gcd(g, size)
    cap = capacity - capacity % g if g else capacity
    l2 = math.ceil(sum(items) / cap) if items else 0
    for k in [0, *(size for size in items if size * 2 <= cap)]:
        j1 = [s for s in items if s > cap - k]
        j2 = [s for s in items if cap - k >= s > cap / 2]
        j3 = sum(s for s in items if k <= s <= cap / 2)
        l2 = max(l2, len(j1) + len(j2) + max(0, math.ceil((j3 - (len(j2) * cap - sum(j2))) / cap)))
    assert bin_lower_bound(sizes, capacity) == l2
    assert l2 <= _fewest_bins(sorted(items, reverse=True), capacity)


def test_a_million_tasks_cost_what_their_shapes_cost() -> None:
    result = plan([L4, L40S], [svc(f"s{i}", 50_000, 1000 + 700 * i, cap="l4" if i % 2 else "l40s") for i in range(20)])
    assert result.fits and sum(len(c.instances) for c in result.capacities) < 200


def _plan_json(result: Plan) -> str:
    return json.dumps(
        [
            [(g.count, [(gpu.tasks, gpu.whole) for gpu in g.gpus], g.tasks_without_gpu) for g in c.instances]
            for c in result.capacities
        ]
    )


shapes = st.lists(
    st.tuples(
        st.integers(0, 30),  # desired count
        st.lists(st.integers(1, 22000), min_size=1, max_size=3),  # container MiB
        st.sampled_from([128, 256, 1024, 4096, 9000]),  # cpu units
        st.sampled_from([128, 1024, 8192, 40000]),  # memory MiB
        st.sampled_from(["l4", "l40s"]),
        st.sampled_from([0, 0, 0, 1, 2]),  # whole GPUs (then no MPS budgets)
    ),
    min_size=1,
    max_size=8,
)


def _services(drawn: list[tuple[int, list[int], int, int, str, int]]) -> list[ServiceInput]:
    return [
        si(f"s{i}", cap, n, cpu, mem, () if whole else tuple(mib), whole_gpus=whole)
        for i, (n, mib, cpu, mem, cap, whole) in enumerate(drawn)
    ]


@settings(max_examples=80, deadline=None)
@given(shapes, st.one_of(st.none(), st.integers(1, 5)))
def test_plans_never_exceed_a_gpu_or_a_host(
    drawn: list[tuple[int, list[int], int, int, str, int]], bound: int | None
) -> None:
    caps = [CapacityInput(**{**c.__dict__, "max_instances": bound}) for c in (L4, L40S)]
    services = _services(drawn)
    result = plan(caps, services)
    _assert_valid(result, services, bound)


def _assert_valid(result: Plan, services: list[ServiceInput], bound: int | None = None) -> None:
    """No GPU or host over its limits, every task placed once or reported unplaced, no plan below its bounds."""
    by_name = {s.name: s for s in services}
    seen: dict[str, int] = {}
    for cap in result.capacities:
        c = cap.capacity
        if bound is not None:
            assert cap.instance_count <= bound
        for group in cap.instances:
            assert group.count >= 1 and len(group.gpus) == c.gpus_per_instance
            assert group.cpu_units_used <= c.host_cpu_units and group.memory_mib_used <= c.host_memory_mib
            on_host: dict[str, int] = dict(group.tasks_without_gpu)
            for gpu in group.gpus:
                assert gpu.used_gpu_memory_mib <= c.usable_gpu_memory_mib
                assert gpu.clients <= MAX_CLIENTS_PER_GPU
                if gpu.whole:
                    continue
                assert gpu.used_gpu_memory_mib == sum(by_name[n].task_gpu_budget_mib * k for n, k in gpu.tasks)
                for name, k in gpu.tasks:
                    on_host[name] = on_host.get(name, 0) + k
            whole = {name for gpu in group.gpus if gpu.whole for name, _ in gpu.tasks}
            for name in whole:  # a whole-GPU task appears on each of its GPUs
                on_host[name] = sum(1 for gpu in group.gpus if gpu.whole and gpu.tasks[0][0] == name) // max(
                    by_name[name].whole_gpus, 1
                )
            assert group.cpu_units_used == sum(by_name[n].cpu_units * k for n, k in on_host.items())
            assert group.memory_mib_used == sum(by_name[n].memory_mib * k for n, k in on_host.items())
            for gpu in group.gpus:  # no GPU holds two isolation groups
                assert len({by_name[n].isolation_group for n, _ in gpu.tasks}) <= 1
            for name, k in on_host.items():
                seen[name] = seen.get(name, 0) + k * group.count
        for u in cap.unplaced:
            seen[u.service] = seen.get(u.service, 0) + u.tasks
    expected = {s.name: s.tasks for s in services if s.tasks}
    assert seen == expected, "every task placed once or reported unplaced"
    if result.fits:
        assert result.gpus >= result.gpu_lower_bound and result.instances >= result.instance_lower_bound


@settings(max_examples=25, deadline=None)
@given(shapes)
def test_the_same_input_gives_the_same_plan(drawn: list[tuple[int, list[int], int, int, str, int]]) -> None:
    services = _services(drawn)
    assert _plan_json(plan([L4, L40S], services)) == _plan_json(plan([L40S, L4], list(reversed(services))))


def test_benchmark_script_runs_and_compares_with_ffd() -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/plan_benchmark.py", "--sizes", "200", "--no-cli"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split("|") for line in out.strip().splitlines()[2:]]
    assert [r[1].strip() for r in rows] == [
        "mixed",
        "four-l4",
        "one-shape",
        "tiny",
        "cpu-bound",
        "memory-bound",
        "embedders",
        "llms",
    ]
    for r in rows:
        ratio, ffd_ratio = float(r[7]), float(r[13])
        assert 1.0 <= ratio <= ffd_ratio, r  # never below a lower bound, never worse than plain FFD here
    assert float(rows[2][7]) == 1.0 and float(rows[3][7]) == 1.0  # the cases a bound settles are optimal


def _no_host_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host-level LP off: no partition within its tasks or services, and no gap past which it runs all the same."""
    from ecs_gpu_sharing.core.planner import packing

    monkeypatch.setattr(packing, "HOST_LP_TASKS", 0)
    monkeypatch.setattr(packing, "HOST_LP_SERVICES", 0)
    monkeypatch.setattr(packing, "HOST_LP_GAP", math.inf)


def _benchmark_ffd() -> object:
    """The benchmark's first-fit decreasing (benchmarks/ffd.py): an independent implementation of the baseline."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_ffd", REPO / "benchmarks" / "ffd.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ffd


@settings(max_examples=80, deadline=None)
@given(shapes)
def test_the_planner_never_uses_more_instances_than_first_fit_decreasing(
    drawn: list[tuple[int, list[int], int, int, str, int]],
) -> None:
    """#24: where host CPU or memory binds, filling GPUs first strands hosts; first-fit decreasing by task is one of
    the planner's strategies, so the plan is never larger than the benchmark's independent FFD."""
    ffd = _benchmark_ffd()
    services = _services(drawn)
    result = plan([L4, L40S], services)
    for cap in result.capacities:
        mine = [s for s in services if s.capacity == cap.capacity.name and not task_problems_of(s, cap.capacity)]
        if not mine or len(mine) != len([s for s in services if s.capacity == cap.capacity.name]):
            continue  # a task that can never fit is reported unplaced; FFD has nothing to compare
        hosts, _ = ffd(cap.capacity, mine)  # type: ignore[operator]
        assert cap.instance_count <= hosts, (cap.capacity.name, cap.instance_count, hosts)


def task_problems_of(service: ServiceInput, capacity: CapacityInput) -> list[object]:
    from ecs_gpu_sharing.core.task_rules import task_problems

    return list(task_problems(service, capacity))


# --- host CPU and memory bind: FFD in the binding order, and the small-fleet search -------------------------


def _svc(name: str, tasks: int, cpu: int, mem: int, budgets: tuple[int, ...], cap: str) -> ServiceInput:
    return service_input(name, cap, TaskShape(cpu, mem, budgets), tasks, count_source="desired count")


def test_where_host_memory_and_cpu_bind_the_binding_order_packs_pairs_that_gpu_order_misses() -> None:
    # On g6.xlarge (4 vCPU, 15401 MiB), a's tasks pair with b's (CPU 4096, memory 10624) but b's never with b's:
    # ordered by GPU budget, first-fit pairs a with a and leaves every b alone (10 hosts); 7 is the optimum.
    one = capacity_input("l4", host_facts(["g6.xlarge"]))
    services = [_svc("a", 7, 2048, 1536, (4352, 4352), "l4"), _svc("b", 7, 2048, 9088, (2048, 2048), "l4")]
    result = plan([one], services)
    assert result.instances == 7 and result.capacity("l4").optimal


def test_a_small_fleet_is_searched_for_fewer_hosts_than_first_fit_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    from ecs_gpu_sharing.core.planner import search

    l40s = capacity_input("l40s", host_facts(["g6e.2xlarge"]))
    services = [
        _svc("a", 6, 2048, 11648, (2176, 2176), "l40s"),
        _svc("b", 4, 512, 12800, (1024,), "l40s"),
    ]
    _no_host_lp(monkeypatch)  # the host-level LP finds it too: this is the search's
    assert plan([l40s], services).instances == 2  # the search finds the two-host placement
    monkeypatch.setattr(search, "SEARCH_TASKS", 0)
    assert plan([l40s], services).instances == 3  # first-fit, in every order, needs three


def test_the_host_level_lp_finds_what_first_fit_misses_and_proves_it_optimal(monkeypatch: pytest.MonkeyPatch) -> None:
    """#32: the LP's patterns pair a's tasks with b's where first-fit in every order needs a third host; its bound
    (Farley's, from the LP) says two is the optimum."""
    from ecs_gpu_sharing.core.planner import search

    l40s = capacity_input("l40s", host_facts(["g6e.2xlarge"]))
    services = [_svc("a", 6, 2048, 11648, (2176, 2176), "l40s"), _svc("b", 4, 512, 12800, (1024,), "l40s")]
    monkeypatch.setattr(search, "SEARCH_TASKS", 0)
    result = plan([l40s], services)
    _assert_valid(result, services)
    assert result.instances == 2 and result.capacity("l40s").optimal
    _no_host_lp(monkeypatch)
    assert plan([l40s], services).instances == 3


def test_past_the_lps_tasks_a_fleet_of_few_services_still_gets_the_host_level_lp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host-level LP's cost grows with the services, not the tasks: past HOST_LP_TASKS a partition of at most
    HOST_LP_SERVICES services still gets it. Here it plans 1,062 hosts, its bound, where the other strategies need
    1,214; with one service fewer allowed than the fleet has (and no gap past which it runs all the same), the LP does
    not run."""
    from ecs_gpu_sharing.core import host_lp
    from ecs_gpu_sharing.core.planner import packing

    p5 = capacity_input("h100", host_facts(["p5.48xlarge"]))
    # each of FIVE_LLMS at twelve times its count: 23,976 tasks, past HOST_LP_TASKS
    services = [_svc(f"s{i}", 12 * n, cpu, mem, gpus, "h100") for i, ((cpu, mem, gpus), n) in enumerate(FIVE_LLMS)]
    assert sum(s.tasks for s in services) > packing.HOST_LP_TASKS >= packing.HOST_LP_SERVICES >= len(services)
    result = plan([p5], services)
    _assert_valid(result, services)
    assert result.instances == result.capacity("h100").instance_lower_bound == 1062
    monkeypatch.setattr(packing, "HOST_LP_SERVICES", len(services) - 1)
    monkeypatch.setattr(packing, "HOST_LP_GAP", math.inf)  # past both, only far above its bound (the next test)
    monkeypatch.setattr(host_lp, "solve", lambda *a, **k: pytest.fail("the LP ran"))
    assert plan([p5], services).instances == 1214
    assert packing.host_lp_exact(packing.HOST_LP_TASKS, 1000)
    assert not packing.host_lp_exact(packing.HOST_LP_TASKS + 1, len(services))


def test_past_its_tasks_and_services_the_lp_runs_where_the_plan_is_far_above_its_bound_without_exact_pricings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past HOST_LP_TASKS and HOST_LP_SERVICES the LP runs only where the plan is more than HOST_LP_GAP above its
    bound, and without HiGHS's MILP pricings (``exact_calls=0``: they cost seconds over 150 services; the searches and
    the decomposition over the GPUs, whose work is counted in nodes and rounds, still price). Held-out seed 1008 at
    1,000 tasks (each service binding its own resource), the limits set to 0: 60
    hosts over a bound of 58 without the LP (3.4% above), 58 with it; where the gap allowed is 60 / 58, it does not
    run. Fails where the LP runs past the limits whatever the gap, or with its MILP pricings. The tasks are not dealt
    first, nor the GPU stage's GPUs balanced onto the gap's hosts (tests/test_dealt.py): either brings this fleet within
    the gap without the LP."""
    from ecs_gpu_sharing.core import host_lp
    from ecs_gpu_sharing.core.planner import exact_gpus, packing

    with benchmarks_on_path():
        import fleet_generator

    fleet = fleet_generator.generate(1008, 1000)
    monkeypatch.setattr(packing, "HOST_LP_TASKS", 0)
    monkeypatch.setattr(packing, "HOST_LP_SERVICES", 0)
    monkeypatch.setattr(packing, "dealt", lambda *args: None)
    monkeypatch.setattr(exact_gpus, "pack_hosts_scaled", lambda *args: None)
    calls: list[object] = []
    solve = host_lp.solve

    def spied(*args: Any, **kwargs: Any) -> host_lp.Solution:
        calls.append(kwargs.get("exact_calls"))
        return solve(*args, **kwargs)

    monkeypatch.setattr(host_lp, "solve", spied)
    result = plan([fleet.capacity], fleet.services)
    _assert_valid(result, fleet.services)
    assert calls == [0] and result.instances == result.instance_lower_bound == 58
    assert result.capacities[0].instances_without_lp == 60
    calls.clear()
    monkeypatch.setattr(packing, "HOST_LP_GAP", 60 / 58)
    assert plan([fleet.capacity], fleet.services).instances == 60 and calls == []


def test_past_its_limits_on_one_gpu_hosts_the_lp_proves_its_plan_with_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the limits the one-GPU search prices without HiGHS's MILP: held-out seed 1034's 100,000-task fleet (136
    services, one L40S a host, each binding its own resource) cut to 1,000 tasks, the limits set to 0, plans 786 hosts
    over a bound of 786 (793 without the LP). With the greedy's pricings alone it planned 788 over 731. Fails where
    the LP past its limits leaves the searches out."""
    from ecs_gpu_sharing.core.planner import packing

    with benchmarks_on_path():
        import fleet_generator

    fleet = fleet_generator.generate(1034, 100_000)
    services = [dataclasses.replace(s, tasks=max(1, round(s.tasks / 100))) for s in fleet.services]
    monkeypatch.setattr(packing, "HOST_LP_TASKS", 0)
    monkeypatch.setattr(packing, "HOST_LP_SERVICES", 0)
    result = plan([fleet.capacity], services)
    _assert_valid(result, services)
    assert result.instances == result.instance_lower_bound == 786
    assert result.capacities[0].instances_without_lp == 793


def test_a_plan_says_what_it_would_need_without_the_host_level_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    """The placement model's scaled-down replays take their ratio over the planner without the LP on both fleets:
    ``instances_without_lp`` is what ``host_lp=False`` plans, whether the LP won (three against two), with the search
    on or off, and the LP never runs when it is left out."""
    from ecs_gpu_sharing.core import host_lp
    from ecs_gpu_sharing.core.planner import search

    l40s = capacity_input("l40s", host_facts(["g6e.2xlarge"]))
    services = [_svc("a", 6, 2048, 11648, (2176, 2176), "l40s"), _svc("b", 4, 512, 12800, (1024,), "l40s")]
    with_lp = plan([l40s], services).capacity("l40s")
    assert with_lp.instance_count == with_lp.instances_without_lp == 2  # the search finds two without the LP
    monkeypatch.setattr(search, "SEARCH_TASKS", 0)
    with_lp = plan([l40s], services).capacity("l40s")
    assert (with_lp.instance_count, with_lp.instances_without_lp) == (2, 3)
    monkeypatch.setattr(host_lp, "solve", lambda *a, **k: pytest.fail("the LP ran"))
    without = plan([l40s], services, host_lp=False).capacity("l40s")
    assert without.instance_count == without.instances_without_lp == 3


def test_the_search_gives_up_within_its_budget_and_the_plan_found_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    from ecs_gpu_sharing.core.planner import search

    l40s = capacity_input("l40s", host_facts(["g6e.2xlarge"]))
    services = [_svc("a", 6, 2048, 11648, (2176, 2176), "l40s"), _svc("b", 4, 512, 12800, (1024,), "l40s")]
    monkeypatch.setattr(search, "SEARCH_STEPS", 1)
    _no_host_lp(monkeypatch)
    assert plan([l40s], services).instances == 3


def test_generated_fleets_plan_within_every_limit_and_never_above_first_fit_decreasing() -> None:
    """#32: fleets from the benchmark's generator (tuning seeds, 300 tasks: small enough for the suite), where host
    CPU, host memory or GPU memory binds, with sidecars and whole-GPU tasks, on 1-, 4- and 8-GPU hosts."""
    with benchmarks_on_path():
        import fleet_generator
    ffd = _benchmark_ffd()
    for seed in range(8):
        fleet = fleet_generator.generate(seed, 300)
        result = plan([fleet.capacity], fleet.services)
        _assert_valid(result, fleet.services)
        hosts, _ = ffd(fleet.capacity, fleet.services)  # type: ignore[operator]
        assert result.fits and result.instances <= hosts, fleet.label


def test_a_generated_fleet_written_as_a_fleet_file_reads_back_as_its_tasks(tmp_path: Path) -> None:
    """The command benchmark (``generated_benchmark.py --command``) times the plan command on generated fleets written
    as fleet files: read back, each service's tasks (split at ECS's 5,000 a service) and each task's CPU, memory and
    GPU budgets, sidecars included, must be the generated ones, scaled where asked; a whole-GPU task becomes a budget
    of the GPU's usable memory."""
    from ecs_gpu_sharing.core.fleet import load
    from ecs_gpu_sharing.core.plan_inputs import from_fleet

    with benchmarks_on_path():
        import fleet_generator
    seen = {"split": 0, "sidecars": 0, "whole": 0}
    for seed, scale in ((1014, 1.0), (1002, 0.5), (4, 1.0)):
        fleet = fleet_generator.generate(seed, 100_000, "p5.48xlarge")
        path = tmp_path / f"{seed}.toml"
        path.write_text(fleet_generator.fleet_file(fleet, scale))
        caps, read = from_fleet(load(path))[:2]
        (cap,) = caps
        assert cap.instance_type == "p5.48xlarge" and cap.max_instances == 5000
        for s in fleet.services:
            parts = [r for r in read if r.name.startswith(f"{s.name}p")]
            assert sum(r.tasks for r in parts) == s.tasks and all(r.tasks <= 5000 for r in parts)
            budgets = s.shape.gpu_budgets_mib or (cap.usable_gpu_memory_mib,)
            for r in parts:
                assert r.shape.gpu_budgets_mib == tuple(max(256, int(b * scale) // 256 * 256) for b in budgets)
                assert r.shape.cpu_units == max(128, int(s.shape.cpu_units * scale) // 128 * 128)
                assert r.shape.memory_mib == max(256, int(s.shape.memory_mib * scale) // 128 * 128)
            seen["split"] += len(parts) > 1
            seen["sidecars"] += len(budgets) > 1
            seen["whole"] += s.shape.whole_gpus > 0
    assert all(seen.values()), seen


def test_a_plan_read_only_for_its_instance_count_has_the_same_count_and_skips_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``count_only`` (the placement model's scaled-down fleets) stops the FFD orders once a plan meets its lower bound
    on the hosts: every capacity's instance count must be the full plan's, with isolation groups too, and on some of
    these fleets fewer FFD orders run."""
    with benchmarks_on_path():
        import fleet_generator
    from ecs_gpu_sharing.core.planner import ffd

    runs = {"count": 0}
    ffd_fill = ffd.ffd_fill

    def counted(*args: object) -> object:
        runs["count"] += 1
        return ffd_fill(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ffd, "ffd_fill", counted)
    skipped = 0
    for seed, size in itertools.product(range(6), (300, 1500)):
        fleet = fleet_generator.generate(seed, size)
        grouped = [  # a group on hosts of its own, a group on GPUs of its own, the rest
            dataclasses.replace(
                s,
                allocation=AllocationNote(
                    1, 1, shared_failure="-", isolation_group=f"g{i % 3}", isolate_host=i % 3 == 0
                )
                if i % 3
                else None,
            )
            for i, s in enumerate(fleet.services)
        ]
        for services in (fleet.services, grouped):
            for surge in (False, True):
                runs["count"] = 0
                full = plan([fleet.capacity], services, surge=surge, host_lp=False)
                full_runs = runs["count"]
                runs["count"] = 0
                counted_only = plan([fleet.capacity], services, surge=surge, host_lp=False, count_only=True)
                assert counted_only.instances == full.instances, (fleet.label, surge)
                skipped += runs["count"] < full_runs
    assert skipped >= 5


def test_the_host_level_lp_bound_is_below_the_exact_optimum_and_the_planner_meets_it_on_small_fleets() -> None:
    import random

    with benchmarks_on_path():
        import host_lp
        import small_fleets
    rng = random.Random(5)
    checked = 0
    while checked < 12:
        cap, services = small_fleets.fleet(rng)
        result = plan([cap], services)
        if not result.fits:
            continue
        checked += 1
        best = small_fleets.optimum(cap, services, result.instances)
        bound = host_lp.host_bound(cap, services)
        assert best is not None and bound.converged
        assert result.instance_lower_bound <= best and bound.bound <= best <= result.instances
        assert result.instances == best, (cap.instance_type, services)


def test_the_lp_cost_benchmark_times_each_fleet_with_and_without_the_lp(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`generated_benchmark.py --lp-cost` measures #32's budget for the host-level LP (what it adds to a plan at 10,000
    tasks in 150 services): over the seeds' fleets of at most ``--most-services`` services, the plan's seconds with
    the LP less those without, as ratios to the run's reference and to a reference run just before each fleet, and
    the hosts of both. Fewer hosts with the LP, never more; fleets over the services are left out, and where none is
    left the row says so."""
    with benchmarks_on_path():
        import fleet_generator
        import generated_benchmark
    own = []
    monkeypatch.setattr(generated_benchmark, "reference_seconds", lambda runs=3: own.append(runs) or 0.5)
    seeds = [0, 1, 2]
    counts = [len(fleet_generator.generate(seed, 300).services) for seed in seeds]
    generated_benchmark._lp_cost("300", seeds, 1.0, 2, max(counts) - 1)
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| 300 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert int(cells[1]) == sum(c < max(counts) for c in counts) > 0
    assert cells[2] == f"{min(c for c in counts if c < max(counts))}-{max(c for c in counts if c < max(counts))}"
    assert own == [2] * int(cells[1])  # one reference run a fleet, best of two
    median, p95, worst = (float(c) for c in cells[8:11])
    assert median <= p95 <= worst == pytest.approx(float(cells[5]) / 0.5, abs=0.1)
    over, without, with_lp = (int(c.replace(",", "")) for c in cells[11:14])
    assert 0 <= over <= int(cells[1]) and with_lp <= without
    generated_benchmark._lp_cost("300", seeds, 1.0, 2, min(counts) - 1)
    assert "| 300 | 0 | no fleet of" in capsys.readouterr().out


def test_the_benchmarks_lp_bound_stops_at_its_time_in_all_with_farleys_bound() -> None:
    """`generated_benchmark.py --lp-seconds` is the benchmark LP's time of pricing a fleet in all: past it, column
    generation stops and Farley's bound stands (never above the converged one). Tuning seed 72 at 1,000 tasks (four
    L40S a host, 56 services) does not converge in one pricing: with no time, that pricing's pattern is the only one
    added to the services' own."""
    with benchmarks_on_path():
        import fleet_generator
        import host_lp
    fleet = fleet_generator.generate(72, 1000)
    converged = host_lp.host_bound(fleet.capacity, fleet.services, ffd_hosts=0)
    stopped = host_lp.host_bound(fleet.capacity, fleet.services, total_seconds=0.0, ffd_hosts=0)
    assert converged.converged and not stopped.converged
    assert stopped.columns == len(fleet.services) + 1 and stopped.bound <= converged.bound


# --- network interfaces of awsvpc tasks (#29) -----------------------------------------------------------------------

G6E_XLARGE = capacity_input("l40s1", host_facts(["g6e.xlarge"]))  # 1 GPU, 4 network interfaces: 3 for tasks


def _awsvpc(name: str, count: int, cap: str = "l40s1", budget: int = 2048) -> ServiceInput:
    return ServiceInput(name, cap, TaskShape(256, 1024, (budget,), network_interfaces=1), count)


def test_each_host_keeps_one_interface_and_each_awsvpc_task_takes_one() -> None:
    assert G6E_XLARGE.task_network_interfaces == 3  # EC2's MaximumNetworkInterfaces 4, less the host's own


def test_awsvpc_tasks_are_planned_by_network_interface() -> None:
    """12 awsvpc tasks on g6e.xlarge fit one GPU by memory, but each host has 3 interfaces for tasks: 4 hosts."""
    result = plan([G6E_XLARGE], [_awsvpc("small", 12)])
    cap = result.capacity("l40s1")
    assert cap.instance_count == 4 and cap.instance_lower_bound == 4 and result.fits
    bridge = plan([G6E_XLARGE], [svc("small", 12, 2048, mem=1024, cap="l40s1")])
    assert bridge.capacity("l40s1").instance_count == 1  # the same tasks in bridge mode share the host's interface


def test_interfaces_bind_with_other_limits_and_bridge_tasks_fill_the_rest() -> None:
    result = plan([G6E_XLARGE], [_awsvpc("a", 4), svc("b", 6, 2048, mem=1024, cap="l40s1")])
    groups = result.capacity("l40s1").instances
    assert sum(g.count for g in groups) == 2
    for g in groups:
        assert sum(k for gpu in g.gpus for name, k in gpu.tasks if name == "a") <= 3


def test_a_hosts_tasks_count_a_task_of_whole_gpus_once() -> None:
    """A task holding two whole GPUs is listed on each of them; on one host it is one task, and one interface."""
    whole = ServiceInput("w", "l40s", TaskShape(1024, 4096, whole_gpus=2, network_interfaces=1), 2)
    shared = ServiceInput("m", "l40s", TaskShape(256, 1024, (2048,), network_interfaces=1), 3)
    result = plan([L40S], [whole, shared])
    cap = result.capacity("l40s")
    counts = tasks_on_a_host(cap, result.services)
    assert sum(g.count * on.get("w", 0) for g, on in zip(cap.instances, counts, strict=True)) == 2
    assert sum(g.count * on.get("m", 0) for g, on in zip(cap.instances, counts, strict=True)) == 3
    used = interfaces_used(cap, result.services)
    assert used is not None and sum(g.count * n for g, n in zip(cap.instances, used, strict=True)) == 5


@settings(max_examples=40, deadline=None)
@given(shapes, st.lists(st.booleans(), min_size=8, max_size=8), st.sampled_from(["g6e.xlarge", "g6.12xlarge"]))
def test_no_host_holds_more_awsvpc_tasks_than_its_interfaces(
    drawn: list[tuple[int, list[int], int, int, str, int]], awsvpc: list[bool], instance_type: str
) -> None:
    cap = capacity_input("c", host_facts([instance_type]))
    services = [
        ServiceInput(
            s.name, "c", TaskShape(s.cpu_units, s.memory_mib, s.shape.gpu_budgets_mib, s.whole_gpus, int(v)), s.tasks
        )
        for s, v in zip(_services(drawn), awsvpc, strict=False)
    ]
    result = plan([cap], services)
    by_name = {s.name: s for s in services}
    for group in result.capacity("c").instances:
        tasks: dict[str, int] = dict(group.tasks_without_gpu)
        for gpu in group.gpus:
            for name, k in gpu.tasks:
                tasks[name] = tasks.get(name, 0) + (k if not gpu.whole else 1)
        for name in {n for gpu in group.gpus if gpu.whole for n, _ in gpu.tasks}:
            tasks[name] //= max(by_name[name].whole_gpus, 1)
        assert sum(by_name[n].network_interfaces * k for n, k in tasks.items()) <= cap.task_network_interfaces
    placed = sum(g.count for g in result.capacity("c").instances)
    assert placed >= result.capacity("c").instance_lower_bound or not result.fits


# --- which strategies a large fleet runs (#32, section 3): where a strategy cannot win, it is skipped ----------------


def _big(cpu: int, mem: int, budget: int, tasks: int = 30_000) -> list[list[tuple[ServiceInput, int]]]:
    s = service_input("svc", "l40s", TaskShape(cpu, mem, (budget,)), tasks, count_source="desired count")
    return [[(s, tasks)]]


def test_a_large_fleet_skips_the_staged_plan_only_where_host_memory_or_cpu_far_outweighs_gpu_memory() -> None:
    from ecs_gpu_sharing.core.planner.ffd import FFD_ALWAYS_TASKS, HOST_BINDS, staged_may_win

    # g6e.12xlarge: 4 GPUs of 45,247 usable MiB; host CPU and memory as the facts give them.
    gpu_per_task = L40S.usable_gpu_memory_mib * 4 / L40S.host_memory_mib  # a task's memory equal to this binds alike
    assert staged_may_win(L40S, _big(256, 1024, 4096))  # GPU memory binds: the staged plan runs
    assert staged_may_win(L40S, _big(256, round(4096 / gpu_per_task * (HOST_BINDS - 0.1)), 4096))  # close: both
    assert not staged_may_win(L40S, _big(256, round(4096 / gpu_per_task * (HOST_BINDS + 0.1)), 4096))  # memory far
    cpu_heavy = round(4096 / (L40S.usable_gpu_memory_mib * 4 / L40S.host_cpu_units) * (HOST_BINDS + 0.1))
    assert not staged_may_win(L40S, _big(cpu_heavy, 1024, 4096))  # CPU far: FFD alone
    small = FFD_ALWAYS_TASKS  # a small fleet always runs every strategy
    assert staged_may_win(L40S, _big(256, round(4096 / gpu_per_task * 3), 4096, tasks=small))


def test_a_large_fleet_runs_ffd_in_the_gpu_order_and_those_of_host_resources_near_binding() -> None:
    from ecs_gpu_sharing.core.planner.ffd import ffd_orders

    gpu_per_task = L40S.usable_gpu_memory_mib * 4 / L40S.host_memory_mib
    assert ffd_orders(L40S, _big(256, 1024, 4096)) == ["gpu"]  # neither host resource near binding
    assert ffd_orders(L40S, _big(256, round(4096 / gpu_per_task * 2), 4096)) == ["gpu", "memory"]
    assert ffd_orders(L40S, _big(256, round(4096 / gpu_per_task * 1.1), 4096)) == ["gpu", "memory"]
    assert ffd_orders(L40S, _big(256, 1024, 4096, tasks=100)) == ["gpu", "memory", "cpu", "dominant", "sum"]


def test_a_large_fleet_runs_ffd_beside_the_staged_plan_only_on_hosts_of_one_gpu() -> None:
    """Past FFD_ALWAYS_TASKS, FFD runs beside the staged plan where host CPU or memory nearly binds, on hosts of one
    GPU only: on the tuning fleets where it ran beside a staged plan it packed fewer hosts on every one of one GPU and
    on none of several (docs/planning.md, "First-fit decreasing past 20,000 tasks")."""
    from ecs_gpu_sharing.core.planner.ffd import FFD_ALWAYS_TASKS, ffd_may_help

    h100 = capacity_input("h100", host_facts(["p5.48xlarge"]))
    for cap, runs in ((L4, True), (L40S, False), (h100, False)):
        groups = _big(256, 4096, 2048)
        memory_hosts = math.ceil(4096 * 30_000 / cap.host_memory_mib)
        assert ffd_may_help(cap, groups, memory_hosts) is runs, cap.name  # memory binds the staged plan's hosts
        assert not ffd_may_help(cap, groups, 2 * memory_hosts)  # memory far from binding: the staged plan alone
        assert ffd_may_help(cap, _big(256, 4096, 2048, tasks=FFD_ALWAYS_TASKS), 2 * memory_hosts)  # small: always


def test_past_ffd_always_tasks_on_eight_gpus_a_host_the_plan_is_the_one_ffd_beside_it_did_not_beat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tuning seed 3 at 25,000 tasks on eight L4s a host (260 services, each binding its own resource), where FFD ran
    beside the staged plan and packed no fewer hosts, for the steady plan and the surge: the same plans without it."""
    from ecs_gpu_sharing.core.planner import ffd, packing

    with benchmarks_on_path():
        import fleet_generator

    fleet = fleet_generator.generate(3, 25_000, "g6.48xlarge")
    free = dataclasses.replace(fleet.capacity, max_instances=None)
    fills: list[str] = []
    fill = ffd.ffd_fill

    def counted(*args: Any) -> Any:
        fills.append(args[2])
        return fill(*args)

    monkeypatch.setattr(ffd, "ffd_fill", counted)
    now = [plan([fleet.capacity], fleet.services), plan([free], fleet.services, surge=True, host_lp=False)]
    assert fills == []  # FFD did not run
    monkeypatch.setattr(packing, "ffd_may_help", lambda *args: True)
    before = [plan([fleet.capacity], fleet.services), plan([free], fleet.services, surge=True, host_lp=False)]
    assert len(fills) == 6  # three orders a plan: it ran, as before ...
    assert [p.capacities for p in now] == [p.capacities for p in before]  # ... and changed nothing


def test_a_large_memory_bound_fleet_is_planned_by_ffd_alone_and_fits() -> None:
    from ecs_gpu_sharing.core.planner.ffd import ffd_hosts
    from ecs_gpu_sharing.core.planner.hosts import plan_size

    gpu_per_task = L40S.usable_gpu_memory_mib * 4 / L40S.host_memory_mib
    groups = _big(256, round(4096 / gpu_per_task * 2), 4096)
    (s, n) = groups[0][0]
    result = plan([L40S], [s])
    assert result.fits and result.placed["svc"] == n
    assert (
        result.instances == plan_size(ffd_hosts(L40S, groups, "memory"))[0] == result.capacities[0].instance_lower_bound
    )


def _ffd_plans(copies: int = 1) -> list[object]:
    """FFD's hosts, in every order, on generated fleets of one, four and eight GPUs a host, with whole-GPU tasks, and
    with tasks without a GPU added (they land on hosts already open), each service run as ``copies`` alike ones. Each
    fill's size must be its hosts'."""
    from ecs_gpu_sharing.core.planner.hosts import plan_size

    with benchmarks_on_path():
        import fleet_generator
    from ecs_gpu_sharing.core.planner import ffd

    out = []
    for seed in (3, 5, 6, 13, 17, 24):
        fleet = fleet_generator.copies(fleet_generator.generate(seed, 3000), copies)
        cpu_only = [
            service_input(
                f"cpu{i}",
                fleet.capacity.name,
                TaskShape(256 * (i + 1), 512 * (i + 1)),
                40 + 30 * i,
                count_source="test",
            )
            for i in range(3)
        ]
        pairs = [(s, s.tasks) for s in [*fleet.services, *cpu_only]]
        # The same fleet with every other service in awsvpc mode, on hosts of 12 interfaces for tasks.
        awsvpc = [
            (dataclasses.replace(s, shape=dataclasses.replace(s.shape, network_interfaces=i % 2)), n)
            for i, (s, n) in enumerate(pairs)
        ]
        for capacity, placed in (
            (fleet.capacity, pairs),
            (dataclasses.replace(fleet.capacity, task_network_interfaces=12), awsvpc),
        ):
            for order in ("gpu", "cpu", "memory", "dominant", "sum"):
                fill = ffd.ffd_fill(capacity, [placed], order)
                hosts = fill.hosts()
                assert fill.size() == plan_size(hosts)  # what a plan compares its FFD orders by, read off the fill
                out.append([(h.count, h.gpus, h.cpu, h.mem, sorted(h.without_gpu.items()), h.enis) for h in hosts])
    return out


def test_ffd_stops_once_it_holds_more_hosts_than_the_plan_in_hand() -> None:
    """A plan keeps FFD's fill only where it has fewer hosts (or as many and fewer busy GPUs) than the plan in hand,
    and a fill only opens hosts: so it is stopped once it holds more than ``above``. On generated fleets of one, four
    and eight GPUs a host, in every order: stopped (None) exactly where the whole fill has more hosts than ``above``,
    else the very fill."""
    from ecs_gpu_sharing.core.planner import ffd

    with benchmarks_on_path():
        import fleet_generator

    for seed in (3, 5, 6, 13):
        fleet = fleet_generator.generate(seed, 3000)
        pairs = [(s, s.tasks) for s in fleet.services]
        for order in ("gpu", "cpu", "memory", "dominant", "sum"):
            whole = ffd.ffd_fill(fleet.capacity, [pairs], order)
            hosts = whole.size()[0]
            assert ffd.ffd_fill(fleet.capacity, [pairs], order, above=hosts - 1) is None
            for above in (hosts, hosts + 1):
                fill = ffd.ffd_fill(fleet.capacity, [pairs], order, above=above)
                assert fill is not None and fill.size() == whole.size()
                assert [(h.count, h.gpus, h.cpu, h.mem) for h in fill.hosts()] == [
                    (h.count, h.gpus, h.cpu, h.mem) for h in whole.hosts()
                ]


def test_ffd_places_a_run_of_full_new_hosts_in_one_step_exactly_as_task_by_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where a service goes to new hosts, FFD makes the full ones in one step (add_filled), sharing the GPUs of hosts
    nothing to come can change. The plan must be the one placing them host by host gives: on generated fleets of
    one, four and eight GPUs a host, with whole-GPU tasks, and with tasks without a GPU added (they land on such
    hosts afterwards), in every order."""
    from ecs_gpu_sharing.core.planner import ffd

    in_one_step = _ffd_plans()
    monkeypatch.setattr(ffd._FirstFit, "fresh_fill", lambda self, s: [])  # host by host
    assert _ffd_plans() == in_one_step


def test_ffd_places_a_run_of_whole_gpu_tasks_on_new_hosts_in_one_step_exactly_as_task_by_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where whole-GPU tasks go to new hosts, FFD makes the full ones at once (add_whole), their GPUs shared until
    changed: MPS tasks may open the GPUs left idle there later. The plan must be the one placing task by task gives."""
    from ecs_gpu_sharing.core.planner import ffd

    made: list[int] = []
    add_whole = ffd._FirstFit.add_whole

    def counted(self: ffd._FirstFit, s: ServiceInput, group: str | None, per_host: int, copies: int) -> None:
        made.append(copies)
        add_whole(self, s, group, per_host, copies)

    monkeypatch.setattr(ffd._FirstFit, "add_whole", counted)
    in_one_step = _ffd_plans()
    assert sum(made) > 100  # the fleets do make runs of such hosts
    monkeypatch.setattr(ffd._FirstFit, "whole_per_host", lambda self, s: 1 << 62)  # task by task
    assert _ffd_plans() == in_one_step


@pytest.mark.parametrize(
    ("step", "per_hosts"),
    [
        ("take_run", (1, 4, 8)),  # on the GPUs the hosts have open, GPU by GPU
        ("open_run", (4, 8)),  # on the idle GPUs the hosts open
    ],
)
def test_ffd_gives_a_run_of_alike_hosts_their_tasks_at_once_exactly_as_host_by_host(
    monkeypatch: pytest.MonkeyPatch, step: str, per_hosts: tuple[int, ...]
) -> None:
    """A run of hosts made alike and untouched takes a service's tasks at once (``step``: each host what first-fit
    gives it), the run then alike again under a block of its own. The plan must be the one giving them host by host
    gives, on the hosts of ``per_hosts`` GPUs where such runs happen."""
    from ecs_gpu_sharing.core.planner import ffd

    given: dict[int, int] = {}
    run = getattr(ffd._FirstFit, step)

    def counted(self: ffd._FirstFit, at: int, s: ServiceInput, group: str | None, n: int) -> tuple[int, int]:
        tasks, after = run(self, at, s, group, n)
        per = self.capacity.gpus_per_instance
        given[per] = given.get(per, 0) + tasks
        return tasks, after

    monkeypatch.setattr(ffd._FirstFit, step, counted)
    at_once = _ffd_plans()
    assert all(given.get(per, 0) > 100 for per in per_hosts), given  # the fleets do have such runs
    monkeypatch.setattr(ffd._FirstFit, step, lambda self, at, s, group, n: (0, at))  # host by host
    assert _ffd_plans() == at_once


def test_ffd_starts_a_service_where_the_last_of_its_shape_stopped_exactly_as_from_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FFD's scans for a service start where they stopped for the last service of the same needs and isolation group
    (every GPU and host before was full for it, and they only fill). The plan must be the one scanning from the first
    GPU and host gives, on the generated fleets with each service run as four alike ones, and with those alike ones
    in two isolation groups by turns (a GPU of one group is no room for the other's)."""
    from ecs_gpu_sharing.core.planner import ffd

    with benchmarks_on_path():
        import fleet_generator

    def plans() -> list[object]:
        out = _ffd_plans(copies=4)
        for seed in (3, 5, 6):
            fleet = fleet_generator.copies(fleet_generator.generate(seed, 3000), 4)
            note = {g: AllocationNote(1, 1, shared_failure="-", isolation_group=g) for g in ("a", "b")}
            pairs = [
                (dataclasses.replace(s, allocation=note["ab"[i % 2]]), s.tasks) for i, s in enumerate(fleet.services)
            ]
            for order in ("gpu", "cpu", "memory", "dominant", "sum"):
                out.append([(h.count, h.gpus, h.cpu, h.mem) for h in ffd.ffd_hosts(fleet.capacity, [pairs], order)])
        return out

    resumed = []

    class Kept(dict):  # type: ignore[type-arg]
        def get(self, key: object, default: object = None) -> object:
            found = super().get(key, default)
            resumed.append(found != default)
            return found

    class Forgotten(dict):  # type: ignore[type-arg]
        def __setitem__(self, key: object, value: object) -> None:
            pass

    init = ffd._FirstFit.__init__

    def with_resume(kind: type) -> Callable[..., None]:
        def made(self: ffd._FirstFit, capacity: CapacityInput) -> None:
            init(self, capacity)
            self.resume = kind()

        return made

    monkeypatch.setattr(ffd._FirstFit, "__init__", with_resume(Kept))
    started_there = plans()
    assert sum(resumed) > 1000  # the fleets do have services of one shape in a row
    monkeypatch.setattr(ffd._FirstFit, "__init__", with_resume(Forgotten))
    assert plans() == started_there


@contextlib.contextmanager
def _chunks_of(module: object, shift: int) -> Iterator[None]:
    """``module``'s scans read in chunks of 2**shift (60: chunks nothing fills, so every entry is read)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "CHUNK_SHIFT", shift)
        patch.setattr(module, "CHUNK", 1 << shift)
        patch.setattr(module, "CHUNK_MASK", (1 << shift) - 1)
        yield


def test_ffd_skipping_chunks_of_open_gpus_changes_no_placement() -> None:
    """First-fit's scan skips a chunk of open GPUs where the bounds it kept rule it out. The plan with chunks of
    thirty-two must be the one with chunks of two, and the one a scan of every GPU gives."""
    from ecs_gpu_sharing.core.planner import ffd

    with_chunks = _ffd_plans()
    for shift in (1, 60):  # chunks of two; every GPU read
        with _chunks_of(ffd, shift):
            assert _ffd_plans() == with_chunks, shift
    with pytest.MonkeyPatch.context() as patch:  # each chunk's hosts kept at every scan that finds nothing
        patch.setattr(ffd, "HOSTS_AFTER_MISSES", 1)
        assert _ffd_plans() == with_chunks
        with _chunks_of(ffd, 1):
            assert _ffd_plans() == with_chunks


def test_ffd_skips_a_chunk_whose_hosts_cannot_take_a_task_where_its_bounds_alone_would_not() -> None:
    """Many services of a few tasks on eight GPUs a host (tuning seed 29, each service as seven alike ones): a chunk's
    most GPU memory, host memory and CPU, each over the chunk, often pass a task that no GPU there takes (the GPUs
    with memory left are on hosts whose CPU or memory is spent), and first-fit read such chunks for each service.
    Its hosts' figures, kept once a chunk was read in vain often, rule them out unread, and the plan is the one a scan
    of every GPU gives."""
    with benchmarks_on_path():
        import fleet_generator
    from ecs_gpu_sharing.core.planner import ffd

    fleet = fleet_generator.copies(fleet_generator.generate(29, 2000, "g6.48xlarge"), 7)
    pairs = [(s, max(1, s.tasks // 7)) for s in fleet.services]
    unread = []
    scan = ffd._FirstFit.first_in_chunk

    def counted(self: ffd._FirstFit, at: int, shape: tuple[int, int, int, int, int, str | None]) -> int:
        chunk = at >> ffd.CHUNK_SHIFT
        kept, misses = chunk in self.chunk_hosts, self.chunk_misses.get(chunk, 0)
        found = scan(self, at, shape)
        unread.append(kept and found < 0 and self.chunk_misses.get(chunk, 0) == misses)  # a read in vain counts one
        return found

    def placed() -> list[object]:
        return [(h.count, h.gpus, h.cpu, h.mem) for h in ffd.ffd_hosts(fleet.capacity, [pairs], "gpu")]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ffd._FirstFit, "first_in_chunk", counted)
        kept = placed()
    assert sum(unread) >= len(unread) // 4 > 10
    with _chunks_of(ffd, 60):
        assert placed() == kept


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 10), st.integers(1, 4), st.integers(0, 8), st.integers(1, 80)), min_size=1, max_size=6
    ),
    st.integers(1, 8),
)
def test_ffd_chunks_change_no_placement_where_room_is_met_exactly(
    services: list[tuple[int, int, int, int]], gpus: int
) -> None:
    """Small figures, so that a GPU's or a host's room often equals a task's need exactly: first-fit with chunks of
    two GPUs (and two hosts) places every task where a scan of every one does, in every order."""
    import dataclasses

    from ecs_gpu_sharing.core.planner import ffd

    cap = dataclasses.replace(L40S, gpus_per_instance=gpus, usable_gpu_memory_mib=10_000, host_cpu_units=16)
    cap = dataclasses.replace(cap, host_memory_mib=24_000)
    pairs = [
        (si(f"s{i}", "l40s", n, cpu, mem * 1000, (mib * 1000,)), n) for i, (mib, cpu, mem, n) in enumerate(services)
    ]

    def placed() -> list[object]:
        return [
            [(h.count, h.gpus, h.cpu, h.mem) for h in ffd.ffd_hosts(cap, [pairs], order)]
            for order in ("gpu", "cpu", "memory", "dominant", "sum")
        ]

    with _chunks_of(ffd, 1):
        in_chunks = placed()
        with pytest.MonkeyPatch.context() as patch:  # each chunk's hosts kept at every scan that finds nothing
            patch.setattr(ffd, "HOSTS_AFTER_MISSES", 1)
            assert placed() == in_chunks
    assert placed() == in_chunks  # chunks of 32
    with _chunks_of(ffd, 60):
        assert placed() == in_chunks


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 8), st.integers(0, 8), st.integers(1, 40), st.integers(0, 2)),
        min_size=1,
        max_size=12,
    )
)
def test_host_packing_in_chunks_places_every_unit_where_a_scan_of_every_group_does(
    units: list[tuple[int, int, int, int, int]],
) -> None:
    """The host packing skips chunks of host groups its bounds rule out, and the groups of a chunk without room.
    With small figures (rooms met exactly, many groups split), chunks of two and of thirty-two give the plan a scan of
    every group gives, and first fit over the groups one by one, each asked ``_copies``, gives it too."""
    import dataclasses

    from ecs_gpu_sharing.core.planner import hosts as stage2

    cap = dataclasses.replace(L40S, host_cpu_units=16, host_memory_mib=24_000)

    def made() -> list[stage2.Unit]:
        return [
            stage2.Unit([GpuLoad(((f"u{i}", 1),), 1000, 1)] * slots, cpu, mem * 1000, count, enis=enis)
            for i, (slots, cpu, mem, count, enis) in enumerate(units)
        ]

    def shown(hosts: list[stage2.Host]) -> list[object]:
        return [(h.count, h.gpus, h.cpu, h.mem, h.enis) for h in hosts]

    def packed() -> list[object]:
        return shown(stage2.pack_hosts(made(), cap))

    def visited_one_by_one() -> list[object]:
        """First-fit decreasing over the groups as the packing's docstring says, each group asked ``_copies``."""
        groups: list[stage2.Host] = []
        for unit in sorted(made(), key=lambda u: (stage2.largest_share(u, cap), u.cpu + u.mem), reverse=True):
            n = unit.count
            for group in list(groups):
                k = stage2._copies(group, unit, cap)
                if n == 0 or k == 0:
                    continue
                full, rest = min(divmod(n, k), (group.count, 0))
                twins = [(c, m) for c, m in ((full, k), (int(rest > 0), rest)) if c]
                made_twins = [stage2.Host(c, list(group.gpus), group.cpu, group.mem, {}, group.enis) for c, _ in twins]
                for twin, (_, copies) in zip(made_twins, twins, strict=True):
                    stage2._add(twin, unit, copies)
                group.count -= sum(c for c, _ in twins)
                where = groups.index(group)
                groups[where : where + (0 if group.count else 1)] = made_twins
                n -= sum(c * m for c, m in twins)
            if n:
                per_host = stage2._copies(stage2.Host(1, []), unit, cap)
                full, rest = divmod(n, per_host)
                for count, copies in ((full, per_host), (int(rest > 0), rest)):
                    if count:
                        groups.append(stage2.Host(count, []))
                        stage2._add(groups[-1], unit, copies)
        return shown(groups)

    in_chunks = packed()
    for shift in (1, 60):
        with _chunks_of(stage2, shift):
            assert packed() == in_chunks, shift
    assert visited_one_by_one() == in_chunks


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(*[st.integers(0, 3)] * 4), min_size=1, max_size=32))
def test_a_chunks_front_is_what_no_other_group_has_as_much_of_everything(
    lefts: list[tuple[int, int, int, int]],
) -> None:
    """The host packing keeps, per chunk, the Pareto front of what its groups have left: every figure some other one
    is at least as large as in every place is left out, each other kept once. A unit fits a group of the chunk exactly
    when it fits a figure of the front."""
    from ecs_gpu_sharing.core.planner.hosts import _front

    def dominated(p: tuple[int, ...]) -> bool:
        return any(q != p and all(a >= b for a, b in zip(q, p, strict=True)) for q in lefts)

    assert sorted(_front(lefts)) == sorted({p for p in lefts if not dominated(p)})


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 40), st.integers(1, 6)), min_size=1, max_size=8),
    st.integers(1, 120),
)
def test_the_exact_gpu_fill_finds_the_fullest_subset(pairs: list[tuple[int, int]], room_units: int) -> None:
    """The GPU stage's subset-sum (which stops once the room is filled exactly) fills the room as fully as any subset
    of the tasks left does, within each service's tasks left."""
    from ecs_gpu_sharing.core.planner.gpus import Item, _exact_fill

    items = sorted(
        (Item(f"s{i}", size * 256, 1, 0, 0, left) for i, (size, left) in enumerate(pairs)), key=lambda it: -it.size
    )
    room = room_units * 256
    chosen = _exact_fill(items, room, {})
    assert chosen is not None
    assert all(0 < k <= items[i].left for i, k in chosen.items())
    filled = sum(items[i].size * k for i, k in chosen.items())
    reachable = {0}
    for it in items:
        reachable |= {r + it.size * k for r in reachable for k in range(1, it.left + 1) if r + it.size * k <= room}
    assert filled == max(reachable)


def _exact_fill_item_by_item(items: list, room: int, taken: dict[int, int]) -> dict[int, int]:
    """The exact fill as it was written before it read sizes: each item its own bounded item of the bitset."""
    from ecs_gpu_sharing.core.cutting_stock import binary_pieces

    positions = [i for i, it in enumerate(items) if it.size <= room and it.left - taken.get(i, 0) > 0]
    if not positions:
        return {}
    step = math.gcd(*[items[i].size for i in positions])
    cap, reach, history = room // step, 1, []
    for i in positions:
        for k in binary_pieces(min(items[i].left - taken.get(i, 0), room // items[i].size)):
            history.append((reach, i, k))
            reach = (reach | (reach << (items[i].size // step * k))) & ((1 << (cap + 1)) - 1)
        if reach >> cap:
            break
    target, chosen = reach.bit_length() - 1, {}
    for before, i, k in reversed(history):
        if not (before >> target) & 1:
            chosen[i] = chosen.get(i, 0) + k
            target -= k * (items[i].size // step)
    return chosen


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 6), st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=14),
    st.integers(1, 40),
)
def test_the_exact_fill_by_sizes_chooses_what_the_items_one_by_one_chose(
    pairs: list[tuple[int, int, int]], room_units: int
) -> None:
    """The exact fill reads the tasks left of each size (many services share a budget), not each service: the same
    tasks chosen, of the same services, as the bitset over each service alone; with some of the GPU's tasks taken."""
    from ecs_gpu_sharing.core.planner.gpus import Item, Sizes, _exact_fill

    items = sorted(
        (Item(f"s{i}", size * 256, 1, 0, 0, left) for i, (size, left, _) in enumerate(pairs)),
        key=lambda it: (-it.size, it.name),
    )
    taken = {i: min(t, it.left) for i, (it, (_, _, t)) in enumerate(zip(items, pairs, strict=True)) if min(t, it.left)}
    room = room_units * 256
    expected = _exact_fill_item_by_item(items, room, taken)
    assert _exact_fill(items, room, taken) == expected
    assert _exact_fill(items, room, taken, sizes=Sizes(items)) == expected


def test_the_sizes_a_packing_keeps_are_its_items_tasks_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pack_gpus`` keeps each size's tasks left as it takes tasks and drops spent items: each fill is handed what
    counting the items again gives."""
    from ecs_gpu_sharing.core.planner import gpus

    items = [gpus.Item(f"s{i}", (1 + i % 5) * 1024, 1, 0, 0, 1 + i % 3 * 20) for i in range(60)]
    seen = []

    def checked(items: list, first: int, cap: CapacityInput, sizes: gpus.Sizes | None) -> dict[int, int]:
        assert sizes is not None
        fresh = gpus.Sizes(items)
        kept, counted = (
            (sizes.left, sizes.members, sizes.order, sizes.step),
            (fresh.left, fresh.members, fresh.order, fresh.step),
        )
        seen.append(kept == counted)
        return gpus._fill_exact(items, first, cap, sizes)

    way = gpus.pack_gpus(items, L4, checked)
    assert sum(load.used_gpu_memory_mib * n for load, _, _, n in way) == sum(it.size * it.left for it in items)
    assert len(seen) > 10 and all(seen)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 30), st.integers(0, 6), st.integers(1, 24), st.integers(0, 3), st.integers(0, 3)),
        min_size=1,
        max_size=10,
    ),
    st.sampled_from([256, 512, 100, 1]),
    st.integers(0, 255),
    st.booleans(),
)
def test_the_exact_gpu_fill_is_what_filling_in_full_and_weighing_against_the_greedy_gives(
    rows: list[tuple[int, int, int, int, int]], grain: int, odd: int, partner: bool
) -> None:
    """``_fill_exact`` returns the greedy fill without the exact fill's search where the greedy holds the most memory
    the sizes left can sum to; elsewhere, and so everywhere, its answer is what the exact fill made in full and weighed
    against the greedy fill gives (the GPU's usable memory off the sizes' grid by ``odd`` MiB, clients, CPU and memory
    binding at times)."""
    from ecs_gpu_sharing.core.planner import gpus

    cap = dataclasses.replace(
        L4, usable_gpu_memory_mib=24 * 256 + odd, host_cpu_units=8, host_memory_mib=8, gpus_per_instance=1
    )
    items = sorted(
        (
            gpus.Item(f"s{i}", size * grain, clients, cpu, mem, left)
            for i, (size, left, clients, cpu, mem) in enumerate(rows)
        ),
        key=lambda it: (-it.size, -it.cpu, -it.mem, it.name),
    )

    def in_full(first: int) -> dict[int, int]:
        contents = {first: 1}
        room = cap.usable_gpu_memory_mib - items[first].size
        if partner:
            for i in range(gpus._fitting(items, room, first), len(items)):
                if items[i].left - contents.get(i, 0) > 0:
                    contents[i] = contents.get(i, 0) + 1
                    room -= items[i].size
                    break
        for i, k in gpus._exact_fill(items, room, contents).items():
            contents[i] = contents.get(i, 0) + k
        greedy = gpus._fill_greedy(items, first, cap)
        used = sum(items[i].size * k for i, k in contents.items())
        fuller = used > sum(items[i].size * k for i, k in greedy.items())
        return contents if gpus._limits_hold(items, contents, cap) and fuller else greedy

    for first, it in enumerate(items):
        if it.left and it.size <= cap.usable_gpu_memory_mib and it.cpu <= 8 and it.mem <= 8 and it.clients <= 48:
            assert gpus._fill_exact(items, first, cap, gpus.Sizes(items), partner) == in_full(first)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.integers(1, 3), st.integers(0, 4), st.integers(0, 4), st.integers(0, 6)),
        min_size=1,
        max_size=10,
    ),
    st.integers(1, 120),
    st.integers(1, 12),
    st.integers(0, 16),
    st.integers(0, 16),
    st.integers(0, 10),
)
def test_the_greedy_gpu_fill_passes_over_only_what_cannot_fit(
    services: list[tuple[int, int, int, int, int]], room_units: int, clients: int, cpu: int, mem: int, spent: int
) -> None:
    """The greedy fill starts after the spent items and jumps over tasks larger than the room left. It must choose
    what reading every item in order chooses: each, largest first, as many as every limit allows."""
    from ecs_gpu_sharing.core.planner.gpus import Item, _greedy_fill

    items = sorted(
        (Item(f"s{i}", size * 256, c, u, m, left) for i, (size, c, u, m, left) in enumerate(services)),
        key=lambda it: -it.size,
    )
    start = min(spent, len(items))
    for it in items[:start]:
        it.left = 0
    room = room_units * 256

    expected: dict[int, int] = {}
    r, c, u, m = room, clients, cpu, mem
    for i, it in enumerate(items):
        k = min(it.left, r // it.size, c // it.clients)
        k = min(k, u // it.cpu) if it.cpu else k
        k = min(k, m // it.mem) if it.mem else k
        if k > 0:
            expected[i] = k
            r, c, u, m = r - k * it.size, c - k * it.clients, u - k * it.cpu, m - k * it.mem
    taken: dict[int, int] = {}
    used = _greedy_fill(items, room, clients, cpu, mem, taken, start)
    assert taken == expected and used == room - r


def test_a_plan_read_only_for_its_count_runs_no_lp_that_needs_highs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``PURE_SIZES`` task sizes the GPU cutting-stock LP is HiGHS's, and importing it (with numpy) costs the
    100,000-task command a tenth of its time: a count-only plan (ECS's placement on a scaled-down fleet) goes without
    it, a full plan does not, and up to ``PURE_SIZES`` sizes both run the pure-Python LP."""
    from ecs_gpu_sharing.core import cutting_stock

    calls = {"highs": 0, "simplex": 0}
    highs, simplex = cutting_stock._cover_lp_highs, cutting_stock._cover_lp_simplex

    def counted(name: str, solve: Any) -> Any:
        def run(*args: Any) -> Any:
            calls[name] += 1
            return solve(*args)

        return run

    monkeypatch.setattr(cutting_stock, "_cover_lp_highs", counted("highs", highs))
    monkeypatch.setattr(cutting_stock, "_cover_lp_simplex", counted("simplex", simplex))
    for sizes, lp in ((cutting_stock.PURE_SIZES + 4, "highs"), (cutting_stock.PURE_SIZES, "simplex")):
        services = [si(f"s{i}", "l4", 40, 256, 1024, (512 * (i + 1),)) for i in range(sizes)]
        for count_only in (True, False):
            calls.update(highs=0, simplex=0)
            plan([L4], services, host_lp=False, count_only=count_only)
            assert (calls[lp] > 0) == (not count_only or lp == "simplex"), (sizes, count_only)
