#!/usr/bin/env python3
"""Deploy rehearsal: each fleet file deployed by the pinned CDK CLI into moto's emulator on loopback, accounted for,
checked with the operations commands, updated with an edit, and destroyed. No AWS account, no credentials.

    make rehearse                              # the example fleet and tests/fleets/platform.toml
    make rehearse REHEARSE="my-fleet.toml"     # your own fleet files
    python scripts/rehearse.py FLEET [FLEET ...] [--update FLEET=EDITED] [--app DIR] [--verbose]

``--update FLEET=EDITED`` deploys EDITED as an update of FLEET (same stacks), as a team's next deploy would.
``--app DIR`` rehearses a team's own CDK app (the folder of its cdk.json) that composes the library.
Exits 1 when a deploy fails, a resource the emulator should hold is missing, a request is refused, a security group
rule repeats, or an operations command fails. Prints what it seeded and what it could not check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CDK = REPO / "node_modules" / ".bin" / "cdk"
EMULATOR_ACCOUNT = "123456789012"  # moto's account for any credentials
EMULATOR_REGION = "us-east-1"
# Every stack of the app, those of its stages included: `--all` selects only the top-level assembly's (CDK CLI,
# `DefaultSelection.MainAssembly`), and an app of stages has none there.
ALL_STACKS = "**"
sys.path.insert(0, str(REPO))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return int(sock.getsockname()[1])


class Emulator:
    """moto's server, in this process (so the rehearsal can seed what AWS's public data has and moto's copy lacks)."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = _free_port()
        # localhost, not 127.0.0.1: moto reads a change set's template URL as path-style only for localhost.
        self.endpoint = f"http://localhost:{self.port}"
        self.server = ThreadedMotoServer(ip_address="localhost", port=self.port, verbose=False)

    def __enter__(self) -> Emulator:
        import rehearsal  # scripts/rehearsal/, beside this script

        rehearsal.install_adapters()
        # AWS's managed policies, as AWS has them: without them moto answers every GetPolicy of one NoSuchEntity, and
        # stacks references would fail every role that attaches one (moto's settings, iam_aws_managed_policies).
        os.environ["MOTO_IAM_LOAD_MANAGED_POLICIES"] = "true"
        self.server.start()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": EMULATOR_REGION,
            "AWS_REGION": EMULATOR_REGION,
            "AWS_CONFIG_FILE": "/nonexistent",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
            "CDK_DISABLE_CLI_TELEMETRY": "true",
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        }
        os.environ.update({k: v for k, v in self.env.items() if k.startswith("AWS_")})
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    def client(self, service: str) -> Any:
        import boto3

        session: Any = boto3  # any service name: the rehearsal reads whatever the templates hold
        return session.client(service, region_name=EMULATOR_REGION, endpoint_url=self.endpoint)


