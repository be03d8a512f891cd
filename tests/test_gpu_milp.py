"""HiGHS's MILP over GPU memory and MPS clients together: GPUs filled where the clients bind with the memory."""

from __future__ import annotations

import pytest

from ecs_gpu_sharing.core import gpu_milp
from ecs_gpu_sharing.core.planner import plan

from conftest import benchmarks_on_path

with benchmarks_on_path():
    import shaped_fleets


def _holds(solution: gpu_milp.Solution, sizes: list[int], clients: list[int], demand: list[int]) -> None:
    """Every GPU of ``solution`` within 22,307 MiB and 48 clients, the counts met, on as many GPUs as its bound."""
    assert sum(int(n) for _, n in solution.patterns) <= solution.bound
    for pattern, _ in solution.patterns:
        assert sum(k * s for k, s in zip(pattern, sizes, strict=True)) <= 22307
        assert sum(k * c for k, c in zip(pattern, clients, strict=True)) <= 48
    for i, d in enumerate(demand):
        assert sum(pattern[i] * int(n) for pattern, n in solution.patterns) == d


def test_gpus_filled_to_their_clients_and_within_their_memory() -> None:
    """Tasks of three and of two clients, 48 of each GPU's clients taken on every GPU: four GPUs only hold them
    with each GPU's clients full, which a packing by memory alone does not look for."""
    sizes, clients, demand = [1280, 768], [3, 2], [40, 36]  # 40 * 3 + 36 * 2 = 192 clients = 4 GPUs of 48
    solution = gpu_milp.fill(sizes, clients, demand, 22307, 48, 4)
    assert solution is not None and solution.bound == 4
    _holds(solution, sizes, clients, demand)


def test_no_packing_where_none_exists_the_clients_cannot_bind_or_the_model_is_too_large() -> None:
    assert gpu_milp.fill([15000], [1], [3], 22307, 48, 1) is None  # 45,000 MiB on one GPU
    assert gpu_milp.fill([256], [1], [49], 22307, 48, 1) is None  # 49 clients on one GPU
    assert gpu_milp.fill([256], [1], [10], 22307, 48, 0) is None
    assert gpu_milp.fill([4096], [1], [5], 22307, 48, 1) is None  # 5 clients, 0.9 GPUs of memory: clients do not bind
    assert gpu_milp.fill([4096], [5], [5], 22307, 48, 1) is not None  # 25 clients: they may
    many = list(range(256, 256 * 21, 256))  # 20 sizes, a task of 40 clients each: a GPU a task
    within = gpu_milp.MILP_CELLS // 20
    assert gpu_milp.fill(many, [40] * 20, [1] * 20, 22307, 48, within + 1) is None  # past MILP_CELLS
    assert gpu_milp.fill(many, [40] * 20, [1] * 20, 22307, 48, within) is not None


def test_the_plan_holds_a_fleet_of_small_tasks_on_the_gpus_their_clients_need(monkeypatch: pytest.MonkeyPatch) -> None:
    """``shaped_fleets.py clients`` seed 943 at 1,000 tasks, eight L4s a host: its tasks take 2,304 clients, 48 GPUs'
    worth, and fit 48 GPUs only with each GPU's clients full. The exact GPU stage's MILP finds them: six hosts, its
    bound; without the MILP the plan has 49 GPUs, seven hosts."""
    cap, services, _ = shaped_fleets.fleet("clients", 943, 1000)
    planned = plan([cap], services).capacities[0]
    assert (planned.instance_count, planned.gpus_used, planned.optimal) == (6, 48, True)
    monkeypatch.setattr(gpu_milp, "MILP_CELLS", 0)
    without = plan([cap], services).capacities[0]
    assert (without.instance_count, without.gpus_used) == (7, 49)
