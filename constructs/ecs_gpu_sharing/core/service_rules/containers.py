"""A task's containers: what ECS refuses of a container definition and the ECS agent cannot start, though moto and
aws-ecs take it.

Dependencies (``dependsOn``): a task whose containers wait for a container it does not have, wait for each other in a
circle, wait for a health check nobody runs, or wait for an essential container to exit, is never started by the
agent, or stopped as it starts (amazon-ecs-agent: agent/engine/dependencygraph/graph.go, agent/api/task/task.go).
Whether RegisterTaskDefinition refuses some of these first, AWS's pages do not say; either way the service never
runs. Health checks: ECS states each number's range in words, which botocore's model (and so moto) does not carry,
and aws-ecs checks only some of them (its timeout up to 120 s, where ECS says 60). Sysctls: the runtime sets only
those a container has its own copy of (its IPC, network and UTS namespaces'), as the ECS API model lists them and runc
checks them (libcontainer/configs/validate/validator.go, ConfigValidator.sysctl); any other fails the container as it
is created."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..capacity_facts import FIRELENS_DRIVER
from ..rule_family import PREFIX
from ..shape import HEALTH_CHECK_FIRST, HEALTH_CHECK_RANGES, camel_keys, folded_keys
from .base import (
    ECS_API,
    Finding,
    Resource,
    ServiceRule,
    Templates,
    _containers,
    _network_mode,
    efs_volumes,
    literal_number,
)
from .names import ECS_NAME

DEPENDENCIES_RESOLVE = f"{PREFIX}ContainerDependenciesResolve"
EXITING_DEPENDENCY_NOT_ESSENTIAL = f"{PREFIX}DependencyThatExitsIsNotEssential"
HEALTH_CHECK_IN_RANGE = f"{PREFIX}ContainerHealthCheckRanges"
SYSCTL_NAMESPACED = f"{PREFIX}ContainerSysctlNamespaced"
MOUNT_POINT_VOLUME = f"{PREFIX}MountPointNamesAVolume"
CONTAINER_NAMES = f"{PREFIX}ContainerNames"
FIRELENS_PAIRED = f"{PREFIX}FireLensRouterAndDriverTogether"
CONTAINER_NAME = ECS_NAME  # ECS API Reference, ContainerDefinition, name: the same pattern
EFS_VOLUME_OPTIONS = f"{PREFIX}EfsVolumeOptions"
AWSLOGS_OPTIONS = f"{PREFIX}AwslogsOptions"
# The options Docker's awslogs driver takes in any release (moby, daemon/logger/awslogs/cloudwatchlogs.go,
# ValidateLogOpt: any other key is "unknown log opt" and the container is not created), the two every driver takes
# (daemon/logger/factory.go, builtInLogOpts), and awslogs-stream-prefix, which ECS turns into the stream's name
# (Amazon ECS Developer Guide, 'Using the awslogs log driver').
AWSLOGS_KEYS = frozenset(
    {
        *(
            f"awslogs-{key}"
            for key in (
                "region",
                "endpoint",
                "group",
                "stream",
                "create-group",
                "create-stream",
                "datetime-format",
                "datetime-as-event-time",
                "datetime-timezone",
                "multiline-pattern",
                "credentials-endpoint",
                "force-flush-interval-seconds",
                "max-buffered-events",
                "format",
                "stream-prefix",
            )
        ),
        "tag",
        "mode",
        "max-buffer-size",
    }
)
IPC_SYSCTLS = frozenset(
    f"kernel.{name}" for name in ("msgmax", "msgmnb", "msgmni", "sem", "shmall", "shmmax", "shmmni", "shm_rmid_forced")
)  # and fs.mqueue.* (IPC), net.* (network): ECS API Reference, SystemControl, value
_AGENT = "amazon-ecs-agent"


def _dependencies(container: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A container's ``dependsOn`` as (container name, condition); tokens are left out."""
    found = []
    for item in container.get("dependsOn") or []:
        dependency = camel_keys(item)
        name, condition = dependency.get("containerName"), dependency.get("condition")
        if isinstance(name, str) and isinstance(condition, str):
            found.append((name, condition))
    return found


