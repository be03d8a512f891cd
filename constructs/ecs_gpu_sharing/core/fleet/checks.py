"""Reading and checking a fleet file: every problem at once, each naming the file, the key, the value seen, the
limit and what to do. Pure Python; it plans nothing (``core.plan_inputs.from_fleet`` builds the planner's inputs)."""

from __future__ import annotations

import datetime
import difflib
import re
import stat
import tomllib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .. import quotas
from ..allocation import AllocationNote, Evidence
from ..ami_release import DEFAULT_AMI_RELEASE, check_release
from ..capacity_facts import host_facts
from ..errors import FleetSpecError, GpuSharingError
from ..escalation import TASK_ROLE_ESCALATION, escalations, refused_managed_policy, unread_managed_policy
from ..gpu_memory import DEFAULT_GPU_MARGIN_MIB
from ..mps import GPU_ENVIRONMENT, GPU_ENVIRONMENT_REASON
from ..planner import EC2, MANAGED_INSTANCES, TASK_EXCEEDS_GPU_MEMORY, TASK_EXCEEDS_HOST_CPU, TASK_EXCEEDS_HOST_MEMORY
from ..rules import BUDGET_BELOW_NEED, acknowledgeable, task_alone_findings
from ..text import visible
from .keys import _ENV_NAME, _NAME, _TYPE_NAMES, CAPACITY, LOAD_BALANCER, METRIC, SERVICE, SIDECAR, STATEMENT, TOP, Key
from .model import (
    APPLICATION,
    AWSVPC,
    BRIDGE,
    CONTAINER_NAME,
    MAX_FLEET_FILE_BYTES,
    MAX_PLACEMENT_EXPRESSION,
    NETWORK,
    CapacitySpec,
    FleetSpec,
    LoadBalancerSpec,
    MetricTarget,
    ServiceSpec,
    SidecarSpec,
    Statement,
    scratch_volume_name,
)

_Spec = TypeVar("_Spec")


def _build(cls: Callable[..., _Spec], keys: tuple[Key, ...], values: Mapping[str, Any], **given: Any) -> _Spec:
    """A spec from its key table: one attribute per key (``Key.attribute``), the value ``given`` where the parser
    checked and converted it, else the file's value, else the key's default. The key table is the one declaration of
    a key; its attribute on the spec is where it is used (a test holds every key to an attribute and back)."""
    out = dict(given)
    for key in keys:
        if key.attribute not in out:
            value = values.get(key.name, key.empty)
            out[key.attribute] = tuple(value) if isinstance(value, list) else value
    try:
        return cls(**out)
    except TypeError as error:  # a key declared in the table with no attribute on the spec: a bug, said plainly
        raise TypeError(f"fleet key table and {getattr(cls, '__name__', cls)} disagree: {error}") from None


MAX_PROBLEMS_SHOWN = 100  # a file of thousands of mistakes is shown its first hundred, and how many more


class _Problems:
    """Every problem of one file, collected so they are reported at once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, message: str) -> None:
        self.lines.append(f"{self.source}: {message}")

    def raise_if_any(self) -> None:
        if self.lines:
            lines = list(dict.fromkeys(self.lines))
            if len(lines) > MAX_PROBLEMS_SHOWN:
                rest = len(lines) - MAX_PROBLEMS_SHOWN
                lines = [*lines[:MAX_PROBLEMS_SHOWN], f"{self.source}: and {rest} more problems; fix these first"]
            raise FleetSpecError("\n".join(lines))


def _check_table(problems: _Problems, where: str, table: Mapping[str, Any], keys: tuple[Key, ...]) -> dict[str, Any]:
    """The table's well-typed, in-range values; every problem is added to ``problems``."""
    known = {k.name: k for k in keys}
    good: dict[str, Any] = {}
    for name in table:
        if name not in known:
            shown = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else repr(name)
            close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.75)
            hint = f"did you mean {close[0]}? " if close else ""
            problems.add(f"unknown key {where}{shown}; {hint}the keys here are: {', '.join(known)}")
    for key in keys:
        if key.name not in table:
            if key.required:
                problems.add(f"missing key {where}{key.name} ({_TYPE_NAMES[key.value_type]}): {key.doc}")
            continue
        value: Any = table[key.name]
        if (
            (isinstance(value, bool) and key.value_type is not bool)
            or not isinstance(value, key.value_type)
            or (key.value_type is datetime.date and isinstance(value, datetime.datetime))
        ):
            problems.add(
                f"{where}{key.name} must be {_TYPE_NAMES[key.value_type]}, got {value!r} ({type(value).__name__})"
            )
            continue
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and ((key.low is not None and value < key.low) or (key.high is not None and value > key.high))
        ):
            span = f"from {key.low} to {key.high}" if key.high is not None else f">= {key.low}"
            why = f" ({key.high_why})" if key.high is not None and value > key.high and key.high_why else ""
            problems.add(f"{where}{key.name} must be {span}{why}, got {value}")
            continue
        if key.pattern is not None and isinstance(value, str) and not key.pattern.fullmatch(value):
            problems.add(f"{where}{key.name} {value!r} is malformed; write it like {key.example!r}")
            continue
        if key.table is not None and isinstance(value, dict):
            value = _check_table(problems, f"{where}{key.name}.", value, key.table)
        elif key.table is not None and isinstance(value, list):
            if not all(isinstance(item, dict) for item in value):
                problems.add(f"{where}{key.name} must be a list of tables, got {value!r}")
                continue
            value = [
                _check_table(problems, f"{where}{key.name}[{i}].", item, key.table) for i, item in enumerate(value)
            ]
        elif (
            key.items is not None
            and isinstance(value, list)
            and not _check_items(problems, f"{where}{key.name}", value, key)
        ):
            continue
        good[key.name] = value
    return good


