"""What a task on a GPU host may do, as an allow-list over its task definition as rendered. Pure Python.

A task that shares a GPU host with other teams' models may do what is listed here and nothing else: every property
of the task definition, of each container and of each volume is either judged (its value must be one the list
allows) or known to stay inside the task; a property this module does not know is refused until it is classified
(a test holds the classification to botocore's ECS model, so a property AWS adds is looked at before it is let
through). Values are read in every spelling CloudFormation and the ECS agent accept: PascalCase or camelCase keys,
booleans as ``true``/``"true"``/``"True"``, capabilities with or without ``CAP_`` in any case, device and host paths
normalised before they are compared. A value that cannot be read at synth (a token) is not one the list allows.

The rules run on shared-GPU task definitions when they validate (``SharedGpuTaskDefinition``), and over the written
templates for every task definition that a service runs on a GPU capacity (``core.tenancy``), escape hatches
included. ``FleetPlan.allow(scope, rule_id, reason)`` is the one way to permit a finding; the plan lists each
allowance with its reason. The library's telemetry daemon is allowed its GPU device files and two read-only host
paths that way.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .mps import GPU_ENVIRONMENT, GPU_ENVIRONMENT_REASON
from .rule_family import PREFIX, Family, Level, Source
from .shape import camel_keys
from .telemetry import EVIDENCE_LOG_GROUP_PREFIX, STOPPED_TASKS_LOG_GROUP_PREFIX
from .tokens import text_pattern

GPU_STEERING_ENVIRONMENT = f"{PREFIX}GpuSteeringEnvironment"
GPU_DEVICE_MAPPED = f"{PREFIX}GpuDeviceMapped"
DEVICE_MAPPED = f"{PREFIX}DeviceMapped"
PRIVILEGED_CONTAINER = f"{PREFIX}PrivilegedContainer"
HOST_CAPABILITY = f"{PREFIX}HostCapability"
HOST_NAMESPACE = f"{PREFIX}HostNamespace"
NETWORK_MODE = f"{PREFIX}NetworkModeNotAllowed"
HOST_PATH = f"{PREFIX}HostPathMounted"
SECURITY_OPTION = f"{PREFIX}SecurityOptionSet"
UNKNOWN_PROPERTY = f"{PREFIX}TaskPropertyNotAllowed"
EVIDENCE_LOGS = f"{PREFIX}EvidenceLogGroupNamed"
REALTIME_PRIORITY = f"{PREFIX}RealtimePriority"


@dataclass(frozen=True)
class Guard:
    rule_id: str
    about: str  # "container", "task definition" or "volume"
    explanation: str


GUARDS: tuple[Guard, ...] = (
    Guard(
        NETWORK_MODE,
        "task definition",
        "a task on a GPU host runs in the bridge or awsvpc network mode: a host-network container is past the "
        "instance metadata hop limit and reaches the instance role",
    ),
    Guard(HOST_NAMESPACE, "task definition", "a task on a GPU host may not share the host's pid or ipc namespace"),
    Guard(
        PRIVILEGED_CONTAINER,
        "container",
        "no container on a GPU host runs privileged (in any spelling): it would see every GPU and the host's devices",
    ),
    Guard(
        HOST_CAPABILITY,
        "container",
        "a container may drop capabilities, and add back only those Docker gives every container by default "
        "(moby's oci/caps/defaults.go); any other capability reaches past the container",
    ),
    Guard(
        SECURITY_OPTION,
        "container",
        "no docker security option except no-new-privileges: the others (apparmor, seccomp, label) only loosen",
    ),
    Guard(
        GPU_DEVICE_MAPPED,
        "container",
        "no container maps an NVIDIA device (/dev/nvidia*, /dev/char/195:*): it bypasses ECS's GPU assignment and the "
        "MPS limits (the library's telemetry daemon is allowed, FleetPlan.allow)",
    ),
    Guard(DEVICE_MAPPED, "container", "no container on a GPU host maps a host device"),
    Guard(
        HOST_PATH,
        "volume",
        "no volume reaches a host path (a host volume's sourcePath, or a docker volume with driver options): "
        "/var/run/docker.sock, the MPS pipe folder /run/mps-ecs and / are other tenants' too; task-scoped "
        "volumes, docker volumes of the local driver without options, EFS and EBS volumes are allowed",
    ),
    Guard(
        GPU_STEERING_ENVIRONMENT,
        "container",
        "no container on a GPU host sets NVIDIA_*, CUDA_VISIBLE_DEVICES or CUDA_MPS_* in environment or secrets, "
        "nor reads environment files, whose variables the synth cannot see: they choose GPUs and MPS limits past "
        "ECS's assignment",
    ),
    Guard(
        REALTIME_PRIORITY,
        "container",
        "no container raises its real-time priority limit (ulimit rtprio): with it a process may run SCHED_FIFO "
        "threads without any capability (sched(7), RLIMIT_RTPRIO), and cgroup v2 does not bound real-time threads' "
        "CPU where the kernel lacks RT_GROUP_SCHED (Linux, Documentation/admin-guide/cgroup-v2.rst), so they take the "
        "host's CPUs from every other tenant and from the ECS agent",
    ),
    Guard(
        EVIDENCE_LOGS,
        "container",
        "no container's log configuration names the evidence or stopped-task log groups: what evaluate believes is "
        "written by the telemetry daemon and EventBridge alone",
    ),
    Guard(
        UNKNOWN_PROPERTY,
        "task definition",
        "a property this library has not classified (or a value it cannot read) is refused until it is: an allow-list "
        "lets through only what is known to stay inside the task",
    ),
)

GUARD_RULES = tuple(g.rule_id for g in GUARDS)
RULES = Family("container guards")
for _guard in GUARDS:
    RULES.declare(_guard.rule_id, Level.ERROR, _guard.about, Source.TASK_DEFINITION, _guard.explanation)
MPS_ENVIRONMENT_IN_COMMAND = RULES.declare(
    f"{PREFIX}MpsVariableInCommand",
    Level.WARNING,
    "container",
    Source.TASK_DEFINITION,
    "a command or entry point that sets or unsets CUDA_MPS_* (or the visible devices) changes what MPS holds the "
    "process to, where no guard can judge it",
)

# moby's oci/caps/defaults.go: what Docker gives every container. Adding one back after a drop grants nothing a
# default container lacks; everything else (SYS_ADMIN, SYS_MODULE, DAC_READ_SEARCH, NET_ADMIN, BPF...) does.
DOCKER_DEFAULT_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "NET_RAW",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)

NETWORK_MODES = frozenset({"bridge", "awsvpc"})
NVIDIA_CHARACTER_MAJOR = "195"  # /proc/devices: the nvidia driver's character devices (nvidia0..N, nvidiactl)

# Every property, classified: judged below, or neutral (it stays inside the task). Keys are camelCase.
TASK_NEUTRAL = frozenset(
    {
        "cpu",
        "memory",
        "family",
        "tags",
        "executionRoleArn",
        "taskRoleArn",  # judged by core.escalation on the templates
        "requiresCompatibilities",
        "runtimePlatform",
        "placementConstraints",
        "ephemeralStorage",
        "proxyConfiguration",
        "inferenceAccelerators",
        "enableFaultInjection",  # faults into the task's own network only (host mode is refused)
    }
)
TASK_JUDGED = frozenset({"containerDefinitions", "networkMode", "pidMode", "ipcMode", "volumes"})
CONTAINER_NEUTRAL = frozenset(
    {
        "command",
        "cpu",
        "credentialSpecs",
        "dependsOn",
        "disableNetworking",
        "dnsSearchDomains",
        "dnsServers",
        "dockerLabels",
        "entryPoint",
        "essential",
        "extraHosts",
        "firelensConfiguration",
        "healthCheck",
        "hostname",
        "image",
        "interactive",
        "links",
        "logConfiguration",
        "memory",
        "memoryReservation",
        "mountPoints",  # what a mount reaches is judged on its volume
        "name",
        "portMappings",
        "pseudoTerminal",
        "readonlyRootFilesystem",
        "repositoryCredentials",
        "resourceRequirements",
        "restartPolicy",
        "startTimeout",
        "stopTimeout",
        "systemControls",  # Docker accepts only namespaced sysctls; the host's namespaces are refused
        "user",
        "versionConsistency",
        "volumesFrom",  # another container of the same task
        "workingDirectory",
    }
)
CONTAINER_JUDGED = frozenset(
    {"privileged", "linuxParameters", "dockerSecurityOptions", "environment", "environmentFiles", "secrets", "ulimits"}
)
LINUX_NEUTRAL = frozenset({"initProcessEnabled", "maxSwap", "sharedMemorySize", "swappiness", "tmpfs"})
LINUX_JUDGED = frozenset({"capabilities", "devices"})
VOLUME_NEUTRAL = frozenset(
    {"name", "efsVolumeConfiguration", "fsxWindowsFileServerVolumeConfiguration", "configuredAtLaunch"}
)
VOLUME_JUDGED = frozenset({"host", "dockerVolumeConfiguration"})
NOT_ALLOWED = frozenset({"trustedExecutionConfiguration", "s3filesVolumeConfiguration"})  # not yet looked at


def _falsy(value: Any) -> bool:
    """Whether ``value`` is a spelling of false (or absent) that CloudFormation and the agent accept."""
    return value is None or value is False or (isinstance(value, str) and value.strip().lower() == "false")


def capability(name: Any) -> str:
    """A capability as the kernel names it without its prefix: ``cap_sys_admin`` and `` SYS_ADMIN`` are one."""
    text = str(name).strip().upper()
    return text.removeprefix("CAP_")


def normal_path(path: Any) -> str:
    """A host path as the kernel resolves it lexically: ``/dev//nvidia0`` and ``/dev/./nvidia0`` are one."""
    text = str(path).strip()
    return posixpath.normpath(text) if text else text