def _run(
    emulator: Emulator, *args: str, log: Path, check: bool = True, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    result = subprocess.run(args, cwd=cwd, env=emulator.env, capture_output=True, text=True, check=False)
    with log.open("a") as handle:
        handle.write(f"$ {' '.join(args)}  ({time.monotonic() - started:.1f} s, exit {result.returncode})\n")
        handle.write(result.stdout + result.stderr + "\n")
    if check and result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise SystemExit(
            f"rehearsal: FAILED: {' '.join(args[:3])} exited {result.returncode}\n{tail}\n(full log: {log})"
        )
    return result


def _deploy(emulator: Emulator, out: Path, log: Path) -> None:
    """``cdk deploy`` of every stack of the synthesized assembly ``out`` into the emulator."""
    _run(
        emulator,
        str(CDK),
        "deploy",
        ALL_STACKS,
        "--app",
        str(out),
        "--require-approval",
        "never",
        "--no-notices",
        log=log,
    )


def _synth(emulator: Emulator, fleet: Path, out: Path, log: Path, app: Path | None = None) -> dict[str, Any]:
    """Synthesizes the fleet app with ``fleet`` (a copy: its layout file is written beside it), or the CDK app in
    the folder ``app`` (its own cdk.json), into ``out``."""
    if app is None:
        _run(emulator, str(CDK), "synth", "--quiet", "--no-notices", "-c", f"fleet={fleet}", "-o", str(out), log=log)
    else:
        _run(emulator, str(CDK), "synth", "--quiet", "--no-notices", "-o", str(out), log=log, cwd=app)
    from ecs_gpu_sharing.operations.assembly import assembly_stacks

    return {stack.name: json.loads(stack.template.read_text()) for stack in assembly_stacks(out)}


def rehearse(emulator: Emulator, fleet: Path, update: Path | None, work: Path, verbose: bool) -> list[str]:
    import destroy  # scripts/destroy.py, beside this script
    import rehearsal  # scripts/rehearsal/, beside this script

    from ecs_gpu_sharing.core import fleet as fleet_file

    problems: list[str] = []
    log = work / "rehearsal.log"
    spec = fleet_file.load(fleet)
    edited = fleet_file.load(update) if update else None
    elsewhere = _fleet_elsewhere(spec, fleet) + (_fleet_elsewhere(edited, update) if edited and update else [])
    if elsewhere:
        return elsewhere  # before the synth, whose lookups for another account would write a cdk.context.json here
    steps = ["deploy"] + (["update"] if update else [])
    templates: dict[str, Any] = {}
    placed: dict[str, str] = {}  # ECS service logical id -> its stack, after the first deploy
    path = fleet
    for number, what in enumerate(steps):
        if what == "update":
            assert update is not None
            shutil.copy(update, fleet)  # the same file name: its layout file keeps every service in place
        started = time.monotonic()
        out = work / f"cdk.out.{number}"
        templates = _synth(emulator, path, out, log)
        seeded = (
            rehearsal.seed_public_amis(templates)
            + rehearsal.seed_certificates(templates)
            + rehearsal.seed_container_images(out)
        )
        for line in seeded:
            print(f"  seeded: {line}")
        problems += _service_rules(templates)
        problems += _stacks(emulator, "replacements", out, log)
        _deploy(emulator, out, log)
        report = rehearsal.account(emulator.client, templates)
        problems += report.problems
        print(
            f"  {what} {path.name}: {len(templates)} stacks in {time.monotonic() - started:.0f} s; {report.summary()}"
        )
        unchecked: dict[str, int] = {}
        for check in report.checks:
            if check.status == rehearsal.NOT_CHECKED:
                unchecked[check.type] = unchecked.get(check.type, 0) + 1
            if verbose:
                print(f"    {check}")
        if unchecked:
            print("  not checked: " + ", ".join(f"{kind} x{n}" for kind, n in sorted(unchecked.items())))
        for problem in report.problems:
            print(f"  PROBLEM: {problem}")
        now = {
            logical_id: stack
            for stack, template in templates.items()
            for logical_id, resource in template["Resources"].items()
            if resource["Type"] == "AWS::ECS::Service"
        }
        if what == "update":
            moved = sorted(n for n, stack in placed.items() if now.get(n, stack) != stack)
            if moved:
                problems.append(f"the update moved services to other stacks: {', '.join(moved)}")
            print(f"  the update kept all {len(placed)} services in their stacks" if not moved else "  services moved")
        placed = now
    problems += _operations(emulator, spec, fleet, templates, log)
    problems += _deployed_checks(emulator, work / f"cdk.out.{len(steps) - 1}", log)
    started = time.monotonic()
    # make destroy's steps: services first, then the hosts' scale-in protection, then the rest.
    failed = destroy.destroy(
        lambda command: _run(emulator, *command, log=log, check=False),
        list(templates),
        spec.name,
        ["--app", str(work / f"cdk.out.{len(steps) - 1}")],
        EMULATOR_REGION,
    )
    if failed:
        problems.append(f"{failed}; left in the emulator: {_leftovers(emulator)}")
    left = [s for s in templates if _stack_exists(emulator, s)]
    if left:
        problems.append(f"destroy left stacks behind: {', '.join(left)}")
    print(f"  destroyed {len(templates)} stacks in {time.monotonic() - started:.0f} s")
    return problems


def _stacks(emulator: Emulator, command: str, out: Path, log: Path, findings_ok: bool = False) -> list[str]:
    """``ecs-gpu-sharing stacks COMMAND`` on a cloud assembly, as a team runs it before a deploy: it must run and read
    the emulator, and exit 0 (or 1, where ``findings_ok``: a secret or image the app names and nobody made here). An
    AWS managed policy a role attaches is AWS's, not the account's: one missing is a problem in any account."""
    cli = [sys.executable, "-m", "ecs_gpu_sharing.cli", "stacks", command, "--cdk-out", str(out)]
    result = _run(emulator, *cli, "--region", EMULATOR_REGION, log=log, check=False)
    lines = (result.stdout + result.stderr).strip().splitlines()
    print(f"  stacks {command}: exit {result.returncode}: {lines[0][:150] if lines else ''}")
    ok = result.returncode == 0 or (findings_ok and result.returncode == 1)
    broken = not ok or "Traceback" in result.stdout + result.stderr
    missing = [f"AWS would refuse: {line}" for line in lines if ": no AWS managed policy " in line]
    for line in missing:
        print(f"  PROBLEM: {line}")
    exited = [f"stacks {command} exited {result.returncode}: {' | '.join(lines[-3:])}"] if broken else []
    return exited + missing


def _deployed_checks(emulator: Emulator, out: Path, log: Path) -> list[str]:
    """The account checks of the stacks commands on what was deployed: the zones of the GPU groups' subnets offer
    their types, what the tasks name outside the templates is looked up, and the names the stacks create are their
    own (``stacks quotas`` is not run: moto serves no EC2 quotas)."""
    return (
        _stacks(emulator, "zones", out, log)
        + _stacks(emulator, "references", out, log, findings_ok=True)
        + _stacks(emulator, "names", out, log)
    )


def _service_rules(templates: dict[str, Any]) -> list[str]:
    """What the real services would refuse in these templates (core.service_rules), checked before the deploy, since
    moto lets it through; each finding is a problem."""
    from ecs_gpu_sharing.core.service_rules import check_all

    found = [f"AWS would refuse: {v}" for v in check_all(templates)]
    for line in found:
        print(f"  PROBLEM: {line}")
    return found


def rehearse_app(emulator: Emulator, app: Path, work: Path, verbose: bool) -> list[str]:
    """A team's own CDK app (a folder with cdk.json): deployed, accounted for and destroyed."""
    import rehearsal  # scripts/rehearsal/, beside this script

    log = work / "rehearsal.log"
    out = work / f"cdk.out.{app.name}"
    started = time.monotonic()
    templates = _synth(emulator, app, out, log, app=app)
    elsewhere = _outside_the_emulator(out)
    if elsewhere:
        return elsewhere
    for line in (
        rehearsal.seed_public_amis(templates)
        + rehearsal.seed_certificates(templates)
        + rehearsal.seed_container_images(out)
    ):
        print(f"  seeded: {line}")
    found = _service_rules(templates) + _stacks(emulator, "replacements", out, log)
    _deploy(emulator, out, log)
    report = rehearsal.account(emulator.client, templates)
    print(f"  deploy {app.name}: {len(templates)} stacks in {time.monotonic() - started:.0f} s; {report.summary()}")
    for check in report.checks:
        if verbose or check.status == rehearsal.NOT_CHECKED:
            print(f"    {check}")
    found += _deployed_checks(emulator, out, log)
    destroyed = _run(emulator, str(CDK), "destroy", ALL_STACKS, "--force", "--app", str(out), log=log, check=False)
    problems = found + list(report.problems)
    if destroyed.returncode != 0:
        problems.append(
            f"cdk destroy {ALL_STACKS} exited {destroyed.returncode}; left in the emulator: {_leftovers(emulator)}"
        )
    else:
        print(f"  destroyed {len(templates)} stacks")
    return problems


def _elsewhere(what: str, account: str | None, region: str | None, remedy: str) -> list[str]:
    """``what`` bound to another account or region than the emulator's (one line), or nothing: the emulator is one
    account in one region, where the bootstrap and every check run."""
    if account in (None, EMULATOR_ACCOUNT) and region in (None, EMULATOR_REGION):
        return []
    return [
        f"{what} targets aws://{account or EMULATOR_ACCOUNT}/{region or EMULATOR_REGION}; the rehearsal's emulator is "
        f"aws://{EMULATOR_ACCOUNT}/{EMULATOR_REGION}, where it bootstraps and checks: {remedy} to rehearse it"
    ]


def _fleet_elsewhere(spec: Any, path: Path) -> list[str]:
    """A fleet file bound to another account or region: every stack of it is (``account`` and ``region`` bind them
    all), and its deploy would be refused (the CDK CLI: the credentials are the emulator's)."""
    remedy = "leave out the fleet file's account and region (or give those)"
    return _elsewhere(f"fleet {path.name}", spec.account, spec.region, remedy)


def _outside_the_emulator(out: Path) -> list[str]:
    """Stacks the emulator cannot rehearse (a stack of another account's assets would be published to a registry the
    emulator does not have)."""
    from ecs_gpu_sharing.operations.assembly import assembly_stacks

    remedy = "give the stack that environment (or none)"
    return [line for s in assembly_stacks(out) for line in _elsewhere(f"stack {s.name}", s.account, s.region, remedy)]


def _leftovers(emulator: Emulator) -> str:
    ec2, elbv2 = emulator.client("ec2"), emulator.client("elbv2")
    groups = [
        g["GroupId"] + " " + g["GroupName"]
        for g in ec2.describe_security_groups()["SecurityGroups"]
        if g["GroupName"] != "default"
    ]
    balancers = [b["LoadBalancerName"] for b in elbv2.describe_load_balancers()["LoadBalancers"]]
    interfaces = [
        i["NetworkInterfaceId"] + " " + i.get("Description", "")
        for i in ec2.describe_network_interfaces()["NetworkInterfaces"]
    ]
    instances = [
        i["InstanceId"]
        for r in ec2.describe_instances()["Reservations"]
        for i in r["Instances"]
        if i["State"]["Name"] != "terminated"
    ]
    return f"security groups {groups}, load balancers {balancers}, interfaces {interfaces}, instances {instances}"


def _stack_exists(emulator: Emulator, name: str) -> bool:
    try:
        stacks = emulator.client("cloudformation").describe_stacks(StackName=name)["Stacks"]
    except Exception:
        return False
    return any(s["StackStatus"] != "DELETE_COMPLETE" for s in stacks)


def _operations(emulator: Emulator, spec: Any, fleet: Path, templates: dict[str, Any], log: Path) -> list[str]:
    """The operations commands against what was deployed: they must run and read it."""
    cli = [sys.executable, "-m", "ecs_gpu_sharing.cli"]
    outputs = emulator.client("cloudformation").describe_stacks(StackName=spec.stack_name("cluster"))["Stacks"][0]
    cluster = next(o["OutputValue"] for o in outputs.get("Outputs", []) if o["OutputKey"] == "ClusterName")
    problems = []
    commands = [
        (
            "cluster status",
            [*cli, "cluster", "status", "--cluster", cluster, "--fleet", str(fleet), "--region", EMULATOR_REGION],
        ),
        (
            "evaluate",
            [
                *cli,
                "evaluate",
                "--cluster",
                cluster,
                "--fleet",
                str(fleet),
                "--since",
                "1d",
                "--region",
                EMULATOR_REGION,
            ],
        ),
        ("fleet preflight", [*cli, "fleet", "preflight", str(fleet), "--region", EMULATOR_REGION]),
        *(
            (f"ami verify {release}", [*cli, "ami", "verify", "--release", release, "--region", EMULATOR_REGION])
            for release in sorted({c.ami_release for c in spec.capacities.values() if c.ami_release})
        ),
    ]
    for name, command in commands:
        result = _run(emulator, *command, log=log, check=False)
        lines = (result.stdout + result.stderr).strip().splitlines()
        first = next((line for line in lines if not line.startswith("b'")), "")
        # No host registers in an emulator, so cluster status reports tasks not running (exit 1); it must still find
        # every fleet service by its tag. evaluate exits 1 when a budget needs changing; with no telemetry it must
        # run and say so. fleet preflight fails only where this account is new: the secrets and buckets the fleets
        # name but nobody made here (references), and ECS's service-linked role, which a new account lacks (roles);
        # moto serves no EC2 quotas, so that check is "not checked". Any other section failing is a problem.
        text = result.stdout + result.stderr
        failed = re.search(r"^preflight: failed: ([^;\n]+)", text, re.MULTILINE)
        new_account = failed is not None and set(failed.group(1).split(", ")) <= {"references", "roles"}
        ok = "Traceback" not in text and (
            result.returncode == 0
            or (name == "evaluate" and result.returncode == 1)
            or (name == "fleet preflight" and result.returncode == 1 and new_account)
            or (name == "cluster status" and result.returncode == 1 and "not found in the cluster" not in text)
        )
        print(f"  {name}: exit {result.returncode}: {first[:150]}")
        if not ok:
            problems.append(f"{name} exited {result.returncode}: {' | '.join(lines[-3:])}")
    return problems


def _quiet_moto() -> None:
    """moto warns for every type it has no model of (the account lists them) and for its missing Docker."""
    import logging
    import warnings

    warnings.filterwarnings("ignore", message="Tried to parse")
    for name in ("moto", "werkzeug", "moto.awslambda", "moto.awslambda_simple"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fleets", nargs="*", type=Path, help="fleet files (default: fleet.toml and the platform fleet)")
    parser.add_argument(
        "--update",
        action="append",
        default=[],
        metavar="FLEET=EDITED",
        help="after deploying FLEET, deploy EDITED as its update (the same fleet, edited); repeatable",
    )
    parser.add_argument("--verbose", action="store_true", help="print every resource's account")
    parser.add_argument(
        "--app", action="append", default=[], type=Path, metavar="DIR", help="a CDK app's folder (cdk.json) to rehearse"
    )
    args = parser.parse_intermixed_args(argv)
    fleets = args.fleets or ([] if args.app else [REPO / "fleet.toml", REPO / "tests" / "fleets" / "platform.toml"])
    updates: dict[Path, Path] = {}
    for item in args.update:
        fleet_text, _, edited = item.partition("=")
        if not edited:
            parser.error(f"--update {item}: write FLEET=EDITED")
        updates[Path(fleet_text).resolve()] = Path(edited)
    if not CDK.exists():
        print("rehearsal: the CDK CLI is not installed; run `make rehearse`", file=sys.stderr)
        return 2
    _quiet_moto()
    started = time.monotonic()
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rehearsal-") as tmp, Emulator() as emulator:
        work = Path(tmp)
        print(f"rehearsal: moto {_moto_version()} at {emulator.endpoint}; full log in rehearsal.log")
        import rehearsal  # scripts/rehearsal/, beside this script

        from ecs_gpu_sharing.core.service_rules import SERVICE_RULES

        for line in rehearsal.empty_account(emulator.client):
            print(f"rehearsal: a new account has no {line}: removed")
        print(
            "rehearsal: what AWS refuses and moto does not, checked on the templates before each deploy "
            "(docs/aws-rules.md): " + ", ".join(r.rule_id.removeprefix("ecs-gpu-sharing:") for r in SERVICE_RULES)
        )
        _run(
            emulator,
            str(CDK),
            "bootstrap",
            f"aws://{EMULATOR_ACCOUNT}/{EMULATOR_REGION}",
            "--no-notices",
            log=work / "rehearsal.log",
        )
        for number, fleet in enumerate(fleets):
            # A copy beside its layout file, so the rehearsal never rewrites the team's files.
            copy_dir = work / f"fleet{number}"
            copy_dir.mkdir()
            copy = copy_dir / fleet.name
            shutil.copy(fleet, copy)
            layout = fleet.with_name(f"{fleet.stem}.layout.json")
            if layout.exists():
                shutil.copy(layout, copy_dir / layout.name)
            update = updates.get(fleet.resolve())
            print(f"rehearsal: {fleet}")
            try:
                problems += rehearse(emulator, copy, update, work, args.verbose)
            except SystemExit as failure:
                problems.append(str(failure))
                print(failure)
                break
        for app in args.app:
            print(f"rehearsal: {app}")
            try:
                problems += rehearse_app(emulator, app.resolve(), work, args.verbose)
            except SystemExit as failure:
                problems.append(str(failure))
                print(failure)
        shutil.copy(work / "rehearsal.log", REPO / "rehearsal.log")
    print(f"rehearsal: {len(problems)} problem(s) in {time.monotonic() - started:.0f} s")
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


def _moto_version() -> str:
    from importlib.metadata import version

    return version("moto")


if __name__ == "__main__":
    sys.exit(main())