def _check_items(problems: _Problems, where: str, values: list[Any], key: Key) -> bool:
    """Whether every item of a list key has its type and pattern; adds a problem for the first that has not."""
    for value in values:
        if not isinstance(value, key.items or object) or isinstance(value, bool):
            problems.add(f"{where} must hold only {_TYPE_NAMES[key.items or str]}s, got {value!r}")
            return False
        if key.pattern is not None and isinstance(value, str) and not key.pattern.fullmatch(value):
            problems.add(f"{where} item {value!r} is malformed; write it like {key.example!r}")
            return False
    if key.pattern is not None and len(set(values)) != len(values):
        problems.add(f"{where} names an item twice: {values!r}")
        return False
    return True


def _check_name(problems: _Problems, kind: str, name: str) -> bool:
    if _NAME.fullmatch(name):
        return True
    problems.add(
        f"{kind}.{name!r} is not a usable name; use letters, digits and '-', starting with a letter, at most 40 "
        "characters"
    )
    return False


def _named_tables(problems: _Problems, kind: str, tables: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``[kind.<name>]`` tables whose name is usable and that are tables; a problem for each other one."""
    for name, table in tables.items():
        if not _check_name(problems, kind, name):
            continue
        if not isinstance(table, dict):
            problems.add(f"{kind}.{name} must be a table")
            continue
        yield name, table


def _capacities(problems: _Problems, tables: Mapping[str, Any]) -> dict[str, CapacitySpec]:
    capacities: dict[str, CapacitySpec] = {}
    for name, table in _named_tables(problems, "capacity", tables):
        where = f"capacity.{name}."
        before = len(problems.lines)
        good = _check_table(problems, where, table, CAPACITY)
        types = good.get("instance_types")
        if types is not None and (not types or not all(isinstance(t, str) for t in types)):
            problems.add(f"{where}instance_types must be a non-empty list of strings, got {types!r}")
            types = None
        elif types is not None and len(set(types)) < len(types):
            twice = sorted({t for t in types if types.count(t) > 1})
            problems.add(f"{where}instance_types names {', '.join(twice)} more than once; give each type once")
            types = None
        kind = good.get("kind", EC2)
        release = good.get("ami_release", DEFAULT_AMI_RELEASE)
        if kind == MANAGED_INSTANCES:
            for key in ("ami_release", "ami_release_verified", "min_instances"):
                if key in table:
                    why = (
                        "AWS owns and patches the host image there: there is no AMI to pin"
                        if key.startswith("ami")
                        else "Managed Instances keeps no minimum of hosts"
                    )
                    problems.add(f'{where}{key} does not apply to kind = "managed-instances": {why}; remove it')
        else:
            try:
                check_release(release, verified=good.get("ami_release_verified", False))
            except GpuSharingError as error:
                problems.add(f"{where}ami_release: {error}")
        min_i, max_i = good.get("min_instances", 0), good.get("max_instances")
        if max_i is not None and max_i < min_i:
            problems.add(
                f"{where}max_instances {max_i} is below min_instances {min_i}; raise it or lower min_instances"
            )
        acknowledge = _acknowledgments(problems, where, "capacity", good.get("acknowledge", {}))
        if types is None or len(problems.lines) > before:
            continue
        try:
            facts = host_facts(
                types,
                gpu_margin_mib=good.get("gpu_margin_mib", DEFAULT_GPU_MARGIN_MIB),
                ecs_gpu_memory_mib=good.get("ecs_gpu_memory_mib"),
                owner=f"capacity.{name}",
            )
        except GpuSharingError as error:
            problems.add(str(error))
            continue
        capacities[name] = _build(CapacitySpec, CAPACITY, good, name=name, facts=facts, acknowledge=acknowledge)
    return capacities


def _environment(problems: _Problems, where: str, env: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in env.items():
        if not _ENV_NAME.fullmatch(key):
            problems.add(
                f"{where}environment key {key!r} is not a usable variable name; use letters, digits and '_', not "
                "starting with a digit"
            )
        elif GPU_ENVIRONMENT.match(key):
            problems.add(f"{where}environment.{key} would steer the GPU: {GPU_ENVIRONMENT_REASON}")
        elif not isinstance(value, str):
            problems.add(f"{where}environment.{key} must be a string, got {value!r}")
        else:
            out[key] = value
    return out


def _services(
    problems: _Problems,
    tables: Mapping[str, Any],
    capacities: Mapping[str, CapacitySpec],
    declared: Sequence[str],
    load_balancers: Mapping[str, LoadBalancerSpec],
    declared_balancers: Collection[str] = (),
) -> dict[str, ServiceSpec]:
    """The services; one on a capacity that is declared but broken is left out (its capacity's problem says why), and
    one naming a balancer that is declared but refused is not reported again (the balancer's problem says why)."""
    services: dict[str, ServiceSpec] = {}
    for name, table in _named_tables(problems, "service", tables):
        where = f"service.{name}."
        before = len(problems.lines)
        good = _check_table(problems, where, table, SERVICE)
        capacity = good.get("capacity")
        if capacity is not None and capacity not in declared:
            problems.add(
                f"{where}capacity names {capacity!r}, which is not defined; defined capacities: "
                f"{', '.join(declared) or '(none)'}"
            )
        env = _environment(problems, where, good.get("environment", {}))
        if "max_tasks" in good and "desired_count" in good and good["max_tasks"] < good["desired_count"]:
            problems.add(
                f"{where}max_tasks {good['max_tasks']} is below desired_count {good['desired_count']} (the least); "
                "raise max_tasks"
            )
        for scaling in ("scale_on_cpu_percent", "scale_on_requests_per_target", "scale_on_metric"):
            if scaling in good and "max_tasks" not in good:
                problems.add(f"{where}{scaling} needs max_tasks (the most tasks scaling may reach)")
        if len(problems.lines) > before or capacity is None or capacity not in capacities:
            continue
        kind = capacities[capacity].kind
        network_mode = good.get("network_mode", AWSVPC if kind == MANAGED_INSTANCES else BRIDGE)
        if kind == MANAGED_INSTANCES and network_mode != AWSVPC:
            # Managed Instances runs awsvpc and host (botocore's ECS model also lists none); host would share the
            # host's network and its instance credentials between tenants, so this app runs awsvpc only there.
            problems.add(
                f'{where}network_mode must be "awsvpc" on Managed Instances: of its modes (awsvpc, host), host would '
                "share the host's network and instance credentials between tenants"
            )
        if kind == MANAGED_INSTANCES and "shm_size_mib" in good:
            # AWS lists sharedMemorySize (and dockerVolumeConfiguration) as not valid on Managed Instances; tmpfs is
            # valid there since 2026-01-06 (AWS What's New).
            problems.add(
                f"{where}shm_size_mib sets the container's sharedMemorySize, which ECS does not accept on Managed "
                "Instances; remove it, or run the service on an EC2 capacity"
            )
        if kind == MANAGED_INSTANCES and "placement" in good:
            problems.add(
                f"{where}placement chooses ECS placement strategies, which Managed Instances does not take from the "
                "app (AWS places its tasks); remove it, or run the service on an EC2 capacity"
            )
        if kind == MANAGED_INSTANCES and "model_cache_path" in good:
            problems.add(
                f"{where}model_cache_path is a Docker volume, which ECS supports only on EC2 instances, not on Managed "
                "Instances; remove it (writable_paths gives per-task scratch space)"
            )
        _check_exposure(problems, where, good, load_balancers, declared_balancers)
        sidecars = _sidecars(problems, where, good.get("sidecar", []))
        _check_paths(problems, where, good)
        _check_task_role(problems, where, good)
        acknowledge = _acknowledgments(problems, where, "service", good.get("acknowledge", {}))
        note = _note(problems, f"{where}allocation.", good.get("allocation"))
        evidence = _evidence(problems, f"{where}evidence.", good.get("evidence"))
        if "evidence" in good and "allocation" in good:
            problems.add(
                f"{where}evidence and {where}allocation: with an allocation note, its evidence goes in the allocation "
                "table (measured_peak_mib, measured_on, ...); move it there"
            )
        _check_service_values(problems, where, good, note, evidence)
        tags = _tags(problems, where, good.get("tags", {}))
        if len(problems.lines) > before:
            continue
        services[name] = _build(
            ServiceSpec,
            SERVICE,
            good,
            name=name,
            environment=env,
            command=_strings(problems, f"{where}command", good.get("command", [])),
            health_check=_strings(problems, f"{where}health_check", good.get("health_check", [])),
            secrets=_secrets(problems, where, good.get("secrets", {}), env),
            scale_on_metric=_metric(good.get("scale_on_metric")),
            network_mode=network_mode,
            sidecars=sidecars,
            task_role_statements=tuple(_build(Statement, STATEMENT, t) for t in good.get("task_role_statements", ())),
            tags=tags,
            acknowledge=acknowledge,
            allocation=note,
            evidence=evidence,
        )
    return services


def _check_exposure(
    problems: _Problems,
    where: str,
    good: Mapping[str, Any],
    load_balancers: Mapping[str, LoadBalancerSpec],
    declared_balancers: Collection[str] = (),
) -> None:
    """How a service is reached: its load balancer exists, and its keys fit that balancer's type."""
    name = good.get("load_balancer")
    routing = [
        k for k in ("path", "host", "health_check_path", "listener_port", "scale_on_requests_per_target") if k in good
    ]
    if name is None:
        for key in routing:
            problems.add(f"{where}{key} needs load_balancer (the [load_balancer.<name>] that routes to the service)")
        return
    if name not in load_balancers and name in declared_balancers:
        return  # declared and refused: its own problem is reported, not this one again
    if name not in load_balancers:
        problems.add(
            f"{where}load_balancer names {name!r}, which is not defined; defined load balancers: "
            f"{', '.join(load_balancers) or '(none)'}"
        )
        return
    if "port" not in good:
        problems.add(f"{where}load_balancer needs port (the container port the balancer sends traffic to)")
    if load_balancers[name].type == APPLICATION:
        if "listener_port" in good:
            problems.add(f"{where}listener_port is for a network load balancer; {name!r} routes by path or host")
        conditions = len(good.get("path", ())) + ("host" in good)
        if conditions > 5:
            problems.add(f"{where}path and host give {conditions} conditions; an ALB rule takes at most 5")
    else:
        for key in ("path", "host", "health_check_path", "scale_on_requests_per_target"):
            if key in good:
                problems.add(f"{where}{key} is for an application load balancer; {name!r} is a network load balancer")
        if "listener_port" not in good:
            problems.add(
                f"{where}listener_port is needed on the network load balancer {name!r} (its port for this service)"
            )


def _check_shared_balancers(
    problems: _Problems,
    raw: Mapping[str, Any],
    services: Mapping[str, ServiceSpec],
    lbs: Mapping[str, LoadBalancerSpec],
) -> None:
    """Services sharing a balancer must be told apart: by path or host on an ALB, by listener port on an NLB."""
    for lb in lbs.values():
        users = [s for s in services.values() if s.load_balancer == lb.name]
        if not any(isinstance(t, dict) and t.get("load_balancer") == lb.name for t in raw.values()):
            problems.add(f"load_balancer.{lb.name} is used by no service; remove it or set load_balancer on a service")
            continue
        seen: dict[Any, str] = {}
        for svc in users:
            if lb.type == APPLICATION:
                if len(users) > 1 and not svc.paths and svc.host is None:
                    problems.add(
                        f"service.{svc.name}: shares load_balancer {lb.name!r} with "
                        f"{', '.join(u.name for u in users if u is not svc)}; give it path or host to route by"
                    )
                    continue
                route: Any = (svc.host, frozenset(svc.paths))
            else:
                route = svc.listener_port
            if route in seen:
                problems.add(
                    f"service.{svc.name}: routes on load_balancer {lb.name!r} exactly as service.{seen[route]} does; "
                    "give each service its own path, host or listener_port"
                )
            seen.setdefault(route, svc.name)


def _check_across(
    problems: _Problems,
    top: Mapping[str, Any],
    services: Mapping[str, ServiceSpec],
    lbs: Mapping[str, LoadBalancerSpec],
) -> None:
    """What only the whole file shows: names Service Connect would merge, routes that swallow others', and a
    certificate that is not in the fleet's account and region."""
    if top.get("service_connect_namespace"):
        seen: dict[str, str] = {}
        for name in services:
            other = seen.setdefault(name.lower(), name)
            if other != name:
                problems.add(
                    f"service.{name} and service.{other} are one DNS name to Service Connect (names are not case "
                    "sensitive there); rename one"
                )
        cap = quotas.SERVICE_CONNECT_TASKS_PER_SERVICE
        for svc in services.values():
            count, source = svc.largest_count
            if count > cap.number:
                problems.add(
                    cap.message(
                        f"service.{svc.name} ({source})",
                        count,
                        "every service of a fleet with service_connect_namespace uses Service Connect: lower the "
                        "count, split the service, or drop the namespace",
                    )
                )
    for lb in lbs.values():
        users = [svc for svc in services.values() if svc.load_balancer == lb.name]
        if lb.type != APPLICATION or len(users) < 2:
            continue
        for svc in users:
            catch_all = [p for p in svc.paths if p in ("*", "/*")] + ([svc.host] if svc.host == "*" else [])
            if catch_all:
                problems.add(
                    f"service.{svc.name}: {'host' if catch_all[0] == svc.host else 'path'} {catch_all[0]!r} on "
                    f"load_balancer {lb.name!r} matches every request, so the services sharing it would get none "
                    "(or it none, by rule order); give it a path or host of its own"
                )
    account, region = top.get("account"), top.get("region")
    for lb in lbs.values():
        if lb.certificate_arn and account and region:
            parts = lb.certificate_arn.split(":")
            if parts[3] != region or parts[4] != account:
                problems.add(
                    f"load_balancer.{lb.name}.certificate_arn is in region {parts[3]}, account {parts[4]}; a load "
                    f"balancer takes a certificate of its own account and region ({account}, {region})"
                )


def _evidence(problems: _Problems, where: str, table: Mapping[str, Any] | None) -> Evidence | None:
    """Evidence from an allocation or evidence table: a peak and the day of it, together."""
    if table is None:
        return None
    if ("measured_peak_mib" in table) != ("measured_on" in table) or (
        where.endswith("evidence.") and "measured_peak_mib" not in table
    ):
        problems.add(f"{where}measured_peak_mib and measured_on go together: evidence is a peak and the day of it")
        return None
    if "measured_peak_mib" not in table:
        return None
    return Evidence(
        peak_mib=table["measured_peak_mib"],
        measured_on=table["measured_on"],
        source=table.get("evidence_source", "evaluate"),
        p99_mib=table.get("measured_p99_mib"),
        image=table.get("measured_image"),
    )


def _note(problems: _Problems, where: str, table: Mapping[str, Any] | None) -> AllocationNote | None:
    """The allocation note; evidence needs its peak and its day together."""
    if table is None or not {"residency_mib", "peak_working_mib", "shared_failure"} <= set(table):
        return None  # a missing key is a problem already
    evidence = _evidence(problems, where, table)
    if table.get("isolate_host") and "isolation_group" not in table:
        problems.add(f"{where}isolate_host needs isolation_group (the group to keep on hosts of its own)")
        return None
    return AllocationNote(
        residency_mib=table["residency_mib"],
        peak_working_mib=table["peak_working_mib"],
        shared_failure=table["shared_failure"],
        compute_percent=table.get("compute_percent"),
        isolation_group=table.get("isolation_group", ""),
        isolate_host=table.get("isolate_host", False),
        evidence=evidence,
    )


def _metric(table: Mapping[str, Any] | None) -> MetricTarget | None:
    if table is None:
        return None
    return _build(MetricTarget, METRIC, table, dimensions=dict(table.get("dimensions", {})))


def _sidecars(problems: _Problems, where: str, tables: list[Mapping[str, Any]]) -> tuple[SidecarSpec, ...]:
    out = []
    names = {CONTAINER_NAME}
    for i, t in enumerate(tables):
        at = f"{where}sidecar[{i}]."
        if "name" not in t or "image" not in t or "cpu_units" not in t or "memory_mib" not in t:
            continue  # the missing key is a problem already
        if t["name"] in names:
            problems.add(
                f"{at}name {t['name']!r} is taken ({CONTAINER_NAME!r} is the model's); give each container its own"
            )
            continue
        names.add(t["name"])
        if "max_compute_percent" in t and "gpu_budget_mib" not in t:
            problems.add(f"{at}max_compute_percent needs gpu_budget_mib (a container without a budget has no GPU)")
        out.append(
            _build(
                SidecarSpec,
                SIDECAR,
                t,
                command=_strings(problems, f"{at}command", t.get("command", [])),
                environment=_environment(problems, at, t.get("environment", {})),
            )
        )
    return tuple(out)


def _check_paths(problems: _Problems, where: str, good: Mapping[str, Any]) -> None:
    cache = good.get("model_cache_path")
    for path in good.get("writable_paths", ()):
        if cache is not None and (path == cache or path.startswith(cache.rstrip("/") + "/")):
            problems.add(
                f"{where}writable_paths {path!r} is under model_cache_path {cache!r}, which is writable already"
            )
    if good.get("read_only_root_filesystem") is False and good.get("writable_paths"):
        problems.add(
            f"{where}writable_paths is for a read-only root filesystem; with it writable, remove writable_paths"
        )


def _acknowledgments(problems: _Problems, where: str, kind: str, table: Mapping[str, Any]) -> dict[str, str]:
    """A table's acknowledgments: each a warning about this kind of subject (``service``, ``capacity``)."""
    out = {}
    mine, other = acknowledgeable(kind), acknowledgeable("capacity" if kind == "service" else "service")
    if kind == "service":
        mine = mine | {TASK_ROLE_ESCALATION}  # an error on the task role, permitted with a reason (FleetPlan.allow)
    for rule_id, reason in table.items():
        if rule_id in other:
            there = "[capacity.<name>] table the service runs on" if kind == "service" else "[service.<name>] tables"
            problems.add(f"{where}acknowledge {rule_id!r} is not a {kind} warning; acknowledge it in the {there}")
        elif rule_id not in mine:
            problems.add(
                f"{where}acknowledge {rule_id!r} is not a {kind} warning that can be acknowledged; these can: "
                f"{', '.join(sorted(mine))}"
            )
        elif not visible(reason):
            problems.add(f"{where}acknowledge.{rule_id!r} needs a reason (a string with visible characters)")
        else:
            out[rule_id] = reason
    return out


def _tags(problems: _Problems, where: str, table: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in table.items():
        if not isinstance(value, str) or not 1 <= len(key) <= 128 or len(value) > 256 or key.startswith("aws:"):
            problems.add(
                f"{where}tags.{key!r}: a tag is a name of 1..128 characters (not starting aws:) and a string value "
                f"of at most 256, got {value!r}"
            )
        else:
            out[key] = value
    return out


def _check_aws_limits(
    problems: _Problems,
    capacities: Mapping[str, CapacitySpec],
    services: Mapping[str, ServiceSpec],
    load_balancers: Mapping[str, LoadBalancerSpec],
) -> None:
    """AWS's limits (``core.quotas``) that the fleet file alone can break, each refused naming its key."""

    def over(limit: quotas.Limit, key: str, seen: int, fix: str) -> None:
        if seen > limit.number:
            problems.add(limit.message(key, seen, fix))

    over(quotas.CAPACITY_PROVIDERS_PER_CLUSTER, "capacity", len(capacities), "merge capacities or split the fleet")
    for name, capacity in capacities.items():
        over(
            quotas.INSTANCE_TYPES_PER_GROUP,
            f"capacity.{name}.instance_types",
            len(capacity.instance_types),
            "list fewer instance types",
        )
    for name, balancer in load_balancers.items():
        users = [s for s in services.values() if s.load_balancer == name]
        if balancer.type == APPLICATION:
            # One listener rule and one target group a service.
            over(quotas.RULES_PER_ALB, f"load_balancer.{name}", len(users), "spread the services over more balancers")
            over(
                quotas.TARGET_GROUPS_PER_ALB,
                f"load_balancer.{name}",
                len(users),
                "spread the services over more balancers",
            )
        else:
            over(
                quotas.LISTENERS_PER_NLB, f"load_balancer.{name}", len(users), "spread the services over more balancers"
            )
    for name, service in services.items():
        over(
            quotas.CONTAINERS_PER_TASK_DEFINITION,
            f"service.{name}.sidecar",
            1 + len(service.sidecars),
            "run some sidecars as services of their own",
        )
        for path in service.paths:
            over(quotas.PATH_PATTERN_CHARACTERS, f"service.{name}.path {path[:20]!r}...", len(path), "shorten it")
        over(quotas.TAGS_PER_RESOURCE, f"service.{name}.tags", len(service.tags), "drop tags")
        if service.scale_on_metric is not None:
            over(
                quotas.DIMENSIONS_PER_METRIC,
                f"service.{name}.scale_on_metric.dimensions",
                len(service.scale_on_metric.dimensions),
                "use fewer dimensions",
            )


def _load_balancers(problems: _Problems, tables: Mapping[str, Any]) -> dict[str, LoadBalancerSpec]:
    out = {}
    for name, table in _named_tables(problems, "load_balancer", tables):
        before = len(problems.lines)
        good = _check_table(problems, f"load_balancer.{name}.", table, LOAD_BALANCER)
        if good.get("type") == NETWORK and "certificate_arn" in good:
            problems.add(f"load_balancer.{name}.certificate_arn is for an application load balancer (HTTPS)")
        if len(problems.lines) > before:
            continue
        spec = _build(LoadBalancerSpec, LOAD_BALANCER, good, name=name)
        if spec.plaintext_from_internet and spec.plaintext_reason is None:
            what = (
                "a network load balancer passes TCP through without TLS"
                if spec.type == NETWORK
                else "without certificate_arn it serves plain HTTP on port 80"
            )
            problems.add(
                f"load_balancer.{name}: internet_facing = true, and {what} to 0.0.0.0/0, in front of model servers "
                "with no authentication of their own; give certificate_arn (an application load balancer), or "
                'internet_facing = false, or state why it is acceptable with plaintext_reason = "..."'
            )
            continue
        if spec.plaintext_reason is not None and not spec.plaintext_from_internet:
            problems.add(
                f"load_balancer.{name}.plaintext_reason: this balancer "
                + ("is internal to the VPC" if not spec.internet_facing else "serves HTTPS")
                + ", so nothing plain reaches it from the internet; remove plaintext_reason"
            )
            continue
        out[name] = spec
    return out


_SYSTEM_PATHS = ("/proc", "/sys", "/dev")
_HEALTH_CHECK_FIRST = ("CMD", "CMD-SHELL", "NONE")  # what ECS's healthCheck.command takes first


def _check_service_values(
    problems: _Problems,
    where: str,
    good: Mapping[str, Any],
    note: AllocationNote | None,
    own_evidence: Evidence | None = None,
) -> None:
    """Values each well-formed on its own that ECS, Docker or the note's own figures contradict."""
    shm, memory = good.get("shm_size_mib"), good.get("memory_mib")
    if isinstance(shm, int) and isinstance(memory, int) and shm > memory:
        problems.add(
            f"{where}shm_size_mib {shm} is more than the container's memory_mib {memory}: /dev/shm is counted in "
            "the container's memory, so the container would be killed before using it; lower shm_size_mib"
        )
    cap = good.get("max_compute_percent")
    if note is not None and note.compute_percent is not None and isinstance(cap, int) and cap < note.compute_percent:
        problems.add(
            f"{where}max_compute_percent {cap} caps the service below the {note.compute_percent}% its allocation "
            "note says its latency target needs; raise max_compute_percent or the note's compute_percent"
        )
    check = good.get("health_check")
    if isinstance(check, list) and check and check[0] not in _HEALTH_CHECK_FIRST:
        problems.add(
            f"{where}health_check starts with {check[0]!r}; ECS takes CMD (a command and its arguments), CMD-SHELL "
            '(one shell line) or NONE first, such as ["CMD-SHELL", "curl -f http://localhost:8080/health"]'
        )
    paths = [p for p in good.get("writable_paths", ()) if isinstance(p, str)]
    names: dict[str, str] = {}
    for path in paths:
        if path == "/" or path.rstrip("/") in _SYSTEM_PATHS or path.startswith(tuple(f"{p}/" for p in _SYSTEM_PATHS)):
            problems.add(f"{where}writable_paths {path!r} is the root or a system folder; name a folder of the server")
        elif ".." in path.split("/"):
            problems.add(f"{where}writable_paths {path!r} climbs with '..'; write the folder's own path")
        volume = scratch_volume_name(path)
        if volume in names and names[volume] != path:
            problems.add(f"{where}writable_paths {path!r} and {names[volume]!r} would get one volume name; rename one")
        elif path in names.values():
            problems.add(f"{where}writable_paths {path!r} is given twice")
        names.setdefault(volume, path)
    bucket = good.get("model_bucket")
    if isinstance(bucket, str):
        why = _bucket_problem(bucket)
        if why:
            problems.add(f"{where}model_bucket {bucket!r} is not an S3 bucket name: {why}")
    metric = good.get("scale_on_metric")
    if isinstance(metric, Mapping):
        for key, value in (metric.get("dimensions") or {}).items():
            if not isinstance(value, str) or not value:
                problems.add(f"{where}scale_on_metric.dimensions.{key} must be a non-empty string, got {value!r}")
    evidence, at = (note.evidence, f"{where}allocation.") if note is not None else (own_evidence, f"{where}evidence.")
    if evidence is not None:
        if evidence.measured_on > datetime.date.today() + datetime.timedelta(days=1):
            problems.add(f"{at}measured_on {evidence.measured_on} is in the future; give the day it was measured")
        if evidence.p99_mib is not None and evidence.p99_mib > evidence.peak_mib:
            problems.add(f"{at}measured_p99_mib {evidence.p99_mib} is above measured_peak_mib {evidence.peak_mib}")
        # The daemon measures the task, so a peak is held to the task's budget: the model's and its GPU sidecars'.
        budget = good.get("gpu_budget_mib")
        sidecars = [t.get("gpu_budget_mib") for t in good.get("sidecar", []) if isinstance(t, Mapping)]
        if isinstance(budget, int) and all(isinstance(b, int) or b is None for b in sidecars):
            task = budget + sum(b for b in sidecars if isinstance(b, int))
            if evidence.peak_mib > task:
                problems.add(
                    f"{at}measured_peak_mib {evidence.peak_mib} is above the task's GPU budget {task} (gpu_budget_mib "
                    "and its sidecars'), which MPS enforces: the figure cannot come from these budgets; measure again, "
                    "or raise the budget"
                )


def _bucket_problem(name: str) -> str | None:
    """Why ``name`` breaks S3's bucket naming rules beyond the key's pattern, or ``None``."""
    if re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3}){3}", name, re.ASCII):
        return "it is formatted as an IP address"
    if ".." in name or ".-" in name or "-." in name:
        return "a period may not be next to another period or a hyphen"
    for prefix in ("xn--", "sthree-", "amzn-s3-demo-"):
        if name.startswith(prefix):
            return f"the prefix {prefix} is reserved"
    for suffix in ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"):
        if name.endswith(suffix):
            return f"the suffix {suffix} is reserved"
    return None


def _check_task_role(problems: _Problems, where: str, good: Mapping[str, Any]) -> None:
    """A model's task role may not reach the account or IAM: no administrator managed policy, no grant that lets the
    task raise its own permissions or reach other tenants (``core.escalation``) unless the service acknowledges
    ``TaskRoleEscalation`` with a reason, no empty statement."""
    for name in good.get("task_role_managed_policies", ()):
        why = refused_managed_policy(name)
        if why is not None:
            problems.add(f"{where}task_role_managed_policies {name} is refused: {why}")
    documents = []
    for i, statement in enumerate(good.get("task_role_statements", ())):
        at = f"{where}task_role_statements[{i}]"
        actions, resources = statement.get("actions", []), statement.get("resources", [])
        if not actions or not resources:
            problems.add(f"{at}: actions and resources must each name at least one; an empty list grants nothing")
            continue
        documents.append({"Effect": "Allow", "Action": list(actions), "Resource": list(resources)})
    if visible(good.get("acknowledge", {}).get(TASK_ROLE_ESCALATION)):
        return
    unread = [w for name in good.get("task_role_managed_policies", ()) if (w := unread_managed_policy(name))]
    for why in [*escalations(documents), *unread]:
        problems.add(
            f"{where}task_role_statements: {why} [{TASK_ROLE_ESCALATION}]; name the actions and resources the model "
            f"needs, or acknowledge {TASK_ROLE_ESCALATION} with a reason"
        )


def _strings(problems: _Problems, where: str, values: list[Any]) -> tuple[str, ...]:
    if not all(isinstance(v, str) and v for v in values):
        problems.add(f"{where} must be a list of non-empty strings, got {values!r}")
        return ()
    return tuple(values)


_SECRET = re.compile(r"^(ssm:/[A-Za-z0-9_.\-/]+|secretsmanager:[A-Za-z0-9/_+=.@\-]+)$", re.ASCII)


def _secrets(problems: _Problems, where: str, secrets: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for name, ref in secrets.items():
        if not _ENV_NAME.fullmatch(name) or GPU_ENVIRONMENT.match(name):
            problems.add(f"{where}secrets key {name!r} is not a usable variable name (or would steer the GPU)")
        elif name in env:
            problems.add(f"{where}secrets.{name} is also in environment; give each variable once")
        elif not isinstance(ref, str) or not _SECRET.fullmatch(ref):
            problems.add(
                f"{where}secrets.{name} must be 'ssm:/parameter/name' or 'secretsmanager:secret-name', got {ref!r}"
            )
        elif ref.startswith("ssm:") and (".." in ref or len(ref) - len("ssm:") > 2048):
            # SSM Parameter Store: a name is at most 2048 characters (with its path) and has no '..' path part.
            problems.add(f"{where}secrets.{name}: an SSM parameter name has no '..' and at most 2048 characters")
        else:
            out[name] = ref
    return out


# Which fleet-file key a fit rule's finding is about, so the message names what to edit.
_RULE_KEYS = {  # the key to edit when a task alone breaks a rule
    TASK_EXCEEDS_GPU_MEMORY: "gpu_budget_mib",
    TASK_EXCEEDS_HOST_CPU: "cpu_units",
    TASK_EXCEEDS_HOST_MEMORY: "memory_mib",
    BUDGET_BELOW_NEED: "gpu_budget_mib",
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
    if isinstance(name, str) and name.lower().startswith(("aws", "ecs", "fargate")):
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
    declared = [name for name in top.get("capacity", {}) if isinstance(name, str) and _NAME.fullmatch(name)]
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
        shown = ", ".join(f"service.{n}" for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
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
