"""The host-level cutting-stock LP (#32): its bound holds against exact solvers, and it stays off standard output."""

from __future__ import annotations

import random
import subprocess
import sys

from ecs_gpu_sharing.core import host_lp
from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput, lp_problem, plan

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
try:
    import fleet_generator
    import small_fleets
    from host_lp import _price as exact_price  # the benchmark's own pricing MILP (HiGHS), written apart
finally:
    sys.path.pop(0)


def _problem(cap: CapacityInput, services: list[ServiceInput]) -> tuple[list[host_lp.Item], host_lp.HostSpec]:
    return lp_problem(cap, [(s, s.tasks) for s in services])


def test_the_bound_on_a_patterns_worth_is_never_below_the_exact_best_pattern() -> None:
    """The Lagrangian bound (_most_worth) must be at least the worth of the best pattern the benchmark's MILP finds,
    at any duals and any prices: else Farley's bound, and every `optimal` the plan says, could be wrong."""
    rng = random.Random(3)
    checked = 0
    for seed in range(6):
        fleet = fleet_generator.generate(seed, 60)
        services = [s for s in fleet.services if not s.whole_gpus][:8]
        items, host = _problem(fleet.capacity, services)
        for _ in range(3):
            duals = [rng.uniform(0, 0.5) for _ in items]
            prices = [rng.choice([0.0, rng.uniform(0, 1e-4)]) for _ in range(5)]
            pattern, _ = exact_price(fleet.capacity, services, duals, 10.0)
            best = sum(d * a for d, a in zip(duals, pattern, strict=True))
            assert host_lp._most_worth(items, host, duals, prices) >= best - 1e-6, fleet.label
            checked += 1
    assert checked == 18


def test_the_lp_bound_is_never_above_the_exact_optimum_of_small_fleets() -> None:
    rng = random.Random(17)
    checked = 0
    while checked < 10:
        cap, services = small_fleets.fleet(rng)
        result = plan([cap], services)
        if not result.fits:
            continue
        best = small_fleets.optimum(cap, services, result.instances)
        assert best is not None
        solution = host_lp.solve(*_problem(cap, services))
        assert solution.bound <= best <= result.instances, (cap.instance_type, services)
        checked += 1


def test_the_lp_leaves_no_task_out_and_no_task_twice() -> None:
    fleet = fleet_generator.generate(2, 1000)  # one L4 a host, each resource binding some services: the LP wins here
    items, host = _problem(fleet.capacity, fleet.services)
    solution = host_lp.solve(items, host)
    placed = [sum(p.counts[i] * k for p, k in solution.hosts) + solution.rest[i] for i in range(len(items))]
    assert placed == [it.demand for it in items]
    assert solution.bound > 0 and sum(k for _, k in solution.hosts) > 0


def test_highs_prints_nothing_on_standard_output() -> None:
    """HiGHS writes a banner to file descriptor 1 when its first model is made; `plan --json` prints JSON there."""
    code = "from ecs_gpu_sharing.core import host_lp; host_lp.new_highs(); host_lp.new_highs(); print('only this')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "only this\n"
