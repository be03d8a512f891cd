"""A capacity's plan: the strategies run and the best kept (staged, FFD, tasks without a GPU balanced as fillers,
host-level LP, search); the fleet's plan."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from .. import cutting_stock, host_lp
from ..errors import PlanError
from ..host_lp.model import shares
from ..task_rules import task_problems
from .alike import Kinds, merged, named_back
from .dealt import dealt
from .exact_gpus import Stage, Staged, exact_gpus, gpu_units
from .ffd import ffd_best, ffd_may_help, staged_may_win
from .fillers import with_fillers
from .gpus import FILLS, Item, Way, gpu_floor, lp_roundings, lp_solution, pack_gpus, way_gpus
from .hosts import (
    Host,
    Unit,
    eni_room,
    lower_bounds,
    may_beat,
    other_units,
    pack_hosts,
    pack_hosts_even,
    plan_size,
    slots_floor,
)
from .lp_view import as_pattern, lp_hosts, lp_problem
from .model import CapacityInput, CapacityPlan, GpuLoad, InstanceGroup, Plan, ServiceInput, Unplaced
from .search import search_hosts


def _plan_capacity(
    capacity: CapacityInput, tasks: Sequence[tuple[ServiceInput, int]], host_lp: bool = True, count_only: bool = False
) -> CapacityPlan:
    unplaced: list[Unplaced] = []
    fitting = []
    for service, count in tasks:
        problems = task_problems(service, capacity)
        if problems and count:
            unplaced.append(Unplaced(service.name, count, "; ".join(map(str, problems))))
        elif count:
            fitting.append((service, count))
    best: list[Host] = []
    lp_bound = 0
    partition_hosts = 0  # the partitions' own host bounds added up: no host holds two partitions
    without_lp = 0
    for partition in _partitions(fitting, capacity.gpus_per_instance):
        hosts, bound, host_bound, fast = _pack_partition(capacity, partition, host_lp, count_only)
        best.extend(hosts)
        lp_bound += bound
        partition_hosts += host_bound
        without_lp += fast
    groups = [
        InstanceGroup(
            count=h.count,
            gpus=h.gpus + [GpuLoad()] * (capacity.gpus_per_instance - len(h.gpus)),
            cpu_units_used=h.cpu,
            memory_mib_used=h.mem,
            tasks_without_gpu=tuple(sorted(h.without_gpu.items())),
        )
        for h in best
    ]
    needed = sum(g.count for g in groups)
    if capacity.max_instances is not None and needed > capacity.max_instances:
        groups, over = _keep(groups, capacity.max_instances, {s.name: s.whole_gpus for s, _ in fitting if s.whole_gpus})
        unplaced.extend(
            Unplaced(name, n, f"no room within max_instances={capacity.max_instances}") for name, n in over.items()
        )
    gpu_lb, host_lb = lower_bounds(capacity, fitting, lp_bound)
    host_lb = max(host_lb, partition_hosts)
    if _one_gpu_each(capacity.gpus_per_instance, fitting):
        gpu_lb = max(gpu_lb, host_lb)  # every host in use holds a task of its one GPU
    whole_gpu = sum(max(s.whole_gpus, 1 if s.clients else 0) * n for s, n in fitting)
    return CapacityPlan(
        capacity=capacity,
        instances=groups,
        unplaced=sorted(unplaced, key=lambda u: (u.service, u.reason)),
        instances_needed=needed,
        gpu_lower_bound=gpu_lb,
        instance_lower_bound=host_lb,
        whole_gpu_gpus=whole_gpu,
        instances_without_lp=without_lp,
    )


def _partitions(
    fitting: list[tuple[ServiceInput, int]], gpus_per_instance: int
) -> list[list[list[tuple[ServiceInput, int]]]]:
    """The tasks as host partitions (no host holds two), each a list of isolation groups (no GPU holds two): a
    host-isolated group is a partition of its own; the other groups share hosts, on GPUs of their own. On hosts of one
    GPU, where every task takes a GPU, each group is a partition of its own too: its GPU is its host's only one, so no
    host holds two groups, and the plan's bound is the groups' own bounds added up, where over them all it is only
    their CPU, memory and GPUs summed (a task without a GPU may ride on any group's host: there they share)."""
    by_group: dict[str, list[tuple[ServiceInput, int]]] = {}
    for s, n in fitting:
        by_group.setdefault(s.isolation_group, []).append((s, n))
    alone = [[g] for name, g in sorted(by_group.items()) if any(s.isolate_host for s, _ in g)]
    shared = [g for name, g in sorted(by_group.items()) if not any(s.isolate_host for s, _ in g)]
    if _one_gpu_each(gpus_per_instance, [pair for g in shared for pair in g]):
        return alone + [[g] for g in shared]
    return alone + ([shared] if shared else [])


def _one_gpu_each(gpus_per_instance: int, pairs: Sequence[tuple[ServiceInput, int]]) -> bool:
    """Whether each host holds one GPU and every task takes a GPU: then a host in use holds a task on its only GPU,
    and of one isolation group."""
    return gpus_per_instance == 1 and all(s.shape.uses_gpu for s, _ in pairs)


def _pack_partition(
    capacity: CapacityInput,
    groups: list[list[tuple[ServiceInput, int]]],
    host_lp: bool = True,
    count_only: bool = False,
) -> tuple[list[Host], int, int, int]:
    """Hosts for tasks that may share hosts, each isolation group on GPUs of its own; the GPU cutting-stock LP's bound
    on the GPUs of their MPS tasks (0 where it was not run); a bound on their hosts; and the hosts the plan would
    have without the host-level LP (what ``host_lp=False`` gives). ``count_only``: see ``plan``."""
    flat = [pair for group in groups for pair in group]
    host_bound = lower_bounds(capacity, flat)[1]
    best, gpu_bound, staged = _pack_staged(capacity, groups, host_bound if count_only else 0, host_lp, host_bound)
    alike, kinds = merged(groups)  # the LP's items: alike services as one
    tasks, services = sum(n for _, n in flat), sum(len(group) for group in alike)
    runs = host_lp and host_lp_runs(tasks, services, plan_size(best)[0], host_bound)
    if runs:
        gpu_bound = max(gpu_bound, _many_sizes_bound(capacity, groups, host_bound, staged))
        host_bound = max(host_bound, lower_bounds(capacity, flat, gpu_bound)[1])
        runs = host_lp_runs(tasks, services, plan_size(best)[0], host_bound)
    if not runs:
        best = _searched(capacity, groups, best, host_bound)
        return best, gpu_bound, host_bound, plan_size(best)[0]
    without = _searched(capacity, groups, best, host_bound)
    # The exact GPU stage first: where its hosts meet the bound, no LP can do better, and the LP is spared (held-out
    # 1004 and 1034 at 10,000 tasks: 2.4 and 2.2 s a plan, now 0.4 s, the same hosts). Elsewhere the LP runs from the
    # plan it would have had, and the stage's hosts are weighed against the LP's after it.
    gap = 0 if host_lp_exact(tasks, services) else math.floor(HOST_LP_GAP * host_bound)  # (host_lp_runs)
    exact, gpu_bound = exact_gpus(capacity, staged, best, gpu_bound, host_bound, gap)
    stage_bound, host_bound = host_bound, max(host_bound, lower_bounds(capacity, flat, gpu_bound)[1])
    # (exact_gpus gives back best, or fewer hosts; the balance tries host counts up to the LP's gap)
    filled = with_fillers(capacity, flat, exact, host_bound, math.floor(HOST_LP_GAP * host_bound))
    if filled is not exact:
        # Tasks without a GPU balanced with the plan's GPUs (``fillers``): the plan the LP starts from, and past its
        # exact limits, within its gap, the plan that spares it
        best = exact = filled
        if plan_size(best)[0] <= host_bound:
            return _searched(capacity, groups, best, host_bound), gpu_bound, host_bound, plan_size(without)[0]
    if exact is not best and plan_size(exact)[0] <= host_bound:
        return _searched(capacity, groups, exact, host_bound), gpu_bound, host_bound, plan_size(without)[0]
    if gap:
        # Past its exact limits the LP runs only where no plan in hand is within its gap: the GPU stage's (its GPUs
        # balanced onto the gap's hosts: tuning seed 26 at 40,000 tasks on eight H100s a host, 1,232 hosts over 1,231,
        # 44 s with the LP for the same 1,232), or else the tasks dealt. It starts from the better of the staged and
        # dealt plans, as before.
        if host_lp_runs(tasks, services, plan_size(exact)[0], host_bound):
            best = min(best, _dealt(capacity, alike, kinds, host_bound) or best, key=plan_size)
        if not host_lp_runs(tasks, services, min(plan_size(best), plan_size(exact))[0], host_bound):
            best = min(best, exact, key=plan_size)
            return _searched(capacity, groups, best, host_bound), gpu_bound, host_bound, plan_size(without)[0]
    planned, lp_bound = _pack_host_lp(capacity, alike, kinds, best, host_bound, host_lp_exact(tasks, services))
    host_bound = max(host_bound, lp_bound)
    if planned is not None and plan_size(planned) < plan_size(best):
        best = planned
    best = _searched(capacity, groups, best, host_bound)
    if plan_size(best)[0] > host_bound:  # still above: where a GPU more costs a host, the exact GPU stage's hosts
        if host_bound != stage_bound:  # the bound the stage packed against has moved: the stage again, against it
            exact, gpu_bound = exact_gpus(capacity, staged, best, gpu_bound, host_bound)
            host_bound = max(host_bound, lower_bounds(capacity, flat, gpu_bound)[1])
        if plan_size(exact) < plan_size(best):
            best = _searched(capacity, groups, exact, host_bound)
    return best, gpu_bound, host_bound, plan_size(without)[0]


def _many_sizes_bound(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], known: int, staged: Staged
) -> int:
    """The GPU cutting-stock LP's bound on the MPS tasks' GPUs, where a group of more task sizes than
    cutting_stock.MAX_SIZES has none from the staged plan (which packs no GPU stage where host CPU or memory binds far
    past the GPUs, ``staged_may_win``); 0 where every such group has one, or where it cannot lift the bound on the
    hosts above ``known``: column generation stops once its value, which its bound never passes, says so (where host
    CPU or memory binds, within a few rounds), and is not begun where a group's ``staged`` packing already fills no
    more GPUs than that (the LP's value is never above a packing's GPUs; held-out 1014 and 1017 of the generated
    benchmark at 10,000 tasks: 0.36 and 0.30 s of column generation that said nothing). Only its bound is used, not
    its patterns: the planner asks for it where a plan is above its bound and the host-level LP would run, where it
    can prove the plan optimal (the LP is then skipped) or spare the LP a search for its bound (docs/planning.md)."""
    parts = [
        [
            Item(s.name, s.task_gpu_budget_mib, s.clients, s.cpu_units, s.memory_mib, n)
            for s, n in group
            if s.clients and not s.whole_gpus
        ]
        for group in groups
    ]
    bounded = {frozenset(it.name for it in st.items): st.lp_bound for st in staged.stages if st.lp_bound}
    if all(
        len({(it.size, it.clients) for it in items}) <= cutting_stock.MAX_SIZES
        or frozenset(it.name for it in items) in bounded
        for items in parts
    ):
        return 0  # every group of many sizes has the staged plan's LP bound, which the caller has
    whole = sum(s.whole_gpus * n for group in groups for s, n in group if s.whole_gpus)
    needless = known * capacity.gpus_per_instance - whole  # GPUs of a bound no higher than known, for one group
    # The GPUs a group's staged packing fills: the LP's value, and so its bound, is never above them
    filled = {frozenset(it.name for it in st.items): min(map(way_gpus, st.ways)) for st in staged.stages if st.ways}
    total = 0
    for items in parts:
        if (names := frozenset(it.name for it in items)) in bounded:
            total += bounded[names]
            continue
        if filled.get(names, needless + 1) <= needless:
            continue  # a packing in hand fills no more GPUs than known's hosts: no bound from the LP can lift them
        solution = lp_solution(items, capacity, many=True, needless=needless) if items else None
        total += solution.bound if solution is not None else 0
    return total


