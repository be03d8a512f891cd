"""The generated benchmark's budgets moved off its 256 MiB grid (``fleet_generator.regrained``): what
``evaluate --write`` suggests (64 MiB steps) and a team's round numbers (500 MiB)."""

from __future__ import annotations

import pytest

from conftest import benchmarks_on_path

with benchmarks_on_path():
    import fleet_generator


def _budgets(fleet: fleet_generator.Fleet) -> list[tuple[int, ...]]:
    return [s.shape.gpu_budgets_mib for s in fleet.services]


@pytest.mark.parametrize("seed", [1000, 1007, 1017])
def test_steps_of_64_move_each_budget_within_192_mib_and_keep_each_task_on_one_gpu(seed: int) -> None:
    fleet = fleet_generator.generate(seed, 1000)
    moved = fleet_generator.regrained(fleet, 64)
    usable = fleet.capacity.usable_gpu_memory_mib
    assert moved == fleet_generator.regrained(fleet, 64)  # seeded
    assert [s.shape.whole_gpus for s in moved.services] == [s.shape.whole_gpus for s in fleet.services]
    assert [s.tasks for s in moved.services] == [s.tasks for s in fleet.services]
    off_grid = 0
    for before, after in zip(_budgets(fleet), _budgets(moved), strict=True):
        assert len(after) == len(before) and sum(after) <= usable
        for b, a in zip(before, after, strict=True):
            assert a % 64 == 0 and a >= 64 and abs(a - b) <= 192
            off_grid += a % 256 != 0
    assert off_grid > 0


def test_a_step_of_500_rounds_each_budget_to_it_unless_the_task_would_pass_its_gpu() -> None:
    fleet = fleet_generator.generate(1003, 1000)
    moved = fleet_generator.regrained(fleet, 500)
    usable = fleet.capacity.usable_gpu_memory_mib
    rounded = 0
    for before, after in zip(_budgets(fleet), _budgets(moved), strict=True):
        assert sum(after) <= usable
        if after != before:
            rounded += 1
            assert all(a % 500 == 0 and a >= 500 for a in after)
            assert after == tuple(max(500, round(b / 500) * 500) for b in before)
    assert rounded > 0


def test_no_step_is_the_fleet_as_drawn() -> None:
    fleet = fleet_generator.generate(1001, 1000)
    assert fleet_generator.regrained(fleet, 0) is fleet
