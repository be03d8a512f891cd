"""The CLI's pre-deploy checks of a fleet file against an account: ``fleet zones``, ``fleet quotas``,
``fleet limits``, ``fleet egress``, ``fleet namespace``, ``fleet roles``, ``fleet ebs``, ``fleet references``,
``fleet capacities``, ``fleet balancers`` and ``fleet preflight`` (all of them and the AMI pin; ``make deploy`` runs
it first)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from importlib import import_module
from typing import Any

from .core import fleet
from .core.errors import AwsOperationError

Report = tuple[list[str], bool]  # the lines a pre-deploy check prints, and whether it found a problem


def _references_report(spec: fleet.FleetSpec, region: str | None) -> tuple[list[Any], Report]:
    from .operations import references
    from .operations.aws import client

    results = references.check(client, region, spec)
    lines = [f"{r.where}: {r.kind} {r.name}: {r.problem or 'found'}" for r in results]
    lines = lines or ["the fleet names no secret, parameter, private ECR image, bucket, managed policy or certificate"]
    return results, (lines, any(r.problem for r in results))


def _quotas_report(spec: fleet.FleetSpec, region: str | None) -> tuple[list[Any], Report]:
    from .operations import vcpu_quotas
    from .operations.aws import client

    results = vcpu_quotas.check(client("service-quotas", region), spec)
    lines = [r.line() for r in results] + [r.problem for r in results if r.problem]
    return results, (lines, any(r.problem for r in results))


def _lined(module: str, none: str) -> Callable[[fleet.FleetSpec, str | None], tuple[list[Any], Report]]:
    """The report of a check whose results each print a line and may carry a problem:
    ``operations.<module>.check(client, region, spec)``; ``none``: the line when it finds nothing to report."""

    def report(spec: fleet.FleetSpec, region: str | None) -> tuple[list[Any], Report]:
        from .operations.aws import client

        results = import_module(f"{__package__}.operations.{module}").check(client, region, spec)
        lines = [r.line() for r in results] or [none]
        lines += [r.problem for r in results if r.problem]
        return results, (lines, any(r.problem for r in results))

    return report


def _zones_report(spec: fleet.FleetSpec, region: str | None) -> tuple[list[Any], Report]:
    from .operations import zones
    from .operations.aws import client

    results = zones.check(client("ec2", region), spec)
    lines = [r.line() for r in results] + [line for r in results for line in (*r.problems, *r.warnings)]
    return results, (lines, any(r.problems for r in results))


def _ami_report(spec: fleet.FleetSpec, region: str | None) -> tuple[list[Any], Report]:
    from .operations import ami_verify
    from .operations.aws import client

    ec2 = [c for c in spec.capacities.values() if c.kind != fleet.MANAGED_INSTANCES]
    releases = sorted({c.ami_release for c in ec2})
    regions: list[Any] = [region]  # None: your AWS configuration's, as the client resolves it
    smallest_root = {r: min(c.root_volume_gib for c in ec2 if c.ami_release == r) for r in releases}
    results = [r for release in releases for r in ami_verify.verify(release, regions, client, smallest_root[release])]
    lines = [
        f"{release}: {r.region}: {r.image_id} ok" if r.ok else f"{release}: {r.region}: FAILED: {r.problem}"
        for release, r in zip(releases, results, strict=True)
    ]
    return results, (lines or ["no EC2 capacity: no AMI to check"], not all(r.ok for r in results))


def _account_checked(spec: fleet.FleetSpec, region: str | None, *, always: bool = False) -> None:
    """Refuses a fleet whose ``account`` is not the credentials' (``operations.aws.fleet_account_or_refuse``): every
    check would read another account than the one cdk deploy writes to."""
    from .operations.aws import client, fleet_account_or_refuse

    fleet_account_or_refuse(client, region, spec.name, spec.account, always=always)


def _fleet_check(args: argparse.Namespace, report: Any) -> int:
    """One pre-deploy check of ``fleet``: its lines, or its results as JSON; exit 1 on a problem."""
    spec = fleet.load(args.fleet)
    _account_checked(spec, args.region or spec.region)
    results, (lines, failed) = report(spec, args.region or spec.region)
    print(json.dumps([r.to_json() for r in results], indent=2) if args.json else "\n".join(lines))
    return 1 if failed else 0


CHECKS: tuple[tuple[str, Any, str], ...] = (
    ("zones", _zones_report, "whether each capacity's instance types are offered in the zones its hosts use"),
    (
        "egress",
        _lined("egress", "the fleet makes its own VPC, with NAT gateways"),
        "whether the GPU hosts in an existing VPC's private subnets can reach ECS (a NAT route or the endpoints)",
    ),
    (
        "namespace",
        _lined("namespace_zone", "no Service Connect namespace in an existing VPC"),
        "whether a fleet in an existing VPC can make its Service Connect namespace there (no hosted zone of its name)",
    ),
    ("quotas", _quotas_report, "whether the account's On-Demand vCPU quotas hold the fleet's hosts at their most"),
    (
        "limits",
        _lined("region_limits", "the stacks add nothing the region counts, or hold it already"),
        "whether the region's quotas have room for the VPCs, gateways, Elastic IPs, load balancers and log policies "
        "the stacks add",
    ),
    (
        "roles",
        _lined("service_roles", "no role to read"),
        "whether the account has Amazon ECS's service-linked role, which capacity providers need",
    ),
    (
        "ebs",
        _lined("ebs_key", "no EC2 capacity: Managed Instances hosts are ECS's to launch"),
        "whether Auto Scaling may use the region's default EBS key for the hosts' root volumes",
    ),
    ("references", _references_report, "whether the secrets, parameters, ECR images and buckets the fleet names exist"),
    (
        "capacities",
        _lined("leaving_capacities", "no deployed capacity leaves the cluster"),
        "whether each deployed capacity the fleet drops, renames or changes in kind is free to leave the cluster",
    ),
    (
        "balancers",
        _lined("balancer_schemes", "no deployed balancer of the fleet"),
        "whether a deployed load balancer's scheme changes under its name",
    ),
)
"""The account checks of a fleet, each a command of its own (``fleet <name>``) and a part of ``fleet preflight``."""


def _fleet_preflight(args: argparse.Namespace) -> int:
    """Every pre-deploy check; one that AWS will not answer (a permission the caller lacks) is said, not failed. Where
    every check would go unanswered, or read another account than cdk deploy writes to, the preflight would pass
    having read nothing of it: with no region, with no credentials (or expired ones), or with credentials of another
    account than the fleet's, it is refused first; and one whose every check went unanswered fails."""
    from .operations.aws import region_or_refuse

    spec = fleet.load(args.fleet)
    region = region_or_refuse(args.region or spec.region)
    _account_checked(spec, region, always=True)  # the credentials' account, read with no permission needed
    failed, unchecked = [], []
    checks = (*CHECKS, ("ami", _ami_report, ""))
    for name, report, _ in checks:
        print(f"== {name}")
        try:
            _, (lines, problem) = report(spec, region)
        except AwsOperationError as error:
            print(f"not checked: {error}")
            unchecked.append(name)
            continue
        print("\n".join(lines))
        if problem:
            failed.append(name)
    if len(unchecked) == len(checks):
        failed.append("nothing was checked")
    verdict = "failed: " + ", ".join(failed) if failed else "passed"
    print(f"preflight: {verdict}" + (f"; not checked: {', '.join(unchecked)}" if unchecked else ""))
    return 1 if failed else 0


def add_fleet_checks(fleet_commands: Any) -> None:
    preflight = (
        "zones, egress, namespace, quotas, limits, roles, ebs, references, capacities, balancers and the AMI pin, "
        "before a deploy; make deploy runs it"
    )
    for name, report, about in (*CHECKS, ("preflight", None, preflight)):
        command = fleet_commands.add_parser(name, help=f"{about} (AWS calls)")
        command.add_argument("fleet", help="the fleet file")
        command.add_argument("--region", help="the region (default: the fleet file's, else your AWS configuration's)")
        if report is None:
            command.set_defaults(func=_fleet_preflight)
        else:
            command.add_argument("--json", action="store_true", help="JSON instead of lines")
            command.set_defaults(func=lambda args, report=report: _fleet_check(args, report))
