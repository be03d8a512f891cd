"""The CLI's ``stacks`` commands: any CDK app's synthesized stacks (``cdk.out``) against an account before a deploy:
``stacks replacements``, ``stacks references``, ``stacks quotas``, ``stacks zones`` and ``stacks names``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .core.errors import GpuSharingError


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
        (
            "names",
            "whether a name cdk.out would create is taken already, which CloudFormation refuses: a log group's, "
            "bucket's or repository's kept from an earlier deploy, a role's, a deleted secret's, a Cloud Map "
            "namespace's in a looked-up VPC (AWS calls)",
            _stacks_names,
        ),
    ):
        command = stacks.add_parser(name, help=about)
        command.add_argument(
            "--cdk-out",
            help="the cloud assembly (cdk synth's output folder): where ./cdk.json's output says, else cdk.out",
        )
        command.add_argument("--region", help="for stacks whose environment names no region")
        command.add_argument("--json", action="store_true")
        command.set_defaults(func=func)


def _assembly(given: str | None) -> Path:
    """The cloud assembly a stacks command reads: ``--cdk-out``, else where the CDK CLI writes one beside this
    folder's cdk.json (its ``output`` key; cdk.out without one), not a cdk.out an older synth may have left."""
    if given:
        return Path(given)
    settings = Path("cdk.json")
    if not settings.is_file():
        return Path("cdk.out")
    try:
        output = json.loads(settings.read_text(encoding="utf-8")).get("output", "cdk.out")
    except (ValueError, AttributeError, OSError) as error:
        raise GpuSharingError(
            f"cdk.json: cannot read it ({type(error).__name__}: {error}); fix it, or give --cdk-out"
        ) from None
    if not isinstance(output, str) or not output:
        raise GpuSharingError(f"cdk.json: output must be a folder's path, got {output!r}; fix it, or give --cdk-out")
    return Path(output)


def _checked_assembly(args: argparse.Namespace) -> Path:
    """The assembly (``_assembly``), refused where an environment-bound stack deploys to another account than the
    credentials' (``operations.aws.same_account_or_refuse``): the check would read another account than cdk deploy
    writes to. Environment-agnostic stacks deploy to the credentials' account; with none bound, nothing is read."""
    from .operations.assembly import assembly_stacks
    from .operations.aws import client, same_account_or_refuse

    path = _assembly(args.cdk_out)
    stacks = assembly_stacks(path)
    targets = {f"stack {s.name}": s.account for s in stacks if s.account}
    if targets:
        same_account_or_refuse(client, args.region or next((s.region for s in stacks if s.region), None), targets)
    return path


def _emit(args: argparse.Namespace, lines: list[str], data: Any, failed: bool) -> int:
    """A stacks command's answer: its JSON with ``--json``, else its lines; exit 1 where it found a problem."""
    print(json.dumps(data, indent=2) if args.json else "\n".join(lines))
    return 1 if failed else 0


def _stacks_zones(args: argparse.Namespace) -> int:
    from .operations import zones
    from .operations.aws import client

    found = zones.check_assembly(client, _checked_assembly(args), args.region)
    judged = [z for z in found if not isinstance(z, str)]
    unread = [z for z in found if isinstance(z, str)]
    lines = [z.line() for z in judged] + [p for z in judged for p in (*z.problems, *z.warnings)] + unread
    data = {"groups": [z.to_json() for z in judged], "not_checked": unread}
    return _emit(args, lines or [_NO_GROUP], data, any(z.problems for z in judged))


def _stacks_names(args: argparse.Namespace) -> int:
    from .operations import names_taken
    from .operations.aws import client

    found = names_taken.check_assembly(client, _checked_assembly(args), args.region)
    judged = [n for n in found if not isinstance(n, str)]
    unread = [n for n in found if isinstance(n, str)]
    lines = [n.line() for n in judged] + [p for n in judged if (p := n.problem)] + unread
    data = {"names": [n.to_json() for n in judged], "not_checked": unread}
    none = "the stacks name nothing before deploy that could be taken (no named resource it reads, no namespace)"
    return _emit(args, lines or [none], data, any(n.problem for n in judged))


def _stacks_quotas(args: argparse.Namespace) -> int:
    from .operations import vcpu_quotas
    from .operations.aws import client

    found, skipped = vcpu_quotas.check_assembly(client, _checked_assembly(args), args.region)
    lines = [q.line() for q in found] + [q.problem for q in found if q.problem] + skipped
    data = {"quotas": [q.to_json() for q in found], "not_counted": skipped}
    return _emit(args, lines or [_NO_GROUP], data, any(q.problem for q in found))


def _stacks_references(args: argparse.Namespace) -> int:
    from .operations import stack_references
    from .operations.aws import client

    found = stack_references.check(client, _checked_assembly(args), args.region)
    data = stack_references.to_json(found)
    return _emit(args, stack_references.report(found), data, any(r.problem for r in found))


def _stacks_replacements(args: argparse.Namespace) -> int:
    from .operations import replacements
    from .operations.aws import client

    result = replacements.check(client, _checked_assembly(args), args.region)
    return _emit(args, replacements.report(result), replacements.to_json(result), bool(result.found))


_NO_GROUP = "the stacks have no Auto Scaling group of GPU instances"
