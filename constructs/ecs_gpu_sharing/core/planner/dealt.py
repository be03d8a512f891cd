"""A capacity's tasks dealt over a number of hosts in the fleet's own mix: a plan for a fleet past the host-level LP's
exact limits, where each service binds a resource of its own, within the LP's gap of its bound in a tenth of the LP's
time.

The staged plan fills GPUs first and puts like with like, so where one service needs a host's CPU, another its memory
and a third its GPUs, its hosts run out of one resource with the others idle: held-out seed 1008 of the generated
benchmark at 100,000 tasks (eight L4s a host, 154 services) is 1,787 hosts over a bound of 1,433 without the LP,
which takes 2.4-3.6 s to pack 1,433. Dealt, each host takes every service's share of what is left over the hosts left,
so a host holds the fleet's mix, whose resources the bound says fill the hosts together; what a host's share leaves of
its room is topped up first-fit decreasing (docs/planning.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..host_lp import HostSpec, Item, Pattern
from ..host_lp.model import shares
from ..host_lp.patterns import _Builder


def dealt(items: Sequence[Item], host: HostSpec, hosts: int) -> list[tuple[Pattern, int]] | None:
    """Every task of ``items`` (their ``demand``) on hosts of ``host``, dealt over ``hosts`` of them and more where
    tasks are left: each host in turn takes of each item its share of the tasks left over the hosts left (the
    fraction carried to the next host, so the shares add up to the tasks), items by their share of the host's GPU
    memory, largest first, each where ``_Builder`` puts it (best fit on the GPUs); then the host's room left is
    filled with any tasks left, by the largest share of a host a task takes, largest first. The patterns, each with
    the hosts that have it, in the order first dealt; None where a host takes no task (an empty host takes any one
    task that fits a host, so only for tasks that do not)."""
    n = len(items)
    left = [it.demand for it in items]
    share = [shares(it, host) for it in items]
    by_gpu = sorted((i for i in range(n) if left[i]), key=lambda i: (-share[i][0], i))
    by_most = sorted(by_gpu, key=lambda i: (-max(share[i]), i))
    carried = [0.0] * n
    out: dict[Pattern, int] = {}
    tasks, dealt_to = sum(left), 0
    while tasks:
        hosts_left = max(hosts - dealt_to, 1)
        b = _Builder(items, host)
        for i in by_gpu:
            carried[i] += left[i] / hosts_left
            take = min(int(carried[i]), left[i])
            if take:
                b.add(i, take)
                carried[i] -= b.counts[i]
        b.fill(by_most, left)
        held = [(i, k) for i, k in enumerate(b.counts) if k]
        if not held:
            return None
        for i, k in held:
            left[i] -= k
            tasks -= k
        if any(not left[i] for i, _ in held):  # an item dealt out: the orders without it
            by_gpu = [i for i in by_gpu if left[i]]
            by_most = [i for i in by_most if left[i]]
        p = b.pattern()
        out[p] = out.get(p, 0) + 1
        dealt_to += 1
    return list(out.items())