def _nvidia_device(path: str) -> bool:
    return path.startswith("/dev/nvidia") or path.startswith(f"/dev/char/{NVIDIA_CHARACTER_MAJOR}:")


def _keys(item: Any, *known: frozenset[str]) -> dict[str, Any]:
    """One level of an object with its keys as this module names them, matched without regard to case (CloudFormation
    writes ``EFSVolumeConfiguration`` where the API writes ``efsVolumeConfiguration``); an unknown key is kept as
    written, so it is refused by name."""
    if not isinstance(item, Mapping):
        return {}
    names = {k.lower(): k for group in known for k in group}
    return {names.get(str(k).lower(), str(k)): v for k, v in item.items()}


def _unknown(where: str, keys: Any, neutral: frozenset[str], judged: frozenset[str]) -> Iterator[str]:
    for key in sorted(k for k in keys if k not in neutral and k not in judged):
        yield (
            f"[{UNKNOWN_PROPERTY}] {where}: {key} is not on the list of properties allowed on a GPU host; remove it, "
            "or allow it with a reason (FleetPlan.allow)"
        )


def _unreadable(where: str, key: str, value: Any) -> str:
    return (
        f"[{UNKNOWN_PROPERTY}] {where}: {key} is {json.dumps(value)[:80]}, not a list the allow-list can read at synth "
        "(a deploy-time value); write it literally, or allow it with a reason (FleetPlan.allow)"
    )


