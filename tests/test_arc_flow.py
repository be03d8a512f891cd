"""The arc-flow LP over GPU memory: a bound on the fewest GPUs, and its flow as GPUs the planner can round."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_gpu_sharing.core import arc_flow
from ecs_gpu_sharing.core.planner import plan

from conftest import benchmarks_on_path, staged_gpu_lp_off

with benchmarks_on_path():
    import fleet_generator


def _fits(items: list[int], loads: list[int], capacity: int) -> bool:
    """Whether ``items`` (largest first) go into bins with ``loads`` (changed while it looks, restored after)."""
    if not items:
        return True
    seen = set()
    for b, load in enumerate(loads):
        if load in seen or load + items[0] > capacity:
            continue
        seen.add(load)
        loads[b] += items[0]
        found = _fits(items[1:], loads, capacity)
        loads[b] -= items[0]
        if found:
            return True
    return False


def _fewest_bins(weights: list[int], capacity: int) -> int:
    """The fewest bins of ``capacity`` for ``weights``, by trying every assignment to k bins, k from the volume up."""
    items = sorted(weights, reverse=True)
    return next(k for k in itertools.count(max(1, -(-sum(items) // capacity))) if _fits(items, [0] * k, capacity))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 9), st.integers(1, 3)), min_size=1, max_size=5, unique_by=lambda t: t[0]),
    st.integers(9, 16),
)
def test_its_bound_never_passes_the_fewest_bins_and_its_gpus_hold_every_task_within_the_memory(
    items: list[tuple[int, int]], units: int
) -> None:
    """The LP's value rounded up is a bound: never above the fewest bins (every assignment tried), never below the
    volume's. Its paths carry every task once (the demand rows are equalities), each fits a GPU, and together they
    are the LP's value: no more than the bound."""
    sizes = [256 * w for w, _ in items]
    demand = [d for _, d in items]
    solution = arc_flow.solve(sizes, [1] * len(sizes), demand, 256 * units + 100, 48)
    assert solution is not None
    weights = [w for w, d in items for _ in range(d)]
    assert -(-sum(weights) // units) <= solution.bound <= _fewest_bins(weights, units)
    for i in range(len(sizes)):
        assert sum(pattern[i] * count for pattern, count in solution.patterns) == pytest.approx(demand[i])
    assert all(sum(k * s for k, s in zip(p, sizes, strict=True)) <= 256 * units + 100 for p, _ in solution.patterns)
    assert solution.bound - 1 < sum(count for _, count in solution.patterns) <= solution.bound + 1e-6


def test_a_path_past_the_client_limit_is_not_kept_as_a_gpu() -> None:
    # 60 tasks of 256 MiB fit one GPU by memory; MPS holds 48 clients, so that GPU's contents are dropped.
    solution = arc_flow.solve([256], [1], [60], 22307, 48)
    assert solution is not None and solution.bound == 1 and solution.patterns == []
    kept = arc_flow.solve([256], [1], [40], 22307, 48)
    assert kept is not None and kept.patterns == [((40,), 1.0)]


def test_it_steps_aside_where_the_model_would_be_large() -> None:
    assert arc_flow.solve([1001, 1003], [1, 1], [5, 5], 22307, 48) is None  # gcd 1: 22,307 units
    many = [256 * (i + 1) for i in range(40)]
    assert arc_flow.solve(many, [1] * 40, [20] * 40, 256 * 500, 48) is None  # 500 units, past MAX_ARCS
    assert arc_flow.solve([], [], [], 22307, 48) is None


def test_the_arcs_join_only_what_the_larger_sizes_reach_and_paths_follow_the_flow() -> None:
    # Sizes 3 (one task) and 2 (two) on 7 units: 3 reaches {0, 3}; then 2 reaches 2, 5, 4 and 7 within two copies.
    arcs = arc_flow.arcs([3, 2], [1, 2], 7)
    assert sorted(a for a in arcs if a[2] == 0) == [(0, 3, 0)]
    assert sorted(a for a in arcs if a[2] == 1) == [(0, 2, 1), (2, 4, 1), (3, 5, 1), (5, 7, 1)]
    assert sorted(a for a in arcs if a[2] == -1) == [(0, 2, -1), (2, 3, -1), (3, 4, -1), (4, 5, -1), (5, 7, -1)]
    used = {(0, 3, 0), (3, 5, 1), (5, 7, -1), (0, 2, 1), (2, 3, -1), (3, 4, -1), (4, 5, -1)}
    flow = [1 if arc in used else 0 for arc in arcs]
    flow[arcs.index((5, 7, -1))] = 2  # both GPUs leave node 5 by its loss arc
    assert arc_flow.paths(arcs, flow, 2, 7) == {(1, 1): 1, (0, 1): 1}
    # An LP's flow: half a GPU of each. The walk takes the arc with the most flow left, and each walk empties one.
    halves = [0.5 * f for f in flow]
    halves[arcs.index((0, 3, 0))] = 0.75
    halves[arcs.index((0, 2, 1))] = 0.25
    halves[arcs.index((2, 3, -1))] = 0.25
    halves[arcs.index((3, 5, 1))] = 0.75
    halves[arcs.index((3, 4, -1))] = 0.25
    halves[arcs.index((4, 5, -1))] = 0.25
    assert arc_flow.paths(arcs, halves, 2, 7) == {(1, 1): 0.75, (0, 1): 0.25}
    assert arc_flow.paths(arcs, [1e-9 * f for f in flow], 2, 7) == {}  # rounding error, not a GPU


def test_a_fleet_one_gpu_above_its_bound_on_eight_gpu_hosts_is_planned_at_it() -> None:
    # Held-out seed 6004 at 1,000 tasks (eight L4s a host, GPU memory binding, 34 sizes): the staged fills and the
    # host-level LP used 241 GPUs, a host more than the 240 the LP's bound allows; the arc-flow LP's rounding packs 240.
    fleet = fleet_generator.generate(6004, 1000)
    result = plan([fleet.capacity], fleet.services)
    capacity = result.capacities[0]
    assert (result.instances, capacity.instance_lower_bound, capacity.gpus_used) == (30, 30, 240)


def test_without_the_arc_flow_model_that_fleet_is_a_host_above(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the staged plan's GPU LP over its many sizes, which finds the 30 hosts first."""
    staged_gpu_lp_off(monkeypatch)
    monkeypatch.setattr(arc_flow, "MAX_ARCS", 0)
    fleet = fleet_generator.generate(6004, 1000)
    result = plan([fleet.capacity], fleet.services)
    assert (result.instances, result.capacities[0].gpus_used) == (31, 241)


def test_an_lp_highs_does_not_solve_gives_no_bound_and_the_plan_goes_on_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where HiGHS stops short of the LP's optimum (a limit, a numerical failure), its value is no bound and its flow
    no plan: ``solve`` says it has none, and 6004 is planned as without the model (31 hosts, 241 GPUs; without the
    staged plan's GPU LP, which finds 30 first, as HiGHS here solves no LP)."""
    import highspy

    staged_gpu_lp_off(monkeypatch)
    monkeypatch.setattr(highspy.Highs, "getModelStatus", lambda self: highspy.HighsModelStatus.kIterationLimit)
    assert arc_flow.solve([256, 512], [1, 1], [3, 3], 22307, 48) is None
    fleet = fleet_generator.generate(6004, 1000)
    result = plan([fleet.capacity], fleet.services)
    assert (result.instances, result.capacities[0].gpus_used) == (31, 241)
