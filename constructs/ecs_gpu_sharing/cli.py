"""The ``ecs-gpu-sharing`` command line: plan fleets without synthesizing, operate a live account."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import datetime
import gc
import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .core import catalog, fleet, plan_inputs, text
from .core.errors import GpuSharingError
from .core.files import check_output_path, json_text, write_atomic
from .core.rules import assess
from .preflight import add_fleet_checks
from .stacks_commands import add_stacks_commands

if TYPE_CHECKING:  # the plan document's modules load where a command needs them (``_plan``)
    from .core import plan_document
    from .core.planner import Plan


def _catalog_list(args: argparse.Namespace) -> int:
    rows = [r for r in catalog.load().values() if args.all or r.usable]
    print(f"{'instance type':<20} {'gpu':<22} {'gpus':>4} {'MiB/gpu':>8} {'vcpu':>5} {'MiB':>8}  support")
    for r in rows:
        gpu = f"{r.gpu_manufacturer} {r.gpu_name}"
        print(
            f"{r.instance_type:<20} {gpu:<22} {r.gpus:>4} {r.ec2_gpu_memory_mib:>8} {r.vcpus:>5} "
            f"{r.instance_memory_mib:>8}  {r.support}"
        )
    return 0


def _catalog_show(args: argparse.Namespace) -> int:
    r = catalog.lookup(args.instance_type)
    print(
        f"{r.instance_type}: {r.gpus} x {r.gpu_manufacturer} {r.gpu_name}, {r.ec2_gpu_memory_mib} MiB per GPU "
        f"(as EC2 reports it), {r.vcpus} vCPU, {r.instance_memory_mib} MiB, {'/'.join(r.architectures)}; "
        f"{r.support}: {r.reason}"
    )
    return 0


JSON_INDENT = 2  # plan --json's


def _plan(args: argparse.Namespace) -> int:
    inputs = (args.fleet, getattr(args, "prices", None))
    svg = check_output_path(args.svg, what="SVG", option="--svg", inputs=inputs) if args.svg else None
    if str(args.fleet).endswith(".json"):
        return _plan_file(args, svg)
    spec = fleet.load(args.fleet)
    if spec.region is not None:
        from .regions import known_regions  # botocore's endpoint data: no call, no credentials

        fleet.check_region(spec, known_regions())  # what the synth refuses, plan refuses too
    # With --json the plan's hosts and services, most of the document, are made and written (its modules imported)
    # while ECS's placement is replayed beside the plans (``assess``'s meanwhile) (docs/planning.md).
    made: list[Any] = []  # plan_report.HostsAhead, made there

    def meanwhile(steady: Plan, surge: Plan) -> None:
        from .core import plan_report

        made.append(plan_report.HostsAhead(JSON_INDENT))
        made[0](steady, surge)

    result = assess(*plan_inputs.from_fleet(spec), meanwhile=meanwhile if args.json else None)  # as a synth plans
    from .core import cost, plan_report

    ahead = made[0] if made else plan_report.HostsAhead(JSON_INDENT)
    doc = plan_report.document(result, _plan_prices(args, spec), ahead=ahead)
    if svg is not None:
        _write_svg(svg, doc)
    if args.json:
        print(json_text(doc, indent=JSON_INDENT, written=ahead.written))
    else:
        print(plan_report.to_table(result))
        print("\n".join(cost.cost_lines(doc)))
    if result.errors:
        for finding in result.errors:
            print(f"does not fit: {finding}", file=sys.stderr)
        return 1
    return 0


def _plan_file(args: argparse.Namespace, svg: Path | None) -> int:
    """A plan JSON already made (a construct app's cdk.out/gpu-fleet-plan.json): shown, drawn, costed again."""
    from .core import cost, plan_document, plan_report

    doc = plan_document.read_file(args.fleet)
    if args.prices:
        doc = cost.add_cost(doc, cost.load_prices(args.prices))
    if svg is not None:
        _write_svg(svg, doc)
    lines = [*plan_report.doc_summary(doc), *cost.cost_lines(doc)]
    print(json_text(doc, indent=JSON_INDENT) if args.json else "\n".join(text.terminal(line) for line in lines))
    return 0 if doc.summary.fits else 1


def _write_svg(path: Path, doc: plan_document.PlanDocument) -> None:
    from .core import plan_svg  # only with --svg: its hashing and HTML escaping are imports the plan need not wait for

    write_atomic(path, plan_svg.to_svg(doc))


def _plan_diff(args: argparse.Namespace) -> int:
    from .core import plan_diff, plan_document

    docs = [plan_document.read_file(path) for path in (args.old, args.new)]
    result = plan_diff.diff(docs[0], docs[1], old_source=args.old, new_source=args.new)
    print(
        plan_diff.to_markdown(result) if args.markdown else plan_diff.to_text(result), end="" if args.markdown else "\n"
    )
    return 1 if result.grew else 0


def _catalog_refresh(args: argparse.Namespace) -> int:
    from .operations import catalog_refresh
    from .operations.aws import aws_errors, client

    output = Path(args.output) if args.output else Path(str(catalog.data_path()))
    catalog_refresh.read_existing(output)  # a bad --output fails before any AWS call
    ec2 = client("ec2", args.region)
    with aws_errors(f"listing instance types in {ec2.meta.region_name}"):
        changes = catalog_refresh.refresh(ec2, output, allow_removals=args.allow_removals)
    print(f"wrote {output}")
    if changes.empty:
        print("no changes")
    for label, names in (("added", changes.added), ("removed", changes.removed), ("changed", changes.changed)):
        if names:
            print(f"{label} ({len(names)}): {', '.join(names)}")
    return 0


def _ami_verify(args: argparse.Namespace) -> int:
    from .operations import ami_verify
    from .operations.aws import client

    regions = args.region or [None]
    results = ami_verify.verify(args.release, regions, client)
    for r in results:
        print(f"{r.region}: {r.image_id} ok" if r.ok else f"{r.region}: FAILED: {r.problem}")
    return 0 if all(r.ok for r in results) else 1


def _ami_refresh(args: argparse.Namespace) -> int:
    from .core import ami_release
    from .operations import ami_refresh
    from .operations.aws import aws_errors, client

    output = Path(args.output) if args.output else Path(str(ami_release.releases_path()))
    check_output_path(output, what="AMI release table", option="--output")
    ssm = client("ssm", args.region)
    with aws_errors(f"reading the public GPU AMI parameters in {ssm.meta.region_name}"):
        result = ami_refresh.refresh(ssm, output)
    print(f"wrote {output}: {result.total} known releases")
    print(f"added ({len(result.releases)}): {', '.join(result.releases)}" if result.releases else "no new releases")
    return 0


def _with_fleet(args: argparse.Namespace) -> fleet.FleetSpec | None:
    """The ``--fleet`` file of a command that reads a live cluster, if given. Its ``region`` stands where no --region
    is given, as for the fleet checks (its stacks, and so its cluster, are there), and a fleet of another account
    than the credentials' is refused: the cluster read would be another account's."""
    if not args.fleet:
        return None
    from .operations.aws import client, fleet_account_or_refuse

    spec = fleet.load(args.fleet)
    args.region = args.region or spec.region
    fleet_account_or_refuse(client, args.region, spec.name, spec.account)
    return spec


def _cluster_status(args: argparse.Namespace) -> int:
    from .operations import cluster_status
    from .operations.aws import client

    spec = _with_fleet(args)
    ec2 = client("ec2", args.region) if spec is not None else None  # names the hosts' AMIs, for drift
    result = cluster_status.status(client("ecs", args.region), args.cluster, spec, ec2)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(cluster_status.to_table(result))
    return 1 if result.problems else 0


def _cluster_unprotect(args: argparse.Namespace) -> int:
    from .operations import teardown
    from .operations.aws import client

    name = args.cluster or teardown.cluster_from_stack(client("cloudformation", args.region), args.stack)
    providers = args.provider or None
    for group in teardown.unprotect(client("ecs", args.region), client("autoscaling", args.region), name, providers):
        if group.found:
            print(f"{group.group}: new instances unprotected; {len(group.instances)} instances unprotected")
        else:
            print(f"{group.group}: no such group any more; nothing to unprotect")
    return 0


def _prices_refresh(args: argparse.Namespace) -> int:
    from .operations import prices
    from .operations.aws import client, require_known_region

    require_known_region(args.region, "--region")  # the Price List API answers from us-east-1 for every region
    output = check_output_path(args.output, what="prices", option="--output")
    types = [r.instance_type for r in catalog.load().values() if r.usable]
    result = prices.refresh(
        client("pricing", prices.PRICE_LIST_REGION), args.region, types, datetime.datetime.now(datetime.UTC).date()
    )
    write_atomic(output, json.dumps(result.to_json(), indent=1) + "\n")
    print(f"wrote {output}: {len(result.on_demand_per_hour)} of {len(types)} instance types priced in {args.region}")
    return 0


def _plan_prices(args: argparse.Namespace, spec: fleet.FleetSpec) -> Any:
    """The prices a plan is costed with: --prices, else the fleet file's prices key, else none."""
    from .core import cost

    return cost.load_prices(path) if (path := args.prices or spec.prices_path) else None


def _evaluate_subjects(
    args: argparse.Namespace, ecs: Any, spec: fleet.FleetSpec | None
) -> tuple[Any, dict[str, Any], dict[str, str], str]:
    """The fleet spec (or None), what is judged, name -> ECS service name, and a word on the source."""
    from .core import plan_document, right_size
    from .operations import evaluate
    from .operations.aws import client

    if spec is not None:
        names = evaluate.service_names(ecs, args.cluster)
        subjects = right_size.fleet_subjects(spec)
        return spec, subjects, {n: names[n] for n in subjects if n in names}, f"fleet file {args.fleet}"
    if args.plan:
        doc = plan_document.read_file(args.plan, option="--plan")
        subjects = right_size.plan_subjects(doc)
        names = evaluate.deployed_names(
            client("cloudformation", args.region), doc, evaluate.service_names(ecs, args.cluster)
        )
        return None, subjects, {n: names[n] for n in subjects if n in names}, f"synth plan {args.plan}"
    subjects, names = evaluate.task_definition_subjects(ecs, args.cluster)
    return None, subjects, names, f"the task definitions of cluster {args.cluster}"


def _evaluate(args: argparse.Namespace) -> int:
    from .core import fleet_edit, plan_diff, plan_report, right_size
    from .operations import evaluate
    from .operations.aws import client

    seconds = evaluate.window_seconds(args.since)
    if not 0 <= args.margin_percent <= 100:
        raise GpuSharingError(f"--margin-percent {args.margin_percent}: give a percentage from 0 to 100")
    if args.fleet and args.plan:
        raise GpuSharingError("evaluate: give --fleet or --plan, not both (or neither, to judge task definitions)")
    if args.write and not args.fleet:
        raise GpuSharingError(
            "evaluate --write edits a fleet file: give --fleet; a construct app changes its budgets in code "
            "(MpsShare), with the suggestions this command prints"
        )
    given = _with_fleet(args)
    ecs = client("ecs", args.region)
    spec, subjects, names, source = _evaluate_subjects(args, ecs, given)
    if args.write:
        check_output_path(str(args.fleet), what="fleet file", option="--write")
    fleet_text = Path(args.fleet).read_text(encoding="utf-8") if args.write else ""
    now = datetime.datetime.now(datetime.UTC)
    measured = evaluate.measure(ecs, client("logs", args.region), args.cluster, names, seconds=seconds, now=now)
    verdicts = right_size.judge(subjects, measured, args.margin_percent)
    change = replan = None
    if spec is not None:
        replan = before, after = right_size.replan(spec, verdicts)
        change = plan_diff.diff(
            plan_report.document(before), plan_report.document(after), old_source="budgets now", new_source="suggested"
        )
    notes: list[str] = []
    if args.write:
        path = Path(args.fleet)
        edited, notes = fleet_edit.apply(fleet_text, evaluate.changes(verdicts, now.date()), source=str(path))
        write_atomic(path, edited)
    if args.json:
        doc = {
            "cluster": args.cluster,
            "source": source,
            "since": args.since,
            "margin_percent": args.margin_percent,
            "services": [right_size.verdict_json(v) for v in verdicts],
            "replan": None
            if replan is None or change is None
            else {
                "instances": [replan[0].steady.instances, replan[1].steady.instances],
                "gpus": [replan[0].steady.gpus, replan[1].steady.gpus],
                "diff": plan_diff.to_text(change),
            },
            "written": str(args.fleet) if args.write else None,
            "notes": notes,
        }
        print(json.dumps(doc, indent=2))
    else:
        print(f"judged: {source}")
        print(text.terminal(right_size.verdict_table(verdicts)))
        print()
        if change is not None:
            print(plan_diff.to_text(change))
        else:
            print("re-plan: only for a fleet file; synthesize again with the suggested budgets to see the new plan")
        for note in notes:
            print(f"note: {note}")
        if args.write:
            print(f"wrote {args.fleet}")
    return 1 if any(v.verdict in (right_size.TOO_TIGHT, right_size.LIMIT_BROKEN) for v in verdicts) else 0


class _Refused(Exception):
    """A parse the parser of one command refused: the whole parser says why, in its words."""


class _OneCommand(argparse.ArgumentParser):
    """The parser of one command (``build_parser``'s ``only``), whose errors are left to the whole parser: an error's
    usage line names every command."""

    def error(self, message: str) -> NoReturn:
        raise _Refused(message)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: one command's (``main`` parses a command's arguments with its parser alone,
    not the whole, which took 5-8 ms before every command; help, a command not known and any error take the whole)."""
    parser = (_OneCommand if only else argparse.ArgumentParser)(
        prog="ecs-gpu-sharing",
        description="Plan fleets of models sharing NVIDIA GPUs on Amazon ECS without synthesizing, compare plans, and "
        "check a live account.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, add in COMMANDS.items():
        if only is None or name == only:
            add(commands)
    return parser


def _add_catalog(commands: Any) -> None:
    cat = commands.add_parser("catalog", help="the GPU instance catalog").add_subparsers(
        dest="catalog_command", required=True
    )
    listing = cat.add_parser("list", help="GPU instance types where sharing can be used")
    listing.add_argument("--all", action="store_true", help="include unsupported types")
    listing.set_defaults(func=_catalog_list)
    show = cat.add_parser("show", help="one instance type")
    show.add_argument("instance_type")
    show.set_defaults(func=_catalog_show)

    refresh = cat.add_parser("refresh", help="regenerate the catalog from EC2 DescribeInstanceTypes (AWS call)")
    refresh.add_argument("--region", help="the region to describe (default: your AWS configuration's)")
    refresh.add_argument("--output", help="where to write (default: the installed catalog file)")
    refresh.add_argument(
        "--allow-removals", action="store_true", help="write even when types of the old catalog would be dropped"
    )
    refresh.set_defaults(func=_catalog_refresh)


def _add_ami(commands: Any) -> None:
    ami = commands.add_parser("ami", help="the AL2023 GPU AMI").add_subparsers(dest="ami_command", required=True)
    verify = ami.add_parser("verify", help="prove a release's AMI exists in each region (AWS calls)")
    verify.add_argument("--release", required=True, help="YYYYMMDD, at or after the floor")
    verify.add_argument("--region", action="append", help="a region to check; repeat for several")
    verify.set_defaults(func=_ami_verify)
    ami_table = ami.add_parser("refresh", help="add published releases to the table of known releases (AWS calls)")
    ami_table.add_argument("--region", help="the region to read (default: your AWS configuration's)")
    ami_table.add_argument("--output", help="where to write (default: the installed table)")
    ami_table.set_defaults(func=_ami_refresh)


def _add_evaluate(commands: Any) -> None:
    judging = commands.add_parser(
        "evaluate",
        help="judge each service's GPU budget by what it used (AWS calls); --write right-sizes the fleet file",
    )
    judging.add_argument("--cluster", required=True)
    judging.add_argument("--fleet", help="judge the services of this fleet file (the one the cluster runs)")
    judging.add_argument(
        "--plan",
        help="judge the services of a construct app's synth plan (cdk.out/gpu-fleet-plan.json); with neither "
        "--fleet nor --plan, the MPS budgets of the cluster's task definitions",
    )
    judging.add_argument("--since", default="7d", help="the window: 7d, 12h, 90m (default 7d)")
    judging.add_argument(
        "--margin-percent", type=int, default=10, help="suggested budget = measured peak + this (default 10)"
    )
    judging.add_argument("--write", action="store_true", help="write the suggested budgets and evidence to --fleet")
    judging.add_argument("--region", help="the cluster's region (default: --fleet's, else your AWS configuration's)")
    judging.add_argument("--json", action="store_true")
    judging.set_defaults(func=_evaluate)


def _add_plan(commands: Any) -> None:
    planning = commands.add_parser(
        "plan",
        help="plan a fleet file without synthesizing (plan diff OLD NEW: compare two plans)",
        description="Plan a fleet file without synthesizing, or show, draw and cost a plan already made "
        "(a construct app's cdk.out/gpu-fleet-plan.json). Exit 1 when the fleet does not fit.",
        epilog="ecs-gpu-sharing plan diff OLD NEW [--markdown]: compare two plans (gpu-fleet-plan.json or plan --json "
        "output); exit 1 when capacity, the surge, GPUs or cost grow, a service leaves the plan or a check newly "
        "fails. See ecs-gpu-sharing plan diff --help.",
    )
    planning.add_argument("fleet", help="the fleet file (fleet.toml), or a plan JSON (gpu-fleet-plan.json)")
    planning.add_argument("--json", action="store_true", help="print the plan as JSON")
    planning.add_argument("--svg", metavar="FILE", help="also draw each instance's GPUs into FILE")
    planning.add_argument(
        "--prices", metavar="FILE", help="cost the plan with this prices file (prices refresh); default: the fleet's"
    )
    planning.set_defaults(func=_plan)


def _add_prices(commands: Any) -> None:
    pricing = commands.add_parser("prices", help="instance prices for costed plans").add_subparsers(
        dest="prices_command", required=True
    )
    refresh = pricing.add_parser(
        "refresh", help="write on-demand prices of the catalog's instance types in a region (AWS Price List API)"
    )
    refresh.add_argument("--region", required=True, help="the region whose prices to read, such as us-east-1")
    refresh.add_argument("--output", default="prices.json", help="where to write (default: prices.json)")
    refresh.set_defaults(func=_prices_refresh)


def _add_cluster_commands(commands: Any) -> None:
    cluster = commands.add_parser("cluster", help="a live ECS cluster").add_subparsers(
        dest="cluster_command", required=True
    )
    cstatus = cluster.add_parser("status", help="GPU hosts, GPUs and services of a cluster (AWS calls)")
    cstatus.add_argument("--cluster", required=True)
    cstatus.add_argument("--fleet", help="compare with this fleet file's plan")
    cstatus.add_argument("--region", help="the cluster's region (default: --fleet's, else your AWS configuration's)")
    cstatus.add_argument("--json", action="store_true")
    cstatus.set_defaults(func=_cluster_status)
    unprotect = cluster.add_parser(
        "unprotect",
        help="clear scale-in protection from the cluster's hosts so its stack can be deleted, once its services are "
        "gone (AWS calls)",
    )
    which = unprotect.add_mutually_exclusive_group(required=True)
    which.add_argument("--cluster", help="the cluster's name")
    which.add_argument("--stack", help="a fleet's cluster stack (<name>-cluster): the cluster it outputs")
    unprotect.add_argument(
        "--provider",
        action="append",
        help="only this capacity provider's hosts, for a capacity that leaves while the rest stays (repeatable; the "
        "names `fleet capacities` prints)",
    )
    unprotect.add_argument("--region")
    unprotect.set_defaults(func=_cluster_unprotect)


def _add_fleet_commands(commands: Any) -> None:
    fleet_commands = commands.add_parser("fleet", help="the fleet file").add_subparsers(
        dest="fleet_command", required=True
    )
    schema = fleet_commands.add_parser("schema", help="print the fleet file's JSON Schema (for TOML editors)")
    schema.set_defaults(func=_fleet_schema)
    add_fleet_checks(fleet_commands)


# Each command's parser, in the order ``--help`` lists them
COMMANDS = {
    "catalog": _add_catalog,
    "ami": _add_ami,
    "cluster": _add_cluster_commands,
    "evaluate": _add_evaluate,
    "plan": _add_plan,
    "prices": _add_prices,
    "fleet": _add_fleet_commands,
    "stacks": add_stacks_commands,
}


def _fleet_schema(args: argparse.Namespace) -> int:
    print(json.dumps(fleet.json_schema(), indent=2))
    return 0


def build_diff_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ecs-gpu-sharing plan diff",
        description="what changed between two fleet plans; exit 1 when capacity grows or a check newly fails",
    )
    parser.add_argument("old", help="the earlier plan (gpu-fleet-plan.json or plan --json output)")
    parser.add_argument("new", help="the later plan")
    parser.add_argument("--markdown", action="store_true", help="Markdown, fit for a pull-request comment")
    parser.set_defaults(func=_plan_diff)
    return parser


GC_THRESHOLD = (100_000, 50, 100)  # young objects allocated between collections, and the older generations' counts


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """The collector run less often while a command runs. Planning a large fleet makes millions of small objects and
    almost no cycles, and at CPython's default (a young collection every 700 allocations) the collections took 5-7%
    of ``plan`` on fleets of 1,000 services (docs/planning.md); mypy raises its thresholds for the same reason. The
    process's own settings come back after (the commands also run inside tests and other programs)."""
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


