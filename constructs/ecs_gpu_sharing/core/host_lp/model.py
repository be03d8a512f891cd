"""A host-level LP's items, host, patterns and solution, and the pricing rows each task uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..mps import MAX_CLIENTS_PER_GPU

MAX_ROUNDS = 60  # column generation rounds in one LP
MAX_COLUMNS = 2500  # patterns in one master; where it is reached, those out of the master's basis are purged ...
PURGE_TO = 1500  # ... the least worth first, down to this many (column generation stops where none can go)
RESOLVE_ROUNDS = 12  # pricing rounds after the first solve, per rounding pass
ROUNDING_PASSES = 6  # with DIVES: the most LP solves over what is left one rounding makes
DIVE_KEEP = 5  # dives between two roundings kept for the planner to finish
DIVE_ROUNDS = 2  # pricing rounds after each dive
DIVES = 60  # (see ROUNDING_PASSES) each after a rounding down or a dive (where the LP uses no pattern whole)
DIVE_FIX = 0.9  # a dive fixes a host of the pattern the LP uses most and of every other it uses this much of
DIVE_WIDE = 30  # where the LP's value over what is left is this many hosts or more, a dive fixes a host of each of
DIVE_SPAN = 10  # ... the value // DIVE_SPAN patterns it uses most (a dive costs the same however many it fixes)
SMOOTHING = 0.5  # weight of the best bound's duals in the duals priced (Wentges's smoothing)
BOUND_EVERY = 10  # pricing rounds between two computations of the bound (each a few knapsacks)
EXACT_NODES = 50  # branch-and-bound nodes of one exact pricing
LAYOUT_CALLS = 10  # on a host of several GPUs, where every other pricing found nothing: MILPs over each item's tasks
# on each GPU (``highs._Layout``), in one column generation where HiGHS's MILPs price ...
LAYOUT_ITEMS = 15  # ... over this many of the most promising items at most
FINAL_SEARCH = (
    10  # times EXACT_NODES: the nodes of the searches for the bound that price (FINAL_PRICINGS, the polish's)
)
PROOF_SEARCH = 100  # times EXACT_NODES: where column generation or its polish stops with its bound short of its value,
# one search at the master's last duals, for the bound alone (a search of FINAL_SEARCH on fresh seed 16074 at 10,000
# tasks stopped at 1.043 hosts, where 5,000 nodes prove 1.005 in 0.7 s)
FINAL_PRICINGS = 6  # where every pricing finds nothing, that last exact pricing prices (its pattern added), at most
EXACT_ITEMS = 40  # items one exact pricing weighs at most (the most promising at the duals priced)
EXACT_WORK = 1500  # exact pricings in the first column generation, times the services priced (a MILP's cost grows
# with its items: 30 pricings of 50 services, 7 of 200)
ONE_GPU_NODES = 5000  # nodes of one exact search on a one-GPU host; past them, HiGHS prices it (and the rest)
ONE_GPU_WORK = 70_000  # nodes of those searches in one column generation (about a second; 50,000 before the search
# galloped to its cut-off, see one_gpu._first_cut)
ONE_GPU_LOOK = 300  # nodes of a search once one has passed ONE_GPU_NODES: its best pattern is priced, not proved best
PROMISING_LOOK = 1000  # beside each look, a search over the EXACT_ITEMS most promising items only (this many nodes)
PROMISING_WORK = 70_000  # nodes of those searches in one column generation
LONGEST_ROUNDS = 200  # column generation rounds at most, past MAX_ROUNDS only while the one-GPU search proves its
# patterns, or while the cheap pricings (the greedy, a search that only looks) lower the LP's value by TAIL_OFF hosts
# every BOUND_EVERY rounds; and no more than LONGEST_WORK over the services priced (a round's cost grows with them),
# nor fewer than LONGEST_FLOOR
LONGEST_WORK = 40_000
LONGEST_FLOOR = 120
TAIL_OFF = 0.1  # (0.25 before the greedy passed over the other items, 0.5 before its patterns climbed: each time a
# pause of ten rounds stopped column generation where it would have gone on)
CLIMB = 2  # in the first column generation on a host of several GPUs: steps up from the greedy's best pattern
OTHER_ITEMS = 1  # in the first column generation on a host of several GPUs: greedy passes over the items the last
# pass's best pattern left out (``host_lp._other_items``)
WEAK_GREEDY = 0.5  # on a one-GPU host, the exact pricing also runs where the greedy's best pattern gains less than this
# share of what the pricing's bound says a pattern could gain (its worth less one host)
SPLIT_STEPS = 20_000  # work of the one-GPU search on each GPU of a host of several (split_search): nodes x items
SPLIT_WORK = 250_000  # work of those searches in one column generation (about 0.5 s)
SPLIT_ITEMS = 200  # services at most in an LP the split search prices: past them it cost seconds in dives
POLISH_GAP = 1.01  # on a one-GPU host, where the first column generation's value is this far above its bound ...
# (1%, half of #32's 1.02: at 1.02 a fleet whose first column generation ended 1.96% apart was left at 1.0197)
POLISH_WORK = 10_000  # ... HiGHS's MILP prices on, this many calls over the services priced (``host_lp.polish``) ...
POLISH_HOST_WORK = 400  # ... and no more than this many over the services priced for each host between the value
# and the bound (a call's cost grows with the services: about 0.6 s of MILP for each host at stake)
KNAPSACK_UNITS = 2048  # units of a knapsack's room, at most (sizes rounded up for a candidate, down for a bound)
CLIENTS_BIND = 0.5  # MPS clients needing this share of the GPUs the memory needs: one GPU's knapsacks keep to them
CLIENT_KNAPSACK_UNITS = 512  # the same, for one GPU's knapsack over its memory and its MPS clients (a row a client)


@dataclass(frozen=True)
class Item:
    """One service's tasks as the LP sees them."""

    name: str
    group: str  # isolation group: no GPU holds two
    size: int  # the task's GPU budget, MiB (0: no MPS)
    clients: int
    whole: int  # GPUs the task holds whole
    cpu: int
    mem: int
    enis: int
    demand: int