def _essential(container: Mapping[str, Any]) -> bool:
    return container.get("essential") not in (False, "false")  # ECS's default is essential


def _health_checked(container: Mapping[str, Any]) -> bool:
    command = camel_keys(container.get("healthCheck")).get("command")
    return isinstance(command, list) and bool(command) and command[0] != "NONE"


def _cycles(edges: Mapping[str, list[str]]) -> list[list[str]]:
    """A circle in each group of containers that wait on one another (a depth-first search's back edges), as the
    names along it, the first repeated at the end."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        for after in edges.get(name, []):
            if after in path:
                cycle = [*path[path.index(after) :], after]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    found.append(cycle)
            elif after not in done:
                visit(after, [*path, after])
        done.add(name)

    for name in edges:
        if name not in done:
            visit(name, [name])
    return found


def _by_name(task: Resource) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in _containers(task) if isinstance(c.get("name"), str)}


def dependencies_resolve(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        containers = _by_name(task)
        edges = {name: [n for n, _ in _dependencies(c) if n in containers] for name, c in containers.items()}
        for name, c in containers.items():
            for other, condition in _dependencies(c):
                if other not in containers:
                    yield (
                        task,
                        f"container {name} waits for {other!r}, a container this task definition does not have "
                        f"(it has {', '.join(sorted(containers))}); the ECS agent stops a task whose dependency does "
                        "not exist, so name one of them",
                    )
                elif condition == "HEALTHY" and not _health_checked(containers[other]):
                    yield (
                        task,
                        f"container {name} waits for {other} to be HEALTHY, but {other} has no health check, so it "
                        f"never reports healthy and {name} never starts; give {other} a health_check, or wait for "
                        "START",
                    )
        for cycle in _cycles(edges):
            yield (
                task,
                f"containers wait for each other in a circle ({' → '.join(cycle)}), so the ECS agent can start none "
                "of them; drop one of these dependencies",
            )


def exiting_dependency_not_essential(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        containers = _by_name(task)
        for name, c in containers.items():
            for other, condition in _dependencies(c):
                if condition in ("COMPLETE", "SUCCESS") and other in containers and _essential(containers[other]):
                    yield (
                        task,
                        f"container {name} waits for {other} to exit ({condition}), but {other} is "
                        "essential, and the task stops when an essential container exits, so "
                        f"{name} never starts; give {other} essential=False",
                    )


def health_check_ranges(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        for c in _containers(task):
            check = camel_keys(c.get("healthCheck"))
            if not check:
                continue
            wrong = []
            command = check.get("command")
            first = command[0] if isinstance(command, list) and command else None
            if isinstance(first, str) and first not in HEALTH_CHECK_FIRST:
                wrong.append(f"a command starting with {first!r} (CMD, CMD-SHELL or NONE first)")
            for field, (low, high) in HEALTH_CHECK_RANGES.items():
                value = literal_number(check.get(field))
                if value is not None and not low <= value <= high:
                    wrong.append(f"{field} {value} ({low} to {high})")
            if wrong:
                longer = (literal_number(check.get("startPeriod")) or 0) > HEALTH_CHECK_RANGES["startPeriod"][1]
                yield (
                    task,
                    f"container {c.get('name')}'s health check has {', '.join(wrong)}, which ECS refuses when the "
                    "task definition is registered; use values in range"
                    + (
                        " (a model that loads for longer gets it from more retries or a longer interval, and from "
                        "the service's health_check_grace_period)"
                        if longer
                        else ""
                    ),
                )


def sysctls_namespaced(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        host_network, host_ipc = _network_mode(task) == "host", task.props.get("IpcMode") == "host"
        for c in _containers(task):
            for item in c.get("systemControls") or []:
                name = camel_keys(item).get("namespace")
                if not isinstance(name, str):
                    continue  # not known at synth
                ipc, network = name in IPC_SYSCTLS or name.startswith("fs.mqueue."), name.startswith("net.")
                if name == "kernel.domainname":  # UTS: ECS has no UTS mode, and Docker keeps one with host networking
                    continue
                if not (ipc or network):
                    why = f"{name!r}, which is not a namespaced sysctl a container has its own copy of"
                elif (network and host_network) or (ipc and host_ipc):
                    why = f"{name!r} in the host {'network' if network else 'IPC'} mode, where it is the host's"
                else:
                    continue
                yield (
                    task,
                    f"container {c.get('name')} sets the sysctl {why}: the container runtime refuses it, so the "
                    "container never starts; set only kernel.msg*, kernel.sem, kernel.shm* of ECS's list, "
                    "fs.mqueue.*, net.* or kernel.domainname (not in that mode), or set the host's value in the "
                    "hosts' user data",
                )


def mount_point_volume(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        volumes = task.props.get("Volumes", [])
        if not isinstance(volumes, list):
            continue  # a token: the names are not known here
        names = {camel_keys(v).get("name") for v in volumes}
        for name, c in _by_name(task).items():
            for mount in c.get("mountPoints") or []:
                source = camel_keys(mount).get("sourceVolume")
                if isinstance(source, str) and source not in names:
                    known = ", ".join(sorted(n for n in names if isinstance(n, str))) or "none"
                    yield (
                        task,
                        f"container {name} mounts volume {source!r}, which the task definition does not declare "
                        f"(its volumes: {known}); add the volume (task_definition.add_volume) or mount one it has",
                    )


def efs_volume_options(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        for name, config in efs_volumes(task):
            auth = folded_keys(config.get("authorizationconfig"))
            encrypted = config.get("transitencryption") == "ENABLED"
            needs = [
                what
                for what, used in (
                    ("IAM authorization", auth.get("iam") == "ENABLED"),
                    ("an access point", auth.get("accesspointid") is not None),
                )
                if used
            ]
            if needs and not encrypted and isinstance(config.get("transitencryption", "DISABLED"), str):
                yield (
                    task,
                    f"its EFS volume {name} uses {' and '.join(needs)} without transit encryption, which ECS requires "
                    "with them; set transit_encryption='ENABLED' in its EfsVolumeConfiguration",
                )
            root = config.get("rootdirectory")
            if auth.get("accesspointid") is not None and isinstance(root, str) and root not in ("", "/"):
                yield (
                    task,
                    f"its EFS volume {name} names an access point and the root directory {root!r}; with an access "
                    "point ECS takes only / or none (the access point's own path applies): drop root_directory, or "
                    "set it on the access point",
                )


def container_names(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        seen: set[str] = set()
        for c in _containers(task):
            name = c.get("name")
            if not isinstance(name, str):
                continue  # a token: its text is not known here
            if not CONTAINER_NAME.fullmatch(name):
                yield (
                    task,
                    f"container name {name[:64]!r} is not up to 255 letters, digits, underscores and hyphens; "
                    "rename it",
                )
            elif name in seen:
                yield (
                    task,
                    f"two containers are named {name!r}, and a task definition's container names are unique; give "
                    "one another name (container_name)",
                )
            seen.add(name)


def _log_driver(container: Mapping[str, Any]) -> Any:
    config = container.get("logConfiguration")
    return camel_keys(config).get("logDriver") if isinstance(config, Mapping) else None


def firelens_paired(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        containers = _containers(task)
        routers = [str(c.get("name")) for c in containers if c.get("firelensConfiguration")]
        logging = [str(c.get("name")) for c in containers if _log_driver(c) == FIRELENS_DRIVER]
        if logging and not routers:
            yield (
                task,
                f"container {', '.join(logging)} logs with the {FIRELENS_DRIVER} driver and no container routes them "
                "(none has a firelensConfiguration); add the log router (task_definition.add_firelens_log_router), or "
                "log with awslogs",
            )
        elif routers and not logging:
            yield (
                task,
                f"container {', '.join(routers)} is a FireLens log router and no container logs through it (the "
                f"{FIRELENS_DRIVER} driver: ecs.LogDrivers.firelens); route a container's logs to it, or drop the "
                "router's firelensConfiguration",
            )


def _awslogs_problems(options: Mapping[str, Any]) -> Iterator[str]:
    unknown = sorted(str(k) for k in options if k not in AWSLOGS_KEYS)
    if unknown:
        yield (
            f"its awslogs options {', '.join(repr(k) for k in unknown)} are none Docker's awslogs driver takes, so the "
            "host's Docker refuses to create the container (unknown log opt); spell them as the awslogs driver's "
            "options are spelled"
        )
    group = options.get("awslogs-group")
    if group is None or group == "":
        yield "its awslogs configuration names no 'awslogs-group', which Docker's awslogs driver requires"
    create = options.get("awslogs-create-group")
    if isinstance(create, str) and create != "true":
        yield (
            f"its 'awslogs-create-group' is {create!r}, and RegisterTaskDefinition takes only 'true' (leave the "
            "option out for false)"
        )
    if "awslogs-datetime-format" in options and "awslogs-multiline-pattern" in options:
        yield (
            "it sets awslogs-datetime-format and awslogs-multiline-pattern, which Docker's awslogs driver refuses "
            "at the same time; keep one"
        )
    mode = options.get("mode")
    if isinstance(mode, str) and mode not in ("blocking", "non-blocking", ""):
        yield f"its log mode {mode!r} is neither 'blocking' nor 'non-blocking'"
    if "max-buffer-size" in options and mode != "non-blocking" and not isinstance(mode, Mapping):
        yield "it sets max-buffer-size, which Docker takes only with mode 'non-blocking'"


def awslogs_options(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        for c in _containers(task):
            config = c.get("logConfiguration")
            config = camel_keys(config) if isinstance(config, Mapping) else {}
            options = config.get("options")
            if config.get("logDriver") != "awslogs" or not isinstance(options, Mapping):
                continue
            if len(options) == 1 and next(iter(options)) in ("Ref", "Fn::If", "Fn::GetAtt", "Fn::ImportValue"):
                continue  # the options are chosen at deploy
            for problem in _awslogs_problems(options):
                yield task, f"container {c.get('name')}: {problem}"


CONTAINER_RULES: tuple[ServiceRule, ...] = (
    ServiceRule(
        DEPENDENCIES_RESOLVE,
        "Amazon ECS (the container agent)",
        "each container a container waits for is one of its task's, the waits form no circle, and a container "
        "waited on to be HEALTHY has a health check",
        f'{ECS_API}, ContainerDependency, condition: HEALTHY "requires that the dependent container has health checks '
        f'configured"; {_AGENT}, agent/engine/dependencygraph/graph.go: a dependency on a container the task does not '
        "have is a terminal error, and a task whose containers cannot all start in some order is not started "
        "(ValidDependencies)",
        dependencies_resolve,
    ),
    ServiceRule(
        EXITING_DEPENDENCY_NOT_ESSENTIAL,
        "Amazon ECS (the container agent)",
        "a container waited on to exit (COMPLETE or SUCCESS) is not essential",
        f'{ECS_API}, ContainerDependency, condition: COMPLETE and SUCCESS "can\'t be set on an essential container"; '
        f"{_AGENT}, agent/api/task/task.go: a stopped essential container sets the task's desired status to STOPPED",
        exiting_dependency_not_essential,
    ),
    ServiceRule(
        HEALTH_CHECK_IN_RANGE,
        "Amazon ECS",
        "a container health check's command starts with CMD, CMD-SHELL or NONE; its interval is 5 to 300 s, its "
        "timeout 2 to 60 s, its retries 1 to 10, its startPeriod 0 to 300 s",
        f'{ECS_API}, HealthCheck: command "must start with CMD ... or CMD-SHELL"; interval "You may specify between 5 '
        'and 300 seconds"; timeout "between 2 and 60 seconds"; retries "between 1 and 10 retries"; startPeriod '
        '"between 0 and 300 seconds"',
        health_check_ranges,
    ),
    ServiceRule(
        SYSCTL_NAMESPACED,
        "Amazon ECS (Docker)",
        "a container's systemControls name only sysctls of its own namespaces: the IPC ones ECS lists, fs.mqueue.*, "
        "net.* and kernel.domainname, and none of a namespace the task shares with the host (net.* in the host network "
        "mode, the IPC ones in the host IPC mode)",
        f'{ECS_API}, SystemControl, value: "Valid IPC namespace values: kernel.msgmax | kernel.msgmnb | '
        "kernel.msgmni | kernel.sem | kernel.shmall | kernel.shmmax | kernel.shmmni | kernel.shm_rmid_forced, and "
        'Sysctls that start with fs.mqueue.*. Valid network namespace values: Sysctls that start with net.*"; '
        'ContainerDefinition, systemControls: "For tasks that use the host network mode, the network namespace '
        'systemControls aren\'t supported"; runc, libcontainer/configs/validate/validator.go: any other sysctl "is '
        'not in a separate kernel namespace"',
        sysctls_namespaced,
    ),
    ServiceRule(
        CONTAINER_NAMES,
        "Amazon ECS",
        "a task definition's container names are unique, each up to 255 letters, digits, underscores and hyphens",
        f'{ECS_API}, ContainerDefinition, name: "Up to 255 letters (uppercase and lowercase), numbers, underscores, '
        'and hyphens are allowed"; RegisterTaskDefinition answers ClientException "Container names must be unique '
        'within a Task Definition" (Shippable/support#2946, metaps/genova#291)',
        container_names,
    ),
    ServiceRule(
        MOUNT_POINT_VOLUME,
        "Amazon ECS",
        "each mount point of a container names a volume its task definition declares",
        f'{ECS_API}, MountPoint, sourceVolume: "Must be a volume name referenced in the name parameter of task '
        'definition volume"; RegisterTaskDefinition answers ClientException "Unknown volume" (ansible/ansible#35751)',
        mount_point_volume,
    ),
    ServiceRule(
        FIRELENS_PAIRED,
        "Amazon ECS",
        f"a task definition with a FireLens log router has a container that logs with the {FIRELENS_DRIVER} driver, "
        "and one with that driver has a router",
        'RegisterTaskDefinition answers ClientException "When a firelensConfiguration object is specified, at least '
        'one container has to be configured with the awsfirelens log driver" (aws/amazon-cloudwatch-logs-for-fluent-bit'
        '#20) and "When awsfirelens log driver is specified in log configuration, a firelens configuration object must '
        "be configured in one of the containers\" (fabfuel/ecs-deploy#164); Amazon ECS Developer Guide, 'Send Amazon "
        "ECS logs to an AWS service or AWS Partner' (FireLens)",
        firelens_paired,
    ),
    ServiceRule(
        AWSLOGS_OPTIONS,
        "Amazon ECS (Docker on the host)",
        "an awslogs log configuration names its log group, sets only options the awslogs driver takes, "
        "awslogs-create-group only to true, and not both awslogs-datetime-format and awslogs-multiline-pattern",
        "RegisterTaskDefinition answers ClientException \"Log driver awslogs option 'awslogs-create-group' should "
        "only be set to 'true', else omit option\" (terraform-linters/tflint-ruleset-aws#348); moby, "
        'daemon/logger/awslogs/cloudwatchlogs.go, ValidateLogOpt: "unknown log opt", "must specify a value for log '
        "opt 'awslogs-group'\", \"you cannot configure log opt 'awslogs-datetime-format' and "
        "'awslogs-multiline-pattern' at the same time\"; daemon/logger/factory.go, ValidateLogOpts: mode and "
        "max-buffer-size",
        awslogs_options,
    ),
    ServiceRule(
        EFS_VOLUME_OPTIONS,
        "Amazon ECS",
        "an EFS volume with IAM authorization or an access point has transit encryption, and one with an access point "
        "no root directory but /",
        f'{ECS_API}, EFSVolumeConfiguration, transitEncryption: "Transit encryption must be turned on if Amazon EFS '
        'IAM authorization is used"; EFSAuthorizationConfig, accessPointId: "the root directory value specified in the '
        'EFSVolumeConfiguration must either be omitted or set to /" and "If an access point is used, transit '
        'encryption must be on"',
        efs_volume_options,
    ),
)
