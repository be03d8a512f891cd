"""Reading and checking a fleet file: every problem at once, each naming the file, the key, the value seen, the
limit and what to do. Pure Python; it plans nothing (``core.plan_inputs.from_fleet`` builds the planner's inputs)."""

from __future__ import annotations

import stat
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from .. import quotas
from ..errors import FleetSpecError, GpuSharingError
from ..rules import BUDGET_BELOW_NEED, task_alone_findings
from ..task_rules import (
    TASK_BELOW_CUDA_CONTEXT,
    TASK_EXCEEDS_GPU_MEMORY,
    TASK_EXCEEDS_HOST_CPU,
    TASK_EXCEEDS_HOST_MEMORY,
)
from ..text import few
from .fleet_checks import _capacities, _check_across, _check_aws_limits, _check_shared_balancers, _load_balancers
from .keys import TOP
from .model import MAX_FLEET_FILE_BYTES, MAX_PLACEMENT_EXPRESSION, FleetSpec
from .service_checks import _services
from .tables import _build, _check_table, _Problems
from .values import NAME

_RULE_KEYS = {  # the key to edit when a task alone breaks a rule
    TASK_EXCEEDS_GPU_MEMORY: "gpu_budget_mib",
    TASK_EXCEEDS_HOST_CPU: "cpu_units",
    TASK_EXCEEDS_HOST_MEMORY: "memory_mib",
    BUDGET_BELOW_NEED: "gpu_budget_mib",
    TASK_BELOW_CUDA_CONTEXT: "gpu_budget_mib",
}


def parse(doc: Mapping[str, Any], *, source: str = "<fleet>") -> FleetSpec:
    """A fleet spec from a parsed TOML document; refuses anything malformed, every problem at once, each naming
    ``source`` and the key. It plans nothing: ``plan_inputs.from_fleet`` builds the planner's inputs from the spec,
    and the plan (``ecs-gpu-sharing plan``, or the synth's fleet plan) judges whether the tasks fit."""
    problems = _Problems(source)
    if not isinstance(doc, Mapping):
        raise FleetSpecError(f"{source}: not a TOML table of keys")
    top = _check_table(problems, "", doc, TOP)
    if ("account" in doc) != ("region" in doc):
        problems.add("account and region go together; give both, or neither for an offline synth")
    if "vpc_id" in doc and "account" not in doc:
        problems.add("vpc_id needs account and region (the VPC is looked up in that account at synth)")
    name = top.get("name")
    if isinstance(name, str) and quotas.reserved_provider_prefix(name):
        problems.add(
            f"name {name!r}: the stacks, and so the ECS capacity providers CloudFormation names after them, would "
            "start with aws, ecs or fargate, which ECS refuses for a capacity provider; choose another name"
        )
    services_table = top.get("service", {})
    if isinstance(services_table, Mapping) and len(services_table) > quotas.SERVICES_PER_CLUSTER.number:
        # Refused before anything else is checked: the checks of 10,000 services take minutes, and ECS holds 5,000.
        raise FleetSpecError(
            f"{source}: {len(services_table)} [service.<name>] tables, more than one ECS cluster holds "
            f"({quotas.SERVICES_PER_CLUSTER.number}: {quotas.SERVICES_PER_CLUSTER.source}); split the fleet into "
            "several fleet files, one cluster each"
        )
    capacities = _capacities(problems, top.get("capacity", {}))
    if "capacity" in top and not top["capacity"]:
        problems.add("no [capacity.<name>] table; a fleet needs at least one capacity")
    declared = [name for name in top.get("capacity", {}) if isinstance(name, str) and NAME.fullmatch(name)]
    load_balancers = _load_balancers(problems, top.get("load_balancer", {}))
    balancers = top.get("load_balancer", {})
    services = _services(
        problems,
        top.get("service", {}),
        capacities,
        declared,
        load_balancers,
        set(balancers) if isinstance(balancers, Mapping) else set(),
    )
    _check_shared_balancers(problems, top.get("service", {}), services, load_balancers)
    _check_across(problems, top, services, load_balancers)
    _check_aws_limits(problems, capacities, services, load_balancers)
    if "service" in top and not top["service"]:
        problems.add("no [service.<name>] table; a fleet needs at least one service to plan")
    if "name" not in top:
        problems.raise_if_any()
    # The parts that are sound are checked further, so a file's problems all come in one round.
    spec = _build(
        FleetSpec, TOP, top, capacities=capacities, services=services, load_balancers=load_balancers, source=source
    )
    too_long = {n: size for n, size in spec.host_isolation_lengths().items() if size > MAX_PLACEMENT_EXPRESSION}
    if too_long:
        names = sorted(too_long)
        shown = few([f"service.{n}" for n in names])
        problems.add(
            f"{shown}: allocation.isolation_group: keeping each off the hosts of other groups' services takes a "
            f"placement expression of up to {max(too_long.values())} characters, more than ECS's "
            f"{MAX_PLACEMENT_EXPRESSION}; put fewer services in other groups on the capacity, or give the groups "
            "capacities of their own"
        )
    # A task that can never fit its capacity (or whose budget is below its note) is refused with the rest, naming the
    # key to edit: the rule table's checks of one task alone, which need no plan.
    from ..plan_inputs import from_fleet  # builds on this package: imported when used

    try:
        findings = task_alone_findings(*from_fleet(spec))
    except GpuSharingError as error:
        problems.add(str(error).removeprefix(f"{source}: "))
        findings = []
    for finding in findings:
        key = _RULE_KEYS.get(finding.rule_id, "")
        problems.add(
            f"{finding.about}.{finding.subject}{'.' + key if key else ''}: {finding.message} [{finding.rule_id}]"
        )
    problems.raise_if_any()
    return spec


