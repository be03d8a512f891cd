"""Task shapes: the one road from a task definition or a fleet service to the planner."""

from __future__ import annotations

import pytest

from ecs_gpu_sharing.core.errors import TaskDefinitionError
from ecs_gpu_sharing.core.shape import ContainerFacts, TaskShape, containers_from_cloudformation, task_shape


def test_sums_containers_and_prefers_the_soft_limit() -> None:
    shape = task_shape(
        [
            ContainerFacts("a", cpu_units=512, memory_mib=4096, memory_reservation_mib=1024, gpu_budget_mib=3000),
            ContainerFacts("b", cpu_units=256, memory_mib=512, gpu_budget_mib=1000),
            ContainerFacts("c", memory_mib=128),
        ],
        owner="T",
    )
    assert shape == TaskShape(768, 1664, (3000, 1000), 0)
    assert shape.task_gpu_budget_mib == 4000 and shape.clients == 2 and shape.uses_gpu


def test_task_level_figures_win_and_may_be_digit_strings() -> None:
    shape = task_shape(
        [ContainerFacts("a", cpu_units=256, memory_mib=512)], owner="T", task_cpu_units="2048", task_memory_mib="8192"
    )
    assert (shape.cpu_units, shape.memory_mib) == (2048, 8192)


def test_reads_resolved_cloudformation_containers() -> None:
    containers = containers_from_cloudformation(
        [
            {"name": "w", "cpu": 1024, "memory": 2048, "resourceRequirements": [{"type": "GPU", "value": "2"}]},
            {
                "Name": "m",
                "Memory": 512,
                "ResourceRequirements": [{"Type": "GPU", "SharingStrategy": {"NvidiaMps": {"Memory": 6000}}}],
            },
        ],
        owner="T",
    )
    shape = task_shape(containers, owner="T")
    assert shape == TaskShape(1024, 2560, (6000,), 2)


@pytest.mark.parametrize(
    ("facts", "message"),
    [
        (
            ContainerFacts("m", memory_mib={"Ref": "Memory"}),
            "T: container m memory_limit_mib is a deploy-time value (Ref 'Memory')",
        ),
        (ContainerFacts("m", cpu_units=1.5), "T: container m cpu is 1.5; the fit plan needs a literal whole number"),
        (ContainerFacts("m", gpu_budget_mib=0), "T: container m GPU budget must be >= 1, got 0"),
        (ContainerFacts("m", whole_gpus=True), "T: container m gpu_count is True"),
    ],
)
def test_refuses_what_cannot_be_planned_naming_the_field(facts: ContainerFacts, message: str) -> None:
    with pytest.raises(TaskDefinitionError) as raised:
        task_shape([facts], owner="T")
    assert str(raised.value).startswith(message)


def test_refuses_container_definitions_that_are_not_a_list() -> None:
    with pytest.raises(TaskDefinitionError, match="not a list the plan can read"):
        containers_from_cloudformation({"Fn::If": []}, owner="T")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["--model", "m", "--gpu-memory-utilization", "0.9"], (("--gpu-memory-utilization", 0.9, 8000),)),
        (["vllm", "serve", "m", "--gpu-memory-utilization=0.33"], (("--gpu-memory-utilization", 0.33, 8000),)),
        (
            ["sh", "-c", "vllm serve m --gpu_memory_utilization '0.8' --port 80"],
            (("--gpu-memory-utilization", 0.8, 8000),),
        ),
        (["--gpu-memory-utilization-x", "0.9"], ()),  # another flag that starts the same
        (["--model", "m"], ()),  # no fraction written: nothing to judge (the framework's default is not read)
        (["--gpu-memory-utilization"], ()),  # no value
        (["--gpu-memory-utilization", "most"], ()),  # not a number: the framework refuses it itself
        ({"Fn::Split": [" ", "x"]}, ()),  # a command built at deploy time cannot be read
    ],
)
def test_a_gpu_containers_memory_fraction_is_read_from_its_command(command: object, expected: tuple[object]) -> None:
    """docs/gpu-measured.md: under MPS a client is told the whole GPU as its total, so a framework's fraction of GPU
    memory is a fraction of the whole GPU; the shape keeps what a GPU container's command asks for, with its budget."""
    shape = task_shape(
        [
            ContainerFacts("m", memory_mib=512, gpu_budget_mib=8000, command=command),
            ContainerFacts("no-gpu", memory_mib=512, command=["--gpu-memory-utilization", "0.9"]),
        ],
        owner="T",
    )
    assert shape.memory_fractions == expected
    assert shape == TaskShape(0, 1024, (8000,), 0)  # a shape is its resources: what a command asks is not compared


def test_reads_a_cloudformation_containers_command_and_entry_point() -> None:
    (facts,) = containers_from_cloudformation(
        [{"Name": "m", "EntryPoint": ["vllm", "serve", "--gpu-memory-utilization"], "Command": ["0.5"]}], owner="T"
    )
    assert (facts.entry_point, facts.command) == (["vllm", "serve", "--gpu-memory-utilization"], ["0.5"])
    facts = ContainerFacts(facts.name, gpu_budget_mib=8000, command=facts.command, entry_point=facts.entry_point)
    assert task_shape([facts], owner="T").memory_fractions == (("--gpu-memory-utilization", 0.5, 8000),)


def test_static_host_ports_are_read_in_bridge_mode_only() -> None:
    """A host port of 0 or none is dynamic; in awsvpc the port is the task's own interface's, not the host's."""
    containers = containers_from_cloudformation(
        [
            {
                "Name": "model",
                "Memory": 1024,
                "PortMappings": [
                    {"ContainerPort": 8080, "HostPort": 8080},
                    {"ContainerPort": 9000, "HostPort": "9000", "Protocol": "udp"},
                    {"ContainerPort": 7000, "HostPort": 0},
                    {"ContainerPort": 7001},
                ],
            },
            {"name": "metrics", "memory": 64, "portMappings": [{"containerPort": 9100, "hostPort": 9100}]},
        ],
        owner="t",
    )
    assert task_shape(containers, owner="t").host_ports == ((8080, "tcp"), (9000, "udp"), (9100, "tcp"))
    assert task_shape(containers, owner="t", awsvpc=True).host_ports == ()
