"""Stage 1: filling GPUs with MPS tasks (exact subset-sum on a bitset, greedy, paired; the cutting-stock LP)."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .. import arc_flow, cutting_stock, gpu_milp
from ..mps import MAX_CLIENTS_PER_GPU
from .model import CapacityInput, GpuLoad

Way = list[tuple[GpuLoad, int, int, int]]  # a GPU stage's GPUs: (contents, host CPU, host memory, how many such GPUs)


def bin_lower_bound(sizes: dict[int, int], capacity: int) -> int:
    """A lower bound on the bins of ``capacity`` that items of ``sizes`` (size -> count) need.

    Martello and Toth's L2 bound, after rounding the capacity down to a multiple of the sizes' greatest
    common divisor (no bin can use the remainder).
    """
    items = sorted((size, n) for size, n in sizes.items() if n > 0)
    if not items:
        return 0
    g = 0
    for size, _ in items:
        g = math.gcd(g, size)
    cap = capacity - capacity % g
    # Prefix sums over the sizes, smallest first, so that each threshold's three sums are differences.
    ordered = [size for size, _ in items]
    count, volume = [0], [0]
    for size, n in items:
        count.append(count[-1] + n)
        volume.append(volume[-1] + size * n)
    total = volume[-1]
    best = math.ceil(total / cap)
    half = bisect_right(ordered, cap / 2)  # the first size over half the bin
    thresholds = [0] + [size for size, _ in items if size * 2 <= cap]
    for k in thresholds:
        over = bisect_right(ordered, cap - k)  # sizes past it do not fit beside a task of k
        j1 = count[-1] - count[over]
        n2 = count[over] - count[half] if over > half else 0
        room2 = n2 * cap - (volume[over] - volume[half] if over > half else 0)
        low = bisect_left(ordered, k)
        j3 = volume[half] - volume[low] if half > low else 0
        best = max(best, j1 + n2 + max(0, math.ceil((j3 - room2) / cap)))
    return best


@dataclass
class Item:
    """One service's MPS tasks still to place, with what one task takes."""

    name: str
    size: int  # GPU budget
    clients: int
    cpu: int
    mem: int
    left: int


def _neg_size(it: Item) -> int:
    return -it.size


def _fitting(items: list[Item], room: int, start: int) -> int:
    """The first position from ``start`` whose task fits ``room`` of GPU memory (items come largest first)."""
    return bisect_left(items, -room, lo=start, key=_neg_size)


