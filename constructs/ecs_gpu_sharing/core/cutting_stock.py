"""The GPU stage as a cutting-stock problem (Gilmore and Gomory): an LP bound and LP-guided patterns.

With few task sizes and large counts, packing GPUs one at a time leaves a few percent on the table, and Martello and
Toth's L2 bound cannot tell whether that is the heuristic or the instance. Column generation answers both: the LP
over GPU contents ("patterns") gives a lower bound on the GPUs any placement needs (any dual solution that no
pattern violates bounds the optimum, by weak duality), and its solution, rounded down, gives most of a plan; the
rest is packed by the ordinary fills. The pricing step is a knapsack over GPU memory in units of the sizes' greatest
common divisor, in Python (past 24 sizes, a pass of the knapsack at a time on numpy), and over MPS's 48 clients too
where a GPU's memory holds more (``clients_bind``: small tasks with sidecars) and the best over memory alone passes
them (that best is worth at least any within them, so where it keeps to them it is the best of both); when that
makes the knapsack too large (budgets in single MiB), or there are more than 32 distinct sizes, this step is skipped
and the bound is L2's, unless the caller asks for many sizes (the planner's staged plan, started from its fills'
GPUs, where the planner runs its LPs). The LP itself is a dense simplex up to 24 sizes (its table on numpy past
ARRAY_CELLS, the same results) and HiGHS past them (one model kept between rounds past 32).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_UNITS = 4096  # GPU memory in units of the sizes' gcd above which the knapsack pricing is skipped
MAX_SIZES = 32  # distinct task sizes above which the dense simplex is too slow in Python; the LP is skipped
PURE_SIZES = 24  # distinct task sizes above which the LP is solved by HiGHS, not the pure-Python simplex
MAX_ROUNDS = 80  # column generation rounds; the bound stays valid when it stops early
EVERY_COPY = 20_000  # copies in all past which most_copies halves each item's range, not weighing every k
ARRAY_CELLS = 2000  # cells of the cover LP's dense table past which its simplex runs on numpy (the same results)
MANY_SIZES = 400  # distinct task sizes at most where the caller asks for many (the planner: for the bound alone)
ROUNDS_PER_SIZE = 3  # column generation rounds a size, past MAX_SIZES
CLIENT_WORK = 200_000_000  # cells (clients by units of memory) the knapsacks over both may pass in one LP (~0.4 s)


@dataclass(frozen=True)
class Solution:
    bound: int  # no placement uses fewer GPUs (memory and clients only)
    patterns: list[tuple[tuple[int, ...], float]]  # (copies of each size, LP value)


def binary_pieces(cap: int) -> list[int]:
    """Binary splitting of a bounded item: pieces of 1, 2, 4, ... copies and the rest, whose sums are every count from
    0 to ``cap``."""
    out, chunk = [], 1
    while cap > 0:
        out.append(min(chunk, cap))
        cap -= out[-1]
        chunk *= 2
    return out


def _knapsack(sizes: list[int], caps: list[int], values: list[float], capacity: int) -> tuple[float, list[int]]:
    """max sum(values * k) with sum(sizes * k) <= capacity and 0 <= k <= caps (bounded, by binary splitting)."""
    best = [0.0] * (capacity + 1)
    pieces: list[tuple[int, int, int, float]] = []
    for i, (size, cap) in enumerate(zip(sizes, caps, strict=True)):
        pieces.extend((i, take, size * take, values[i] * take) for take in binary_pieces(cap))
    taken: list[bytearray] = []
    for _, _, weight, value in pieces:
        row = bytearray(capacity + 1)
        if value > 0:
            for room in range(capacity, weight - 1, -1):
                candidate = best[room - weight] + value
                if candidate > best[room] + 1e-12:
                    best[room] = candidate
                    row[room] = 1
        taken.append(row)
    room = max(range(capacity + 1), key=best.__getitem__)
    value = best[room]
    pattern = [0] * len(sizes)
    for index in range(len(pieces) - 1, -1, -1):
        if taken[index][room]:
            i, take, weight, _ = pieces[index]
            pattern[i] += take
            room -= weight
    return value, pattern


def best_pieces(pieces: list[tuple[int, int, int, float]], room: int) -> tuple[float, list[tuple[int, int]]]:
    """A 0/1 knapsack over ``pieces`` (item, copies, weight in units from 1 to ``room``, value), each piece's pass over
    the room one array operation on numpy: the most value within ``room``, and the (item, copies) of the pieces that
    give it. A pass from the largest room down reads only rooms it has not changed yet, as the copy here does, so this
    is ``_knapsack``'s result. ``bounded_knapsack`` splits items into pieces and calls it."""
    import numpy as np

    best = np.zeros(room + 1)
    taken = []
    for _, _, weight, value in pieces:
        candidate = best[: room + 1 - weight] + value
        better = candidate > best[weight:] + 1e-12
        np.copyto(best[weight:], candidate, where=better)  # candidate is a copy: best may change in place
        taken.append(better)
    at = int(np.argmax(best))
    value = float(best[at])
    chosen = []
    for (i, take, weight, _), better in zip(reversed(pieces), reversed(taken), strict=True):
        if at >= weight and better[at - weight]:
            chosen.append((i, take))
            at -= weight
    return value, chosen