@dataclass(frozen=True)
class HostSpec:
    gpus: int
    usable: int  # GPU memory a GPU's MPS tasks may fill, MiB
    cpu: int
    mem: int
    enis: int  # awsvpc tasks one host takes


@dataclass(frozen=True)
class Pattern:
    counts: tuple[int, ...]  # tasks of each item
    gpus: tuple[tuple[tuple[tuple[int, int], ...], bool], ...]  # per GPU in use: ((item, tasks), ...), whole
    no_gpu: tuple[tuple[int, int], ...]  # (item, tasks) without a GPU

    @cached_property
    def held(self) -> tuple[tuple[int, int], ...]:
        """(item, tasks) of each item the pattern holds, in the items' order: a host holds a few of a fleet's
        services, and a pattern's worth is summed over these alone (``patterns._worth``)."""
        return tuple([(i, k) for i, k in enumerate(self.counts) if k])


@dataclass
class Solution:
    bound: int  # no placement of the items uses fewer hosts
    lp_value: float
    hosts: list[tuple[Pattern, int]] = field(default_factory=list)  # (pattern, copies)
    rest: list[int] = field(default_factory=list)  # tasks of each item the patterns leave for the planner
    # other roundings (hosts, rest), the planner to keep whichever it finishes on fewer hosts
    others: list[tuple[list[tuple[Pattern, int]], list[int]]] = field(default_factory=list)


def per_host(it: Item, host: HostSpec) -> int:
    """The most tasks of ``it`` one host takes."""
    k = 1 << 30
    if it.whole:
        k = host.gpus // it.whole
    elif it.size:
        k = min(host.usable // it.size, MAX_CLIENTS_PER_GPU // max(it.clients, 1)) * host.gpus
    if it.cpu:
        k = min(k, host.cpu // it.cpu)
    if it.mem:
        k = min(k, host.mem // it.mem)
    if it.enis:
        k = min(k, host.enis // it.enis)
    return max(k, 0)


def _use(it: Item, host: HostSpec) -> tuple[float, float, float, float, float]:
    """What one task takes of each row of the pricing LP: GPUs (a whole-GPU task's, or its share of one GPU's memory),
    GPUs by MPS clients, CPU units, memory, network interfaces."""
    gpu = it.whole if it.whole else it.size / host.usable
    clients = it.whole if it.whole else it.clients / MAX_CLIENTS_PER_GPU if it.size else 0.0
    return (gpu, clients, float(it.cpu), float(it.mem), float(it.enis))


def uses(it: Item, host: HostSpec) -> tuple[int, int, int, int, int]:
    """What one task takes of a host, its GPU memory over all its GPUs (the one-GPU search's figures, and the test
    whether a task fits what a pattern leaves): CPU units, memory, interfaces, GPU memory, MPS clients."""
    if it.whole:
        return (it.cpu, it.mem, it.enis, host.usable * it.whole, 0)
    if it.size:
        return (it.cpu, it.mem, it.enis, it.size, it.clients)
    return (it.cpu, it.mem, it.enis, 0, 0)


def interfaces(host: HostSpec) -> int:
    """The interfaces row's room: the host's awsvpc tasks, a bound too large to bind where they are not limited."""
    return min(host.enis, 1 << 30)


def _capacity(host: HostSpec) -> tuple[float, float, float, float, float]:
    """What one host has of each row of the pricing LP (``_use``)."""
    return (float(host.gpus), float(host.gpus), float(host.cpu), float(host.mem), float(interfaces(host)))


def shares(it: Item, host: HostSpec) -> tuple[float, ...]:
    """What one task of ``it`` takes of a host: its GPUs, CPU, memory and network interfaces, each as a share."""
    gpu = (it.whole / host.gpus) if it.whole else (it.size / (host.usable * host.gpus) if host.gpus else 0.0)
    return (gpu, it.cpu / host.cpu, it.mem / host.mem, it.enis / host.enis if host.enis else 0.0)


def longest_rounds(rounds: int, services: int) -> int:
    """The rounds a column generation of ``rounds`` may run to: LONGEST_ROUNDS, no more than LONGEST_WORK over the
    ``services`` priced (a round's cost grows with them), no fewer than LONGEST_FLOOR, and never fewer than
    ``rounds``."""
    return max(rounds, min(LONGEST_ROUNDS, max(LONGEST_FLOOR, LONGEST_WORK // max(services, 1))))
