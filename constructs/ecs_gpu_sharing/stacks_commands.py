"""The CLI's ``stacks`` commands: any CDK app's synthesized stacks (``cdk.out``) against an account before a deploy:
``stacks replacements``, ``stacks references``, ``stacks quotas`` and ``stacks zones``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_stacks_commands(commands: Any) -> None:
    stacks = commands.add_parser("stacks", help="any CDK app's synthesized stacks").add_subparsers(
        dest="stacks_command", required=True
    )
    for name, about, func in (
        (
            "replacements",
            "whether deploying cdk.out would replace a resource under a custom name it keeps, or change an export "
            "another stack imports, which CloudFormation refuses (AWS calls)",
            _stacks_replacements,
        ),
        (
            "references",
            "whether the private ECR images, secrets, parameters and awslogs log groups cdk.out's task definitions "
            "name outside their templates exist (AWS calls)",
            _stacks_references,
        ),
        (
            "quotas",
            "whether the account's On-Demand G and P vCPU quotas hold cdk.out's GPU Auto Scaling groups at their "
            "MaxSize (AWS calls)",
            _stacks_quotas,
        ),
        (
            "zones",
            "whether the zones of each GPU Auto Scaling group's subnets in cdk.out offer its types (AWS calls)",
            _stacks_zones,
        ),
    ):
        command = stacks.add_parser(name, help=about)
        command.add_argument("--cdk-out", default="cdk.out", help="the cloud assembly (cdk synth's output folder)")
        command.add_argument("--region", help="for stacks whose environment names no region")
        command.add_argument("--json", action="store_true")
        command.set_defaults(func=func)


def _stacks_zones(args: argparse.Namespace) -> int:
    from .operations import zones
    from .operations.aws import client

    found = zones.check_assembly(client, Path(args.cdk_out), args.region)
    judged = [z for z in found if not isinstance(z, str)]
    unread = [z for z in found if isinstance(z, str)]
    if args.json:
        print(json.dumps({"groups": [z.to_json() for z in judged], "not_checked": unread}, indent=2))
    else:
        lines = [z.line() for z in judged] + [p for z in judged for p in (*z.problems, *z.warnings)] + unread
        print("\n".join(lines or ["the stacks have no Auto Scaling group of GPU instances"]))
    return 1 if any(z.problems for z in judged) else 0


def _stacks_quotas(args: argparse.Namespace) -> int:
    from .operations import vcpu_quotas
    from .operations.aws import client

    found, skipped = vcpu_quotas.check_assembly(client, Path(args.cdk_out), args.region)
    if args.json:
        print(json.dumps({"quotas": [q.to_json() for q in found], "not_counted": skipped}, indent=2))
    else:
        lines = [q.line() for q in found] + [q.problem for q in found if q.problem] + skipped
        print("\n".join(lines or ["the stacks have no Auto Scaling group of GPU instances"]))
    return 1 if any(q.problem for q in found) else 0


def _stacks_references(args: argparse.Namespace) -> int:
    from .operations import stack_references
    from .operations.aws import client

    found = stack_references.check(client, Path(args.cdk_out), args.region)
    if args.json:
        print(json.dumps(stack_references.to_json(found), indent=2))
    else:
        print("\n".join(stack_references.report(found)))
    return 1 if any(r.problem for r in found) else 0


def _stacks_replacements(args: argparse.Namespace) -> int:
    from .operations import replacements
    from .operations.aws import client

    result = replacements.check(client, Path(args.cdk_out), args.region)
    if args.json:
        print(json.dumps(replacements.to_json(result), indent=2))
    else:
        print("\n".join(replacements.report(result)))
    return 1 if result.found else 0