def guard_violations(task_properties: Mapping[str, Any]) -> list[str]:
    """Every allow-list rule the task definition breaks, one line each: rule id, where, what, and the fix."""
    return list(_violations(_keys(task_properties, TASK_NEUTRAL, TASK_JUDGED, NOT_ALLOWED)))


def rule_of(line: str) -> str:
    """The rule id a line of ``guard_violations`` starts with."""
    return line.split("]", 1)[0].removeprefix("[")


def _violations(task: Mapping[str, Any]) -> Iterator[str]:
    yield from _unknown("the task definition", task, TASK_NEUTRAL, TASK_JUDGED)
    mode = task.get("networkMode")
    if mode is not None and (not isinstance(mode, str) or mode.strip().lower() not in NETWORK_MODES):
        yield (
            f"[{NETWORK_MODE}] the task's networkMode is {mode!r}: on a GPU host a task runs in bridge or awsvpc mode "
            "(host mode shares the host's network and reaches the instance role); use bridge or awsvpc"
        )
    for key, allowed in (("pidMode", {"task"}), ("ipcMode", {"task", "none"})):
        value = task.get(key)
        if value is not None and (not isinstance(value, str) or value.strip().lower() not in allowed):
            yield (
                f"[{HOST_NAMESPACE}] the task's {key} is {value!r}: its containers would see (pid) or share memory "
                "with (ipc) every process on the host, other tenants' models and the MPS server among them; leave it "
                "unset (or task)"
            )
    for key in ("volumes", "containerDefinitions"):
        if task.get(key) is not None and not isinstance(task.get(key), list):
            yield _unreadable("the task definition", key, task.get(key))
    volumes = task.get("volumes")
    for raw in volumes if isinstance(volumes, list) else []:
        yield from _volume(_keys(raw, VOLUME_NEUTRAL, VOLUME_JUDGED, NOT_ALLOWED))
    containers = task.get("containerDefinitions")
    for raw in containers if isinstance(containers, list) else []:
        yield from _container(_keys(raw, CONTAINER_NEUTRAL, CONTAINER_JUDGED))


