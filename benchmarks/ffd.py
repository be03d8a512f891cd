"""Plain first-fit decreasing, task by task: the textbook baseline the planner is measured against.

Tasks in decreasing order (whole GPUs, then GPU budget, CPU, memory); each goes to the first GPU, in opening
order, that still has the memory, the MPS clients and the host CPU and memory for it; else to the first idle GPU
of an open host that has the room; else to a new host. A GPU whose host cannot take the smallest task any more
is closed (the usual bookkeeping, so a search never revisits it). A max segment tree over GPU room finds the
first GPU with enough memory in logarithmic time. Returns (instances, GPUs used) for one capacity.
"""

from __future__ import annotations

from collections.abc import Sequence

from ecs_gpu_sharing.core.mps import MAX_CLIENTS_PER_GPU
from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput


class _MaxTree:
    def __init__(self) -> None:
        self.size = 1
        self.tree = [-1, -1]

    def _grow(self) -> None:
        old = self.tree[self.size :]
        self.size *= 2
        self.tree = [-1] * (2 * self.size)
        self.tree[self.size : self.size + len(old)] = old
        for i in range(self.size - 1, 0, -1):
            self.tree[i] = max(self.tree[2 * i], self.tree[2 * i + 1])

    def set(self, index: int, value: int) -> None:
        while index >= self.size:
            self._grow()
        i = index + self.size
        self.tree[i] = value
        i //= 2
        while i:
            self.tree[i] = max(self.tree[2 * i], self.tree[2 * i + 1])
            i //= 2

    def first_at_least(self, value: int, start: int) -> int:
        """The first index >= start whose value is >= value, or -1."""

        def down(node: int, lo: int, hi: int) -> int:
            if hi <= start or self.tree[node] < value:
                return -1
            if node >= self.size:
                return node - self.size
            mid = (lo + hi) // 2
            left = down(2 * node, lo, mid)
            return left if left >= 0 else down(2 * node + 1, mid, hi)

        return down(1, 0, self.size)


def ffd(cap: CapacityInput, services: Sequence[ServiceInput]) -> tuple[int, int]:
    tasks = sorted(
        (s for s in services for _ in range(s.tasks)),
        key=lambda s: (-s.whole_gpus, -s.task_gpu_budget_mib, -s.cpu_units, -s.memory_mib, s.name),
    )
    host_cpu: list[int] = []
    host_mem: list[int] = []
    host_idle: list[list[int]] = []
    gpu_room: list[int] = []
    gpu_clients: list[int] = []
    gpu_host: list[int] = []
    used: set[int] = set()
    tree = _MaxTree()
    with_idle: list[int] = []  # hosts with an idle GPU, in opening order
    min_cpu = min((s.cpu_units for s in tasks), default=0)
    min_mem = min((s.memory_mib for s in tasks), default=0)

    def new_host() -> int:
        h = len(host_cpu)
        host_cpu.append(cap.host_cpu_units)
        host_mem.append(cap.host_memory_mib)
        first = len(gpu_room)
        host_idle.append(list(range(first + cap.gpus_per_instance - 1, first - 1, -1)))
        with_idle.append(h)
        for g in range(first, first + cap.gpus_per_instance):
            gpu_room.append(cap.usable_gpu_memory_mib)
            gpu_clients.append(0)
            gpu_host.append(h)
            tree.set(g, -1)  # idle GPUs are opened explicitly, not by first fit
        return h

    # Tasks of one service come one after another, and what a GPU or host has left only shrinks, so a GPU or host
    # passed over for a task is passed over for the rest of its service: each scan resumes where the last one stopped.
    scan = {"gpu": 0, "host": 0}

    def host_with_idle(count: int, cpu: int, mem: int) -> int:
        at = scan["host"]
        while at < len(with_idle):
            h = with_idle[at]
            if len(host_idle[h]) >= count and host_cpu[h] >= cpu and host_mem[h] >= mem:
                scan["host"] = at
                return h
            at += 1
        scan["host"] = len(with_idle)
        return new_host()

    current = None
    for s in tasks:
        if s.name != current:
            current = s.name
            scan["gpu"] = scan["host"] = 0
        cpu, mem = s.cpu_units, s.memory_mib
        if s.whole_gpus:
            h = host_with_idle(s.whole_gpus, cpu, mem)
            for _ in range(s.whole_gpus):
                used.add(host_idle[h].pop())
        elif s.clients:
            size, clients = s.task_gpu_budget_mib, s.clients
            g = tree.first_at_least(size, scan["gpu"])
            while g >= 0:
                h = gpu_host[g]
                if gpu_clients[g] + clients <= MAX_CLIENTS_PER_GPU and host_cpu[h] >= cpu and host_mem[h] >= mem:
                    break
                if host_cpu[h] < min_cpu or host_mem[h] < min_mem:
                    tree.set(g, -1)
                g = tree.first_at_least(size, g + 1)
            scan["gpu"] = max(g, 0) if g >= 0 else scan["gpu"]
            if g < 0:
                h = host_with_idle(1, cpu, mem)
                g = host_idle[h].pop()
                scan["gpu"] = min(scan["gpu"], g)  # an idle GPU opened below the scan's place
            h = gpu_host[g]
            used.add(g)
            gpu_room[g] -= size
            gpu_clients[g] += clients
            tree.set(g, gpu_room[g] if gpu_clients[g] < MAX_CLIENTS_PER_GPU else -1)
        else:
            h = next((i for i in range(len(host_cpu)) if host_cpu[i] >= cpu and host_mem[i] >= mem), -1)
            if h < 0:
                h = new_host()
        host_cpu[h] -= cpu
        host_mem[h] -= mem
    return len(host_cpu), len(used)
