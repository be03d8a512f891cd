"""The integer master over the LP's own patterns (``host_lp.integer``): it finds covers of fewer hosts where there
are, none where there are not, its columns cut by reduced cost lose no better cover, and it takes a fleet the
rounding leaves above its bound to it."""

from __future__ import annotations

import random

import pytest

from ecs_gpu_sharing.core import host_lp
from ecs_gpu_sharing.core.host_lp import integer
from ecs_gpu_sharing.core.host_lp.highs import run_highs
from ecs_gpu_sharing.core.host_lp.patterns import _build
from ecs_gpu_sharing.core.planner import plan

from conftest import benchmarks_on_path

with benchmarks_on_path():
    import fleet_generator

ONE_GPU = host_lp.HostSpec(gpus=1, usable=10, cpu=100, mem=100, enis=1 << 30)


def _items(*sizes_and_demands: tuple[int, int]) -> list[host_lp.Item]:
    return [host_lp.Item(f"s{i}", "", size, 1, 0, 1, 1, 0, n) for i, (size, n) in enumerate(sizes_and_demands)]


def test_the_integer_master_finds_a_cover_of_fewer_hosts_from_the_pool() -> None:
    """Tasks of budgets 6 and 4, two of each, on one GPU of 10: a plan of each service alone takes 3 hosts (6, 6, 4+4);
    the pool holds the pattern of one of each, and the integer master covers the demand with two of it, every task
    once. Below 2 hosts there is no cover: none is given, and none where the pool lacks the pattern that pairs them."""
    items = _items((6, 2), (4, 2))
    alone = [_build(items, ONE_GPU, [i], [it.demand if i == j else 0 for j, it in enumerate(items)]) for i in (0, 1)]
    both = _build(items, ONE_GPU, [0, 1], [1, 1])
    assert [p.counts for p in (*alone, both)] == [(1, 0), (0, 2), (1, 1)]
    cover = integer.integer_master([*alone, both], items, ONE_GPU, below=3)
    assert cover is not None
    hosts, left = cover
    assert sum(k for _, k in hosts) == 2 and left == [0, 0]
    assert [sum(p.counts[i] * k for p, k in hosts) for i in (0, 1)] == [2, 2]
    assert integer.integer_master([*alone, both], items, ONE_GPU, below=2) is None
    assert integer.integer_master(alone, items, ONE_GPU, below=3) is None


def test_a_copy_past_what_is_left_is_cut_down_to_it() -> None:
    """Where the cover's copies hold more of an item than its demand (three of a pattern of two tasks for five), the
    last copy is cut down to what is left: the hosts hold every task once."""
    items = _items((5, 5))
    pair = _build(items, ONE_GPU, [0], [2])
    cover = integer.integer_master([pair], items, ONE_GPU, below=4)
    assert cover is not None
    hosts, left = cover
    assert sum(k for _, k in hosts) == 3 and left == [0]
    assert sum(p.counts[0] * k for p, k in hosts) == 5


def _optimum(counts: list[integer.Column], demand: list[int]) -> float:
    """The fewest copies of ``counts`` covering ``demand``, HiGHS's MILP searched to the end."""
    h = integer._model(counts, demand, integer=True)
    run_highs(h)
    return float(h.getInfo().objective_function_value)


def test_the_reduced_cost_cut_never_drops_a_column_a_better_cover_needs() -> None:
    """On drawn pools (6 items, 12-30 random columns beside each item alone, each column its (item, tasks)): for every ``target`` from the optimum
    up, the columns kept cover the demand in the optimum's copies, and they are fewer than all where the target is
    the optimum on at least some draws."""
    rng = random.Random(7)
    cut = 0
    for _ in range(40):
        demand = [rng.randint(1, 12) for _ in range(6)]
        dense = [tuple(d if i == j else 0 for j, d in enumerate(demand)) for i, d in enumerate(demand)]
        dense += [tuple(rng.choice((0, 0, 1, 2, 3)) for _ in demand) for _ in range(rng.randint(12, 30))]
        counts = [tuple([(i, a) for i, a in enumerate(c) if a]) for c in dict.fromkeys(dense) if any(c)]
        best = round(_optimum(counts, demand))
        for target in (best, best + 1, best + 3):
            kept = integer.cover_columns(counts, demand, target)
            assert kept is not None
            assert round(_optimum([counts[j] for j in kept], demand)) == best
            cut += target == best and len(kept) < len(counts)
    assert cut >= 10


@pytest.mark.long
def test_the_integer_master_takes_a_fleet_the_rounding_leaves_above_its_bound_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tuning seed 30206 at 1,000 tasks (eight L40S a host, 25 services): the rounding and its dives
    leave 140 instances over a bound of 139; the integer master over the pool's patterns covers the fleet with 139
    (optimal). Without it (POOL_IP_SIZE 0), 140."""
    fleet = fleet_generator.generate(30206, 1000)
    result = plan([fleet.capacity], fleet.services)
    assert (result.instances, result.instance_lower_bound) == (139, 139)
    monkeypatch.setattr(integer, "POOL_IP_SIZE", 0)
    result = plan([fleet.capacity], fleet.services)
    assert (result.instances, result.instance_lower_bound) == (140, 139)