def _volume(volume: Mapping[str, Any]) -> Iterator[str]:
    name = volume.get("name")
    where = f"volume {name}"
    yield from _unknown(where, volume, VOLUME_NEUTRAL, VOLUME_JUDGED)
    host = volume.get("host")
    if host is not None:
        source = camel_keys(host).get("sourcePath") if isinstance(host, Mapping) else host
        if source is not None and source != "":  # an empty source path is a volume Docker manages
            shown = normal_path(source) if isinstance(source, str) else repr(source)
            yield (
                f"[{HOST_PATH}] {where} mounts the host path {shown}"
                ": a host path is shared with every tenant of the host (the Docker socket, the MPS pipes, its files); "
                "use a task volume (no source path) or a docker volume"
            )
    docker = volume.get("dockerVolumeConfiguration")
    if docker is not None:
        config = camel_keys(docker)
        driver = config.get("driver")
        options = config.get("driverOpts")
        if (driver is not None and driver != "local") or options:
            yield (
                f"[{HOST_PATH}] {where} is a docker volume with driver {driver!r} and options {options!r}: driver "
                "options can bind any host path (type none, o bind, device /...); use the local driver without options"
            )


def _container(container: Mapping[str, Any]) -> Iterator[str]:
    name = container.get("name")
    where = f"container {name}"
    yield from _unknown(where, container, CONTAINER_NEUTRAL, CONTAINER_JUDGED)
    for kind in ("environment", "secrets"):
        items = container.get(kind)
        if items is not None and not isinstance(items, list):
            yield _unreadable(where, kind, items)
        for item in items if isinstance(items, list) else []:
            named = camel_keys(item).get("name")
            if not isinstance(named, str):  # named at deploy: it could be any of them
                yield (
                    f"[{GPU_STEERING_ENVIRONMENT}] {where}: {kind} names a variable {json.dumps(named)[:80]} the synth "
                    "cannot read, which could steer the GPU (NVIDIA_*, CUDA_VISIBLE_DEVICES, CUDA_MPS_*); name it "
                    "literally"
                )
                continue
            variable = named
            if GPU_ENVIRONMENT.match(variable):  # names are case-sensitive: cuda_visible_devices steers nothing
                yield (
                    f"[{GPU_STEERING_ENVIRONMENT}] {where}: {kind} {variable} would steer the GPU: "
                    f"{GPU_ENVIRONMENT_REASON}"
                )
    files = container.get("environmentFiles")
    if files is not None and files != []:
        # The agent reads them at task start (ECS Developer Guide, "Pass environment variables to an Amazon ECS
        # container": environmentFiles), out of the synth's sight: any variable of them may steer the GPU.
        yield (
            f"[{GPU_STEERING_ENVIRONMENT}] {where}: environmentFiles {json.dumps(files)[:120]} set variables the "
            "synth cannot read, and NVIDIA_*, CUDA_VISIBLE_DEVICES or CUDA_MPS_* among them would steer the GPU past "
            "ECS's assignment and the MPS limits; give the variables in environment or secrets, where they are "
            f"judged, or allow the files with a reason (FleetPlan.allow(scope, '{GPU_STEERING_ENVIRONMENT}', ...))"
        )
    logging = json.dumps([container.get("logConfiguration"), container.get("firelensConfiguration")])
    if EVIDENCE_LOG_GROUP_PREFIX in logging or STOPPED_TASKS_LOG_GROUP_PREFIX in logging:
        yield (
            f"[{EVIDENCE_LOGS}] {where}: its log configuration names {EVIDENCE_LOG_GROUP_PREFIX}... or "
            f"{STOPPED_TASKS_LOG_GROUP_PREFIX}...: those hold what evaluate believes, written by the telemetry daemon "
            "and EventBridge alone; log to the service's own group"
        )
    privileged = container.get("privileged")
    if not _falsy(privileged):
        yield (
            f"[{PRIVILEGED_CONTAINER}] {where} is privileged ({privileged!r}): it sees every GPU and the host's "
            "devices, outside any MPS budget (and the hosts set ECS_DISABLE_PRIVILEGED=true); drop privileged"
        )
    options = container.get("dockerSecurityOptions")
    for option in options if isinstance(options, list) else ([] if options is None else [options]):
        text = str(option).strip().lower().replace("=", ":")
        if text not in ("no-new-privileges", "no-new-privileges:true"):
            yield (
                f"[{SECURITY_OPTION}] {where} sets docker security option {option!r}: only no-new-privileges is "
                "allowed on a GPU host (the others loosen the default profiles); remove it"
            )
    yield from _ulimits(where, container.get("ulimits"))
    linux = container.get("linuxParameters")
    if linux is not None:
        yield from _linux(
            where, _keys(linux, LINUX_NEUTRAL, LINUX_JUDGED) if isinstance(linux, Mapping) else {"?": linux}
        )


