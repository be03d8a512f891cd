"""Stage 2 onto a set number of hosts, balanced and then repaired by moves and swaps.

Where a plan's GPUs fill its bound's hosts exactly and each service binds its own resource, every host must take a
full host's GPUs and stay within its CPU and memory: first fit (``hosts.pack_hosts``) stacks the CPU-heaviest GPUs
on the first hosts and needs more, and a greedy spread (``hosts.pack_hosts_even``) can still leave a copy that fits
nowhere. Held-out 7036 at 1,000 tasks (eight L40S a host) has 358 GPUs after the exact GPU stage, 45 hosts' worth,
and 44.1 hosts' worth of CPU: first fit put them on 52 hosts, the spread on 47.

Here every copy of a unit (a GPU's contents, a whole-GPU task, a task without a GPU), the largest share of a host
first, goes to the host with a free GPU slot whose load overlaps its needs least (the spread's dot product, each
need as a share of a host), the hosts' CPU, memory and interfaces not yet kept to. Then, while a host is over one of
them, the move of a copy to another host's free slots, or the swap of a copy with one on another host, that lowers
the hosts' summed excess the most (over their CPU, memory and interfaces, each as a share of a host), from the host
furthest over first; it stops where no move or swap lowers the excess (a local optimum), or past BALANCE_WORK. A local
search: it finds a packing or says it found none, never that none exists. Each step weighs the copies of one host
against every other copy at once, on numpy."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from .hosts import (
    UNLIMITED,
    Host,
    Unit,
    _add,
    eni_room,
    grouped,
    largest_share,
    pack_hosts,
    plan_size,
    scale,
    units_floor,
)
from .model import CapacityInput

BALANCE_WORK = 30_000_000  # pairs of copies (one on the host repaired, one anywhere) the repair may weigh in all
SCALED_WORK = 3  # each repair of pack_hosts_scaled, several a plan, at most this many times its copies squared (and
# BALANCE_WORK): those that packed weighed 0.4-1.1 times, those that found none ran to BALANCE_WORK (docs/planning.md)
BALANCE_COPIES = 10_000  # copies at most: the start places them one numpy pass over the hosts each
SCALED_COPIES = 2000  # pack_hosts_scaled: copies balanced at once, about (chosen on tuning seeds: docs/planning.md)
SCALED_REST = 0.05  # ... and the copies its quotients leave, this share of all at most


def pack_hosts_balanced(
    units: Sequence[Unit], cap: CapacityInput, count: int, scaled: bool = False
) -> list[Host] | None:
    """``units`` on ``count`` hosts, each within its GPU slots, CPU, memory and network interfaces; None where the
    search found no such packing (the module's docstring), or where the copies pass BALANCE_COPIES. None at once where
    one resource summed over the copies passes ``count`` hosts' (``units_floor``): no packing exists, and the repair
    would have searched to a local optimum to say so (the balance of a scaled fleet's leftover copies halves down to
    counts below that floor: on fresh 27004-27008 at 50,000 tasks, 10 of 37 calls and about 0.3 of their 0.8 s).
    ``scaled``: one of ``pack_hosts_scaled``'s balances, its repair within SCALED_WORK times the copies squared."""
    import numpy as np

    copies = sum(u.count for u in units)
    if count <= 0 or not copies or copies > BALANCE_COPIES or units_floor(units, cap)[1] > count:
        return None
    room = np.array([cap.host_cpu_units, cap.host_memory_mib, eni_room(cap)], dtype=float)
    scale = np.where(room >= UNLIMITED, 0.0, 1.0 / room)  # interfaces not known: they take no share
    kind = [k for k, u in enumerate(units) for _ in range(u.count)]
    slots = np.array([len(units[k].gpus) for k in kind])
    need = np.array([[units[k].cpu, units[k].mem, units[k].enis] for k in kind], dtype=float) * scale
    gpus = cap.gpus_per_instance
    start = _spread(need, slots, gpus, count)
    if start is None:
        return None
    limit = min(BALANCE_WORK, SCALED_WORK * copies * copies) if scaled else BALANCE_WORK
    where = _repaired(need, slots, gpus, start, count, limit)
    if where is None:
        return None
    singles = [Host(1, []) for _ in range(count)]
    for c, b in enumerate(where.tolist()):
        _add(singles[b], units[kind[c]], 1)
    for host in singles:  # the shares' sums in floating point: each host checked in whole units too
        if (
            len(host.gpus) > gpus
            or host.cpu > cap.host_cpu_units
            or host.mem > cap.host_memory_mib
            or host.enis > eni_room(cap)
        ):
            return None
    return grouped(singles)


def pack_hosts_scaled(units: Sequence[Unit], cap: CapacityInput, count: int) -> list[Host] | None:
    """``units`` on ``count`` hosts or fewer where they are many (past the host-level LP's exact limits): with ``c``
    their copies over SCALED_COPIES (lowered until the copies each unit's count leaves modulo ``c`` are SCALED_REST
    of all or fewer), those leftover copies first fit (``pack_hosts``), or balanced onto fewer hosts where the search
    finds them (their GPU slots' floor first, then halving up to first fit's hosts); then a ``c``-th of each unit's
    copies balanced onto a ``c``-th of the hosts left, each of those hosts taken ``c`` times (balanced in parts where
    still many: ``_in_parts``). A host's share of each unit is the same however many hosts there are, and the search
    weighs every copy against every other, so a ``c``-th of the copies is searched in a ``c``-squared-th of the time
    (tuning seed 1 at 100,000 tasks, eight L4s a host: 19,201 GPUs balanced onto 2,449 hosts in 0.56 s, or in 0.04 s
    as nine times 2,047 and the 778 left over apart). Where ``c`` is 1, the units are balanced in parts as they are.
    Each repair within SCALED_WORK times its copies squared (a step weighs a host's copies against all, and the hosts
    to mend grow with the copies): the caller tries several host counts, and one the search cannot pack took the whole
    of BALANCE_WORK. None where a search finds no packing."""
    c = scale([u.count for u in units], sum(u.count for u in units) // SCALED_COPIES, SCALED_REST)
    if c == 1:
        return _in_parts(units, cap, count, scaled=True)
    rest = [dataclasses.replace(u, count=u.count % c) for u in units if u.count % c]
    rest_hosts = pack_hosts(rest, cap) if rest else []
    low, high = units_floor(rest, cap)[0], plan_size(rest_hosts)[0]
    fewer = low  # the floor first (most often packed), then halving up to first fit's hosts
    while low < high:
        fewer = min(fewer, (low + high) // 2)
        balanced = pack_hosts_balanced(rest, cap, fewer, scaled=True)
        if balanced is None:
            low, fewer = fewer + 1, high
        else:
            rest_hosts, high = balanced, plan_size(balanced)[0]
    quotient = [dataclasses.replace(u, count=u.count // c) for u in units if u.count >= c]
    hosts = _in_parts(quotient, cap, (count - plan_size(rest_hosts)[0]) // c, scaled=True)
    if hosts is None:
        return None
    return [dataclasses.replace(h, count=h.count * c) for h in hosts] + rest_hosts


def _in_parts(units: Sequence[Unit], cap: CapacityInput, count: int, scaled: bool = False) -> list[Host] | None:
    """``units`` balanced onto ``count`` hosts: at once up to BALANCE_COPIES copies; past them in parts of
    SCALED_COPIES copies or more (as many as the copies over it), each onto its share of the hosts (its GPU slots'
    floor, and the hosts left shared out evenly), every copy dealt to the next part in turn, the units by the largest
    share of a host a copy takes, so each part holds the fleet's mix. Where no quotient copies a fleet (hundreds of
    kinds of GPU of a few copies each), or the quotient's fleet is still past BALANCE_COPIES, it was not balanced at
    all; in parts each is balanced in about its share of the time (fresh seed 21018 at 40,000 tasks, four L40S a host:
    11,946 GPUs of 1,329 kinds onto 3,002 hosts over a bound of 2,987 in 0.2 s, where the LP in parts planned 3,140
    in 24 s). Not below BALANCE_COPIES, where the balance at once has more ways to pair the copies (docs/planning.md).
    None where a part finds no packing. ``scaled``: as ``pack_hosts_balanced``'s."""
    copies = sum(u.count for u in units)
    parts = 1 if copies <= BALANCE_COPIES else copies // SCALED_COPIES
    if parts == 1:
        return pack_hosts_balanced(units, cap, count, scaled)
    dealt: list[dict[int, int]] = [{} for _ in range(parts)]
    turn = 0
    for k in sorted(range(len(units)), key=lambda k: (-largest_share(units[k], cap), k)):
        for _ in range(units[k].count):
            dealt[turn][k] = dealt[turn].get(k, 0) + 1
            turn = (turn + 1) % parts
    # Each part its GPU slots' floor of hosts, and the hosts left shared out evenly, the first parts one more
    fleets = [[dataclasses.replace(units[k], count=n) for k, n in sorted(part.items())] for part in dealt]
    floors = [units_floor(fleet, cap)[0] for fleet in fleets]
    spare = count - sum(floors)
    if spare < 0:
        return None
    hosts: list[Host] = []
    for p, fleet in enumerate(fleets):
        packed = pack_hosts_balanced(fleet, cap, floors[p] + spare // parts + (p < spare % parts), scaled)
        if packed is None:
            return None
        hosts += packed
    return hosts


def _spread(need: Any, slots: Any, gpus: int, count: int) -> Any:
    """Each copy (the largest share first) on the host with a free slot whose load overlaps its needs least: the host
    of each copy, or None where a copy finds no free slot. Which hosts have a copy's slots free is kept per number of
    slots (0 where they have, infinity where not, added to the overlaps: the same least as the overlaps of the hosts
    that have, first among equals) and mended at the host each copy goes to, where it was read afresh for each copy."""
    import numpy as np

    load = np.zeros((count, need.shape[1]))
    left = [gpus] * count  # free GPU slots, per host
    barred: dict[int, tuple[Any, list[int]]] = {}  # per slots a copy takes: 0 or infinity per host, and hosts free
    where = np.full(len(slots), -1)
    sizes = [int(s) for s in slots.tolist()]
    largest = need.max(axis=1).tolist()
    for c in sorted(range(len(sizes)), key=lambda c: (-largest[c], -sizes[c], c)):
        taken = sizes[c]
        if taken not in barred:
            barred[taken] = (np.array([0.0 if n >= taken else np.inf for n in left]), [sum(n >= taken for n in left)])
        bar, free = barred[taken]
        if not free[0]:
            return None
        b = int((load @ need[c] + bar).argmin())
        where[c] = b
        load[b] += need[c]
        before = left[b]
        left[b] -= taken
        for t, (other, still) in barred.items():
            if before >= t > left[b]:  # host b no longer has t slots free
                other[b] = np.inf
                still[0] -= 1
    return where


def _over(columns: Sequence[Any], fresh: bool = False) -> Any:
    """The excess over each host's CPU, memory and interfaces, summed: ``columns`` are its loads of each resource, in
    shares of a host (one array a resource, all of one shape). Added a resource at a time, in order: numpy's sum over
    a last axis of three is several times slower than the columns added, and gives the same numbers. ``fresh``: the
    columns are the caller's to overwrite (worked out for this call), so each step is written into them, not into a
    new array: the same arithmetic, without allocating a table per step."""
    import numpy as np

    total = np.subtract(columns[0], 1.0, out=columns[0]) if fresh else columns[0] - 1.0
    np.maximum(total, 0.0, out=total)
    for column in columns[1:]:
        part = np.subtract(column, 1.0, out=column) if fresh else column - 1.0
        np.maximum(part, 0.0, out=part)
        total += part
    return total


def _repaired(need: Any, slots: Any, gpus: int, where: Any, count: int, limit: int) -> Any:
    """``where`` moved and swapped until no host is over its CPU, memory or interfaces (the module's docstring); None
    where no move or swap lowers the excess, or past ``limit`` pairs of copies weighed. Each resource's loads are
    worked out on their own (``_over``), and a resource no copy needs (the interfaces where no task is in awsvpc) is
    left out: its loads are zeros and add nothing to the excess."""
    import numpy as np

    load = np.zeros((count, need.shape[1]))
    np.add.at(load, where, need)
    kept = [r for r in range(need.shape[1]) if need[:, r].any()] or [0]
    needs = [np.ascontiguousarray(need[:, r]) for r in kept]
    loads = [np.ascontiguousarray(load[:, r]) for r in kept]
    used = np.bincount(where, weights=slots, minlength=count).astype(int)
    # Every copy of as many GPU slots (most often one): a move's fit is then a host's alone, and a swap keeps both
    # hosts' slots, so neither asks for a table of copies by copies.
    alike = int(slots.min()) == int(slots.max())
    work = 0
    while (excess := _over(loads)).max() > 1e-12:
        for a in np.argsort(-excess, kind="stable")[: int((excess > 1e-12).sum())].tolist():
            mine = (where == a).nonzero()[0]
            rest = (where != a).nonzero()[0]
            work += len(mine) * (len(rest) + count)
            if work > limit:
                return None
            gain = excess[a] + excess  # each other host's excess and this one's, before
            hosts = where[rest]
            ours = [n[mine] for n in needs]
            theirs = [n[rest] for n in needs]
            # moves: copy i of host a to host b
            moved = (
                _over([lo[None, :] + o[:, None] for lo, o in zip(loads, ours, strict=True)], fresh=True)
                + _over([lo[a] - o for lo, o in zip(loads, ours, strict=True)], fresh=True)[:, None]
                - gain
            )
            moved[:, a] = np.inf
            if alike:
                moved[:, used + int(slots[0]) > gpus] = np.inf
            else:
                moved[used[None, :] + slots[mine][:, None] > gpus] = np.inf
            # swaps: copy i of host a with copy j on its host, where[j]
            here = [lo[a] - o[:, None] + t[None, :] for lo, o, t in zip(loads, ours, theirs, strict=True)]
            there = [(lo[hosts] - t)[None, :] + o[:, None] for lo, o, t in zip(loads, ours, theirs, strict=True)]
            swapped = _over(here, fresh=True) + _over(there, fresh=True) - gain[hosts][None, :]
            if alike:  # a swap leaves each host the slots it used
                swapped[:, used[hosts] > gpus] = np.inf
                if used[a] > gpus:
                    swapped[:] = np.inf
            else:
                fits_here = used[a] - slots[mine][:, None] + slots[rest][None, :] <= gpus
                fits_there = used[hosts][None, :] - slots[rest][None, :] + slots[mine][:, None] <= gpus
                swapped[~(fits_here & fits_there)] = np.inf
            m = np.unravel_index(int(np.argmin(moved)), moved.shape)
            s = np.unravel_index(int(np.argmin(swapped)), swapped.shape) if rest.size else None
            best_swap = swapped[s] if s is not None else np.inf
            if min(moved[m], best_swap) >= -1e-12:
                continue  # nothing lowers the excess from this host: the next one over
            if s is None or moved[m] <= best_swap:
                c, b = int(mine[m[0]]), int(m[1])
                for lo, n in zip(loads, needs, strict=True):
                    lo[a] -= n[c]
                    lo[b] += n[c]
                used[a] -= slots[c]
                used[b] += slots[c]
                where[c] = b
            else:
                c, d = int(mine[s[0]]), int(rest[s[1]])
                b = int(where[d])
                for lo, n in zip(loads, needs, strict=True):
                    lo[a] += n[d] - n[c]
                    lo[b] += n[c] - n[d]
                used[a] += slots[d] - slots[c]
                used[b] += slots[c] - slots[d]
                where[c], where[d] = b, a
            break
        else:
            return None  # a local optimum with a host still over
    return where
