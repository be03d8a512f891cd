"""One replay of ECS's placement over a capacity: the steady fleet placed task by task, then fleet-wide rollouts, under
one GPU rule and one arrival order. Pure Python. The model, its sources and where AWS is silent: ``placement``'s
docstring and docs/placement.md; this module is what ``placement`` runs for each replay.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .mps import MAX_CLIENTS_PER_GPU
from .placement_strategies import (
    BINPACK_CPU,
    BINPACK_MEMORY,
    ECS_DEFAULT_STRATEGY,
    LIBRARY_STRATEGY,
    RANDOM,
    SPREAD_INSTANCE,
    SPREAD_ZONE,
    host_key,
    host_keys,
)

if TYPE_CHECKING:  # the planner's inputs carry the strategies, so the planner imports placement, which imports this
    from .planner import CapacityInput, ServiceInput

GPU_RULES = ("first-fit", "best-fit", "worst-fit")  # docs/placement.md measures the figures that follow
ORDERS = ("smallest-first", "host-memory-first", "shuffled", "interleaved")  # of whole services, but the last
ROLLOUTS = 4  # fleet-wide rollouts a replay runs one after another: each starts from the hosts the last one left
_ELSEWHERE = 1 << 62  # a host's figure in another zone's column of ``_Replay.columns``: above any host's
_MEMORY, _CPU, _TASKS = 0, 1, 2  # the figures a strategy orders hosts by, after the zones: a host's, or its tasks
# The strategies ``_Replay._column`` finds a host for: whether they spread over zones first, and the figure after.
_COLUMNED = {
    LIBRARY_STRATEGY: (True, _MEMORY),
    (BINPACK_MEMORY,): (False, _MEMORY),
    (SPREAD_ZONE, BINPACK_CPU): (True, _CPU),
    (BINPACK_CPU,): (False, _CPU),
    ECS_DEFAULT_STRATEGY: (True, _TASKS),
    (SPREAD_INSTANCE,): (False, _TASKS),
}


@dataclass(eq=False, slots=True)
class _Host:
    zone: int
    cpu: int
    mem: int
    eni: int
    room: list[int]  # per GPU: MPS memory left (0 when held whole)
    clients: list[int]
    idle: list[bool]  # per GPU: holds nothing (a whole-GPU task needs idle GPUs)
    count: dict[str, int] = field(default_factory=dict)  # tasks by service
    groups: dict[str, int] = field(default_factory=dict)  # tasks by isolation group
    tasks: int = 0
    largest_room: int = 0  # the most MPS memory left on one GPU
    served_room: int = -1  # the most MPS memory left on a GPU with an MPS client left; -1: not known since a change
    opened: bool = True  # in the replay's open hosts (a flag, where a scan of them cost most of a stop at 3,000 tasks)


@dataclass(frozen=True)
class _Need:
    """What one task of a service takes, and its strategies, read once (the properties of ServiceInput are computed)."""

    cpu: int
    mem: int
    eni: int
    size: int  # its MPS budget on one GPU (0: none)
    clients: int
    whole: int
    apart: bool
    group: str
    strategy: tuple[str, ...]  # ECS's default where the service sets none
    cut: int  # where a random strategy starts (their length if none)

    @staticmethod
    def of(s: ServiceInput) -> _Need:
        mps = bool(s.clients) and not s.whole_gpus
        strategy = s.placement or ECS_DEFAULT_STRATEGY
        return _Need(
            s.cpu_units,
            s.memory_mib,
            s.network_interfaces,
            s.task_gpu_budget_mib if mps else 0,
            s.clients if mps else 0,
            s.whole_gpus,
            s.kept_apart,
            s.isolation_group,
            strategy,
            strategy.index(RANDOM) if RANDOM in strategy else len(strategy),
        )


@dataclass(frozen=True)
class Outcome:
    """One replay: the most instances it ran at once, tasks left waiting at the limit, instances kept after."""

    peak: int
    waiting: int  # the most tasks waiting at once at the limit: those the steady placement left, and a wave's
    after: int  # instances running once the rollout is over and empty ones are scaled in


class _Replay:
    def __init__(
        self, cap: CapacityInput, services: Sequence[ServiceInput], gpu_rule: str, rng: random.Random, limit: int
    ) -> None:
        self.cap, self.rule, self.rng, self.limit = cap, gpu_rule, rng, limit
        self.hosts: list[_Host] = []
        self.zone_hosts = [0] * cap.zones  # hosts launched in each zone
        self.open: list[_Host] = []  # hosts that may still take the smallest task
        self.rough: list[_Host] = []  # those of them that pass place's rough filter for the figures rough_for
        self.rough_for: tuple[int, int, int, int] | None = None  # CPU, memory, interfaces, GPU budget
        # The rough hosts' figures, kept beside them from their second use (_column): by the figure (their memory,
        # their CPU, or a service's tasks on each, by its name), a column a zone (other zones' hosts above any
        # figure) and one of all; and the rough hosts in each zone. A strategy of zones and a figure finds its host in
        # a column, not in a key a host (most of a replay's time at 1,000-3,000 tasks).
        self.columns: dict[int | str, list[list[int]]] = {}
        self.in_zone: list[int] = []
        self.reused = False  # rough served a task before this one
        self.live: dict[str, deque[tuple[_Host, tuple[int, ...]]]] = {s.name: deque() for s in services}  # host, GPUs
        self.needs = {s.name: _Need.of(s) for s in services}
        # What _take keeps only where a check reads it: tasks by service (a spread over instances), by group (apart).
        self.counted = any(SPREAD_INSTANCE in need.strategy for need in self.needs.values())
        self.grouped = any(need.apart for need in self.needs.values())
        self.peak = 0
        mps = [s for s in services if s.clients and not s.whole_gpus]
        self.smallest = (
            min((s.cpu_units for s in services), default=0),
            min((s.memory_mib for s in services), default=0),
            min((s.network_interfaces for s in services), default=0),
            min((s.task_gpu_budget_mib for s in mps), default=0) if len(mps) == len(services) else 0,
        )
        self.zone_tasks: dict[str, list[int]] = {s.name: [0] * cap.zones for s in services}
        for _ in range(cap.min_instances):
            self._launch()

    def _launch(self) -> _Host:
        counts = self.zone_hosts
        g = self.cap.gpus_per_instance
        host = _Host(
            zone=counts.index(min(counts)),
            cpu=self.cap.host_cpu_units,
            mem=self.cap.host_memory_mib,
            eni=self.cap.task_network_interfaces or 1 << 30,
            room=[self.cap.usable_gpu_memory_mib] * g,
            clients=[MAX_CLIENTS_PER_GPU] * g,
            idle=[True] * g,
            largest_room=self.cap.usable_gpu_memory_mib if g else 0,
        )
        self.hosts.append(host)
        counts[host.zone] += 1
        self.open.append(host)
        self.peak = max(self.peak, len(self.hosts))
        return host

    def _gpus(self, host: _Host, need: _Need) -> tuple[int, ...] | None:
        """The GPUs ECS gives one task on ``host`` under this replay's rule; ``None`` when none has room."""
        if need.whole:
            idle = [i for i, free in enumerate(host.idle) if free]
            return tuple(idle[: need.whole]) if len(idle) >= need.whole else None
        if not need.clients:
            return ()
        size, clients, room, left = need.size, need.clients, host.room, host.clients
        if self.rule == "first-fit":
            for i, free in enumerate(room):
                if free >= size and left[i] >= clients:
                    return (i,)
            return None
        if self.rule not in GPU_RULES:
            raise ValueError(f"unknown GPU rule {self.rule!r}")
        # Worst-fit: the first roomiest GPU, where it has the clients (it has the memory, or none has).
        if self.rule == "worst-fit":
            roomiest = room.index(host.largest_room)
            if left[roomiest] >= clients:
                return (roomiest,) if room[roomiest] >= size else None
        least = self.rule == "best-fit"  # the least room that fits, else the most; ties to the first GPU
        pick = -1
        for i, free in enumerate(room):
            if (
                free >= size
                and left[i] >= clients
                and (pick < 0 or (free < room[pick] if least else free > room[pick]))
            ):
                pick = i
        return (pick,) if pick >= 0 else None

    def _fits(self, host: _Host, need: _Need) -> bool:
        if host.cpu < need.cpu or host.mem < need.mem or host.eni < need.eni or host.largest_room < need.size:
            return False
        if need.apart and any(g != need.group for g, n in host.groups.items() if n):
            return False  # its memberOf expression keeps it off hosts of other isolation groups
        if need.whole:
            return sum(host.idle) >= need.whole
        if need.clients:  # the roomiest GPU has the memory (above); most often it has the clients too
            if host.clients[host.room.index(host.largest_room)] >= need.clients:
                return True
            # Where clients run out before memory (many small tasks), a host whose GPUs are all out of clients fails
            # every task until one stops: the roomiest GPU with a client left, kept until the host changes, rules it
            # out without reading its GPUs each time (on 100,000-task fleets most checks of a replay ended so).
            if host.served_room < 0:
                host.served_room = max((r for r, c in zip(host.room, host.clients, strict=True) if c), default=0)
            if host.served_room < need.size:
                return False
            return any(r >= need.size and c >= need.clients for r, c in zip(host.room, host.clients, strict=True))
        return True

    def _choose(self, rough: list[_Host], s: ServiceInput, need: _Need) -> _Host | None:
        """The host the strategies pick among those that fit, or ``None``. Each strategy breaks the previous one's ties,
        so the pick is the least of a key per host, in the strategies' order; hosts are checked in that order, and
        the full check runs only until the least key that fits is known. ECS's own ties go to the replay's seed."""
        strategy, cut = need.strategy, need.cut
        per_zone = self.zone_tasks[s.name]
        if cut < len(strategy):  # random from here on: among every host that fits, at the least key
            if need.apart or need.whole:
                fitting = [h for h in rough if self._fits(h, need)]
            elif need.clients:  # _fits's first answer, where its roomiest GPU has the clients, without a call
                c = need.clients
                fitting = [h for h in rough if h.clients[h.room.index(h.largest_room)] >= c or self._fits(h, need)]
            else:  # a task without a GPU fits every host the rough filter passed
                fitting = list(rough)
            if not fitting:
                return None
            if not cut:  # every key is the same
                return self.rng.choice(fitting)
            key = host_key(strategy[:cut], s.name, per_zone)
            low = min(key(h) for h in fitting)
            return self.rng.choice([h for h in fitting if key(h) == low])
        # Ties go to the first fitting host from a seeded starting point. The least usually fits (the rough filter
        # checked all but the GPUs and the isolation group), so the full sort runs only when it does not.
        n = len(rough)
        if n < 2:
            return rough[0] if n and self._fits(rough[0], need) else None
        start = self.rng.randrange(n)
        column = self._column(strategy, per_zone, rough, s.name) if self.reused else None
        keys: list[Any] = host_keys(strategy, s.name, per_zone, rough) if column is None else column
        least = min(keys)
        try:  # the least key's first host from the starting point on, else from the first
            first = rough[keys.index(least, start)]
        except ValueError:
            first = rough[keys.index(least)]
        if self._fits(first, need):
            return first
        if column is not None:  # a column orders as the keys only at its least
            keys = host_keys(strategy, s.name, per_zone, rough)
        ranked = [(k, (i - start) % n) for i, k in enumerate(keys)]
        for _, at in sorted(ranked):
            h = rough[(at + start) % n]
            if self._fits(h, need):
                return h
        return None

    def _column(
        self, strategy: tuple[str, ...], per_zone: list[int], rough: list[_Host], name: str
    ) -> list[int] | None:
        """The column whose least value is where the strategy's least keys are, in the same places (its zone of fewest
        tasks, or every zone where they tie, or every zone for a strategy without them); ``None`` for a strategy
        without columns, or where some zones tie and not all."""
        if strategy not in _COLUMNED:
            return None
        zoned, figure = _COLUMNED[strategy]
        key = name if figure == _TASKS else figure
        columns = self.columns.get(key)
        if columns is None:
            if figure == _TASKS:  # one service's tasks kept at a time: each kept is mended at every task
                for other in [k for k in self.columns if isinstance(k, str)]:
                    del self.columns[other]
            columns = self._columns(key, rough)
        if not zoned:
            return columns[-1]
        fewest, tied, present = -1, 0, 0
        for zone, hosts in enumerate(self.in_zone):
            if hosts:
                present += 1
                if fewest < 0 or per_zone[zone] < per_zone[fewest]:
                    fewest, tied = zone, 1
                elif per_zone[zone] == per_zone[fewest]:
                    tied += 1
        if tied == present:
            return columns[-1]
        return columns[fewest] if tied == 1 else None

    def _columns(self, key: int | str, rough: list[_Host]) -> list[list[int]]:
        """The columns of one figure (``_MEMORY``, ``_CPU``, or a service's name for its tasks) of the rough hosts."""
        figures = [_figure(h, key) for h in rough]
        zones = [h.zone for h in rough]
        columns = [
            [f if z == k else _ELSEWHERE for f, z in zip(figures, zones, strict=True)] for k in range(self.cap.zones)
        ]
        columns.append(figures)
        if not self.columns:
            self.in_zone = [zones.count(k) for k in range(self.cap.zones)]
        self.columns[key] = columns
        return columns

    def place(self, s: ServiceInput) -> bool:
        """One task of ``s``, as ECS would place it; a new instance when none has room and the limit allows.

        The open hosts that pass the rough filter (CPU, memory, interfaces, the roomiest GPU) are kept for the figures
        they were read for: until a task stops, the next task of the same figures (of the same service, or of another
        of its shape: a model run as a service a tenant) changes them only by the host it was given (and a host
        launched for it), so they are mended there, not read again (orders of whole services; the interleave reads
        them for each task whose figures differ from the last one's)."""
        name = s.name
        need = self.needs[name]
        cpu, mem, eni, size = need.cpu, need.mem, need.eni, need.size
        if (cpu, mem, eni, size) == self.rough_for:  # the last task's figures: often a service of the same shape
            rough = self.rough
            self.reused = True
        else:
            # The GPU's room first: of the open hosts a task's filter reads, it rules out most (three in four on
            # held-out 1007 at 100,000 tasks on eight L40S a host, where CPU and memory rule out none)
            rough = [
                h
                for h in self.open
                if h.largest_room >= size and h.cpu >= cpu and h.mem >= mem and h.eni >= eni  # no call for most
            ]
            self.rough, self.rough_for, self.columns, self.reused = rough, (cpu, mem, eni, size), {}, False
        host = self._choose(rough, s, need)
        if host is None:
            if len(self.hosts) >= self.limit:
                return False
            host = self._launch()
            if host.cpu >= cpu and host.mem >= mem and host.eni >= eni and host.largest_room >= size:
                rough.append(host)  # last in self.open, so last here too
                if self.columns:
                    for key, columns in self.columns.items():
                        figure = _figure(host, key)
                        for zone, column in enumerate(columns):
                            column.append(figure if zone in (host.zone, self.cap.zones) else _ELSEWHERE)
                    self.in_zone[host.zone] += 1
            if not self._fits(host, need):
                return False  # larger than a host: the plan's task rules report it
        gpus = self._gpus(host, need)
        assert gpus is not None
        self._take(host, name, need, gpus)
        self.live[name].append((host, gpus))
        low_cpu, low_mem, low_eni, low_budget = self.smallest  # below the smallest task: closed
        if host.cpu < low_cpu or host.mem < low_mem or host.eni < low_eni or host.largest_room < low_budget:
            self.open.remove(host)
            host.opened = False
        # A host closed is below the smallest task in some figure, so below this one's: the filter drops it too.
        dropped = not (host.cpu >= cpu and host.mem >= mem and host.eni >= eni and host.largest_room >= size)
        if not self.columns:
            if dropped:
                rough.remove(host)
            return True
        at = rough.index(host)
        if dropped:
            del rough[at]
            for columns in self.columns.values():
                for column in columns:
                    del column[at]
            self.in_zone[host.zone] -= 1
            return True
        for key, columns in self.columns.items():  # the host's figures, and this service's tasks on it
            if key in (_MEMORY, _CPU, name):
                columns[host.zone][at] = columns[-1][at] = _figure(host, key)
        return True

    def _take(self, host: _Host, name: str, need: _Need, gpus: tuple[int, ...]) -> None:
        """One task of service ``name`` taken on ``host`` and its ``gpus`` (``stop`` gives one back)."""
        host.cpu -= need.cpu
        host.mem -= need.mem
        host.eni -= need.eni
        if self.counted:
            host.count[name] = host.count.get(name, 0) + 1
        if self.grouped:
            host.groups[need.group] = host.groups.get(need.group, 0) + 1
        host.tasks += 1
        host.served_room = -1
        self.zone_tasks[name][host.zone] += 1
        if not gpus:
            return
        room = host.room
        if need.whole:
            for i in gpus:
                host.idle[i] = False
                room[i] = 0
            host.largest_room = max(room)
            return
        # The most room on a GPU, kept without reading every GPU: a task taken lowers it only where its GPU had it.
        (i,) = gpus  # an MPS task's one GPU
        lost = room[i] == host.largest_room
        room[i] -= need.size
        host.clients[i] -= need.clients
        host.idle[i] = room[i] == self.cap.usable_gpu_memory_mib
        if lost:
            host.largest_room = max(room)

    def stop(self, s: ServiceInput, newest: bool = False) -> None:
        """Stops the oldest task of ``s`` (a rollout replaces the oldest first), or its newest."""
        name = s.name
        host, gpus = self.live[name].pop() if newest else self.live[name].popleft()
        self.rough_for = None  # a host gains room: the kept rough filter no longer holds
        need = self.needs[name]
        host.cpu += need.cpu
        host.mem += need.mem
        host.eni += need.eni
        if self.counted:
            host.count[name] -= 1
        if self.grouped:
            host.groups[need.group] -= 1
        host.tasks -= 1
        host.served_room = -1
        self.zone_tasks[name][host.zone] -= 1
        if gpus:
            room, usable = host.room, self.cap.usable_gpu_memory_mib
            if need.whole:
                for i in gpus:
                    host.idle[i] = True
                    room[i] = usable
                host.largest_room = max(room)
            else:  # a task stopped raises the most room on a GPU at most to its GPU's room
                (i,) = gpus
                room[i] += need.size
                host.clients[i] += need.clients
                host.idle[i] = room[i] == usable
                if room[i] > host.largest_room:
                    host.largest_room = room[i]
        if not host.opened:
            self.open.append(host)
            host.opened = True

    def remove_empty(self) -> None:
        """Cluster auto scaling's scale-in after a rollout: instances running no task go, down to min_instances."""
        for host in [h for h in self.hosts if not h.tasks][: max(len(self.hosts) - self.cap.min_instances, 0)]:
            self.hosts.remove(host)
            self.zone_hosts[host.zone] -= 1
            if host.opened:
                self.open.remove(host)
        self.rough_for = None