def _ulimits(where: str, ulimits: Any) -> Iterator[str]:
    """Every limit but rtprio stays inside the container's cgroup; an rtprio above 0, or a limit whose name or value
    the synth cannot read, lets its processes take real-time priority."""
    if ulimits is not None and not isinstance(ulimits, list):
        shown = json.dumps(ulimits)[:80]
        yield f"[{REALTIME_PRIORITY}] {where}: ulimits is {shown}, which the synth cannot read; write them literally"
        return
    for limit in [camel_keys(u) for u in ulimits or []]:
        if str(limit.get("name")).strip().lower() != "rtprio" and isinstance(limit.get("name"), str):
            continue
        values = [limit.get("softLimit"), limit.get("hardLimit")]
        if all(isinstance(v, int) and not isinstance(v, bool) and v <= 0 for v in values):
            continue
        yield (
            f"[{REALTIME_PRIORITY}] {where} sets ulimit {limit.get('name')!r} to {values[0]!r}/{values[1]!r}: its "
            "processes may then run real-time threads, which cgroup v2 does not hold to the task's CPU share, and take "
            "the host's CPUs from other tenants and the ECS agent; remove it"
        )


def _linux(where: str, linux: Mapping[str, Any]) -> Iterator[str]:
    yield from _unknown(f"{where} linuxParameters", linux, LINUX_NEUTRAL, LINUX_JUDGED)
    capabilities = camel_keys(linux.get("capabilities"))
    added = capabilities.get("add")
    for raw in added if isinstance(added, list) else ([] if added is None else [added]):
        cap = capability(raw)
        if cap not in DOCKER_DEFAULT_CAPABILITIES:
            yield (
                f"[{HOST_CAPABILITY}] {where} adds capability {cap}, which Docker does not give a container: it "
                "reaches other tenants' processes or the host; drop it (adding back a default such as NET_BIND_SERVICE "
                "is allowed)"
            )
    devices = linux.get("devices")
    for raw in devices if isinstance(devices, list) else ([] if devices is None else [devices]):
        device = camel_keys(raw)
        path = normal_path(device.get("hostPath", raw))
        if _nvidia_device(path):
            yield (
                f"[{GPU_DEVICE_MAPPED}] {where} maps {path}: a GPU device mapped in bypasses ECS's GPU assignment and "
                "the MPS limits; give the container an MPS budget (gpu=MpsShare(...)) instead"
            )
        else:
            yield (
                f"[{DEVICE_MAPPED}] {where} maps the host device {path}: a task on a shared GPU host gets no host "
                "devices; remove it"
            )