def check_region(spec: FleetSpec, known: Collection[str]) -> None:
    """Refuses a fleet's region that is not among ``known`` (botocore's endpoint data, which the caller reads: this
    module makes no AWS call and imports no AWS SDK). The synth and ``plan`` both call it."""
    if spec.region is not None and spec.region not in known:
        raise FleetSpecError(
            f"{spec.source}: region {spec.region!r} is not an AWS region botocore knows; give one such as us-east-1"
        )


def load(path: str | Path) -> FleetSpec:
    """Reads and checks a fleet file."""
    p = Path(path)
    try:
        status = p.stat()  # follows a link: a link to a fleet file is a fleet file
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(status.st_mode):
            # A FIFO would block the read forever, a device such as /dev/zero would fill the memory.
            raise FleetSpecError(
                f"{p}: not a regular file (a pipe, socket or device); give the path of a .toml file"
            ) from None
        if status.st_size > MAX_FLEET_FILE_BYTES:
            raise FleetSpecError(
                f"{p}: {status.st_size} bytes, more than a fleet file may hold ({MAX_FLEET_FILE_BYTES // 2**20} MiB); "
                "split the fleet into several files (one app each)"
            )
        text = p.read_bytes().decode("utf-8")
    except IsADirectoryError:
        raise FleetSpecError(f"{p}: is a folder, not a fleet file; give the path of a .toml file") from None
    except OSError as error:
        raise FleetSpecError(f"{p}: cannot read the fleet file ({error.strerror}); check the path") from None
    except UnicodeDecodeError as error:
        raise FleetSpecError(f"{p}: not UTF-8 text (byte {error.start}); save the fleet file as UTF-8") from None
    try:
        doc = tomllib.loads(text.removeprefix("\ufeff"))  # a byte-order mark some editors write
    except tomllib.TOMLDecodeError as error:
        raise FleetSpecError(f"{p}: not valid TOML ({error})") from None
    except RecursionError:
        raise FleetSpecError(
            f"{p}: values nested too deeply for a fleet file (arrays or tables within each other hundreds deep)"
        ) from None
    return parse(doc, source=str(p))
