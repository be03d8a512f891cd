"""The host-level cutting-stock LP: a plan from whole-host patterns, and a lower bound on the hosts any plan needs.

A pattern is what one host runs at once: a count of each service's tasks, laid out on the host's GPUs (MPS tasks
of one isolation group per GPU within its usable memory and NVIDIA's 48 clients, whole-GPU tasks on GPUs of their
own) within the host's CPU units, memory and network interfaces. The master LP covers every service's count with
the fewest patterns (Gilmore and Gomory's column generation). Its dual prices ask for a pattern worth more than one
host; a greedy builds candidates in several orders (services by dual price over their share of the host, each
resource weighed on its own, summed and at its largest), best fit onto the GPUs; on hosts of several GPUs, in the first
column generation, the best of them climbs to better neighbours (``patterns._climbed``), and the greedy passes again
over the items that best pattern left out (``_other_items``). Where it finds nothing, exact or closer pricings
(``_ExactPricing``): a search on one-GPU hosts; HiGHS's MILP; on hosts of several GPUs, where every GPU's contents can
be listed, a MILP over them (``contents``), then a small master of what each GPU holds (``per_gpu``) and a search GPU by
GPU; where all of them find nothing, the longer search for the bound
(``_final_pricing``). On a one-GPU host where the first column generation stops far above its bound, HiGHS's MILP
prices on (``polish``).

Plan: the LP's patterns rounded down, the LP solved again over what is left (new patterns priced for it), again,
until the rest is small; the planner places that rest with its own packings. A pattern cut down to the last tasks of
its items is filled with more of what is left before its host is taken. Where the best rounding, finished, is still
above the bound, HiGHS's MILP over every pattern the master was given looks for a cover of fewer hosts (``integer``).
Bound: any dual solution scaled by the
most a pattern can be worth is feasible for the full LP (weak duality; Farley's bound), and that most is bounded from
above by a Lagrangian relaxation: the host's CPU, memory and interfaces priced, each GPU a knapsack over its memory.
So the bound holds however far the greedy got.

HiGHS (``highspy``, MIT) solves the LPs; it is imported only when this runs. Work is counted in rounds and patterns,
never in seconds, so a plan is the same on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeGuard

from ..mps import MAX_CLIENTS_PER_GPU
from .contents import CONTENTS_CALLS, ContentsPricing, gpu_contents
from .highs import _built_worth, _Exact, _first_master, _Layout, _Master, _Pricing, _promising, new_highs, run_highs
from .integer import whole_copies, with_integer_master
from .model import (
    BOUND_EVERY,
    CLIMB,
    DIVE_FIX,
    DIVE_KEEP,
    DIVE_ROUNDS,
    DIVE_SPAN,
    DIVE_WIDE,
    DIVES,
    EXACT_ITEMS,
    EXACT_NODES,
    EXACT_WORK,
    FINAL_PRICINGS,
    FINAL_SEARCH,
    KNAPSACK_UNITS,
    MAX_COLUMNS,
    MAX_ROUNDS,
    ONE_GPU_LOOK,
    ONE_GPU_NODES,
    ONE_GPU_WORK,
    OTHER_ITEMS,
    PROMISING_LOOK,
    PROMISING_WORK,
    PROOF_SEARCH,
    RESOLVE_ROUNDS,
    ROUNDING_PASSES,
    SMOOTHING,
    SPLIT_ITEMS,
    SPLIT_STEPS,
    SPLIT_WORK,
    TAIL_OFF,
    WEAK_GREEDY,
    HostSpec,
    Item,
    Pattern,
    Solution,
    longest_rounds,
    per_host,
)
from .one_gpu import OneGpu, Searched, split_search
from .patterns import _candidates, _fill_rest, _most_worth, _pattern, _worth
from .per_gpu import PER_GPU_WORK, PerGpu
from .polish import polish_calls, polished

_NOTHING = 1e-12  # a pattern worth no more is no pattern


def _pays(found: Pattern | None, duals: Sequence[float]) -> TypeGuard[Pattern]:
    """Whether ``found`` is a pattern worth more than a host at ``duals``."""
    return found is not None and _worth(duals, found) > 1 + 1e-7


def _generate(
    master: _Master,
    items: Sequence[Item],
    host: HostSpec,
    left: Sequence[int],
    rounds: int,
    exact_calls: int = 0,
    bounds: bool = True,
    known: int = 0,
    searches: bool = False,
) -> tuple[float, list[float], float]:
    """Column generation for ``left`` tasks of each item: new patterns from the greedy, guided by the pricing LP, until
    none is worth more than a host or the rounds run out. Returns the master's value and solution, and the best lower
    bound on the LP's value seen on the way (Farley's: the duals' value over the most a pattern can be worth).

    The duals priced are smoothed (Wentges): a point between the master's duals and those of the best bound so far.
    Column generation's duals swing from round to round, and priced at the midpoint it needs far fewer rounds. Where a
    midpoint finds no pattern worth a host at the master's own duals, those are priced as they are. Without
    ``bounds`` (the LP solved again while rounding, where its bound is not used), no bound is computed, and the duals
    are priced as they are. ``known``: a bound the caller has; the last search for a bound is skipped where the LP's
    value rounded up is no more (Farley's bound never passes it). Past ``rounds``, the rounds go on to LONGEST_ROUNDS
    while the one-GPU search proves its patterns (``_ExactPricing``), or, with ``bounds``, with the cheap pricings
    alone (the greedy, and a one-GPU search that only looks; no MILP) while each BOUND_EVERY rounds lower the master's
    value by TAIL_OFF hosts: on hosts of several GPUs the value was still falling at MAX_ROUNDS. The exact pricing runs
    where the greedy finds nothing, and on a host of one GPU also where the greedy's pattern is weak (WEAK_GREEDY).
    Where every pricing finds nothing, the search for the bound (``_ExactPricing.final``) prices, FINAL_PRICINGS
    times at most in the first column generation. ``searches``: the searches and the decomposition, without MILPs."""
    caps = [min(n, per_host(it, host)) for it, n in zip(items, left, strict=True)]
    pricing = _Pricing(items, host)
    exact = _ExactPricing(items, host, exact_calls, pricing, searches)
    value, duals, x = master.solve()
    farley = 0.0
    centre: list[float] | None = None
    longest = longest_rounds(rounds, len(items))
    mark, tailing = math.inf, not bounds
    finals, searched_at = FINAL_PRICINGS if exact_calls else 0, None
    for r in range(longest + 1):
        cheap_only = r >= rounds and not exact.searching  # past the rounds: the greedy and a search that looks, no MILP
        if (r - rounds) % BOUND_EVERY == 0:  # past the rounds, on while the last BOUND_EVERY lowered the value enough
            tailing, mark = tailing or (cheap_only and mark - value < TAIL_OFF), value
        last = r >= (rounds if cheap_only and tailing else longest)
        if len(master.patterns) >= MAX_COLUMNS or last:
            at = list(duals)
        else:
            at = (
                duals
                if centre is None
                else [SMOOTHING * c + (1 - SMOOTHING) * d for c, d in zip(centre, duals, strict=True)]
            )
        added, most, greedy = _price(
            master, items, host, at, duals, caps, pricing, bounds, r % BOUND_EVERY == 0 or last
        )
        # On one GPU the exact pricing is the search (cheap): it also prices where the greedy's pattern gains little of
        # what the pricing's bound says one could, where column generation crawls one weak pattern a round.
        weak = added and host.gpus == 1 and greedy - 1 < WEAK_GREEDY * (most - 1)
        if (not added or weak) and exact.left and (not cheap_only or exact.looking):
            found, bound = exact.price(at, duals, caps, pricing, cheap_only)
            if bound is not None:
                most = min(most, bound)  # over every item: a bound on every pattern
            if _pays(found, duals):
                added = master.add_priced(items, host, found, at, duals, caps, exact.runners) or added
        covered = sum(d * n for d, n in zip(at, left, strict=True))
        if bounds and covered / max(most, 1.0) > farley - 1e-9:
            farley, centre = covered / max(most, 1.0), at
        if math.ceil(farley - 1e-6) >= math.ceil(value - 1e-6) or (most <= 1 + 1e-7 and at is duals):
            break  # the bound is the LP's value rounded up, or no pattern is worth more than a host: the LP is done
        if last:
            break
        if not added and at is not duals:
            centre = None  # the midpoint found nothing: price the master's own duals next
            continue
        if not added and finals > 0 and len(master.patterns) < MAX_COLUMNS:
            finals -= 1
            added, bound = _final_pricing(master, items, host, exact, duals, caps)
            if bounds and bound is not None:
                farley, searched_at = max(farley, value / max(bound, 1.0)), duals
        if not added or not master.room(purge=bounds):
            break
        value, duals, x = master.solve()
    if (
        exact_calls
        and searched_at is not duals
        and math.ceil(farley - 1e-6) < math.ceil(value - 1e-6)
        and math.ceil(value - 1e-6) > known
        and not (known and _built_worth(items, host, duals, caps, pricing) * known >= value)
    ):
        # Column generation stopped short: the most a pattern is worth at the master's last duals, searched further.
        # Not where a pattern the greedy builds there is worth value / known or more: then Farley's bound there,
        # value / most, cannot pass ``known`` (on held-out 1017, 0.3 s of HiGHS's MILP spared).
        farley = max(farley, value / max(exact.most(duals, caps), 1.0))
    return value, x, farley


def _final_pricing(
    master: _Master,
    items: Sequence[Item],
    host: HostSpec,
    exact: _ExactPricing,
    duals: Sequence[float],
    caps: Sequence[int],
) -> tuple[bool, float | None]:
    """Where every pricing found nothing at the master's ``duals``: the search for the bound (``_ExactPricing.final``)
    prices, its pattern and its neighbours added where worth more than a host (HiGHS's cheaper calls and the search's
    looks miss some once their budgets are spent: on held-out 1000 one worth 1.024 hosts). Whether one was, and the
    search's bound on every pattern's worth there."""
    found, bound = exact.final(duals, caps)
    if found is None or _worth(duals, found) <= 1 + 1e-7:
        return False, bound
    return master.add_priced(items, host, found, duals, duals, caps), bound


class _ExactPricing:
    """The exact pricing where the greedy finds nothing, within its budgets. On a host of one GPU the search
    (``one_gpu``), ONE_GPU_WORK nodes in all: until a search passes ONE_GPU_NODES it proves its pattern the best; the
    best pattern that search saw is still taken where it is worth more than a host. Otherwise, and from then on, HiGHS's
    MILP, ``calls`` times; once they are spent, the search again, looking only (ONE_GPU_LOOK nodes a pricing, its best
    pattern seen taken where it is worth more than a host), each look with the search over the most promising items
    beside it (``_promising_look``): HiGHS's patterns led column generation further than the search's unproved ones,
    but the search's go on where HiGHS's calls have stopped.

    On a host of several GPUs, HiGHS's MILP pools the GPUs and weighs the most promising items only, so where it finds
    nothing worth a host (and its bound does not prove there is none) other pricings follow (``_several``): where
    every GPU's contents can be listed, a MILP over them (``contents``, CONTENTS_CALLS in all); then the
    decomposition over the host's GPUs (``per_gpu``: a small master of what each GPU holds, PER_GPU_WORK rounds in
    all), then the split search (``split_search``: the one-GPU search GPU by GPU, SPLIT_WORK in all), and last, where
    MILPs price, the MILP over each item's tasks on each GPU (``highs._Layout``). Once one but the last has
    found a pattern the MILP did not, they price alone, and past MAX_ROUNDS too (they are cheap). The split search on
    tuning seeds 30-59 at 10,000 tasks: 27 instances fewer; the decomposition after it, on tuning seeds 0-59: 42 fewer.
    The split search not past SPLIT_ITEMS services: there the LP it leaves uses no pattern whole, and its dives cost
    seconds. Without ``calls``, the searches and the decomposition price where ``searches`` asks (``solve``)."""

    def __init__(
        self, items: Sequence[Item], host: HostSpec, calls: int, pricing: _Pricing | None = None, searches: bool = False
    ) -> None:
        self.items, self.host, self.calls, self.pricing = items, host, calls, pricing
        searches = searches or calls > 0
        self.search = OneGpu(items, host) if host.gpus == 1 and searches and ONE_GPU_WORK > 0 else None
        self.work = ONE_GPU_WORK
        self.promising_work = PROMISING_WORK
        self.proving = True  # the search's patterns are proved best: column generation may run LONGEST_ROUNDS
        self.milp: _Exact | None = None
        self.split = host.gpus > 1 and searches and 0 < len(items) <= SPLIT_ITEMS and SPLIT_STEPS > 0
        self.split_work = SPLIT_WORK
        self.runners: list[Pattern] = []  # beside the last pattern priced: runners-up the search proved it against
        self.per_gpu = PerGpu(items, host) if host.gpus > 1 and searches and PER_GPU_WORK > 0 else None
        listed = gpu_contents(items, host) if host.gpus > 1 and calls > 0 else None
        self.contents = ContentsPricing(items, host, listed) if listed is not None else None
        self.contents_calls = CONTENTS_CALLS
        self.layout = _Layout(items, host) if host.gpus > 1 and calls > 0 else None

    @property
    def searching(self) -> bool:
        return self.search is not None and self.proving

    @property
    def looking(self) -> bool:
        """The search prices, looking only: HiGHS's calls are spent, which they are only once a search has passed its
        node limit; or, on a host of several GPUs, the decomposition or the split search has work left. Cheap enough
        for rounds past MAX_ROUNDS."""
        return (self.search is not None and self.calls <= 0) or self.split or self.per_gpu is not None

    @property
    def left(self) -> bool:
        return self.search is not None or self.calls > 0 or self.split or self.per_gpu is not None

    def _searched(self, duals: Sequence[float], caps: Sequence[int]) -> Searched | None:
        """The search at ``duals`` within its limit (None where there is no search): once one passes ONE_GPU_NODES,
        searches only look."""
        if self.search is None:
            return None
        found = self.search.solve(
            duals, caps, min(ONE_GPU_NODES if self.proving else ONE_GPU_LOOK, self.work), self._prices_for(duals)
        )
        self.work -= found.nodes
        self.proving = self.proving and found.counts is not None
        if self.work <= 0:
            self.search = None  # its nodes are spent: HiGHS from here
        return found

    def price(
        self, at: Sequence[float], duals: Sequence[float], caps: Sequence[int], pricing: _Pricing, cheap: bool = False
    ) -> tuple[Pattern | None, float | None]:
        """The best pattern at ``at`` found, and a bound on every pattern's worth there (None where only some items
        were weighed, or the search only looked). ``cheap``: past MAX_ROUNDS, where no MILP prices."""
        if self.host.gpus > 1:
            return self._several(at, duals, caps, pricing, cheap)
        looks = self.search is not None and not self.proving and self.calls <= 0
        found = self._searched(at, caps) if self.proving or self.calls <= 0 else None
        self.runners = []
        if found is not None and found.counts is not None:  # proved the best; the patterns it replaced go along
            self.runners = [_pattern(self.items, self.host, c) for c in found.runners]
            return (_pattern(self.items, self.host, found.counts) if found.worth > _NOTHING else None), found.worth
        promising = self._promising_look(at, caps, pricing) if looks else None
        if found is not None and found.seen is not None:
            seen = _pattern(self.items, self.host, found.seen)
            if _worth(duals, seen) > 1 + 1e-7:
                self.runners = [promising] if promising is not None else []
                return seen, None
        if _pays(promising, duals):
            return promising, None
        if self.calls <= 0:
            return None, None
        return self._milp(at, duals, caps, pricing)

    def _prices_for(self, duals: Sequence[float]) -> Callable[[list[int]], Sequence[float]] | None:
        """The pricing LP's prices at ``duals`` for the caps the search asks (``OneGpu.solve``'s order, per unit)."""
        pricing, host = self.pricing, self.host
        if pricing is None:
            return None
        solved = False

        def prices(caps: list[int]) -> Sequence[float]:
            nonlocal solved
            p = pricing.rebound(caps) if solved else pricing.solve(duals, caps)[2]
            solved = True
            return (p[2], p[3], p[4], p[0] / host.usable, p[1] / MAX_CLIENTS_PER_GPU)

        return prices

    def _promising_look(self, at: Sequence[float], caps: Sequence[int], pricing: _Pricing) -> Pattern | None:
        """Beside a look, the search over the EXACT_ITEMS items the MILP would weigh (``_promising``), PROMISING_LOOK
        nodes, PROMISING_WORK in all: its best pattern, proved best among those items or not. Where every service binds
        its own resource, the search over all items finds no pattern worth a host long before column generation is
        done (at tuning seed 72's last duals, 500,000 nodes found one worth 1.113 hosts where HiGHS proves 1.131); over
        the promising items alone it proved one worth 1.109 in 162 nodes (docs/planning.md)."""
        if self.promising_work <= 0 or self.search is None:
            return None
        found = self.search.solve(
            at, _promising(self.items, self.host, at, caps, pricing), PROMISING_LOOK, self._prices_for(at)
        )
        self.promising_work -= found.nodes
        counts = found.counts if found.counts is not None else found.seen
        return _pattern(self.items, self.host, counts) if counts is not None and any(counts) else None

    def _several(
        self, at: Sequence[float], duals: Sequence[float], caps: Sequence[int], pricing: _Pricing, cheap: bool
    ) -> tuple[Pattern | None, float | None]:
        """On a host of several GPUs: HiGHS's pooled MILP (while its calls last, and not past MAX_ROUNDS), then the MILP
        over the listed contents (where they are), then the decomposition over the GPUs (``per_gpu``), then the split
        search, then the layout MILP (not past MAX_ROUNDS), until one finds a pattern worth more than a host or a bound
        proves there is none. Where the pooled MILP found nothing a later one but the layout MILP did, the later ones
        price from then on (the MILP's calls cost the most)."""
        bound: float | None = None
        tried = False
        for step in ("milp", "contents", "per_gpu", "split", "layout"):
            found: Pattern | None = None
            if step == "milp" and not cheap and self.calls > 0:
                tried = True
                found, b = self._milp(at, duals, caps, pricing)
            elif step == "layout" and not cheap and self.layout is not None and self.layout.calls > 0:
                found, b = self.layout.price(at, caps, pricing)
            elif step == "contents" and self.contents is not None and self.contents_calls > 0:
                self.contents_calls -= 1
                found, b = self.contents.price(at, caps)
            elif step == "per_gpu" and self.per_gpu is not None:
                found, b = self.per_gpu.price(at, caps)
                if self.per_gpu.rounds >= PER_GPU_WORK:
                    self.per_gpu = None  # its work is spent
            elif step == "split" and self.split:
                found, work = split_search(self.items, self.host, at, caps, SPLIT_STEPS)
                b = None
                self.split_work -= work
                self.split = self.split_work > 0
            else:
                continue
            if b is not None:
                bound = b if bound is None else min(bound, b)
            if _pays(found, duals):
                if tried and step not in ("milp", "layout"):
                    self.calls = 0  # the MILPs found nothing this did: the cheaper pricings price from here
                return found, bound
            if bound is not None and bound <= 1 + 1e-7:
                return found, bound
        return None, bound

    def _milp(
        self, at: Sequence[float], duals: Sequence[float], caps: Sequence[int], pricing: _Pricing
    ) -> tuple[Pattern | None, float | None]:
        self.calls -= 1
        self.milp = self.milp or _Exact(self.items, self.host)
        pattern, bound = self.milp.solve(at, _promising(self.items, self.host, at, caps, pricing))
        if len(self.items) <= EXACT_ITEMS:
            return pattern, bound
        if pattern is None or _worth(duals, pattern) <= 1 + 1e-7:
            return self.milp.solve(at, caps)  # the promising items gave nothing: all of them, for the bound
        return pattern, None

    def most(self, duals: Sequence[float], caps: Sequence[int]) -> float:
        """The most any pattern is worth at ``duals`` (Farley's divisor where column generation stopped short):
        ``final``'s bound, HiGHS searching PROOF_SEARCH times a pricing's nodes, as the polish's end does (a search
        stopped at its node limit proves only its dual bound: 15050 at 10,000 tasks is proved optimal so)."""
        return self.final(duals, caps, EXACT_NODES * PROOF_SEARCH)[1]

    def final(
        self, duals: Sequence[float], caps: Sequence[int], nodes: int | None = None
    ) -> tuple[Pattern | None, float]:
        """The best pattern found at ``duals`` and the most any pattern is worth there: the search's, or HiGHS's MILP
        searched FINAL_SEARCH times further than a pricing (the search is not: a search of many nodes cost seconds,
        where HiGHS's took 0.03 s). Where a host's contents are listed, the MILP over them first, and where it finds
        nothing worth a host and proves nothing, HiGHS's pooled bound beside it: over the items' counts alone, with its
        cuts, it proves in a few hundred nodes what the MILP over the contents does not in thousands (seed 21 of
        ``shaped_fleets.py few``: 1,176 hosts, where over the contents alone the bound was 1,175). ``nodes``: HiGHS's,
        where not FINAL_SEARCH times a pricing's."""
        listed = self.contents.price(duals, caps) if self.contents is not None else None
        if listed is not None and (listed[1] <= 1 + 1e-7 or _pays(listed[0], duals)):
            return listed
        found = self._searched(duals, caps) if self.proving else None  # past it, HiGHS searches further
        if found is not None and found.counts is not None:
            return (_pattern(self.items, self.host, found.counts) if found.worth > _NOTHING else None), found.worth
        self.milp = self.milp or _Exact(self.items, self.host)
        pattern, bound = self.milp.solve(duals, caps, EXACT_NODES * FINAL_SEARCH if nodes is None else nodes)
        return (pattern, bound) if listed is None else (listed[0], min(listed[1], bound))


def _price(
    master: _Master,
    items: Sequence[Item],
    host: HostSpec,
    at: Sequence[float],
    duals: Sequence[float],
    caps: Sequence[int],
    pricing: _Pricing,
    bounds: bool,
    due: bool,
) -> tuple[bool, float, float]:
    """The greedy's patterns priced at ``at`` (with ``bounds``, in the first column generation, climbed: ``CLIMB``;
    on a host of several GPUs, with the passes over the items the best left out: ``_other_items``), those worth more
    than a host at the master's ``duals`` added; whether
    one was, the most a pattern is worth at ``at`` (the pricing LP's value, or, with ``bounds``, the Lagrangian
    bound's where the bound is ``due`` or nothing was added), and the best of the greedy's patterns' worth at ``at``."""
    worth, counts, prices = pricing.solve(at, caps)
    most = worth
    if worth <= 1 + 1e-7:
        return False, most, 0.0
    if bounds and due:
        most = min(most, _most_worth(items, host, at, prices))
    found = _candidates(items, host, at, caps, counts, prices, CLIMB if bounds else 0)
    best = max((_worth(at, p) for p in found), default=0.0)
    added = master.add_worth_a_host(duals, found)
    if bounds and host.gpus > 1 and found:
        added |= _other_items(master, items, host, at, duals, caps, pricing, found)
    if not added and bounds:
        most = min(most, _most_worth(items, host, at, prices))
    return added, most, best


def _other_items(
    master: _Master,
    items: Sequence[Item],
    host: HostSpec,
    at: Sequence[float],
    duals: Sequence[float],
    caps: Sequence[int],
    pricing: _Pricing,
    found: Sequence[Pattern],
) -> bool:
    """OTHER_ITEMS more passes of the greedy (climbing too), each over the items the last pass's best pattern (at
    ``at``) left out, the others' duals at 0; its patterns worth a host at ``duals`` added (whether one was). Where each
    service binds its own resource, a round added one good pattern and crawled (docs/planning.md)."""
    added = False
    best = max(found, key=lambda p: _worth(at, p))
    for _ in range(OTHER_ITEMS):
        at = [0.0 if a else d for d, a in zip(at, best.counts, strict=True)]
        worth, counts, prices = pricing.solve(at, caps)
        if worth <= 1 + 1e-7:
            break
        more = _candidates(items, host, at, caps, counts, prices, CLIMB)
        if not more:
            break
        added |= master.add_worth_a_host(duals, more)
        best = max(more, key=lambda p: _worth(at, p))
    return added


def solve(
    items: Sequence[Item],
    host: HostSpec,
    *,
    beat: int = 0,
    exact_calls: int | None = None,
    start: Sequence[Pattern] = (),
    known: int = 0,
    finish: Callable[[list[tuple[Pattern, int]], list[int]], int] | None = None,
) -> Solution:
    """A plan of whole-host patterns for ``items`` (the rest left to the caller) and the LP's lower bound. ``beat``:
    the hosts of a plan the caller has; where the LP's value already needs as many, no plan is rounded from it (a
    rounding never does better than the LP it rounds). ``exact_calls``: HiGHS's MILP pricings when the greedy finds no
    pattern (by default EXACT_WORK over the number of items); with none, the searches still price, and no polish runs.
    ``start``: patterns the master begins with (a plan's hosts). ``known``: a lower bound the caller has, which spares
    a search for a bound that cannot pass it. ``finish``: the hosts the caller's packings need for a rounding's rest;
    with it, the dives stop once a rounding kept meets the bound, or the hosts taken and the LP's value over what is
    left reach the best rounding kept (``_rounded``); and, where HiGHS's MILP pricings run, the integer master looks
    for a cover of fewer hosts than the best rounding finished (``integer``)."""
    if exact_calls is None:
        exact_calls = EXACT_WORK // max(len(items), 1)
    demand = [it.demand for it in items]
    if not items or not any(demand) or any(per_host(it, host) == 0 for it in items if it.demand):
        return Solution(0, 0.0, [], list(demand))
    master = _first_master(items, host)
    for p in start:  # the hosts of a plan in hand: the LP starts no worse than it
        master.add(p)
    value, x, farley = _generate(master, items, host, demand, MAX_ROUNDS, exact_calls, known=known, searches=True)
    calls = polish_calls(host, len(items), value, max(farley, known)) if exact_calls else 0
    if calls:
        value, x, farley = polished(master, items, host, demand, farley, partial(master.add_priced, items, host), calls)
    bound = math.ceil(farley - 1e-6)
    if beat and math.ceil(value - 1e-6) >= beat:
        return Solution(bound, value, [], list(demand))
    least = max(bound, known, 1)
    solution = _rounded(master, items, host, value, x, bound, least, beat, finish)
    if finish is not None and exact_calls:
        with_integer_master(list(master.pool.values()), items, host, solution, least, beat, finish)
    return solution


def _rounded(
    master: _Master,
    items: Sequence[Item],
    host: HostSpec,
    value: float,
    x: list[float],
    bound: int,
    least: int,
    beat: int,
    finish: Callable[[list[tuple[Pattern, int]], list[int]], int] | None,
) -> Solution:
    """The LP's solution ``x`` rounded: each pattern as many times as the LP uses it whole, and the LP solved again
    over what is left (new patterns priced for it: RESOLVE_ROUNDS rounds, DIVE_ROUNDS once it has dived); where it
    uses no pattern whole, a dive (a host of the pattern the LP uses most, and of every other it uses DIVE_FIX of,
    fixed; where the LP's value over what is left is DIVE_WIDE hosts or more, a host of each of the patterns it uses
    most, value // DIVE_SPAN of them: a dive costs the same however many it fixes) and the LP again;
    ROUNDING_PASSES + DIVES solves at most. Every DIVE_KEEP dives the rounding so far is kept, its rest for the
    caller's packings. A dive may beat the packings on the rest, and costs an LP solve and DIVE_ROUNDS pricing
    rounds; so, given ``finish``, the dives stop where a kept rounding needs no more than ``least`` (a lower bound:
    it is optimal), or where the hosts taken plus the LP's value over the rest, rounded up, already reach the best
    kept. That value is the master's, not a proved bound, so the second stop is a judgement: a dive's rounding
    seldom ends below its LP."""
    left = [it.demand for it in items]
    hosts: list[tuple[Pattern, int]] = []
    kept: list[tuple[list[tuple[Pattern, int]], list[int]]] = []  # roundings the planner finishes, before dives
    best = beat or math.inf  # the fewest hosts of a rounding kept, finished (or of the caller's plan)
    dives = 0
    for _ in range(ROUNDING_PASSES + DIVES):
        order = sorted(range(len(x)), key=lambda j: (-x[j], j))
        if not order or x[order[0]] < 1e-9:
            break
        if x[order[0]] < 1 - 1e-9:
            # No pattern is used whole: dive, one host of the pattern the LP uses most (and of those it uses nearly
            # whole) and the LP again over what is left; every DIVE_KEEP dives, keep the rounding so far.
            if dives % DIVE_KEEP == 0:
                kept.append(_fill_rest(items, host, hosts, left))
                if finish is not None:
                    best = min(best, sum(k for _, k in kept[-1][0]) + finish(*kept[-1]))
                    if best <= least:
                        break  # a rounding kept is optimal: no dive can do better
            dives += 1
            top = set(order[: max(int(value // DIVE_SPAN), 1) if value >= DIVE_WIDE else 1])
            x = [1.0 if j in top or x[j] >= DIVE_FIX else 0.0 for j in range(len(x))]
        left, taken = whole_copies(master.patterns, x, items, host, hosts, left)
        if not any(left) or not taken:
            break
        master.demand(left)
        value, x, _ = _generate(master, items, host, left, DIVE_ROUNDS if dives else RESOLVE_ROUNDS, bounds=False)
        if dives and finish is not None and sum(k for _, k in hosts) + math.ceil(value - 1e-6) >= best:
            break  # this rounding cannot beat one kept: what is left goes to the caller's packings
    hosts, left = _fill_rest(items, host, hosts, left)
    return Solution(bound, value, hosts, left, kept)


__all__ = [
    "BOUND_EVERY",
    "EXACT_ITEMS",
    "EXACT_NODES",
    "EXACT_WORK",
    "KNAPSACK_UNITS",
    "MAX_COLUMNS",
    "MAX_ROUNDS",
    "RESOLVE_ROUNDS",
    "ROUNDING_PASSES",
    "HostSpec",
    "Item",
    "Pattern",
    "Solution",
    "new_highs",
    "per_host",
    "run_highs",
    "solve",
]