def _searched(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], best: list[Host], bound: int
) -> list[Host]:
    """A small fleet: search for a placement on fewer hosts, one fewer at a time, within a budget of steps."""
    while plan_size(best)[0] > bound and (fewer := search_hosts(capacity, groups, plan_size(best)[0] - 1)) is not None:
        best = fewer
    return best


# A partition of at most HOST_LP_TASKS tasks gets the host-level LP (where its plan is above its bound), and past them,
# one of at most HOST_LP_SERVICES services (``host_lp_exact``); past both, the LP without HiGHS's MILP pricings, where
# the plan is more than HOST_LP_GAP above its bound (``host_lp_runs``)
HOST_LP_TASKS = 20_000
HOST_LP_SERVICES = 48
HOST_LP_GAP = 1.02
# Past both, one column generation over more than SPLIT_SERVICES of the LP's items stops far from converging (each
# round prices a pattern or a few over all of them, and its rounds are counted): there the items are dealt into parts of
# at most that many, each part's LP solved and rounded on its own, and the rests placed together (``_parts_planned``)
SPLIT_SERVICES = 320
# Where the parts are this many or fewer, the LP over every item runs after them, from their plan (its hosts as the
# master's first patterns, its count to beat): one LP over up to 640 items converges near enough to better it
WHOLE_AFTER_PARTS = 2


