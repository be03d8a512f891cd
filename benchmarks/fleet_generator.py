"""Random realistic fleets for the planner's benchmark: one per (seed, size), so no fixed regime can be tuned for.

Each fleet draws, from its seed:

- a host: 1, 4 or 8 GPUs (L4, L40S or H100; small or large hosts of each count), one capacity;
- a mix of budgets: each service is an embedder (1-15% of a GPU's usable memory), a mid-size model (15-45%) or an LLM
  (45-97%), by weights drawn per fleet; a share of the services (0-60%, per fleet) carries one or two GPU sidecars of
  256-2,048 MiB beside its model, and a few (0-10%) hold whole GPUs;
- the binding resource: GPU memory, host CPU, host memory, or each service its own. A task's CPU and memory are its GPU
  share of the host times a factor, 1.1-2.5 for the resource meant to bind and 0.15-0.8 for the others, so the
  resource chosen runs out first (mostly: FFD's and the planner's packings decide the rest);
- the services: 1,000 tasks in 10-60 services, 10,000 in 50-200, 100,000 in 100-200, under 100 in 1-6 (other sizes:
  a task per 20-100),
  counts log-uniform (a few large services, many small), every service at least one task.

Seeds 0-99 are the tuning seeds, 1,000-1,099 are held out: the planner's figures are reported on the held-out ones.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass

from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.plan_inputs import capacity_input, service_input
from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput
from ecs_gpu_sharing.core.quotas import INSTANCES_PER_CLUSTER, TASKS_PER_SERVICE
from ecs_gpu_sharing.core.shape import TaskShape

HOSTS = {
    1: ("g6.2xlarge", "g6e.2xlarge", "g6.16xlarge"),
    4: ("g6.12xlarge", "g6e.12xlarge", "g6e.24xlarge"),
    8: ("g6.48xlarge", "g6e.48xlarge", "p5.48xlarge"),
}
BINDING = ("gpu", "cpu", "memory", "each")
FAMILIES = {"embedder": (0.01, 0.15), "mid": (0.15, 0.45), "llm": (0.45, 0.97)}
TUNING = range(0, 100)
HELD_OUT = range(1000, 1100)


@dataclass(frozen=True)
class Fleet:
    seed: int
    tasks: int
    capacity: CapacityInput
    services: list[ServiceInput]
    binding: str
    sidecar_share: float

    @property
    def label(self) -> str:
        return f"seed {self.seed}: {self.capacity.instance_type}, {len(self.services)} services, {self.binding} binds"


def _service_count(tasks: int, rng: random.Random) -> int:
    if tasks < 100:  # a small fleet: a few services
        return rng.randint(1, min(6, tasks))
    if tasks == 1000:
        return rng.randint(10, 60)
    if tasks == 10_000:
        return rng.randint(50, 200)
    if tasks == 100_000:
        return rng.randint(100, 200)
    return max(1, min(tasks, tasks // rng.randint(20, 100)))


def _counts(tasks: int, services: int, rng: random.Random) -> list[int]:
    """``services`` counts of at least one that add up to ``tasks``, log-uniform weights."""
    weights = [math.exp(rng.uniform(0, math.log(200))) for _ in range(services)]
    spare = tasks - services
    counts = [1 + int(spare * w / sum(weights)) for w in weights]
    for i in range(tasks - sum(counts)):
        counts[i % services] += 1
    return counts


def _factor(rng: random.Random, binds: bool) -> float:
    return rng.uniform(1.1, 2.5) if binds else rng.uniform(0.15, 0.8)


def generate(seed: int, tasks: int, host: str | None = None) -> Fleet:
    """The fleet of ``seed`` and ``tasks``; ``host``: on that instance type, whatever the seed draws (the other draws
    are the seed's)."""
    rng = random.Random(seed * 1_000_003 + tasks)
    gpus = rng.choice(sorted(HOSTS))
    drawn = rng.choice(HOSTS[gpus])
    facts = host_facts([host or drawn])
    gpus = facts.gpus_per_instance if host else gpus
    cap = capacity_input("gpu", facts)
    binding = rng.choice(BINDING)
    mix = [rng.random() ** 2 for _ in FAMILIES]
    sidecar_share = rng.uniform(0, 0.6)
    whole_share = rng.choice([0.0, 0.0, rng.uniform(0, 0.1)])
    usable = cap.usable_gpu_memory_mib
    services = []
    for i, count in enumerate(_counts(tasks, _service_count(tasks, rng), rng)):
        family = rng.choices(list(FAMILIES), weights=mix)[0]
        low, high = FAMILIES[family]
        budget = max(256, int(usable * rng.uniform(low, high)) // 256 * 256)
        whole = 1 if rng.random() < whole_share else 0
        containers: tuple[int, ...] = ()
        if not whole:
            sidecars = (
                [rng.randint(1, 8) * 256 for _ in range(rng.randint(1, 2))] if rng.random() < sidecar_share else []
            )
            model = max(256, budget - sum(sidecars))
            containers = (model, *sidecars)
        share = (sum(containers) / usable if containers else 1.0) / gpus  # of the host's GPU memory
        heavy = rng.choice(("gpu", "cpu", "memory")) if binding == "each" else binding
        cpu = share * cap.host_cpu_units * _factor(rng, heavy == "cpu")
        memory = share * cap.host_memory_mib * _factor(rng, heavy == "memory")
        shape = TaskShape(
            min(cap.host_cpu_units, max(128, round(cpu / 128) * 128)),
            min(cap.host_memory_mib, max(256, round(memory / 128) * 128)),
            containers,
            whole_gpus=whole,
        )
        services.append(service_input(f"s{i:04d}", cap.name, shape, count, count_source="generator"))
    return Fleet(seed, tasks, cap, services, binding, sidecar_share)


def copies(fleet: Fleet, k: int) -> Fleet:
    """``fleet`` with each service run as ``k`` alike services (fewer where it has fewer tasks), its tasks shared out:
    a team running one model as a service a tenant or a region."""
    if k <= 1:
        return fleet
    services = [
        dataclasses.replace(s, name=f"{s.name}-{j}", tasks=s.tasks // parts + (j < s.tasks % parts))
        for s in fleet.services
        for parts in [min(k, s.tasks)]
        for j in range(parts)
    ]
    return dataclasses.replace(fleet, services=services)


def regrained(fleet: Fleet, step: int) -> Fleet:
    """``fleet`` with its MPS budgets off the generator's 256 MiB grid; ``step`` 0 is the fleet as drawn. At 64, each
    budget moved by a multiple of 64 MiB, up to 192 MiB either way (``evaluate --write`` rounds what it suggests up to
    64 MiB); at any other step, each rounded to a multiple of it (a team's round numbers: 500). A task whose budgets
    would then pass one GPU's usable memory keeps its own. Seeded by the fleet's seed."""
    if not step:
        return fleet
    rng = random.Random(fleet.seed * 7919 + step)
    usable = fleet.capacity.usable_gpu_memory_mib
    services = []
    for s in fleet.services:
        budgets = s.shape.gpu_budgets_mib
        if step == 64:
            moved = tuple(max(64, b + 64 * rng.randint(-3, 3)) for b in budgets)
        else:
            moved = tuple(max(step, round(b / step) * step) for b in budgets)
        if budgets and sum(moved) <= usable:
            s = dataclasses.replace(s, shape=dataclasses.replace(s.shape, gpu_budgets_mib=moved))
        services.append(s)
    return dataclasses.replace(fleet, services=services)


def fleet_file(
    fleet: Fleet,
    scale: float = 1.0,
    max_instances: int = INSTANCES_PER_CLUSTER.number,
    capacity: str = "gpu",
    prefix: str = "",
    named: bool = True,
) -> str:
    """``fleet`` as a fleet file for the ``plan`` command: each service split into services of at most 5,000 tasks
    (ECS's tasks per service), a whole-GPU task as an MPS budget of the GPU's usable memory (a fleet file has no
    whole-GPU tasks), each task's GPU budgets, CPU and memory times ``scale`` (rounded down to 256 MiB, 128 units and
    128 MiB; a sidecar's 64 MiB of memory taken from its task's model container), and ``max_instances`` given (a
    deployment's surge past it is a warning, not an error). A service's isolation group, and whether it keeps its hosts,
    are written in its allocation table, with its note's other answers (``shaped_fleets.py iso``); its network
    interfaces are not (the file's services run in bridge mode); a service asking for no GPU is refused (ValueError):
    every service of a fleet file has a GPU budget. ``capacity``: the capacity's name; ``prefix``: before
    each service's name (fleets written one after another as one file of several capacities, ``named`` on the first
    only)."""
    cap = fleet.capacity
    lines = ['name = "generated"'] if named else []
    lines += [f"[capacity.{capacity}]", f'instance_types = ["{cap.instance_type}"]', f"max_instances = {max_instances}"]
    for s in fleet.services:
        shape = s.shape
        if not shape.uses_gpu:
            raise ValueError(
                f"service {s.name} asks for no GPU, which a fleet file cannot say (every service needs a "
                "gpu_budget_mib): plan this fleet in process (shaped_fleets.py FAMILY SEEDS SIZE), not with --command"
            )
        budgets = shape.gpu_budgets_mib or (cap.usable_gpu_memory_mib,)
        budgets = tuple(max(256, int(b * scale) // 256 * 256) for b in budgets)
        note = s.allocation if s.allocation is not None and s.isolation_group else None
        left, part = s.tasks, 0
        while left > 0:
            count = min(left, TASKS_PER_SERVICE.number)
            name = f"{prefix}{s.name}p{part}"
            lines += [
                f"[service.{name}]",
                f'capacity = "{capacity}"',
                'image = "my-registry/model:1.0"',
                f"desired_count = {count}",
                f"cpu_units = {max(128, int(shape.cpu_units * scale) // 128 * 128)}",
                f"memory_mib = {max(256, int(shape.memory_mib * scale) // 128 * 128 - 64 * (len(budgets) - 1))}",
                f"gpu_budget_mib = {budgets[0]}",
            ]
            if note is not None:
                lines += [
                    f"[service.{name}.allocation]",
                    f"residency_mib = {note.residency_mib}",
                    f"peak_working_mib = {note.peak_working_mib}",
                    f'shared_failure = "{note.shared_failure}"',
                    f'isolation_group = "{note.isolation_group}"',
                    f"isolate_host = {'true' if note.isolate_host else 'false'}",
                ]
            for k, budget in enumerate(budgets[1:]):
                lines += [
                    f"[[service.{name}.sidecar]]",
                    f'name = "sidecar{k}"',
                    'image = "my-registry/sidecar:1.0"',
                    "cpu_units = 0",
                    "memory_mib = 64",
                    f"gpu_budget_mib = {budget}",
                ]
            left, part = left - count, part + 1
    return "\n".join(lines) + "\n"


def fitting_fleet_file(fleet: Fleet) -> tuple[str, float]:
    """``fleet`` as a fleet file (``fleet_file``) that the ``plan`` command accepts, and its scale: the tasks halved in
    size until the command says they fit (a fleet of 100,000 tasks on hosts of eight GPUs can need more than ECS's
    5,000 instances a cluster at full size). The command runs in a subprocess, as a team runs it."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    scale = 1.0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.toml"
        while True:
            text = fleet_file(fleet, scale)
            path.write_text(text)
            command = [sys.executable, "-m", "ecs_gpu_sharing.cli", "plan", str(path)]
            if subprocess.run(command, capture_output=True).returncode == 0:
                return text, scale
            scale /= 2
