"""The cutting-stock LP: a lower bound on GPUs that L2 misses, and patterns that reach it."""

from __future__ import annotations

import sys

from ecs_gpu_sharing.core import cutting_stock
from ecs_gpu_sharing.core.planner import plan

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import plan_benchmark


def test_one_size_bounds_at_its_count_over_what_fits() -> None:
    solution = cutting_stock.solve([6000], [1], [7], 22307, 48)
    assert solution is not None and solution.bound == 3  # 3 per GPU, 7 tasks


def test_the_client_limit_is_respected_by_the_patterns_it_returns() -> None:
    solution = cutting_stock.solve([100], [1], [500], 22307, 48)
    assert solution is not None
    assert all(sum(pattern) <= 48 for pattern, _ in solution.patterns)


def test_it_steps_aside_when_the_knapsack_or_the_simplex_would_be_slow() -> None:
    assert cutting_stock.solve([1001, 1003], [1, 1], [5, 5], 22307, 48) is None  # gcd 1: 22307 units
    assert cutting_stock.solve([256 * (i + 1) for i in range(40)], [1] * 40, [1] * 40, 22272, 48) is None


def test_the_mixed_benchmark_is_planned_at_its_lp_bound_where_l2_was_loose() -> None:
    # With few sizes and large counts, L2 left a 2.8% gap at 100,000 tasks that the LP shows to be the bound's.
    caps, services = plan_benchmark.mixed(100_000, 7)
    result = plan(caps, services)
    # The GPUs meet the LP's bound exactly. Since the L40S is planned at its sourced figure (45077 usable MiB, not
    # 90% of EC2's), 8649 GPUs on 4-GPU hosts with the tasks' CPU and memory leave 0.6% of hosts above the bound.
    assert all(c.gpus_used == c.gpu_lower_bound for c in result.capacities)
    assert result.capacity("l4").optimal
    assert result.instances <= result.instance_lower_bound * 1.01
