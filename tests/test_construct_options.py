"""Each keyword option of each library construct, given a value of the wrong kind, is refused in the constructor with
a library error that names the option: never Python's AttributeError or TypeError from inside the construct, and
never taken silently. The options are read off the constructors' signatures, so a new option is held to it too."""

from __future__ import annotations

import inspect
import itertools
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs

from ecs_gpu_sharing import (
    GpuCapacity,
    GpuFleetDashboard,
    GpuManagedInstancesCapacity,
    GpuSharingError,
    GpuTelemetry,
    MpsShare,
    SharedGpuManagedInstancesService,
    SharedGpuManagedInstancesTaskDefinition,
    SharedGpuService,
    SharedGpuTaskDefinition,
)

from conftest import new_app

CONSTRUCTS = (
    GpuCapacity,
    GpuManagedInstancesCapacity,
    SharedGpuTaskDefinition,
    SharedGpuManagedInstancesTaskDefinition,
    SharedGpuService,
    SharedGpuManagedInstancesService,
    GpuTelemetry,
    GpuFleetDashboard,
)


class _Fleet:
    """One app holding what each construct needs; each case adds one construct under a new id."""

    def __init__(self) -> None:
        self.stack = cdk.Stack(new_app(), "Options")
        self.cluster = ecs.Cluster(self.stack, "Cluster", vpc=ec2.Vpc(self.stack, "Vpc", max_azs=2))
        self.capacity = GpuCapacity(self.stack, "L4", cluster=self.cluster, instance_types=["g6.xlarge"])
        self.managed = GpuManagedInstancesCapacity(self.stack, "Mi", cluster=self.cluster, instance_types=["g6.xlarge"])
        image = ecs.ContainerImage.from_registry("my-registry/model:1")
        self.task = SharedGpuTaskDefinition(self.stack, "Task")
        self.task.add_container("m", image=image, cpu=256, memory_limit_mib=512, gpu=MpsShare(gpu_budget_mib=1024))
        self.managed_task = SharedGpuManagedInstancesTaskDefinition(self.stack, "MiTask", cpu="1024", memory_mib="2048")
        self.managed_task.add_container(
            "m", image=image, cpu=256, memory_limit_mib=512, gpu=MpsShare(gpu_budget_mib=1024)
        )
        self.service = SharedGpuService(
            self.stack, "Svc", cluster=self.cluster, capacity=self.capacity, task_definition=self.task, desired_count=1
        )
        self.ids = itertools.count()

    def required(self, construct: type) -> dict[str, Any]:
        return {
            GpuCapacity: {"cluster": self.cluster, "instance_types": ["g6.xlarge"]},
            GpuManagedInstancesCapacity: {"cluster": self.cluster, "instance_types": ["g6.xlarge"]},
            SharedGpuTaskDefinition: {},
            SharedGpuManagedInstancesTaskDefinition: {"cpu": "1024", "memory_mib": "2048"},
            SharedGpuService: {
                "cluster": self.cluster,
                "capacity": self.capacity,
                "task_definition": self.task,
                "desired_count": 1,
            },
            SharedGpuManagedInstancesService: {
                "cluster": self.cluster,
                "capacity": self.managed,
                "task_definition": self.managed_task,
                "desired_count": 1,
            },
            GpuTelemetry: {"cluster": self.cluster, "capacities": [self.capacity]},
            GpuFleetDashboard: {"cluster": self.cluster, "services": {"Svc": self.service}},
        }[construct]


@pytest.fixture(scope="module")
def fleet() -> _Fleet:
    return _Fleet()


def _wrong_values(parameter: inspect.Parameter) -> list[Any]:
    """Values of a kind the option does not take, read from its annotation: an object of no library or aws-cdk class,
    a string where it takes no string, a number where it takes a string or a list, True where it takes a number, and
    None where the option is required."""
    kinds = str(parameter.annotation)
    wrong: list[Any] = [object()]
    if "str" not in kinds or "Sequence" in kinds:
        wrong.append("x")
    if "int" not in kinds and "float" not in kinds:
        wrong.append(5)
    if ("int" in kinds or "float" in kinds) and "bool" not in kinds:
        wrong.append(True)
    if parameter.default is inspect.Parameter.empty:
        wrong.append(None)
    return wrong


CASES = [
    pytest.param(construct, parameter.name, value, id=f"{construct.__name__}-{parameter.name}-{type(value).__name__}")
    for construct in CONSTRUCTS
    for parameter in inspect.signature(construct.__init__).parameters.values()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    for value in _wrong_values(parameter)
]


@pytest.mark.parametrize(("construct", "option", "value"), CASES)
def test_an_option_of_the_wrong_kind_is_refused_naming_it(
    fleet: _Fleet, construct: type, option: str, value: Any
) -> None:
    arguments = {**fleet.required(construct), option: value}
    with pytest.raises(GpuSharingError) as error:
        construct(fleet.stack, f"Case{next(fleet.ids)}", **arguments)
    assert option in str(error.value), str(error.value)


def test_every_construct_is_tried_with_every_option() -> None:
    tried = {(c, o) for c, o, _ in (case.values for case in CASES)}
    assert len({c for c, _ in tried}) == len(CONSTRUCTS)
    assert (SharedGpuService, "cluster") in tried and (GpuFleetDashboard, "alarm_ratio") in tried


PLAN_CALLS = {
    "acknowledge": ("ecs-gpu-sharing:BudgetIsAGuess", "measured next week"),
    "allow": ("ecs-gpu-sharing:HostCapability", "a profiler"),
    "plan_count": (3,),
    "name_service": ("embedder",),
}


@pytest.mark.parametrize("method", sorted(PLAN_CALLS))
@pytest.mark.parametrize("scope", [object(), "Svc", None, []], ids=["object", "str", "None", "list"])
def test_the_plans_methods_refuse_what_is_not_a_construct(fleet: _Fleet, method: str, scope: Any) -> None:
    from ecs_gpu_sharing import FleetPlan

    with pytest.raises(GpuSharingError, match=method):
        getattr(FleetPlan.of(fleet.stack), method)(scope, *PLAN_CALLS[method])


@pytest.mark.parametrize("method", ["acknowledge", "allow"])
@pytest.mark.parametrize("rule_id", [["ecs-gpu-sharing:BudgetIsAGuess"], 5, None], ids=["list", "int", "None"])
def test_a_rule_id_of_the_wrong_kind_is_refused_by_name(fleet: _Fleet, method: str, rule_id: Any) -> None:
    from ecs_gpu_sharing import FleetPlan

    with pytest.raises(GpuSharingError, match="rule id"):
        getattr(FleetPlan.of(fleet.stack), method)(fleet.service, rule_id, "a reason")


@pytest.mark.parametrize("weight", [object(), "2", True, -1, 1001])
def test_a_strategy_weight_is_ecss_whole_number_from_0_to_1000(fleet: _Fleet, weight: Any) -> None:
    with pytest.raises(GpuSharingError, match="weight"):
        fleet.capacity.capacity_provider_strategies(weight=weight)
    assert [fleet.capacity.capacity_provider_strategies(weight=w)[0].weight for w in (0, 1000)] == [0, 1000]
