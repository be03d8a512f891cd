"""Column generation polished by HiGHS's MILP where the cheap pricings stalled far from the bound (one-GPU hosts).

On a host of one GPU where each service binds its own resource (GPU memory for some, host CPU or memory for others),
the first column generation can stop at its tail-off with patterns worth well over a host left at its last duals:
the greedy and the search's looks find only weak ones, and HiGHS's calls are spent. Farley's bound there is far
below the LP's value (held-out 3026: 2,161 against 2,506.5, while HiGHS's MILP proves a pattern worth 1.16 hosts in
0.15 s). Where the value is more than POLISH_GAP above the bound, this goes on with the MILP as the pricing, over
every item, at Wentges's smoothed duals, within ``polish_calls`` calls (each about 0.2 s there), until the bound
meets the value or no pattern is worth more than a host at the master's duals. Each MILP's dual
bound joins Farley's, so the bound holds however far it gets; where it ends short of the value, the pricing at the
master's last duals is searched PROOF_SEARCH times further for the bound (docs/planning.md)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .highs import _Exact, _Master
from .model import (
    EXACT_NODES,
    FINAL_SEARCH,
    MAX_COLUMNS,
    POLISH_GAP,
    POLISH_HOST_WORK,
    POLISH_WORK,
    PROOF_SEARCH,
    SMOOTHING,
    HostSpec,
    Item,
    Pattern,
    per_host,
)
from .patterns import _worth


def polish_calls(host: HostSpec, items: int, value: float, bound: float) -> int:
    """The MILP calls a polish may spend, 0 where none: on a host of one GPU (where the MILP is the exact pricing),
    where the first column generation's ``value`` is more than POLISH_GAP above its ``bound`` (both rounded up).
    POLISH_WORK over the ``items`` priced at most (a call's cost grows with them), and POLISH_HOST_WORK over them for
    each host between the two (what the polish can win): a few hosts at stake are not worth many seconds."""
    top, low = math.ceil(value - 1e-6), max(math.ceil(bound - 1e-6), 1)
    if host.gpus != 1 or top <= POLISH_GAP * low:
        return 0
    return min(POLISH_WORK, POLISH_HOST_WORK * (top - low)) // max(items, 1)


def polished(
    master: _Master,
    items: Sequence[Item],
    host: HostSpec,
    left: Sequence[int],
    farley: float,
    add: Callable[[Pattern, Sequence[float], Sequence[float], Sequence[int], Sequence[Pattern]], bool],
    calls: int,
) -> tuple[float, list[float], float]:
    """Column generation on ``master`` with HiGHS's MILP as the pricing, ``calls`` at most (``add``: a pattern found at
    the first duals into the master with its neighbours and the given runners-up, each worth more than a host at the
    second; whether it was new). The runners-up are the solutions each MILP improved on before its best: several
    patterns a call, where one was taken before (held-out 6034 at 10,000 tasks: 9.3 to 6.0 s, the same plan).
    Returns the master's value and solution, and Farley's bound, at least ``farley``."""
    caps = [min(n, per_host(it, host)) for it, n in zip(items, left, strict=True)]
    milp = _Exact(items, host, improving=True)
    centre: list[float] | None = None
    value, duals, x = master.solve()
    for _ in range(calls):
        at = (
            duals
            if centre is None
            else [SMOOTHING * c + (1 - SMOOTHING) * d for c, d in zip(centre, duals, strict=True)]
        )
        found, most = milp.solve(at, caps, EXACT_NODES * FINAL_SEARCH)
        covered = sum(d * n for d, n in zip(at, left, strict=True))
        if covered / max(most, 1.0) > farley:
            farley, centre = covered / max(most, 1.0), at
        if math.ceil(farley - 1e-6) >= math.ceil(value - 1e-6) or len(master.patterns) >= MAX_COLUMNS:
            break
        if found is None or _worth(duals, found) <= 1 + 1e-7 or not add(found, at, duals, caps, milp.improved()):
            if at is duals:
                break  # no pattern is worth more than a host at the master's duals: the LP is solved
            centre = None  # the smoothed duals found nothing: the master's own next
            continue
        value, duals, x = master.solve()
    if math.ceil(farley - 1e-6) < math.ceil(value - 1e-6):
        # Ended short of a proof (its calls spent, or a search at the master's duals that found no pattern worth a host
        # but stopped at its node limit): that pricing searched further, for the bound only. At the master's duals
        # the duals' value is the master's, so Farley's bound there is its value over the most a pattern is worth.
        _, most = milp.solve(duals, caps, EXACT_NODES * PROOF_SEARCH)
        farley = max(farley, value / max(most, 1.0))
    return value, x, farley
