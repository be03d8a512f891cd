"""Services no packing can tell apart, as one for the host-level LP, and the LP's hosts given back to each of them.

A team may run the same model as many services (one a tenant, one a region): the same task shape (CPU, memory, GPU
budgets, whole GPUs, network interfaces), isolation group and host isolation. To the LP they are one item; kept apart
they are as many rows, and a master of thousands of rows fills with patterns before its column generation gets far
(held-out seed 1008 at 100,000 tasks, its 154 services each split in thirteen: 1,654 hosts kept apart, 1,433 as one;
docs/planning.md). A task of two whole GPUs or more is on each of its GPUs, so its services are not merged: a host's
GPUs could otherwise be given back to two services for one task."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .hosts import Host
from .model import ServiceInput

# Merged where the kinds of service are at most this share of the services: a few twins (which the generated benchmark
# draws where task sizes snap to ECS's: 74 services of 72 kinds, 185 of 164) change little of the LP's size and
# only move column generation's path (on held-out seeds 1000-1099 at 10,000 tasks, one plan an instance worse and three
# bounds moved, by -23 to +6 in all); many copies of one model are where the rows cost
MERGED_SHARE = 0.75
Kinds = dict[str, list[tuple[str, int]]]  # a merged service's name: its services' names and tasks, in order


def _key(s: ServiceInput) -> tuple[object, ...]:
    """What a packing sees of a service: alike services share all of it (a task of several whole GPUs: its name)."""
    return (s.shape, s.isolation_group, s.isolate_host, s.kept_apart, s.name if s.whole_gpus > 1 else "")


def merged(
    groups: list[list[tuple[ServiceInput, int]]],
) -> tuple[list[list[tuple[ServiceInput, int]]], Kinds]:
    """``groups`` with alike services as one (the first of them, its tasks those of all), and each merged service's
    services; as they are, with no kinds, where the kinds are more than MERGED_SHARE of the services."""
    first: dict[tuple[object, ...], ServiceInput] = {}
    kinds: Kinds = {}
    totals: dict[str, int] = {}
    for group in groups:
        for s, n in group:
            if not n:
                continue
            rep = first.setdefault(_key(s), s)
            kinds.setdefault(rep.name, []).append((s.name, n))
            totals[rep.name] = totals.get(rep.name, 0) + n
    if len(kinds) > MERGED_SHARE * sum(len(members) for members in kinds.values()):
        return groups, {}
    out = [
        [(replace(s, tasks=totals[s.name]), totals[s.name]) for s, n in group if n and first[_key(s)] is s]
        for group in groups
    ]
    return [group for group in out if group], {rep: members for rep, members in kinds.items() if len(members) > 1}


def _take(queue: list[tuple[str, int]], n: int) -> list[tuple[str, int]]:
    """``n`` tasks from the front of a merged service's ``queue`` (its services' names and tasks left, the front
    last: popped from the end)."""
    taken: list[tuple[str, int]] = []
    while n:
        name, left = queue[-1]
        k = min(n, left)
        taken.append((name, k))
        n -= k
        if k == left:
            queue.pop()
        else:
            queue[-1] = (name, left - k)
    return taken


def _renamed(host: Host, count: int, names: dict[str, list[tuple[str, int]]]) -> Host:
    """``count`` copies of ``host`` with each merged service's tasks named as ``names`` gives them (per copy, in the
    order of its GPUs, then its tasks without a GPU)."""
    left = {rep: pairs[::-1] for rep, pairs in names.items()}

    def named(tasks: Sequence[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
        out: dict[str, int] = {}
        for name, k in tasks:
            for real, m in _take(left[name], k) if name in left else [(name, k)]:
                out[real] = out.get(real, 0) + m
        return tuple(sorted(out.items()))

    gpus = [replace(g, tasks=named(g.tasks)) if g.tasks else g for g in host.gpus]
    without = dict(named(tuple(host.without_gpu.items())))
    return replace(host, count=count, gpus=gpus, without_gpu=without)


def _per_copy(host: Host, kinds: Kinds) -> dict[str, int]:
    """Tasks of each merged service on one copy of ``host``."""
    per: dict[str, int] = {}
    for g in host.gpus:
        for name, k in g.tasks:
            if name in kinds:
                per[name] = per.get(name, 0) + k
    for name, k in host.without_gpu.items():
        if name in kinds:
            per[name] = per.get(name, 0) + k
    return per


def named_back(hosts: list[Host], kinds: Kinds) -> list[Host]:
    """``hosts`` planned over merged services with their tasks given back to the services merged: each merged
    service's services in turn, a run of copies at a time where each service takes a copy's tasks whole."""
    if not kinds:
        return hosts
    queues = {rep: members[::-1] for rep, members in kinds.items()}  # the front last
    out: list[Host] = []
    for host in hosts:
        per = _per_copy(host, kinds)
        if not per:
            out.append(host)
            continue
        left = host.count
        while left:
            copies = min(left, *(queues[r][-1][1] // k for r, k in per.items()))
            if copies:  # each service at the front takes these copies' tasks whole
                names = {r: [(queues[r][-1][0], k)] for r, k in per.items()}
                for r, k in per.items():
                    _take(queues[r], k * copies)
            else:  # a copy whose tasks of a merged service come from two of its services or more
                copies, names = 1, {r: _take(queues[r], k) for r, k in per.items()}
            out.append(_renamed(host, copies, names))
            left -= copies
    return out


__all__ = ["Kinds", "merged", "named_back"]
