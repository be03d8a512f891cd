"""The fit planner: a placement of a fleet's tasks on GPU hosts that ECS could realise. Pure Python.

Rules (ECS GPU sharing: a task's MPS containers land on one GPU, ECS places by GPU memory only; NVIDIA MPS: 48
clients per GPU): a task's MPS containers share one GPU; a GPU holds MPS tasks or whole-GPU tasks, never
both; per GPU the MPS memory stays within the usable memory and the MPS clients (containers) within NVIDIA's
48; per host the tasks' CPU units and memory stay within what the host offers to tasks.

The plan proves that a placement exists and estimates capacity; it is not where ECS will put tasks (ECS places
by its own strategy, task by task). It packs in two stages, by shape and in bulk, so its cost grows with the
number of services, not of tasks:

1. GPUs: the largest remaining task opens a GPU, and the rest of that GPU is filled as fully as memory allows
   (an exact subset-sum over the remaining task shapes, on a bitset; a greedy fill when the exact one breaks the
   client, CPU or memory limits). The GPU's contents are then repeated for as many GPUs as the counts allow.
2. Hosts: GPU contents, whole-GPU tasks and tasks without a GPU are packed onto hosts first-fit decreasing, in
   groups of identical hosts. Where that is above the bound, the costlier strategies follow (``packing``): among
   them, on hosts of several GPUs, the tasks without a GPU balanced with the GPUs as fillers (``fillers``).

Ties break on names, so the same input always gives the same plan. Lower bounds (GPUs: Martello and Toth's L2 on
GPU memory and NVIDIA's client limit; instances: GPUs, CPU and memory; a fleet of one task shape: its count over
the most that fit a host) say how far from optimal a plan can be; a plan at its bound is optimal.
"""

from __future__ import annotations

from .ffd import FFD_ALWAYS_TASKS
from .gpus import bin_lower_bound
from .lp_view import lp_problem
from .model import (
    EC2,
    ECS_DEFAULT_DESIRED_COUNT,
    ECS_DEFAULT_MAX_PERCENT,
    KINDS,
    MANAGED_INSTANCES,
    CapacityInput,
    CapacityPlan,
    GpuLoad,
    InstanceGroup,
    Plan,
    ServiceInput,
    Unplaced,
    interfaces_used,
    planned_max_percent,
    tasks_on_a_host,
)
from .packing import HOST_LP_GAP, HOST_LP_SERVICES, HOST_LP_TASKS, host_lp_exact, host_lp_runs, plan
from .search import SEARCH_STEPS, SEARCH_TASKS

__all__ = [
    "EC2",
    "ECS_DEFAULT_DESIRED_COUNT",
    "ECS_DEFAULT_MAX_PERCENT",
    "FFD_ALWAYS_TASKS",
    "HOST_LP_GAP",
    "HOST_LP_SERVICES",
    "HOST_LP_TASKS",
    "KINDS",
    "MANAGED_INSTANCES",
    "SEARCH_STEPS",
    "SEARCH_TASKS",
    "CapacityInput",
    "CapacityPlan",
    "GpuLoad",
    "InstanceGroup",
    "Plan",
    "ServiceInput",
    "Unplaced",
    "bin_lower_bound",
    "host_lp_exact",
    "host_lp_runs",
    "interfaces_used",
    "lp_problem",
    "plan",
    "planned_max_percent",
    "tasks_on_a_host",
]
