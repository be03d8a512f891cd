"""What no container on a shared GPU may do, and what Managed Instances refuses, judged on the task definition as
it will be rendered. Pure Python.

``add_container`` refuses these when they are passed to it, but a container can gain them afterwards
(``add_environment``, ``add_secret``, ``linux_parameters.add_devices``/``add_capabilities``, the task's ``pid_mode``
or ``ipc_mode``). These rules read the final task definition instead (its resolved CloudFormation properties, as
the L1 names them), for every container of a shared-GPU task definition and of any task definition a service runs
in a cluster with a GPU capacity (``FleetPlan``). Each rule has an id and a fix; a finding is an error. The one
exception is the library's telemetry daemon, allowed to map the GPU device files for NVML (``FleetPlan.allow``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .mps import GPU_ENVIRONMENT, GPU_ENVIRONMENT_REASON

PREFIX = "ecs-gpu-sharing:"
GPU_STEERING_ENVIRONMENT = f"{PREFIX}GpuSteeringEnvironment"
GPU_DEVICE_MAPPED = f"{PREFIX}GpuDeviceMapped"
PRIVILEGED_CONTAINER = f"{PREFIX}PrivilegedContainer"
HOST_CAPABILITY = f"{PREFIX}HostCapability"
HOST_NAMESPACE = f"{PREFIX}HostNamespace"

GUARD_RULES = (GPU_STEERING_ENVIRONMENT, GPU_DEVICE_MAPPED, PRIVILEGED_CONTAINER, HOST_CAPABILITY, HOST_NAMESPACE)

# Capabilities that reach past a container: other processes (SYS_PTRACE) or the host itself (SYS_ADMIN, ALL).
HOST_CAPABILITIES = frozenset({"SYS_ADMIN", "SYS_PTRACE", "ALL"})


def _get(item: Mapping[str, Any], key: str) -> Any:
    """A property by its L1 name (camelCase) or its CloudFormation name (PascalCase)."""
    return item.get(key, item.get(key[0].upper() + key[1:]))


def guard_violations(task_properties: Mapping[str, Any]) -> list[str]:
    """Every rule the task definition breaks, one line each: rule id, container, what, and the fix."""
    return list(_violations(task_properties))


def _violations(task: Mapping[str, Any]) -> Iterator[str]:
    for key in ("pidMode", "ipcMode"):
        if str(_get(task, key) or "").lower() == "host":
            yield (
                f"[{HOST_NAMESPACE}] the task's {key} is host: its containers would see (pid) or share memory with "
                "(ipc) every process on the host, other tenants' models and the MPS server among them; leave it unset"
            )
    for container in _get(task, "containerDefinitions") or []:
        name = _get(container, "name")
        for kind in ("environment", "secrets"):
            for item in _get(container, kind) or []:
                variable = str(_get(item, "name"))
                if GPU_ENVIRONMENT.match(variable):
                    yield (
                        f"[{GPU_STEERING_ENVIRONMENT}] container {name}: {kind} {variable} would steer the GPU: "
                        f"{GPU_ENVIRONMENT_REASON}"
                    )
        if _get(container, "privileged") is True:
            yield (
                f"[{PRIVILEGED_CONTAINER}] container {name} is privileged: it sees every GPU and the host's devices, "
                "outside any MPS budget (and the hosts set ECS_DISABLE_PRIVILEGED=true); drop privileged"
            )
        linux = _get(container, "linuxParameters") or {}
        for device in _get(linux, "devices") or []:
            host_path = str(_get(device, "hostPath") or "")
            if host_path.startswith("/dev/nvidia"):
                yield (
                    f"[{GPU_DEVICE_MAPPED}] container {name} maps {host_path}: a GPU device mapped in bypasses ECS's "
                    "GPU assignment and the MPS limits; give the container an MPS budget (gpu=MpsShare(...)) instead"
                )
        added = {str(c).upper() for c in (_get(_get(linux, "capabilities") or {}, "add") or [])}
        for capability in sorted(added & HOST_CAPABILITIES):
            yield (
                f"[{HOST_CAPABILITY}] container {name} adds capability {capability}, which reaches other tenants' "
                "processes or the host; drop it"
            )


def managed_instances_refusals(task_properties: Mapping[str, Any]) -> list[str]:
    """What AWS lists as not valid on ECS Managed Instances and a container can still carry: sharedMemorySize (aws-ecs
    itself refuses dockerVolumeConfiguration when the volume is added). tmpfs is valid there since 2026-01-06 (AWS
    What's New, "Amazon ECS Managed Instances now supports tmpfs mounts")."""
    return [
        f"container {_get(container, 'name')}: linux_parameters {key} is not valid on ECS Managed Instances; "
        "remove it, or run the container on an EC2 capacity (SharedGpuTaskDefinition)"
        for container in _get(task_properties, "containerDefinitions") or []
        for key in ("sharedMemorySize",)
        if _get(_get(container, "linuxParameters") or {}, key) is not None
    ]