def host_lp_exact(tasks: int, services: int) -> bool:
    """Whether a partition of ``tasks`` tasks of ``services`` services gets the whole host-level LP, HiGHS's MILP
    pricings and its polish too. Their cost grows with the services, far less with the tasks (they are the LP's
    demand, not its rows), and past 20,000 tasks the other strategies are furthest from the bound where the services
    are few: on generated fleets cut to 8-48 services (18,000-91,000 tasks, ECS's 5,000 a service) the LP won up to 16%
    of the hosts, in 1.7 s at most (``benchmarks/few_services_at_scale.py``, docs/planning.md). Alike services are one
    of the LP's items (``alike.merged``), and the caller counts them as one."""
    return tasks <= HOST_LP_TASKS or services <= HOST_LP_SERVICES


def host_lp_runs(tasks: int, services: int, hosts: int, bound: int) -> bool:
    """Whether the host-level LP runs on a partition whose plan has ``hosts`` over a lower ``bound``: never at the
    bound; within ``host_lp_exact``'s tasks or services wherever it is above; past both only where the plan is more than
    HOST_LP_GAP above its bound, without HiGHS's MILP pricings (the greedy, the searches and the decomposition over the
    GPUs price: their work is counted in nodes and rounds). There a plan within 2% of its bound keeps the ``plan``
    command at 100,000 tasks within its 0.5 s, and a plan further off has more hosts at stake than seconds: held-out
    seed 1008 of the generated benchmark at 100,000 tasks, each service binding its own resource, 1,788 hosts over a
    bound of 1,433 without the LP, 1,454 with the greedy's pricings alone and 1,434 with the rest (its fleet file);
    held-out 1046 (one GPU a host), 29,283 over 25,546 with the greedy's pricings alone, 27,739 over 27,604 with the
    search too (docs/planning.md). Past both, the exact GPU stage's GPUs are balanced onto the gap's hosts first
    (``exact_gpus``), else the tasks dealt (``dealt``): a plan within the gap spares the LP (1008's: 1,438 hosts)."""
    return hosts > bound and (host_lp_exact(tasks, services) or hosts > HOST_LP_GAP * bound)