def _figure(host: _Host, key: int | str) -> int:
    """A host's figure in ``_Replay.columns``: its memory, its CPU, or the tasks on it of the service named."""
    return host.mem if key == _MEMORY else host.cpu if key == _CPU else host.count.get(str(key), 0)


def _arrivals(requests: list[tuple[ServiceInput, int]], order: str, rng: random.Random) -> list[ServiceInput]:
    """The order tasks ask to be placed (``ORDERS``)."""
    ranked = list(requests)
    if order == "smallest-first":
        ranked.sort(key=lambda r: (r[0].task_gpu_budget_mib, r[0].memory_mib, r[0].cpu_units, r[0].name))
    elif order == "host-memory-first":
        ranked.sort(key=lambda r: (r[0].memory_mib, r[0].cpu_units, r[0].task_gpu_budget_mib, r[0].name))
    else:
        rng.shuffle(ranked)
    tasks = [s for s, n in ranked for _ in range(n)]
    if order == "interleaved":
        rng.shuffle(tasks)
    return tasks


def replay(
    cap: CapacityInput, services: Sequence[ServiceInput], gpu_rule: str, order: str, limit: int, sample: int = 0
) -> Outcome:
    """The steady fleet placed, then ROLLOUTS fleet-wide rolling deployments (every service at once, in waves of its
    maximum percent), empty instances scaled in after each, under one GPU rule and one arrival order, its ties and
    shuffles seeded from the order and ``sample``. The instances kept are those after the last. Tasks the steady
    placement leaves wait for good; a rollout's wait while its wave lasts, and each wave retries them."""
    rng = random.Random(ORDERS.index(order) + len(ORDERS) * sample)
    run = _Replay(cap, services, gpu_rule, rng, limit)
    unplaced = sum(0 if run.place(s) else 1 for s in _arrivals([(s, s.tasks) for s in services], order, rng))
    most = 0  # tasks of one wave of a rollout left waiting: the most, over the rollouts
    for _ in range(ROLLOUTS):
        most = max(most, _rollout(run, services, order, rng))
        run.remove_empty()
    return Outcome(run.peak, unplaced + most, len(run.hosts))  # the last scale-in left the busy ones (min_instances)