def _greedy_fill(
    items: list[Item], room: int, clients: int, cpu: int, mem: int, taken: dict[int, int], start: int = 0
) -> int:
    """Adds tasks largest first while every limit holds; returns the GPU memory added. Items before ``start`` have
    no task left, and those larger than the room left are passed over unread (the room only shrinks)."""
    used = 0
    least = items[-1].size if items else 0  # items come largest first
    i, end = _fitting(items, room, start), len(items)
    while i < end:
        if room < least or clients <= 0:
            break  # no task left fits the GPU's memory or its clients
        it = items[i]
        # One task must fit the host's CPU, memory and the GPU's clients (its memory fits: ``i`` is past the larger
        # ones); most tasks fail here where a host resource binds, so that is checked before any count is worked out.
        if it.cpu <= cpu and it.mem <= mem and it.clients <= clients and (avail := it.left - taken.get(i, 0)) > 0:
            k = min(avail, room // it.size, clients // it.clients)
            if it.cpu:
                k = min(k, cpu // it.cpu)
            if it.mem:
                k = min(k, mem // it.mem)
            if k > 0:
                taken[i] = taken.get(i, 0) + k
                room -= k * it.size
                clients -= k * it.clients
                cpu -= k * it.cpu
                mem -= k * it.mem
                used += k * it.size
                i = _fitting(items, room, i + 1)
                continue
        i += 1
    return used


class Sizes:
    """The tasks left of each GPU budget among a fill's items (largest first), kept as tasks are taken: the exact fill
    reads sizes, not items. A fleet of a thousand services shares a few dozen budgets (they come in 256 MiB steps)."""

    def __init__(self, items: list[Item]) -> None:
        self.members: dict[int, list[int]] = {}  # size -> its items' indices, in order
        self.left: dict[int, int] = {}  # size -> its items' tasks left
        for i, it in enumerate(items):
            if it.size not in self.members:
                self.members[it.size] = []
                self.left[it.size] = 0
            self.members[it.size].append(i)
            self.left[it.size] += it.left
        # The sizes with tasks left, largest first, negated (for bisect). A size is dropped once its last task is
        # taken: on held-out 1004 at 40,000 tasks more than half of those a GPU's room read had none left.
        self.order = [-size for size, left in self.left.items() if left]
        self.step = math.gcd(*self.order)  # every fill's memory is a multiple of it (0 where no size is left)

    def fitting(self, room: int) -> list[int]:
        """The sizes of ``room`` or less with tasks left, largest first."""
        return [-neg for neg in self.order[bisect_left(self.order, -room) :]]

    def took(self, items: list[Item], contents: dict[int, int], repeat: int) -> None:
        for i, k in contents.items():
            size = items[i].size
            self.left[size] -= k * repeat
            if not self.left[size]:
                self.order.remove(-size)
                self.step = math.gcd(*self.order)


def _exact_fill(
    items: list[Item], room: int, taken: dict[int, int], sizes: Sizes | None = None
) -> dict[int, int] | None:
    """The subset of remaining tasks that fills ``room`` of GPU memory best (bounded subset-sum on a bitset), beside
    the GPU's tasks ``taken``. ``sizes``: the items' ``Sizes``, kept by the caller (made here otherwise).

    The bitset reads only sizes, so the items of one size are one bounded item of their tasks together, and the tasks
    chosen of a size are taken from its first items first. That is the choice the items one by one would make:
    walking back, a piece of one size is taken while the target needs more tasks of that size than the pieces before
    it hold, so the tasks chosen of it are the fewest that reach the target, from the first pieces on; and the sums
    reachable are the same."""
    sizes = sizes or Sizes(items)
    held: dict[int, int] = {}  # tasks of each size the GPU already has (taken from its sizes' tasks left)
    for i, k in taken.items():
        held[items[i].size] = held.get(items[i].size, 0) + k
    runs = [(size, free) for size in sizes.fitting(room) if (free := sizes.left[size] - held.get(size, 0)) > 0]
    if not runs:
        return {}
    step = math.gcd(*[size for size, _ in runs])
    cap = room // step
    mask = (1 << (cap + 1)) - 1
    reach = 1
    history: list[tuple[int, int, int]] = []  # (reach before, run index, copies) per binary chunk
    for r, (size, free) in enumerate(runs):
        weight = size // step
        for k in cutting_stock.binary_pieces(min(free, room // size)):
            history.append((reach, r, k))
            reach = (reach | (reach << (weight * k))) & mask
        if reach >> cap:
            break  # the room filled exactly: no later task changes what is chosen (it was reachable before them)
    target = reach.bit_length() - 1
    per_run: dict[int, int] = {}
    for before, r, k in reversed(history):
        if not (before >> target) & 1:
            per_run[r] = per_run.get(r, 0) + k
            target -= k * (runs[r][0] // step)
    chosen: dict[int, int] = {}
    for r in sorted(per_run, reverse=True):
        want, shares = per_run[r], []
        for i in sizes.members[runs[r][0]]:
            if want <= 0:
                break
            if (free := items[i].left - taken.get(i, 0)) > 0:
                shares.append((i, min(free, want)))
                want -= shares[-1][1]
        chosen.update(reversed(shares))
    return chosen


def _limits_hold(items: list[Item], contents: dict[int, int], cap: CapacityInput) -> bool:
    return (
        sum(items[i].clients * k for i, k in contents.items()) <= MAX_CLIENTS_PER_GPU
        and sum(items[i].cpu * k for i, k in contents.items()) <= cap.host_cpu_units
        and sum(items[i].mem * k for i, k in contents.items()) <= cap.host_memory_mib
    )


def _fill_greedy(items: list[Item], first: int, cap: CapacityInput, sizes: Sizes | None = None) -> dict[int, int]:
    """First-fit decreasing within the GPU: the largest remaining tasks that still fit, in order. Each fill starts a
    GPU with a task of ``first``, the first item with tasks left (``sizes``: unread here; every fill is handed it)."""
    it = items[first]
    contents = {first: 1}
    _greedy_fill(
        items,
        cap.usable_gpu_memory_mib - it.size,
        MAX_CLIENTS_PER_GPU - it.clients,
        cap.host_cpu_units - it.cpu,
        cap.host_memory_mib - it.mem,
        contents,
        first,
    )
    return contents


def _fill_exact(
    items: list[Item], first: int, cap: CapacityInput, sizes: Sizes | None = None, partner: bool = False
) -> dict[int, int]:
    """The GPU's memory filled as fully as the remaining tasks allow (after one largest partner, if asked);
    the greedy fill when that breaks a client, CPU or memory limit, or fills less. Where the greedy fill already
    holds the most memory the sizes left can sum to (a GPU's usable memory, down to a multiple of their greatest
    common divisor: every fill's is one), no fill holds more, and the greedy's is the answer without the exact fill's
    search (on held-out 1004 at 40,000 tasks, 56% of them)."""
    greedy = _fill_greedy(items, first, cap)
    greedy_used = sum(items[i].size * k for i, k in greedy.items())
    sizes = sizes or Sizes(items)
    if sizes.step and greedy_used == cap.usable_gpu_memory_mib // sizes.step * sizes.step:
        return greedy
    contents = {first: 1}
    room = cap.usable_gpu_memory_mib - items[first].size
    if partner:
        for i in range(_fitting(items, room, first), len(items)):
            if items[i].left - contents.get(i, 0) > 0:
                contents[i] = contents.get(i, 0) + 1
                room -= items[i].size
                break
    for i, k in (_exact_fill(items, room, contents, sizes) or {}).items():
        contents[i] = contents.get(i, 0) + k
    used = sum(items[i].size * k for i, k in contents.items())
    if _limits_hold(items, contents, cap) and used > greedy_used:
        return contents
    return greedy


def _fill_paired(items: list[Item], first: int, cap: CapacityInput, sizes: Sizes | None = None) -> dict[int, int]:
    """A task larger than half a GPU takes its largest partner first; smaller ones fill exactly."""
    big = items[first].size * 2 > cap.usable_gpu_memory_mib
    return _fill_exact(items, first, cap, sizes, partner=big)


# Each GPU-filling strategy packs well on some workloads and less well on others; the plan keeps the best.
Fill = Callable[[list[Item], int, CapacityInput, Sizes | None], dict[int, int]]  # (items, first item, capacity, sizes)
FILLS: tuple[Fill, ...] = (
    _fill_exact,
    _fill_greedy,
    _fill_paired,
)


def pack_gpus(items: list[Item], cap: CapacityInput, fill: Fill) -> Way:
    """Stage 1: MPS tasks onto GPUs, as (GPU contents, CPU units, memory, how many such GPUs)."""
    groups = []
    items = sorted((replace(it) for it in items), key=lambda it: (-it.size, -it.cpu, -it.mem, it.name))
    first = spent = 0
    sizes = Sizes(items)
    while first < len(items):
        if items[first].left == 0:
            first += 1
            continue
        if spent * 2 > len(items):
            # Most tasks placed: drop the services with none left, so that fills stop scanning them (the order of
            # those left, all a fill reads, is the same).
            items = [it for it in items if it.left]
            first = spent = 0
            sizes = Sizes(items)
        contents = fill(items, first, cap, sizes)
        repeat = min(items[i].left // k for i, k in contents.items())
        sizes.took(items, contents, repeat)
        groups.append(_take(items, contents, repeat))
        spent += sum(1 for i in contents if items[i].left == 0)
    return groups


def _take(items: list[Item], contents: dict[int, int], repeat: int) -> tuple[GpuLoad, int, int, int]:
    """``repeat`` GPUs of ``contents`` (item index -> tasks on one GPU), taken from the items' tasks left: the GPU's
    load, its tasks' CPU units and memory, and how many such GPUs."""
    for i, k in contents.items():
        items[i].left -= k * repeat
    order = sorted(contents.items())
    load = GpuLoad(
        tasks=tuple((items[i].name, k) for i, k in order),
        used_gpu_memory_mib=sum(items[i].size * k for i, k in order),
        clients=sum(items[i].clients * k for i, k in order),
    )
    return load, sum(items[i].cpu * k for i, k in order), sum(items[i].mem * k for i, k in order), repeat


def lp_solution(
    items: list[Item],
    cap: CapacityInput,
    many: bool = False,
    needless: float = 0.0,
    exact: bool = False,
    start: Sequence[Way] = (),
) -> cutting_stock.Solution | None:
    """The cutting-stock LP over the MPS tasks' sizes (services of one size and client count taken together);
    ``many`` and ``needless``: as cutting_stock.solve has them. ``exact``: the arc-flow LP's instead
    (``arc_flow.solve``: a model exact over GPU memory, its bound and its flow as patterns). ``start``: ways these
    items were already packed, whose GPUs are the master's first patterns (``way_patterns``)."""
    sizes, clients, counts = _keyed(items)
    if exact:
        return arc_flow.solve(sizes, clients, counts, cap.usable_gpu_memory_mib, MAX_CLIENTS_PER_GPU)
    first = sorted({p for way in start for p in way_patterns(items, way)})
    return cutting_stock.solve(
        sizes,
        clients,
        counts,
        cap.usable_gpu_memory_mib,
        MAX_CLIENTS_PER_GPU,
        many=many,
        needless=needless,
        start=first,
    )


def mps_floor(sizes: dict[int, int], clients: int, cap: CapacityInput) -> int:
    """A lower bound on the GPUs MPS tasks fill: Martello and Toth's L2 over their GPU memory (``sizes``: budget ->
    tasks), or their ``clients`` over a GPU's MPS clients, whichever is more."""
    return max(bin_lower_bound(sizes, cap.usable_gpu_memory_mib), math.ceil(clients / MAX_CLIENTS_PER_GPU))


def gpu_floor(items: list[Item], cap: CapacityInput) -> int:
    """``mps_floor`` of the tasks ``items`` have left."""
    sizes: dict[int, int] = {}
    for it in items:
        sizes[it.size] = sizes.get(it.size, 0) + it.left
    return mps_floor(sizes, sum(it.clients * it.left for it in items), cap)


def way_patterns(items: list[Item], way: Way) -> set[tuple[int, ...]]:
    """The distinct GPUs of ``way`` as the cutting-stock LP's patterns: each the tasks it holds of each of the items'
    keys (size and clients, ``_keyed``'s order)."""
    keys = sorted({(it.size, it.clients) for it in items})
    at = {k: i for i, k in enumerate(keys)}
    of = {it.name: at[(it.size, it.clients)] for it in items}
    patterns = set()
    for load, _, _, _ in way:
        pattern = [0] * len(keys)
        for name, k in load.tasks:
            pattern[of[name]] += k
        patterns.add(tuple(pattern))
    return patterns


def milp_solution(items: list[Item], cap: CapacityInput, gpus: int) -> cutting_stock.Solution | None:
    """The MPS tasks on ``gpus`` GPUs by HiGHS's MILP over memory and clients together (``gpu_milp.fill``), services of
    one size and client count taken together; None where it is not built or finds no packing."""
    sizes, clients, counts = _keyed(items)
    return gpu_milp.fill(sizes, clients, counts, cap.usable_gpu_memory_mib, MAX_CLIENTS_PER_GPU, gpus)


def _keyed(items: list[Item]) -> tuple[list[int], list[int], list[int]]:
    """The tasks left by (size, clients), in that order: the sizes, their clients and their counts."""
    demand: dict[tuple[int, int], int] = {}
    for it in items:
        demand[(it.size, it.clients)] = demand.get((it.size, it.clients), 0) + it.left
    keys = sorted(demand)
    return [s for s, _ in keys], [c for _, c in keys], [demand[k] for k in keys]


def pack_gpus_lp(items: list[Item], cap: CapacityInput, solution: cutting_stock.Solution) -> Way | None:
    """Stage 1 guided by the LP: its patterns, rounded down, filled with services of each size; the rest by the
    exact fill. ``None`` when a GPU so filled would break a host's CPU or memory (the other fills handle that)."""
    rounded = _rounded_down(items, cap, solution)
    if rounded is None:
        return None
    groups, rest = rounded
    return groups + pack_gpus(rest, cap, _fill_exact)


def lp_roundings(items: list[Item], cap: CapacityInput, solution: cutting_stock.Solution) -> list[Way]:
    """``pack_gpus_lp``'s way, then the same patterns rounded down with the rest by each other fill, where that fills
    fewer GPUs (no way where a GPU so filled would break a host's limits). Past the rounding most tasks may be left,
    where the LP's value is spread over many patterns of less than one GPU each, and which fill packs them best
    differs from fleet to fleet (shaped `many` 908 at 1,000 tasks: 320 GPUs by the greedy, 321 by the exact fill)."""
    rounded = _rounded_down(items, cap, solution)
    if rounded is None:
        return []
    groups, rest = rounded
    first = groups + pack_gpus(rest, cap, _fill_exact)
    ways = [first]
    for fill in FILLS:
        way = groups + pack_gpus(rest, cap, fill) if fill is not _fill_exact else first
        if way_gpus(way) < way_gpus(first):
            ways.append(way)
    return ways


def way_gpus(way: Way) -> int:
    """The GPUs a GPU stage's way fills."""
    return sum(count for _, _, _, count in way)


def _rounded_down(
    items: list[Item], cap: CapacityInput, solution: cutting_stock.Solution
) -> tuple[Way, list[Item]] | None:
    """The LP's patterns rounded down, filled with services of each size (the service with the most tasks left
    first), and the tasks left; ``None`` when a GPU so filled would break a host's CPU or memory."""
    items = sorted((replace(it) for it in items), key=lambda it: (-it.size, -it.cpu, -it.mem, it.name))
    keys = sorted({(it.size, it.clients) for it in items})
    by_key: dict[tuple[int, int], list[int]] = {k: [] for k in keys}  # each key's items, in order (one pass)
    for i, it in enumerate(items):
        by_key[it.size, it.clients].append(i)
    groups: Way = []
    for pattern, value in sorted(solution.patterns, key=lambda p: (-p[1], p[0])):
        copies = int(value + 1e-9)
        while copies > 0:
            contents: dict[int, int] = {}
            repeat = copies
            for key, k in zip(keys, pattern, strict=True):
                if not k:
                    continue
                # The service of this size with the most tasks left fills the slots; a GPU may mix services.
                need = k
                for i in sorted(by_key[key], key=lambda i: -items[i].left):
                    if need == 0:
                        break
                    take = min(need, items[i].left - contents.get(i, 0))
                    if take > 0:
                        contents[i] = contents.get(i, 0) + take
                        need -= take
                if need:
                    repeat = 0
                    break
            if not repeat or not contents:
                break
            if not _limits_hold(items, contents, cap):
                return None
            repeat = min(repeat, *(items[i].left // k for i, k in contents.items()))
            groups.append(_take(items, contents, repeat))
            copies -= repeat
    return groups, [it for it in items if it.left]