def _pack_host_lp(
    capacity: CapacityInput,
    groups: list[list[tuple[ServiceInput, int]]],
    kinds: Kinds,
    best: list[Host],
    known: int = 0,
    exact: bool = True,
) -> tuple[list[Host] | None, int]:
    """Hosts from the host-level cutting-stock LP's patterns, the rest by first-fit decreasing (None where the LP
    cannot beat ``best``, whose hosts are its first patterns); and the LP's bound. ``exact``: with HiGHS's MILP
    pricings (``host_lp_exact``); without them, more than SPLIT_SERVICES services are planned in parts
    (``_parts_planned``), then, where they are at most WHOLE_AFTER_PARTS parts, by the LP over all of them started
    from the parts' plan; past that, the parts' plan is given back with a bound of 0 (theirs are not the fleet's).
    ``groups``: alike services as one (``alike.merged``), whose ``kinds`` the hosts are given back to."""
    pairs = [(s, n) for group in groups for s, n in group if n]
    items, spec = lp_problem(capacity, pairs)
    index = {s.name: i for i, (s, _) in enumerate(pairs)}
    index.update((name, index[rep]) for rep, members in kinds.items() for name, _ in members)
    start = [as_pattern(h, index, items) for h in best]
    finished: dict[tuple[int, ...], list[Host]] = {}

    def finish(rest_counts: Sequence[int]) -> list[Host]:
        """The rest of a rounding on hosts of its own: the best FFD order, then the exact search for a host fewer
        at a time (a rest of a few tasks)."""
        key = tuple(rest_counts)
        if key not in finished:
            left = {s.name: n for (s, _), n in zip(pairs, rest_counts, strict=True)}
            rest = [[(s, left[s.name]) for s, _ in group if left.get(s.name)] for group in groups]
            rest = [group for group in rest if group]
            hosts: list[Host] = []
            if rest:
                hosts = ffd_best(capacity, rest)
                while (fewer := search_hosts(capacity, rest, plan_size(hosts)[0] - 1)) is not None:
                    hosts = fewer
            finished[key] = hosts
        return finished[key]

    parted: list[Host] | None = None
    if not exact and len(items) > SPLIT_SERVICES:
        parted = _parts_planned(items, spec, pairs, finish)
        if len(items) > WHOLE_AFTER_PARTS * SPLIT_SERVICES:
            return named_back(parted, kinds), 0  # the parts' bounds are not the fleet's
        if plan_size(parted) < plan_size(best):  # the LP over every item starts from the parts' plan, and must beat it
            best, start = parted, [as_pattern(h, index, items) for h in parted]
    solution = host_lp.solve(
        items,
        spec,
        beat=plan_size(best)[0],
        exact_calls=None if exact else 0,
        start=start,
        known=known,
        finish=lambda _, rest_counts: plan_size(finish(rest_counts))[0],
    )
    planned = [
        lp_hosts(patterns, pairs) + finish(rest_counts)
        for patterns, rest_counts in ([(solution.hosts, solution.rest), *solution.others] if solution.hosts else [])
    ]
    if parted is not None:
        planned.append(parted)
    if not planned:
        return None, solution.bound
    return named_back(min(planned, key=plan_size), kinds), solution.bound


