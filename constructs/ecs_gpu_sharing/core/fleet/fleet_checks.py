"""The fleet's other tables and what holds across them: capacities, load balancers, exposure, AWS's limits."""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping
from typing import Any

from .. import quotas
from ..ami_release import check_release
from ..capacity_facts import host_facts
from ..errors import GpuSharingError
from ..escalation import TASK_ROLE_ESCALATION, TASK_ROLE_WILDCARD
from ..planner import ECS_DEFAULT_MAX_PERCENT, MANAGED_INSTANCES
from ..rules import acknowledgeable
from ..text import few, visible
from .keys import CAPACITY, LOAD_BALANCER
from .model import CapacitySpec, LoadBalancerSpec
from .service_spec import ServiceSpec
from .tables import _build, _check_table, _named_tables, _Problems, _value
from .values import APPLICATION, NETWORK


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
        kind = _value(good, CAPACITY, "kind")
        release = _value(good, CAPACITY, "ami_release")
        if kind == MANAGED_INSTANCES:
            for key in ("ami_release", "ami_release_verified", "min_instances", "root_volume_gib"):
                if key in table:
                    why = {
                        "min_instances": "Managed Instances keeps no minimum of hosts",
                        "root_volume_gib": "it sizes an Auto Scaling group's launch template; a Managed Instances "
                        "host's images and caches go on its data volume, which task_volume_gib sizes",
                    }.get(key, "AWS owns and patches the host image there: there is no AMI to pin")
                    problems.add(f'{where}{key} does not apply to kind = "managed-instances": {why}; remove it')
        else:
            if "task_volume_gib" in table:
                problems.add(
                    f'{where}task_volume_gib applies to kind = "managed-instances" (its hosts\' data volume); an EC2 '
                    "capacity's hosts keep images and caches on their root volume: use root_volume_gib"
                )
            try:
                check_release(release, verified=_value(good, CAPACITY, "ami_release_verified"))
            except GpuSharingError as error:
                problems.add(f"{where}ami_release: {error}")
        min_i, max_i = _value(good, CAPACITY, "min_instances"), good.get("max_instances")
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
                gpu_margin_mib=_value(good, CAPACITY, "gpu_margin_mib"),
                ecs_gpu_memory_mib=good.get("ecs_gpu_memory_mib"),
                owner=f"capacity.{name}",
            )
        except GpuSharingError as error:
            problems.add(str(error))
            continue
        capacities[name] = _build(CapacitySpec, CAPACITY, good, name=name, facts=facts, acknowledge=acknowledge)
    return capacities


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
        k
        for k in ("path", "host", "health_check_path", "listener_port", "scale_on_requests_per_target", "drain_seconds")
        if k in good
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
                        f"{few([u.name for u in users if u is not svc])}; give it path or host to route by"
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
    certificate that is not in the fleet's account and region, and a KMS key of another region."""
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
    for svc in services.values():
        if svc.request_timeout_seconds is not None and not (top.get("service_connect_namespace") and svc.port):
            problems.add(
                f"service.{svc.name}.request_timeout_seconds is for a service called through Service Connect (a "
                "port, in a fleet with service_connect_namespace); remove it, or give both"
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
    for svc in services.values():
        key_region = svc.kms_key_arn.split(":")[3] if svc.kms_key_arn else None
        if key_region and region and key_region != region:
            problems.add(
                f"service.{svc.name}.kms_key_arn is in region {key_region}; Secrets Manager, SSM and S3 decrypt only "
                f"with a key of their own region ({region})"
            )


def _acknowledgments(problems: _Problems, where: str, kind: str, table: Mapping[str, Any]) -> dict[str, str]:
    """A table's acknowledgments: each a warning about this kind of subject (``service``, ``capacity``). The rule
    table is read only where there are some (its rules checked outside the plan are imported on that first read)."""
    if not table:
        return {}
    out = {}
    mine, other = acknowledgeable(kind), acknowledgeable("capacity" if kind == "service" else "service")
    if kind == "service":
        mine = mine | {TASK_ROLE_ESCALATION, TASK_ROLE_WILDCARD}  # errors on the task role, permitted with a reason
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


# The characters of a tag's name and value on the resources the fleet file's tags go on (IAM roles, ECS task
# definitions and services, target groups), as their CloudFormation registry schemas write it.
TAG_PATTERN = r"[\p{L}\p{Z}\p{N}_.:/=+\-@]"
_TAG_SIGNS = "_.:/=+-@"


def _not_tag_characters(text: str) -> list[str]:
    """The characters of ``text`` outside TAG_PATTERN (\\p{L}, \\p{Z}, \\p{N}: Unicode's letters, separators and
    numbers), each once."""
    bad = (c for c in text if c not in _TAG_SIGNS and unicodedata.category(c)[0] not in "LZN")
    return list(dict.fromkeys(bad))


def _tags(problems: _Problems, where: str, table: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in table.items():
        if not isinstance(value, str) or not 1 <= len(key) <= 128 or len(value) > 256 or key.startswith("aws:"):
            problems.add(
                f"{where}tags.{key!r}: a tag is a name of 1..128 characters (not starting aws:) and a string value "
                f"of at most 256, got {value!r}"
            )
        elif _not_tag_characters(key) or _not_tag_characters(value):
            shown = ", ".join(repr(c) for c in _not_tag_characters(key) or _not_tag_characters(value))
            problems.add(
                f"{where}tags.{key!r}: {'its name' if _not_tag_characters(key) else repr(value)} has {shown}; IAM "
                "and ECS take letters, digits, spaces and _ . : / = + - @ in a tag's name and value"
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
            # Each task a target while it runs; a deployment registers its new tasks beside the old (ECS's maximum
            # percent, the app's services keep ECS's default), so the targets peak at the surge.
            over(
                quotas.TARGETS_PER_ALB,
                f"load_balancer.{name} ({few([s.name for s in users])})",
                sum(s.largest_count[0] * ECS_DEFAULT_MAX_PERCENT // 100 for s in users),
                "spread the services over more balancers, or lower their counts (desired_count, max_tasks); the "
                "quota can be raised in Service Quotas (L-7E6692B2)",
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
        if good.get("type") == NETWORK and "idle_timeout_seconds" in good:
            problems.add(
                f"load_balancer.{name}.idle_timeout_seconds is for an application load balancer (a network load "
                "balancer's TCP idle timeout is its listeners' own, 350 s by default)"
            )
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
