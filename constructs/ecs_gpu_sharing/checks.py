"""The fleet fit checks: every service on a capacity planned together, turned into errors and warnings.

Pure Python, shared by the CDK constructs (synth errors and acknowledgeable warnings) and the CLI.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .capacity_facts import DEFAULT_GPU_RESERVE_MIB
from .mps import MAX_CLIENTS_PER_GPU
from .planner import CapacityInput, Plan, ServiceInput, plan, task_problems

SURGE_WARNING = "ecs-gpu-sharing:SurgeDoesNotFit"
CLIENT_LIMIT_WARNING = "ecs-gpu-sharing:MpsClientLimit"
RESERVE_MARGIN_WARNING = "ecs-gpu-sharing:GpuWithinReserveMargin"


@dataclass(frozen=True)
class Finding:
    """One check's verdict about a service or a capacity."""

    error: bool
    kind: str  # "service" or "capacity"
    subject: str
    message: str
    rule_id: str = ""  # warnings only: the id that acknowledges it

    def __str__(self) -> str:
        level = "error" if self.error else f"warning [{self.rule_id}]"
        return f"{level}: {self.kind} {self.subject}: {self.message}"


@dataclass(frozen=True)
class Assessment:
    steady: Plan
    surge: Plan
    findings: tuple[Finding, ...]
    max_instances: dict[str, int]  # given, or derived so the surge fits

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.error]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if not f.error]

    def about(self, kind: str, subject: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind and f.subject == subject]


def assess(capacities: Iterable[CapacityInput], services: Iterable[ServiceInput]) -> Assessment:
    caps = {c.name: c for c in capacities}
    svcs = list(services)
    steady = plan(caps.values(), svcs)
    # The surge is planned without the bound: the answer says how many instances a deployment needs.
    surge = plan([replace(c, max_instances=None) for c in caps.values()], svcs, surge=True)
    findings: list[Finding] = []

    for s in sorted(svcs, key=lambda s: s.name):
        cap = caps[s.capacity]
        for problem in task_problems(s, cap):
            findings.append(Finding(True, "service", s.name, f"{problem.what}; {problem.fix}"))
        smallest = min(s.container_memory_mib, default=0)
        if smallest and cap.usable_gpu_memory_mib // smallest > MAX_CLIENTS_PER_GPU:
            floor = math.ceil(cap.usable_gpu_memory_mib / MAX_CLIENTS_PER_GPU)
            findings.append(
                Finding(
                    False,
                    "service",
                    s.name,
                    f"containers of {smallest} MiB let ECS, which places by memory only, put "
                    f"{cap.usable_gpu_memory_mib // smallest} of them on one {cap.usable_gpu_memory_mib} MiB GPU, "
                    f"more than the {MAX_CLIENTS_PER_GPU} clients NVIDIA MPS accepts (the next CUDA context fails); "
                    f"give each container at least {floor} MiB",
                    CLIENT_LIMIT_WARNING,
                )
            )

    max_instances: dict[str, int] = {}
    for name, cap in sorted(caps.items()):
        steady_cap, surge_cap = steady.capacity(name), surge.capacity(name)
        on_cap = [s for s in svcs if s.capacity == name]
        surge_need = len(surge_cap.instances)
        max_instances[name] = (
            cap.max_instances if cap.max_instances is not None else max(surge_need, cap.min_instances, 1)
        )
        bound_unplaced = [u for u in steady_cap.unplaced if u.reason.startswith("no room")]
        if bound_unplaced:
            counts = ", ".join(f"{s.name} {s.desired_count}" for s in on_cap)
            findings.append(
                Finding(
                    True,
                    "capacity",
                    name,
                    f"the desired counts ({counts}) need {steady_cap.instances_needed} instances of "
                    f"{cap.instance_type}, more than max_instances {cap.max_instances} "
                    f"({len(bound_unplaced)} task{'' if len(bound_unplaced) == 1 else 's'} left unplaced); "
                    "raise max_instances to at least "
                    f"{steady_cap.instances_needed}, or lower desired counts",
                )
            )
        elif cap.max_instances is not None and surge_need > cap.max_instances:
            findings.append(
                Finding(
                    False,
                    "capacity",
                    name,
                    "a rolling deployment's surge (desired x maximum percent / 100: "
                    + ", ".join(f"{s.name} {s.surge_count()}" for s in on_cap)
                    + f") needs {surge_need} instances of {cap.instance_type}, more than max_instances "
                    f"{cap.max_instances}: deployments will wait for capacity; raise max_instances to "
                    f"{surge_need}, or lower the services' maximum percent",
                    SURGE_WARNING,
                )
            )
        if cap.gpu_reserve_mib < DEFAULT_GPU_RESERVE_MIB:
            margin_line = cap.gpu_memory_mib - DEFAULT_GPU_RESERVE_MIB
            fullest = max((g.used_memory_mib for h in steady_cap.instances for g in h.gpus if not g.whole), default=0)
            if fullest > margin_line:
                findings.append(
                    Finding(
                        False,
                        "capacity",
                        name,
                        f"a GPU is planned with {fullest} MiB, inside the {DEFAULT_GPU_RESERVE_MIB} MiB margin "
                        f"below EC2's {cap.gpu_memory_mib} MiB (gpu_reserve_mib is {cap.gpu_reserve_mib}); ECS "
                        "counts less than EC2 reports and the MPS server needs memory too, so tasks may not be "
                        f"placed as planned: raise gpu_reserve_mib to {DEFAULT_GPU_RESERVE_MIB}, or measure the "
                        "GPU's real figure first",
                        RESERVE_MARGIN_WARNING,
                    )
                )
    return Assessment(steady=steady, surge=surge, findings=tuple(findings), max_instances=max_instances)