def _dealt(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], kinds: Kinds, bound: int
) -> list[Host] | None:
    """The tasks of ``groups`` (alike services as one) dealt over the hosts HOST_LP_GAP above ``bound`` allows
    (``dealt``), as the planner's hosts; None where they could not be dealt."""
    pairs = [(s, n) for group in groups for s, n in group if n]
    items, spec = lp_problem(capacity, pairs)
    patterns = dealt(items, spec, math.floor(HOST_LP_GAP * bound))
    return None if patterns is None else named_back(lp_hosts(patterns, pairs), kinds)


def _parts_planned(
    items: list[host_lp.Item],
    spec: host_lp.HostSpec,
    pairs: list[tuple[ServiceInput, int]],
    finish: Callable[[Sequence[int]], list[Host]],
) -> list[Host]:
    """The hosts of more than SPLIT_SERVICES items: each part (``_parts``) the LP's patterns, rounded on its own (no
    HiGHS MILP pricings: the caller runs this only past ``host_lp_exact``), and the rests of all the parts finished
    together by ``finish``."""
    hosts: list[Host] = []
    rest = [0] * len(items)
    for part in _parts(items, spec):
        solution = host_lp.solve([items[i] for i in part], spec, exact_calls=0)
        hosts += lp_hosts(solution.hosts, [pairs[i] for i in part])
        for i, n in zip(part, solution.rest, strict=True):
            rest[i] = n
    return hosts + finish(rest)


