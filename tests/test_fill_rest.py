"""The rounding's rest put into the room of its hosts (``host_lp._fill_rest``): a host is laid out afresh and filled
(``patterns._topped``) only where some task left fits what its pattern leaves of the host, and the hosts and the rest
are what filling every host in turn gives."""

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


def _filled_plainly(
    items: Sequence[host_lp.Item], host: host_lp.HostSpec, hosts: list[tuple[host_lp.Pattern, int]], left: list[int]
) -> tuple[list[tuple[host_lp.Pattern, int]], list[int]]:
    """The oracle: every host of every pattern offered what is left, in turn, until one takes nothing."""
    rest = list(left)
    out: list[tuple[host_lp.Pattern, int]] = []
    for p, k in hosts:
        while k > 0 and any(rest):
            filled = patterns._topped(items, host, p, [a + n for a, n in zip(p.counts, rest, strict=True)])
            if filled.counts == p.counts:
                break
            out.append((filled, 1))
            rest = [n - (b - a) for n, a, b in zip(rest, p.counts, filled.counts, strict=True)]
            k -= 1
        if k > 0:
            out.append((p, k))
    return out, rest


def _roundings(seed: int, size: int) -> tuple[list[host_lp.Item], host_lp.HostSpec, list[host_lp.Pattern]]:
    fleet = fleet_generator.generate(seed, size)
    items, host = lp_problem(fleet.capacity, [(s, s.tasks) for s in fleet.services])
    solution = host_lp.solve(items, host)
    return items, host, [p for p, _ in solution.hosts]


@pytest.mark.parametrize("seed", [0, 2, 4, 24, 57])  # four, one, eight, eight and one GPUs a host
def test_the_rest_fills_the_hosts_as_offering_it_to_each_host_in_turn_would(seed: int) -> None:
    items, host, found = _roundings(seed, 1000)
    rng = random.Random(seed)
    for _ in range(6):
        hosts = [(p, rng.randint(1, 4)) for p in rng.sample(found, min(len(found), 8))]
        left = [rng.choice((0, 0, 0, rng.randint(1, 6))) for _ in items]
        assert host_lp._fill_rest(items, host, hosts, left) == _filled_plainly(items, host, hosts, left)


def test_a_host_nothing_left_fits_is_not_laid_out_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three hosts of 4 tasks of a on a host of four GPUs: 2 tasks of b (a GPU's memory each) fit the two GPUs left,
    and fill one host; 2 tasks of c (more CPU than a host of them has left) fit none, and no host is laid out again."""
    items = [
        host_lp.Item("a", "", 8000, 1, 0, 1024, 4096, 0, 12),
        host_lp.Item("b", "", 16000, 1, 0, 512, 2048, 0, 2),
        host_lp.Item("c", "", 1000, 1, 0, 48000, 2048, 0, 2),
    ]
    host = host_lp.HostSpec(4, 16000, 49152, 184000, 1 << 30)
    a4 = patterns._build(items, host, [0], [4, 0, 0])
    calls: list[int] = []
    topped = patterns._topped
    monkeypatch.setattr(patterns, "_topped", lambda *args: calls.append(1) or topped(*args))
    hosts, rest = host_lp._fill_rest(items, host, [(a4, 3)], [0, 2, 2])
    assert sorted((p.counts, k) for p, k in hosts) == [((4, 0, 0), 2), ((4, 2, 0), 1)]
    assert rest == [0, 0, 2]
    assert len(calls) == 1  # the first host took both tasks of b; c fits none of the three
    calls.clear()
    assert host_lp._fill_rest(items, host, [(a4, 3)], [0, 0, 2]) == ([(a4, 3)], [0, 0, 2])
    assert not calls