# The variables OpenBLAS reads for its thread count when it loads (OpenBLAS's README, "Setting the number of threads
# using environment variables"); numpy's wheels bundle a pthreads build of it on Linux and Windows.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OPENBLAS_DEFAULT_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """OpenBLAS asked for one thread while a command runs, where the caller named no count. When numpy loads (the
    planner loads it on first use) its OpenBLAS starts a thread for each core but the first, and they spin waiting
    for work: on two cores 0.05-0.06 s of CPU taken from the replays and the scaled packing beside the plans, whose
    products are of a few hundred numbers, one thread's work (docs/planning.md). A process of one thread can also fork
    for its next plan (``beside.can_fork``: ``evaluate --write`` plans twice). The count is read when numpy loads, so
    a numpy loaded before keeps its threads; the caller's environment comes back after."""
    if any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:2] == ["plan", "diff"]:  # `plan diff OLD NEW`; plan a fleet file named diff as ./diff
        args = build_diff_parser().parse_args(arguments[2:])
    else:
        try:
            args = build_parser(arguments[0] if arguments and arguments[0] in COMMANDS else None).parse_args(arguments)
        except _Refused:
            args = build_parser().parse_args(arguments)
    try:
        with _fewer_collections(), _one_blas_thread():
            code = int(args.func(args))
        sys.stdout.flush()
        return code
    except GpuSharingError as error:
        for line in str(error).splitlines():
            print(f"error: {text.terminal(line)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader left (`plan --json | head`): what it read was whole, nothing else is wrong. Python would report
        # the pipe again when it flushes stdout at exit, so stdout goes to /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``ecs-gpu-sharing`` command: ``main``, then the process leaves without tearing the interpreter down (its
    output flushed first). Tearing it down frees every module's objects one by one, numpy's and HiGHS's among them:
    0.025-0.03 s of a ``plan`` that should take under 0.5 s (docs/planning.md), where the system takes the process's
    memory back at once. mypy leaves the same way (``mypy.util.hard_exit``). Where something waits for the exit (a
    function registered with ``atexit``, a thread still running), the process leaves as Python's own exit does."""
    code = main(argv)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # the reader left, or a stream was closed: Python's exit reports it
        sys.exit(code)
    registered = getattr(atexit, "_ncallbacks", None)  # CPython's count of exit functions; absent elsewhere
    if registered is None or registered() or threading.active_count() > 1:
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