def most_copies(
    sizes: list[int],
    caps: list[int],
    values: list[float],
    room: int,
    clients: list[int] | None = None,
    max_clients: int = 0,
) -> list[int]:
    """The copies of each item a best knapsack within ``room`` may hold (Dembo and Hammer's reduction): the greedy by
    value over size gives a knapsack worth ``low``, and a knapsack holding k copies of an item is worth at most k
    copies' value plus the LP bound over the room they leave (every item's copies fractional, by value over size;
    concave in k). So copies past the last k whose bound reaches ``low`` are in no best knapsack, and are not offered.
    Items of no worth keep their caps, those larger than the room too (the pieces drop them), and where an item of
    worth takes no room (its copies free) no copy is cut; the rest are cut to the copies the room takes at most.
    With ``clients``, each copy also takes that many of ``max_clients``: the greedy keeps to them too, and the bound,
    over the room alone, still holds. In the host-level LP's greedy the LP's duals leave most items far from the best
    worth over size: about three pieces in four are cut (docs/planning.md)."""
    import numpy as np

    out = list(caps)
    live = []
    for i, (s, c, v) in enumerate(zip(sizes, caps, values, strict=True)):
        if v > 0 and c > 0:
            if s == 0:
                return out
            if s <= room:
                live.append(i)
    if not live:
        return out
    order = sorted(live, key=lambda i: -values[i] / sizes[i])  # a stable sort: ties by index
    low, left, free = 0.0, room, max_clients
    for i in order:
        take = min(caps[i], left // sizes[i])
        if clients is not None and clients[i]:
            take = min(take, free // clients[i])
            free -= take * clients[i]
        low += take * values[i]
        left -= take * sizes[i]
    size = np.array([sizes[i] for i in order], dtype=float)
    value = np.array([values[i] for i in order])
    copies = [min(caps[i], room // sizes[i]) for i in order]
    most = np.array(copies, dtype=float)
    weights = np.concatenate(([0.0], np.cumsum(size * most)))
    worths = np.concatenate(([0.0], np.cumsum(value * most)))
    least = low - 1e-9 * max(1.0, low)
    if sum(copies) <= EVERY_COPY:
        # Every k of every item at once, the largest that reaches kept (a few array calls where halving took a dozen
        # rounds of them): k runs from 0 to ``most`` per item, laid end to end.
        runs = np.array(copies) + 1
        starts = np.cumsum(runs) - runs
        item = np.repeat(np.arange(len(copies)), runs)
        k = np.arange(int(runs.sum())) - starts[item]
        reached = k * value[item] + np.interp(room - k * size[item], weights, worths) >= least
        below = np.maximum.reduceat(np.where(reached, k, 0), starts)
    else:
        below = _halved(most, lambda k: k * value + np.interp(room - k * size, weights, worths) >= least)
    for i, k in zip(order, below.tolist(), strict=True):
        out[i] = int(k)
    return out


def _halved(most: Any, reaches: Callable[[Any], Any]) -> Any:
    """Per item, the largest k from 0 (which always reaches: the LP bound passes every knapsack) to ``most`` that
    ``reaches``, by halves (it reaches up to a k and not past it: the bound is concave in k)."""
    import numpy as np

    below = np.where(reaches(most), most, 0.0)
    above = most.copy()
    while (open_ := above - below > 1).any():
        mid = np.floor((below + above) / 2)
        up = reaches(mid)
        below = np.where(open_ & up, mid, below)
        above = np.where(open_ & ~up, mid, above)
    return below


def bounded_knapsack(
    sizes: list[int], caps: list[int], values: list[float], room: int, *, reduce: bool = True
) -> tuple[float, list[int]]:
    """The most value within ``room`` of up to ``caps`` copies of each item, and the copies: with ``reduce``, each
    item's copies first cut to those a best knapsack may hold (``most_copies``); each item split in pieces of 1, 2, 4,
    ... copies (binary splitting), less those that change nothing (no worth, or larger than the room), then
    ``best_pieces``. Without ``reduce``, over the same pieces this is ``_knapsack``'s value and pattern; with it, its
    value and a pattern worth it (hypothesis tests), for many sizes, where the pure-Python passes cost a tenth of a
    second a knapsack; the host-level LP's knapsacks call it too."""
    if reduce:
        caps = most_copies(sizes, caps, values, room)
    pieces: list[tuple[int, int, int, float]] = []
    for i, (size, cap) in enumerate(zip(sizes, caps, strict=True)):
        pieces.extend(
            (i, take, size * take, values[i] * take)
            for take in binary_pieces(cap)
            if values[i] * take > 0 and size * take <= room
        )
    value, chosen = best_pieces(pieces, room)
    pattern = [0] * len(sizes)
    for i, take in chosen:
        pattern[i] += take
    return value, pattern


def knapsack_with_clients(
    sizes: list[int], clients: list[int], caps: list[int], values: list[float], room: int, max_clients: int
) -> tuple[float, list[int]]:
    """``bounded_knapsack`` with a second room: each copy also takes ``clients`` of ``max_clients`` (a GPU's MPS
    clients), each item's copies first cut to those a best knapsack may hold (``most_copies``, its greedy within the
    clients too). The same binary splitting; each piece's pass is one array operation over a table of clients by room,
    from the largest of both down, so a piece is taken once. The most value, and the copies of each item."""
    import numpy as np

    caps = most_copies(sizes, caps, values, room, clients, max_clients)
    pieces: list[tuple[int, int, int, int, float]] = []
    for i, (size, client, cap) in enumerate(zip(sizes, clients, caps, strict=True)):
        pieces.extend(
            (i, take, size * take, client * take, values[i] * take)
            for take in binary_pieces(cap)
            if values[i] * take > 0 and size * take <= room and client * take <= max_clients
        )
    best = np.zeros((max_clients + 1, room + 1))
    taken = []
    for _, _, weight, client, value in pieces:
        candidate = best[: max_clients + 1 - client, : room + 1 - weight] + value
        better = candidate > best[client:, weight:] + 1e-12
        np.copyto(best[client:, weight:], candidate, where=better)  # candidate is a copy: best may change in place
        taken.append(better)
    at_clients, at_room = (int(a) for a in np.unravel_index(int(np.argmax(best)), best.shape))
    value = float(best[at_clients, at_room])
    pattern = [0] * len(sizes)
    for (i, take, weight, client, _), better in zip(reversed(pieces), reversed(taken), strict=True):
        if at_room >= weight and at_clients >= client and better[at_clients - client, at_room - weight]:
            pattern[i] += take
            at_room -= weight
            at_clients -= client
    return value, pattern


def clients_bind(weights: list[int], clients: list[int], caps: list[int], units: int, max_clients: int) -> bool:
    """Whether some GPU's contents within its ``units`` of memory (and ``caps`` of each item) pass ``max_clients``: the
    most clients a GPU's memory holds, asked of a knapsack over the clients, not the memory: the least memory that
    holds one client more than the limit (a row per client; an item's copies past those rows add nothing), within the
    units or not. The clients are whole numbers, so this is the knapsack over memory with the clients as values, asked
    whether it passes the limit (a hypothesis test), at a few cells a piece where that one took a pass over the memory's
    units (0.17 s on held-out 1007 at 100,000 tasks). Where none does, the memory is the only room a pricing needs to
    weigh (no knapsack where even the densest item in clients fills a GPU's memory within them)."""
    if max(c * units / w for w, c in zip(weights, clients, strict=True)) <= max_clients:
        return False
    need = max_clients + 1
    least = [0] + [math.inf] * need  # least[n]: the least memory of contents holding n clients or more
    for weight, client, cap in zip(weights, clients, caps, strict=True):
        if client <= 0:
            continue  # holds no client: adds nothing
        for take in binary_pieces(min(cap, -(-need // client))):
            size, held = weight * take, client * take
            for n in range(need, 0, -1):  # from the top down: each piece once
                memory = least[max(0, n - held)] + size
                if memory < least[n]:
                    least[n] = memory
    return least[need] <= units


def _cover_lp(columns: list[list[int]], demand: list[int]) -> tuple[list[float], list[float]]:
    """min sum(x) with columns @ x >= demand, x >= 0. Returns (x, y): the primal and dual solutions. Over more than
    PURE_SIZES sizes by HiGHS (the dense simplex below redoes every pivot each round: 8 s on 26 sizes), else by the
    simplex below, which spares a small plan HiGHS's import (0.3 s)."""
    if len(demand) > PURE_SIZES:
        return _cover_lp_highs(columns, demand)
    return _cover_lp_simplex(columns, demand)


def _cover_lp_highs(columns: list[list[int]], demand: list[int]) -> tuple[list[float], list[float]]:
    return _Cover(columns, demand).solve()


class _Cover:
    """The cover LP in one HiGHS model. Kept between rounds (past MAX_SIZES), each round adds a column and solves again
    from the last basis, where ``_cover_lp_highs`` builds one afresh each round (over many sizes that cost up to 2.6 s
    more a fleet)."""

    def __init__(self, columns: list[list[int]], demand: list[int]) -> None:
        import numpy as np

        from .host_lp import new_highs, run_highs

        self.np, self.run = np, run_highs
        self.h = new_highs()  # type: ignore[no-untyped-call]
        for d in demand:
            self.h.addRow(float(d), 1e30, 0, np.array([], dtype=np.int32), np.array([], dtype=float))
        for column in columns:
            self.add(column)

    def add(self, column: list[int]) -> None:
        rows = [i for i, a in enumerate(column) if a]
        self.h.addCol(
            1.0,
            0.0,
            1e30,
            len(rows),
            self.np.array(rows, dtype=self.np.int32),
            self.np.array([float(column[i]) for i in rows]),
        )

    def solve(self) -> tuple[list[float], list[float]]:
        self.run(self.h)
        solution = self.h.getSolution()
        return list(solution.col_value), [max(0.0, y) for y in solution.row_dual]


def _cover_lp_simplex(columns: list[list[int]], demand: list[int]) -> tuple[list[float], list[float]]:
    """The cover LP solved as its dual (a packing LP) by the simplex method, on a dense table of a row per column
    (Dantzig's rule, the first of the least reduced costs; the ratio test's first row within 1e-12 of the least).
    Past ARRAY_CELLS cells the table's rows are numpy arrays (``_array_pivots``): each row operation the same
    arithmetic element by element, so the same result to the bit (a test), where the lists cost most of a small
    plan's time on some fleets (held-out 1084 at 1,000 tasks: 0.76 of its 0.78 s)."""
    m, n = len(demand), len(columns)
    rows = [
        [float(columns[j][i]) for i in range(m)] + [1.0 if k == j else 0.0 for k in range(n)] + [1.0] for j in range(n)
    ]
    cost = [-float(d) for d in demand] + [0.0] * (n + 1)
    if n * (m + n + 1) > ARRAY_CELLS:
        basis, rows, cost = _array_pivots(rows, cost, m, n)
    else:
        basis = _list_pivots(rows, cost, m, n)
    y = [0.0] * m
    for r, variable in enumerate(basis):
        if variable < m:
            y[variable] = float(rows[r][-1])
    return [float(cost[m + j]) for j in range(n)], y


def _leaving(rhs: Sequence[float], column: Sequence[float], n: int) -> int:
    """The ratio test: the first row whose ratio is below the least so far by more than 1e-12 (-1 where none)."""
    leaving, ratio = -1, math.inf
    for r in range(n):
        a = column[r]
        if a > 1e-12 and rhs[r] / a < ratio - 1e-12:
            leaving, ratio = r, rhs[r] / a
    return leaving


def _list_pivots(rows: list[list[float]], cost: list[float], m: int, n: int) -> list[int]:
    """The simplex's pivots on ``rows`` and ``cost`` in place, as lists; the basis."""
    basis = [m + j for j in range(n)]
    for _ in range(20 * (m + n)):
        entering = min(range(m + n), key=cost.__getitem__)
        if cost[entering] >= -1e-9:
            break
        leaving = _leaving([row[-1] for row in rows], [row[entering] for row in rows], n)
        if leaving < 0:
            break
        pivot = rows[leaving]
        scale = pivot[entering]
        pivot = [v / scale for v in pivot]
        rows[leaving] = pivot
        for r in range(n):
            factor = rows[r][entering]
            if r != leaving and factor:
                rows[r] = [a - factor * b for a, b in zip(rows[r], pivot, strict=True)]
        factor = cost[entering]
        cost[:] = [a - factor * b for a, b in zip(cost, pivot, strict=True)]
        basis[leaving] = entering
    return basis


def _array_pivots(rows: list[list[float]], cost: list[float], m: int, n: int) -> tuple[list[int], Any, Any]:
    """``_list_pivots`` on a numpy table: the same pivots, each row's ``a - factor * b`` one multiply and one subtract
    of doubles as in the lists (rows whose factor is 0 left as they are, as there); the basis, table and costs."""
    import numpy as np

    table = np.array(rows)
    costs = np.array(cost)
    basis = [m + j for j in range(n)]
    for _ in range(20 * (m + n)):
        entering = int(np.argmin(costs[: m + n]))  # the first of the least, as min() over the indices
        if costs[entering] >= -1e-9:
            break
        leaving = _leaving(table[:, -1].tolist(), table[:, entering].tolist(), n)
        if leaving < 0:
            break
        table[leaving] = table[leaving] / table[leaving, entering]
        pivot = table[leaving].copy()
        factors = table[:, entering].copy()
        factors[leaving] = 0.0
        moved = factors.nonzero()[0]
        table[moved] = table[moved] - factors[moved, None] * pivot
        costs = costs - costs[entering] * pivot
        basis[leaving] = entering
    return basis, table, costs


def solve(
    sizes: list[int],
    clients: list[int],
    demand: list[int],
    capacity: int,
    max_clients: int,
    *,
    many: bool = False,
    needless: float = 0.0,
    start: Sequence[Sequence[int]] = (),
) -> Solution | None:
    """Column generation over GPU contents for tasks of ``sizes`` (MiB) and ``clients``, ``demand`` of each, on GPUs of
    ``capacity`` MiB and ``max_clients``; ``None`` when the knapsack would be too large, or there are more than
    MAX_SIZES sizes. ``many``: up to MANY_SIZES sizes, with ROUNDS_PER_SIZE rounds a size (column generation adds one
    pattern a round, and over a hundred sizes 80 rounds left the bound far below the LP's value). ``needless``: a bound
    of at most this many GPUs is of no use to the caller; ``None`` as soon as the master's value, which no bound
    passes, falls to it. ``start``: patterns (copies of each size) for the master beside one size a pattern, such as
    the GPUs of a packing in hand: the same LP, so the same bound, in fewer rounds (held-out 1007 at 100,000 tasks on
    eight L40S a host, 115 sizes: 23 solves, not 252)."""
    if not sizes:
        return Solution(0, [])
    if len(sizes) > (MANY_SIZES if many else MAX_SIZES):
        return None
    step = 0
    for size in sizes:
        step = math.gcd(step, size)
    units = capacity // step
    if units > MAX_UNITS:
        return None
    weights = [size // step for size in sizes]
    caps = [min(units // w, max_clients // c, d) for w, c, d in zip(weights, clients, demand, strict=True)]
    knapsack = _knapsack if len(sizes) <= PURE_SIZES else bounded_knapsack
    # Where a GPU's memory holds more MPS clients than it has, the patterns priced over memory alone break the client
    # limit and are dropped, and the LP's rounding leaves most tasks to the fills: the knapsack weighs both, within
    # CLIENT_WORK cells of its tables (then memory alone, a relaxation: the bound still holds).
    both = clients_bind(weights, clients, caps, units, max_clients)
    cost = sum(len(binary_pieces(cap)) for cap in caps) * (max_clients + 1) * (units + 1)  # a knapsack's cells
    work = CLIENT_WORK

    def price(values: list[float]) -> tuple[float, list[int]]:
        nonlocal work
        if not (both and work >= cost):
            return knapsack(weights, caps, values, units)
        # The knapsack over memory alone first: its best is worth at least any within the clients too, so where it
        # keeps to them it is a best of both, and the table of clients by memory is not built.
        value, pattern = bounded_knapsack(weights, caps, values, units)
        if sum(k * c for k, c in zip(pattern, clients, strict=True)) <= max_clients:
            return value, pattern
        work -= cost
        return knapsack_with_clients(weights, clients, caps, values, units, max_clients)

    columns = []
    for i, cap in enumerate(caps):
        column = [0] * len(sizes)
        column[i] = max(cap, 1)
        columns.append(column)
    for pattern in start:
        if list(pattern) not in columns:
            columns.append(list(pattern))
    cover = _Cover(columns, demand) if len(sizes) > MAX_SIZES else None
    x, y = cover.solve() if cover is not None else _cover_lp(columns, demand)
    best_value = 1.0
    for _ in range(MAX_ROUNDS if len(sizes) <= MAX_SIZES else ROUNDS_PER_SIZE * len(sizes)):
        value, pattern = price(y)
        best_value = max(1.0, value)
        if value <= 1 + 1e-9 or pattern in columns:
            break
        columns.append(pattern)
        if cover is not None:
            cover.add(pattern)
        x, y = cover.solve() if cover is not None else _cover_lp(columns, demand)
        if sum(x) <= needless:
            return None
    else:
        best_value = max(1.0, price(y)[0])
    dual = sum(d * v for d, v in zip(demand, y, strict=True)) / best_value
    valid = [
        (tuple(column), value)
        for column, value in zip(columns, x, strict=True)
        if value > 1e-9 and sum(k * c for k, c in zip(column, clients, strict=True)) <= max_clients
    ]
    return Solution(max(0, math.ceil(dual - 1e-6)), valid)