def log_groups_not_read(task_properties: Mapping[str, Any]) -> list[str]:
    """EvidenceLogGroupNamed for each log configuration option that names a log group (``awslogs-group``, FireLens's
    ``log_group_name``) by a value the synth cannot read, whose fixed text does not rule out the evidence and
    stopped-task groups. For task definitions whose references to the app's log groups are already read as names
    (``core.tenancy``); before that, a ``Ref`` to the service's own group would read as unknown."""
    out = []
    containers = camel_keys(dict(task_properties)).get("containerDefinitions")
    for raw in containers if isinstance(containers, list) else []:
        container = camel_keys(raw)
        options = camel_keys(container.get("logConfiguration")).get("options")
        for key, value in options.items() if isinstance(options, Mapping) else []:
            if isinstance(value, str) or "group" not in str(key).lower():
                continue
            head = text_pattern(value).split("*", 1)[0]  # what the value fixes before its first deploy-time part
            if any(prefix.startswith(head) for prefix in (EVIDENCE_LOG_GROUP_PREFIX, STOPPED_TASKS_LOG_GROUP_PREFIX)):
                out.append(
                    f"[{EVIDENCE_LOGS}] container {container.get('name')}: its log configuration's {key} is "
                    f"{json.dumps(value)[:80]}, a log group the synth cannot read, which could be the evidence or "
                    "stopped-task group; name the group literally, or give a log group of the app"
                )
    return out


_MPS_WORD = re.compile(r"\b(CUDA_MPS_[A-Z_]*|CUDA_VISIBLE_DEVICES|NVIDIA_VISIBLE_DEVICES)\b")


def mps_variables_in_command(task_properties: Mapping[str, Any]) -> list[str]:
    """Warnings for containers whose command or entry point visibly sets or unsets an MPS or GPU variable (``env -u
    CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``, ``export CUDA_MPS_...=``): outside ``environment`` no guard can judge it, and a
    client that starts without its limit is not held to its budget (docs/security.md)."""
    out = []
    containers = camel_keys(dict(task_properties)).get("containerDefinitions")
    for raw in containers if isinstance(containers, list) else []:
        container = camel_keys(raw)
        words = " ".join(str(w) for key in ("entryPoint", "command") for w in (container.get(key) or []))
        found = sorted(set(_MPS_WORD.findall(words)))
        if found:
            out.append(
                f"container {container.get('name')}: its command or entry point names {', '.join(found)}; a process "
                "that changes its MPS variables is not held to its budget (docs/security.md); remove it, or "
                "acknowledge the warning with a reason"
            )
    return out


def managed_instances_refusals(task_properties: Mapping[str, Any]) -> list[str]:
    """What AWS lists as not valid on ECS Managed Instances and a container can still carry: sharedMemorySize (aws-ecs
    itself refuses dockerVolumeConfiguration when the volume is added). tmpfs is valid there since 2026-01-06 (AWS
    What's New, "Amazon ECS Managed Instances now supports tmpfs mounts")."""
    containers = camel_keys(dict(task_properties)).get("containerDefinitions")
    return [
        f"container {camel_keys(container).get('name')}: linux_parameters {key} is not valid on ECS Managed Instances; "
        "remove it, or run the container on an EC2 capacity (SharedGpuTaskDefinition)"
        for container in (containers if isinstance(containers, list) else [])
        for key in ("sharedMemorySize",)
        if camel_keys(camel_keys(container).get("linuxParameters")).get(key) is not None
    ]