def _parts(items: Sequence[host_lp.Item], spec: host_lp.HostSpec) -> list[list[int]]:
    """The indexes of ``items`` dealt into parts of at most SPLIT_SERVICES, each with the same mix: whole-GPU items
    first, then by the resource a task needs most of a host (``shares``: GPUs, CPU, memory, interfaces) and by that
    share, largest first, dealt round-robin. A part keeps the fleet's mix of what binds, so its hosts can pair the
    tasks that bind one resource with those that bind another, as the whole fleet's would."""

    def key(i: int) -> tuple[int, int, float, str]:
        share = shares(items[i], spec)
        most = max(range(len(share)), key=share.__getitem__)
        return (-items[i].whole, most, -share[most], items[i].name)

    order = sorted(range(len(items)), key=key)
    count = -(-len(items) // SPLIT_SERVICES)
    return [order[j::count] for j in range(count)]


def _pack_staged(
    capacity: CapacityInput,
    groups: list[list[tuple[ServiceInput, int]]],
    enough: int = 0,
    many: bool = True,
    known: int = 0,
) -> tuple[list[Host], int, Staged]:
    """The staged packings (GPUs filled, then hosts) and first-fit decreasing over GPUs and hosts: the plan with the
    fewest hosts; the GPU cutting-stock LP's bound on the MPS tasks' GPUs (0 where it was not run; a group's
    ``gpu_floor`` where a fill met it); and the GPU stage's ways, for the exact GPU stage (``exact_gpus``). ``enough``:
    hosts at which the first-fit decreasing orders stop (0: never), for a caller that reads only the instance count;
    a plan at a lower bound on the hosts cannot have fewer, though another might have fewer busy GPUs. ``many``: the
    GPU LP over groups of more than MAX_SIZES sizes too (the planner's ``host_lp``: a plan that only stands in for the
    fleet's size, as the surge's, is spared it), once the fills' plans are known and only where they are above
    ``known``, a lower bound on the hosts."""
    stages: list[Stage] = []  # each group's MPS tasks, the LP's bound on their GPUs, and its ways of filling them
    deferred: list[int] = []  # the stages of more than MAX_SIZES sizes whose LP waits for the fills' plans
    others: list[Unit] = []
    bound = 0
    enis = {s.name: s.network_interfaces for group in groups for s, _ in group}
    room = eni_room(capacity)
    staged = staged_may_win(capacity, groups)
    for group in groups if staged else ():
        items = [
            Item(s.name, s.task_gpu_budget_mib, s.clients, s.cpu_units, s.memory_mib, n)
            for s, n in group
            if s.clients and not s.whole_gpus
        ]
        others.extend(other_units(group))
        if not items:
            continue
        # A caller that reads only the count (ECS's placement on a scaled-down fleet) is spared the LP where HiGHS
        # would solve it: importing it and numpy is 0.06 s of a command that should take under 0.5 s.
        keys = len({(it.size, it.clients) for it in items})
        packed = [pack_gpus(items, capacity, fill) for fill in FILLS]
        solution, lp_bound = None, 0
        if (enough and keys > cutting_stock.PURE_SIZES) or (not many and keys > cutting_stock.MAX_SIZES):
            pass
        elif keys > cutting_stock.MAX_SIZES and min(map(way_gpus, packed)) <= (floor := gpu_floor(items, capacity)):
            lp_bound = floor  # a fill on the GPUs' floor: no LP packs fewer, and the floor is the bound
        elif keys > cutting_stock.MAX_SIZES:
            deferred.append(len(stages))  # the LP over many sizes waits for the fills' plans (below)
        else:
            solution = lp_solution(items, capacity)
        stages.append(_stage(items, capacity, solution, packed, lp_bound))
        bound += stages[-1].lp_bound
    best: list[Host] | None = None

    def pack(ways: list[Way], spread: bool) -> None:
        """The hosts of each group's way in ``ways``, kept where they beat ``best``."""
        nonlocal best
        gpus = gpu_units(ways, enis)
        if any(u.enis > room for u in gpus):
            return  # a GPU filled with more awsvpc tasks than a host has interfaces for: FFD places them
        units = gpus + others
        if not may_beat(units, capacity, best):
            return  # no packing of these GPUs beats best
        hosts = pack_hosts(units, capacity)
        # The GPUs spread evenly over the hosts they fill, where first fit needs more (hosts.pack_hosts_even); not
        # from the LP's ways, which a plan read only for its count does not have (its count must be the same).
        floor = slots_floor(units, capacity)
        if spread and 0 < floor < plan_size(hosts)[0]:
            hosts = min(hosts, pack_hosts_even(units, capacity, floor) or hosts, key=plan_size)
        if best is None or plan_size(hosts) < plan_size(best):
            best = hosts

    # Strategy i packs every group with its i-th way (its last, where it has fewer), then the hosts.
    for i in range(max((len(stage.ways) for stage in stages), default=1) if staged else 0):
        pack([stage.ways[min(i, len(stage.ways) - 1)] for stage in stages], i < len(FILLS))
    if deferred and (best is None or plan_size(best)[0] > known):  # past MAX_SIZES sizes, the LP (_many_sizes_ways)
        added, fresh, rounded = _many_sizes_ways(capacity, stages, deferred)
        bound += added
        for j in range(max(map(len, fresh)) if rounded else 0):  # each group its j-th new way (its last, where fewer)
            pack([ways[min(j, len(ways) - 1)] for ways in fresh], False)
    # Tasks first-fit onto GPUs and hosts together: better where host CPU or memory binds. It builds hosts one by
    # one, so past small fleets it runs only where host CPU or memory binds (the staged plan groups identical hosts
    # and answers in time where GPU memory binds, as for a million small tasks).
    if best is None or ffd_may_help(capacity, groups, plan_size(best)[0]) or _enis_may_bind(capacity, groups):
        best = ffd_best(capacity, groups, best, enough)
    # A small fleet: search for a placement on fewer hosts, one fewer at a time, within a budget of steps.
    assert best is not None
    while (fewer := search_hosts(capacity, groups, plan_size(best)[0] - 1)) is not None:
        best = fewer
    return best, bound, Staged(stages, others, enis)


def _many_sizes_ways(
    capacity: CapacityInput, stages: list[Stage], deferred: list[int]
) -> tuple[int, list[list[Way]], bool]:
    """The GPU LP over each ``deferred`` stage's many sizes, started from its ways' GPUs: its bound and its roundings,
    as the stage's last ways, put in ``stages``; the bounds summed, each stage's new ways (its last where it has
    none), and whether any stage has new ones. The staged plan asks for it where the fills' plans are above the bound
    on the hosts, not where they meet it (shaped `many` 900 and 904 at 1,000 tasks: 0.3 s of LP that found nothing).
    Started from the fills' GPUs it converges in a few dozen rounds where from one size a pattern it took hundreds
    (held-out 1007 at 100,000 tasks on eight L40S a host, 115 sizes: 23 solves in 0.06 s, not 252 in 0.32 s)."""
    added, rounded = 0, False
    fresh = [stage.ways[-1:] for stage in stages]
    for k in deferred:
        stage = stages[k]
        stages[k] = _stage(
            stage.items, capacity, lp_solution(stage.items, capacity, many=True, start=stage.ways), stage.ways
        )
        added += stages[k].lp_bound
        if len(stages[k].ways) > len(stage.ways):
            fresh[k], rounded = stages[k].ways[len(stage.ways) :], True
    return added, fresh, rounded


def _stage(
    items: list[Item], capacity: CapacityInput, solution: cutting_stock.Solution | None, ways: list[Way], bound: int = 0
) -> Stage:
    """A group's stage from its ``ways``: where the GPU LP's ``solution`` has patterns, with its bound and its roundings
    (``lp_roundings``) as the last ways; else with ``bound``."""
    if solution is None or not solution.patterns:
        return Stage(items, bound, ways)
    return Stage(items, solution.bound, ways + lp_roundings(items, capacity, solution))


def _enis_may_bind(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]]) -> bool:
    """Whether the hosts' network interfaces can limit the plan: awsvpc tasks on a type whose count is known."""
    return bool(capacity.task_network_interfaces) and any(s.network_interfaces for g in groups for s, _ in g)


