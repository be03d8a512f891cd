"""What one GPU host offers to tasks, from the catalog. Pure Python: used by GpuCapacity and the planner.

ECS accounts per GPU what NVML reports as total minus reserved (an A10G: 23034 - 471 = 22563 MiB),
already below EC2's figure (24576 MiB for the same card), and nothing for the MPS server's own memory,
which lives outside every client limit. So plans use a usable figure: EC2's memory per GPU minus a
per-GPU reserve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import catalog
from .catalog import GpuInstanceType, Support
from .errors import CapacityError, CatalogError
from .mps import require_int

DEFAULT_GPU_RESERVE_MIB = 2048
"""Per-GPU memory kept out of plans: EC2's figure minus what ECS accounts (2013 MiB on an A10G), plus the
MPS server. Configurable as ``gpu_reserve_mib``."""

CPU_UNITS_PER_VCPU = 1024


def default_host_memory_reserve_mib(memory_mib: int) -> int:
    """Host memory not offered to tasks: what the kernel and the ECS agent keep (about 6%, at least 512 MiB).

    ECS registers the memory the OS reports, a few percent below the nominal size; planning against the
    nominal size would place tasks ECS then cannot.
    """
    return max(512, memory_mib * 6 // 100)


@dataclass(frozen=True)
class HostFacts:
    """The GPU and host figures a capacity plans with."""

    instance_types: tuple[str, ...]
    gpu_name: str
    gpus_per_instance: int
    ec2_gpu_memory_mib: int  # per GPU, as EC2 lists it
    gpu_reserve_mib: int
    host_cpu_units: int  # what one host offers to tasks
    host_memory_mib: int  # what one host offers to tasks
    unverified: tuple[str, ...]  # instance types whose family the launch did not name, with the reason

    @property
    def usable_gpu_memory_mib(self) -> int:
        return self.ec2_gpu_memory_mib - self.gpu_reserve_mib

    @property
    def instance_type(self) -> str:
        """The type the figures come from (the smallest, when several are given)."""
        return self.instance_types[0]


def host_facts(
    instance_types: Sequence[str],
    *,
    gpu_reserve_mib: int = DEFAULT_GPU_RESERVE_MIB,
    host_memory_reserve_mib: int | None = None,
    owner: str = "capacity",
) -> HostFacts:
    """Host facts for instance types that must share one GPU model and memory size.

    With several types (for availability), the figures are the smallest: a plan that fits them fits
    every type. Refuses unknown types, types without a GPU, types where sharing cannot work, and mixed
    GPU models.
    """
    if isinstance(instance_types, str) or not instance_types:
        raise CapacityError(
            f"{owner}: instance_types must be a non-empty list of GPU instance types, got {instance_types!r}"
        )
    records: list[GpuInstanceType] = []
    for name in instance_types:
        try:
            records.append(catalog.lookup_usable(name))
        except CatalogError as error:
            raise CatalogError(f"{owner}: {error}") from None
    models = sorted({(r.gpu_name, r.ec2_gpu_memory_mib) for r in records})
    if len(models) > 1:
        seen = "; ".join(f"{r.instance_type}: {r.gpu_name} {r.ec2_gpu_memory_mib} MiB" for r in records)
        raise CapacityError(
            f"{owner}: all instance types of one capacity must carry the same GPU model and memory, got {seen}; "
            "split them into one capacity per GPU model"
        )
    reserve = require_int("gpu_reserve_mib", gpu_reserve_mib, low=0, owner=owner, error=CapacityError)
    gpu_mib = records[0].ec2_gpu_memory_mib
    if reserve >= gpu_mib:
        raise CapacityError(
            f"{owner}: gpu_reserve_mib {reserve} leaves nothing of the {gpu_mib} MiB per GPU; "
            f"use a reserve below it (the default is {DEFAULT_GPU_RESERVE_MIB})"
        )
    smallest = min(records, key=lambda r: (r.gpus, r.vcpus, r.instance_memory_mib, r.instance_type))
    memory = min(r.instance_memory_mib for r in records)
    if host_memory_reserve_mib is None:
        host_reserve = default_host_memory_reserve_mib(memory)
    else:
        host_reserve = require_int(
            "host_memory_reserve_mib", host_memory_reserve_mib, low=0, owner=owner, error=CapacityError
        )
        if host_reserve >= memory:
            raise CapacityError(
                f"{owner}: host_memory_reserve_mib {host_reserve} leaves nothing of the {memory} MiB per host"
            )
    ordered = (smallest.instance_type, *[n for n in instance_types if n != smallest.instance_type])
    return HostFacts(
        instance_types=ordered,
        gpu_name=records[0].gpu_name,
        gpus_per_instance=min(r.gpus for r in records),
        ec2_gpu_memory_mib=gpu_mib,
        gpu_reserve_mib=reserve,
        host_cpu_units=min(r.vcpus for r in records) * CPU_UNITS_PER_VCPU,
        host_memory_mib=memory - host_reserve,
        unverified=tuple(f"{r.instance_type}: {r.reason}" for r in records if r.support is Support.UNVERIFIED),
    )