def _rollout(run: _Replay, services: Sequence[ServiceInput], order: str, rng: random.Random) -> int:
    """One fleet-wide rolling deployment: the most new tasks of one wave that found no room at the limit."""
    most = 0
    left = {s.name: len(run.live[s.name]) for s in services}  # old tasks still to replace
    while any(left.values()):
        wave: list[tuple[ServiceInput, int]] = []
        for s in services:
            batch = s.tasks * (s.max_percent - 100) // 100 if s.max_percent > 100 else 0
            wave.append((s, min(max(batch, 1), left[s.name]) if left[s.name] else 0))
        started: dict[str, int] = {}
        waiting = 0
        stop_first = [s for s, n in wave if n and s.max_percent <= 100]
        for s in stop_first:  # a maximum of 100%: ECS stops a task before it starts its replacement
            run.stop(s)
        for s in _arrivals([(s, n) for s, n in wave], order, rng):
            if run.place(s):
                started[s.name] = started.get(s.name, 0) + 1
            else:
                waiting += 1
        for s, _ in wave:
            done = started.get(s.name, 0)
            for _ in range(done if s.max_percent > 100 else 0):
                run.stop(s)
            left[s.name] -= done if s.max_percent > 100 else (1 if s in stop_first else 0)
        most = max(most, waiting)
        if not started:
            break  # no service can move: the rollout is stuck at the limit
    return most


def blocked_services(cap: CapacityInput, services: Sequence[ServiceInput], limit: int) -> list[str]:
    """Services that, deployed alone from the steady fleet at ``limit`` instances, cannot start one new task: with
    minimum healthy 100% nothing then moves (worst over the GPU rules, the adversarial order)."""
    out = set()
    for rule in GPU_RULES if cap.gpus_per_instance > 1 else GPU_RULES[:1]:
        run = _Replay(cap, services, rule, random.Random(0), limit)
        for s in _arrivals([(s, s.tasks) for s in services], ORDERS[0], run.rng):
            run.place(s)
        for s in services:
            if s.max_percent <= 100:
                continue  # it stops a task first: its deployment always moves
            if run.place(s):
                run.stop(s, newest=True)
            else:
                out.add(s.name)
    return sorted(out)