def _keep(groups: list[InstanceGroup], limit: int, whole: dict[str, int]) -> tuple[list[InstanceGroup], dict[str, int]]:
    """The first ``limit`` instances, and the tasks of the rest, per service (``whole``: GPUs per whole-GPU task)."""
    kept: list[InstanceGroup] = []
    over: dict[str, int] = {}
    room = limit
    for g in groups:
        stay = min(g.count, room)
        room -= stay
        if stay:
            kept.append(InstanceGroup(stay, g.gpus, g.cpu_units_used, g.memory_mib_used, g.tasks_without_gpu))
        gone = g.count - stay
        if not gone:
            continue
        on_host: dict[str, int] = dict(g.tasks_without_gpu)
        for gpu in g.gpus:
            for name, n in gpu.tasks:
                on_host[name] = on_host.get(name, 0) + n
        for name, n in on_host.items():
            over[name] = over.get(name, 0) + n // whole.get(name, 1) * gone
    return kept, over


def plan(
    capacities: Iterable[CapacityInput],
    services: Iterable[ServiceInput],
    *,
    surge: bool = False,
    host_lp: bool = True,
    count_only: bool = False,
) -> Plan:
    """Places every task of ``services`` (largest counts, or the deployment surge) on ``capacities``. ``host_lp=False``
    leaves out the host-level LP, the planner's costliest strategy: for a packing that only stands in for the fleet's
    size in hosts (the placement model's scaled-down replays). ``count_only``: the caller reads only each capacity's
    instance count, which is the same; strategies stop once a partition's plan meets its lower bound on the hosts,
    so which hosts, and how many busy GPUs, may differ."""
    caps = sorted(capacities, key=lambda c: c.name)
    svcs = sorted(services, key=lambda s: s.name)
    names = {c.name for c in caps}
    for s in svcs:
        if s.capacity not in names:
            raise PlanError(
                f"service {s.name!r} names capacity {s.capacity!r}, which is not among the planned capacities "
                f"({', '.join(sorted(names))}); plan the capacity too"
            )
    counts = {s.name: s.surge_count() if surge else s.tasks for s in svcs}
    results = [
        _plan_capacity(cap, [(s, counts[s.name]) for s in svcs if s.capacity == cap.name], host_lp, count_only)
        for cap in caps
    ]
    placed = dict(counts)
    for c in results:
        for u in c.unplaced:
            placed[u.service] -= u.tasks
    return Plan(capacities=results, services=svcs, placed=placed, counts=counts)
