"""A capacity's tasks dealt over a number of hosts in the fleet's own mix: a plan for a fleet past the host-level LP's
exact limits, where each service binds a resource of its own, within the LP's gap of its bound in a tenth of the LP's
time.

The staged plan fills GPUs first and puts like with like, so where one service needs a host's CPU, another its memory
and a third its GPUs, its hosts run out of one resource with the others idle: held-out seed 1008 of the generated
benchmark at 100,000 tasks (eight L4s a host, 154 services) is 1,787 hosts over a bound of 1,433 without the LP,
which takes 2.4-3.6 s to pack 1,433. Dealt, each host takes every service's share of what is left over the hosts left,
so a host holds the fleet's mix, whose resources the bound says fill the hosts together; what a host's share leaves of
its room is topped up first-fit decreasing (docs/planning.md).

A host's share of a service is the same however many hosts there are, so past DEALT_HOSTS hosts a fleet of a
``copies``-th of each service's tasks is dealt over that share of the hosts, and each of its hosts is copied that many
times: the hosts dealt are a few hundred, not thousands, and the plan names as many layouts (held-out 1008 over 1,461
hosts: 131 hosts of an eleventh of its tasks dealt, 128 of them copied, and 45 hosts dealt one by one, 173 layouts on
1,453 hosts in 0.04 s, where dealing every host one by one took 0.35 s for 1,452 layouts on 1,452).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from ..host_lp import HostSpec, Item, Pattern
from ..host_lp.model import shares
from ..host_lp.patterns import _Builder
from .hosts import scale

DEALT_HOSTS = 128  # hosts dealt one by one at most, before the rest are copies (tuned: docs/planning.md)
DEALT_TAIL = 0.02  # of the hosts copied, this share of the last dealt (at least one) are dealt again one by one
DEALT_REST = 0.02  # the tasks the quotients leave (each service's tasks modulo the copies) this share of all at most


def dealt(items: Sequence[Item], host: HostSpec, hosts: int) -> list[tuple[Pattern, int]] | None:
    """Every task of ``items`` (their ``demand``) on hosts of ``host``, dealt over ``hosts`` of them and more where
    tasks are left (``one_by_one``). Past DEALT_HOSTS, each item's tasks over ``copies = hosts // DEALT_HOSTS`` (the
    quotient; ``copies`` lowered until the tasks it leaves are DEALT_REST of all or fewer: ``hosts.scale``) are dealt
    over ``hosts // copies`` hosts, and each of those hosts is taken ``copies`` times, but for the last DEALT_TAIL of
    them (the last dealt are the emptiest: they hold what the others left); the tasks those and the quotient leave
    are dealt one by one over the hosts left. Where the copies need more than ``hosts``, every host is dealt one by
    one instead: the host-level LP then runs, started from the plan's hosts as its first patterns, and a host a
    layout gives it more to start from (tuning seeds 6, 8, 9 and 13 at 100,000 tasks on eight L4s a host: 42 hosts
    fewer from the LP than started from the copies). The patterns, each with the hosts that have it, in the order
    first dealt; None where a host takes no task (an empty host takes any one task that fits a host, so only for
    tasks that do not)."""
    copies = scale([it.demand for it in items], hosts // DEALT_HOSTS, DEALT_REST)
    kept: list[Pattern] = []
    if copies > 1:
        scaled = one_by_one(
            [dataclasses.replace(it, demand=it.demand // copies) for it in items], host, hosts // copies
        )
        if scaled is None:
            return None
        kept = scaled[: max(len(scaled) - max(math.ceil(DEALT_TAIL * len(scaled)), 1), 0)]
    left = [it.demand for it in items]
    for p in kept:
        for i, k in p.held:
            left[i] -= k * copies
    rest = one_by_one(
        [dataclasses.replace(it, demand=n) for it, n in zip(items, left, strict=True)], host, hosts - len(kept) * copies
    )
    if rest is None:
        return None
    if kept and len(kept) * copies + len(rest) > hosts:
        every = one_by_one(items, host, hosts)  # where the LP runs (above)
        return None if every is None else _counted([(p, 1) for p in every])
    return _counted([(p, copies) for p in kept] + [(p, 1) for p in rest])


def _counted(hosts: Sequence[tuple[Pattern, int]]) -> list[tuple[Pattern, int]]:
    """Each pattern with the hosts that have it, in the order first dealt."""
    out: dict[Pattern, int] = {}
    for p, k in hosts:
        out[p] = out.get(p, 0) + k
    return list(out.items())


def one_by_one(items: Sequence[Item], host: HostSpec, hosts: int) -> list[Pattern] | None:
    """Each host's pattern, in the order dealt: each host in turn takes of each item its share of the tasks left over
    the hosts left (the fraction carried to the next host, so the shares add up to the tasks), items by their share of
    the host's GPU memory, largest first, each where ``_Builder`` puts it (best fit on the GPUs); then the host's room
    left is filled with any tasks left, by the largest share of a host a task takes, largest first. None where a host
    takes no task.

    The shares are carried in numpy arrays, a host's whole at once, and only the items a whole task is due of, or
    whose task the host's room left can take, are offered to the host one by one: where a fleet has hundreds of
    services and thousands of hosts, each a few tasks, a loop over every item for every host was most of the time
    (tuning seed 57 at 40,000 tasks, 909 services dealt over 14,116 hosts of one GPU: 9.9 s, now 2.7 s; 7.2 million
    offers, nearly all of which placed nothing). The same arithmetic, so the same hosts (a test deals beside the plain
    loop)."""
    import numpy as np

    left = [it.demand for it in items]
    share = [shares(it, host) for it in items]
    by_gpu = np.array(sorted((i for i, n in enumerate(left) if n), key=lambda i: (-share[i][0], i)), dtype=np.int64)
    by_most = np.array(sorted(by_gpu.tolist(), key=lambda i: (-max(share[i]), i)), dtype=np.int64)
    # In by_gpu's order: each item's tasks left and its share carried; in by_most's: what a task needs of the host
    remaining = np.array(left, dtype=np.int64)[by_gpu]
    carried = np.zeros(len(by_gpu))
    at = {i: j for j, i in enumerate(by_gpu.tolist())}  # each item's place in by_gpu's order
    needs = np.array([(it.cpu, it.mem, 0 if it.whole else it.size) for it in items], dtype=np.int64).reshape(-1, 3)
    cpu, mem, size = needs[by_most].T  # size: the room on a GPU an MPS task needs (a whole-GPU task's: none)
    out: list[Pattern] = []
    tasks = sum(left)
    while tasks:
        hosts_left = max(hosts - len(out), 1)
        b = _Builder(items, host)
        carried += remaining / hosts_left
        for j in (carried >= 1.0).nonzero()[0].tolist():
            i = int(by_gpu[j])
            it = items[i]
            if it.cpu > b.cpu or it.mem > b.mem or (it.size > b.top and not it.whole):
                continue  # the host takes none of it (``_Builder.add`` would place none): its share carries on
            b.add(i, min(int(carried[j]), left[i]))
            carried[j] -= b.counts[i]
        b.fill(by_most[(cpu <= b.cpu) & (mem <= b.mem) & (size <= b.top)].tolist(), left)
        held = sorted({i for load in b.load for i in load} | b.no_gpu.keys())
        if not held:
            return None
        for i in held:
            left[i] -= b.counts[i]
            remaining[at[i]] -= b.counts[i]
            tasks -= b.counts[i]
        if any(not left[i] for i in held):  # an item dealt out: the orders without it
            kept = remaining > 0
            by_gpu, carried, remaining = by_gpu[kept], carried[kept], remaining[kept]
            at = {i: j for j, i in enumerate(by_gpu.tolist())}
            most_kept = np.array([left[i] > 0 for i in by_most.tolist()])
            by_most, cpu, mem, size = by_most[most_kept], cpu[most_kept], mem[most_kept], size[most_kept]
        out.append(b.pattern())
    return out
