"""``fleet quotas`` and ``stacks quotas``: before deploy, whether the account's On-Demand vCPU quotas hold the fleet's
hosts at their most.

EC2 counts running On-Demand instances in vCPUs per instance class and region ("Running On-Demand G and VT instances",
"Running On-Demand P instances"), and many accounts start with 0 of either: the Auto Scaling group then retries its
launches quietly (VcpuLimitExceeded) and the services' tasks wait in PROVISIONING, while every stack deploys. The fleet
needs, per class, each capacity's ``max_instances`` (given, or as the plan derives it) times the vCPUs of its largest
instance type. Quota codes: Service Quotas, EC2 (L-DB2E81BA G and VT, L-417A185B P).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import catalog, plan_inputs
from ..core.fleet import FleetSpec
from ..core.rules import assess
from ..core.service_rules.base import Templates, construct_path, literal_number
from ..core.written_fit import group_types
from .assembly import assembly_stacks, with_nested_stacks
from .aws import Clients, aws_errors


@dataclass(frozen=True)
class Quota:
    code: str
    name: str


ON_DEMAND: Mapping[str, Quota] = {
    "g": Quota("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "p": Quota("L-417A185B", "Running On-Demand P instances"),
}
"""The On-Demand vCPU quota an instance family draws on, by the family's first letter (every usable GPU family of the
catalog starts with g or p)."""


@dataclass(frozen=True)
class QuotaCheck:
    quota: Quota
    needed_vcpus: int  # the fleet's hosts at their most
    quota_vcpus: float  # the account's applied quota in the region
    capacities: tuple[str, ...]
    whose: str = "the fleet needs"  # what needs them: the fleet file, or a cloud assembly's groups
    lower: str = "max_instances"  # what to lower instead

    @property
    def problem(self) -> str | None:
        if self.needed_vcpus <= self.quota_vcpus:
            return None
        return (
            f"{self.quota.name} ({self.quota.code}): {self.whose} {self.needed_vcpus:,} vCPUs at the most "
            f"({', '.join(self.capacities)}), the account's quota is {self.quota_vcpus:,.0f}; the groups would not "
            "launch past it (VcpuLimitExceeded) and tasks would wait in PROVISIONING: request an increase in Service "
            f"Quotas, or lower {self.lower}"
        )

    def line(self) -> str:
        return (
            f"{self.quota.name} ({self.quota.code}): {self.needed_vcpus:,} vCPUs at most "
            f"({', '.join(self.capacities)}); quota {self.quota_vcpus:,.0f}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "quota_code": self.quota.code,
            "quota_name": self.quota.name,
            "needed_vcpus": self.needed_vcpus,
            "quota_vcpus": self.quota_vcpus,
            "capacities": list(self.capacities),
            "problem": self.problem,
        }


def needed(spec: FleetSpec) -> dict[str, tuple[int, list[str]]]:
    """Per quota code: the vCPUs the fleet's hosts take at their most, and the capacities that take them."""
    most = assess(*plan_inputs.from_fleet(spec)).max_instances
    types = catalog.load()
    out: dict[str, tuple[int, list[str]]] = {}
    for name, capacity in spec.capacities.items():
        vcpus = max(types[t].vcpus for t in capacity.instance_types)
        quota = ON_DEMAND[types[capacity.instance_types[0]].family[0]]
        total, names = out.get(quota.code, (0, []))
        out[quota.code] = (total + most.get(name, 0) * vcpus, [*names, f"{name} {most.get(name, 0)} x {vcpus}"])
    return out


def applied_quota(quotas: Any, code: str, service: str = "ec2") -> float:
    """The quota as applied to the account in the region; AWS's default where the account has no value of its own."""
    region = quotas.meta.region_name
    with aws_errors(f"{region}: reading the {service} quota {code}"):
        try:
            return float(quotas.get_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]["Value"])
        except quotas.exceptions.NoSuchResourceException:
            return float(quotas.get_aws_default_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]["Value"])


def needed_by_groups(templates: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, tuple[int, list[str]]], list[str]]:
    """Per quota code: the vCPUs the templates' Auto Scaling groups take at their ``MaxSize``, and the groups; and
    the groups not counted, with why (a size or type the synth cannot read; a type not in the GPU catalog)."""
    ctx = Templates(templates)
    types = catalog.load()
    out: dict[str, tuple[int, list[str]]] = {}
    skipped = []
    for group in sorted(ctx.of_type("AWS::AutoScaling::AutoScalingGroup"), key=lambda r: (r.stack, r.logical_id)):
        where = construct_path(group)
        most, kinds = literal_number(group.props.get("MaxSize")), group_types(ctx, group)
        if most is None or isinstance(kinds, str):
            skipped.append(
                f"{where}: not counted: {kinds if isinstance(kinds, str) else 'its MaxSize is not a number'}"
            )
            continue
        gpu = [t for t in kinds if t in types]
        if not gpu:
            continue  # no GPU type: drawn from the standard instances' quota, not judged here
        vcpus = max(types[t].vcpus for t in gpu)
        quota = ON_DEMAND[types[gpu[0]].family[0]]
        total, names = out.get(quota.code, (0, []))
        out[quota.code] = (total + most * vcpus, [*names, f"{where} {most} x {vcpus}"])
    return out, skipped


def check(quotas: Any, spec: FleetSpec) -> list[QuotaCheck]:
    return check_needs(quotas, needed(spec))


def check_needs(
    quotas: Any,
    needs: Mapping[str, tuple[int, list[str]]],
    whose: str = "the fleet needs",
    lower: str = "max_instances",
) -> list[QuotaCheck]:
    by_code = {q.code: q for q in ON_DEMAND.values()}
    return [
        QuotaCheck(by_code[code], total, applied_quota(quotas, code), tuple(names), whose, lower)
        for code, (total, names) in sorted(needs.items())
    ]


def check_assembly(clients: Clients, cdk_out: Path, region: str | None) -> tuple[list[QuotaCheck], list[str]]:
    """``stacks quotas``: the same check for any CDK app's ``cdk.out``, its Auto Scaling groups at their
    ``MaxSize``, per region (each stack's, else ``region``); and the groups it could not count."""
    by_region: dict[str | None, dict[str, Any]] = {}
    stacks, templates = with_nested_stacks(assembly_stacks(cdk_out))
    for stack in stacks:
        by_region.setdefault(stack.region or region, {})[stack.name] = templates[stack.name]
    found, skipped = [], []
    for where, templates in sorted(by_region.items(), key=lambda item: str(item[0])):
        needs, left = needed_by_groups(templates)
        skipped += left
        if needs:
            found += check_needs(
                clients("service-quotas", where), needs, "the stacks' Auto Scaling groups need", "the groups' MaxSize"
            )
    return found, skipped
