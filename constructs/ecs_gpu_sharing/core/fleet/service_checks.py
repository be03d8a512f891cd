"""One service's table: its values, environment, secrets, sidecars, evidence and note, task role."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..allocation import AllocationNote, Evidence
from ..dates import latest_today
from ..escalation import (
    TASK_ROLE_ESCALATION,
    TASK_ROLE_WILDCARD,
    escalations,
    nag_wildcards,
    refused_managed_policy,
    unread_managed_policy,
)
from ..mps import GPU_ENVIRONMENT, GPU_ENVIRONMENT_REASON
from ..planner import MANAGED_INSTANCES
from ..shape import HEALTH_CHECK_FIRST
from ..text import visible
from .fleet_checks import _acknowledgments, _check_exposure, _tags
from .keys import EVIDENCE, METRIC, NOTE, SERVICE, SIDECAR, STATEMENT
from .model import CapacitySpec, LoadBalancerSpec, scratch_volume_name
from .service_spec import MetricTarget, ServiceSpec, SidecarSpec, Statement
from .tables import _build, _check_table, _named_tables, _Problems
from .values import AWSVPC, BRIDGE, CONTAINER_NAME, ENV_NAME


def _environment(problems: _Problems, where: str, env: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in env.items():
        if not ENV_NAME.fullmatch(key):
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
        if "kms_key_arn" in good and not (good.get("secrets") or "model_bucket" in good):
            problems.add(
                f"{where}kms_key_arn is given, but the service names no secrets and no model_bucket for it to "
                "decrypt; remove it, or name what it encrypts"
            )
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
    return _build(Evidence, EVIDENCE, table)


def _note(problems: _Problems, where: str, table: Mapping[str, Any] | None) -> AllocationNote | None:
    """The allocation note; evidence needs its peak and its day together."""
    if table is None or not {"residency_mib", "peak_working_mib", "shared_failure"} <= set(table):
        return None  # a missing key is a problem already
    evidence = _evidence(problems, where, table)
    if table.get("isolate_host") and "isolation_group" not in table:
        problems.add(f"{where}isolate_host needs isolation_group (the group to keep on hosts of its own)")
        return None
    return _build(AllocationNote, NOTE, table, evidence=evidence)


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


_SYSTEM_PATHS = ("/proc", "/sys", "/dev")


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
    if isinstance(check, list) and check and check[0] not in HEALTH_CHECK_FIRST:
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
        if evidence.measured_on > latest_today():
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
    ``TaskRoleEscalation`` with a reason, no empty statement, and no wildcard cdk-nag refuses in the deployable app
    unless the service acknowledges ``TaskRoleWildcard`` with a reason."""
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
        wildcards = nag_wildcards(actions, resources)
        if wildcards and not visible(good.get("acknowledge", {}).get(TASK_ROLE_WILDCARD)):
            problems.add(
                f"{at}: a wildcard, which the deployable app's cdk-nag check refuses (AwsSolutions-IAM5 "
                f"{', '.join(wildcards)}) [{TASK_ROLE_WILDCARD}]; name each action and resource, or acknowledge "
                f"{TASK_ROLE_WILDCARD} with a reason, which the app writes into cdk-nag's acknowledgment"
            )
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
        if not ENV_NAME.fullmatch(name) or GPU_ENVIRONMENT.match(name):
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
