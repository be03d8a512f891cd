"""The host-level LP's greedy sums and sorts over every item in numpy arrays (``patterns._orders``,
``patterns._candidates``): the plain loops kept here as their definition, the same floats and orders to the bit."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from ecs_gpu_sharing.core import host_lp
from ecs_gpu_sharing.core.host_lp import patterns
from ecs_gpu_sharing.core.planner import lp_problem

from conftest import benchmarks_on_path

with benchmarks_on_path():
    import fleet_generator


def _orders_plainly(items: Sequence[host_lp.Item], host: host_lp.HostSpec, duals: Sequence[float]) -> list[list[int]]:
    """The oracle of ``patterns._orders``: each order a stable sort of the items of a positive price."""
    live = [i for i, d in enumerate(duals) if d > 1e-9]
    return [sorted(live, key=lambda i: -duals[i] / w[i]) for w in patterns._fixed(items, host).weights]


def _priced_plainly(
    items: Sequence[host_lp.Item], host: host_lp.HostSpec, duals: Sequence[float], prices: Sequence[float]
) -> tuple[list[int], list[list[float]]]:
    """The oracle of what ``patterns._candidates`` sums over every item: the order of price over use at the pricing
    LP's prices, and for each knapsack's row the items' reduced worth with that row left unpriced."""
    use = patterns._fixed(items, host).use
    live = [i for i, d in enumerate(duals) if d > 1e-9]
    weight = [sum(p * u for p, u in zip(prices, row, strict=True)) for row in use]
    priced = sorted(live, key=lambda i: -duals[i] / max(weight[i], 1e-12))
    reduced = []
    for row in (0, 2, 3):
        p0, p1, p2, p3, p4 = (p if r != row else 0.0 for r, p in enumerate(prices))
        reduced.append(
            [d - (p0 * u[0] + p1 * u[1] + p2 * u[2] + p3 * u[3] + p4 * u[4]) for d, u in zip(duals, use, strict=True)]
        )
    return priced, reduced


@pytest.mark.parametrize("seed", [0, 2, 4, 24, 57])
def test_the_greedys_sums_and_sorts_over_arrays_are_the_plain_loops_to_the_bit(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The greedy's orders and its knapsacks' worths are summed and sorted over numpy arrays (``_orders``,
    ``_candidates``): each element's arithmetic in the plain loops' order, and stable sorts, so the same floats and
    the same orders, ties among them (duals drawn from a few values, so many items tie)."""
    fleet = fleet_generator.generate(seed, 1000)
    items, host = lp_problem(fleet.capacity, [(s, s.tasks) for s in fleet.services])
    rng = random.Random(seed)
    knapsacks: list[list[float]] = []
    knapsack = patterns._knapsack
    monkeypatch.setattr(
        patterns,
        "_knapsack",
        lambda values, *rest, **kw: knapsacks.append(list(values)) or knapsack(values, *rest, **kw),
    )
    weighed = 0
    for draw in range(8):
        duals = [rng.choice((0.0, 0.05, 0.1, 0.25, 1 / 3)) if draw % 2 else rng.uniform(0, 0.5) for _ in items]
        prices = [rng.choice((0.0, 1e-4, rng.uniform(0, 1))) for _ in range(5)]
        assert patterns._orders(items, host, duals) == _orders_plainly(items, host, duals)
        priced, reduced = _priced_plainly(items, host, duals, prices)
        fixed = patterns._fixed(items, host)
        plain = [sum(p * u for p, u in zip(prices, row, strict=True)) for row in fixed.use]
        assert patterns._priced_use(fixed, prices).tolist() == plain
        caps = [host_lp.per_host(it, host) for it in items]
        counts = [0.0] * len(items)
        knapsacks.clear()
        found = patterns._candidates(items, host, duals, caps, counts, prices)
        b = patterns._Builder(items, host)
        b.fill(priced, caps)
        assert found[len(patterns._fixed(items, host).weights)] == b.pattern()  # the priced order's, built as its own
        use = patterns._fixed(items, host).use
        live = [i for i, d in enumerate(duals) if d > 1e-9]
        wanted = [
            [
                worth[i]
                for i in live
                if worth[i] > 0 and (items[i].size and not items[i].whole if row == 0 else use[i][row])
            ]
            for row, worth in zip((0, 2, 3), reduced, strict=True)
        ]
        assert all(values in wanted for values in knapsacks)
        weighed += len(knapsacks)
    assert weighed >= 8  # the knapsacks' worths were compared
