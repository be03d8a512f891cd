"""A task's container dependencies (``dependsOn``): what the ECS agent cannot start. moto and aws-ecs take a task
definition whose containers wait for a container it does not have, wait for each other in a circle, wait for a health
check nobody runs, or wait for an essential container to exit; on a container instance the agent then never starts the
task, or stops it as it starts (amazon-ecs-agent: agent/engine/dependencygraph/graph.go, agent/api/task/task.go).
Whether RegisterTaskDefinition refuses some of these first, AWS's pages do not say; either way the service never
runs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..rule_family import PREFIX
from ..shape import camel_keys
from .base import ECS_API, Finding, ServiceRule, Templates, _containers

DEPENDENCIES_RESOLVE = f"{PREFIX}ContainerDependenciesResolve"
EXITING_DEPENDENCY_NOT_ESSENTIAL = f"{PREFIX}DependencyThatExitsIsNotEssential"
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


def dependencies_resolve(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        containers: dict[str, dict[str, Any]] = {
            c["name"]: c for c in _containers(task) if isinstance(c.get("name"), str)
        }
        edges = {name: [n for n, _ in _dependencies(c) if n in containers] for name, c in containers.items()}
        for name, c in containers.items():
            for other, condition in _dependencies(c):
                if other not in containers:
                    yield (
                        task,
                        f"container {name} waits for no container {other!r}: this task definition has "
                        f"{', '.join(sorted(containers))}; the ECS agent stops a task whose dependency does not "
                        "exist, so name one of them",
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
        containers: dict[str, dict[str, Any]] = {
            c["name"]: c for c in _containers(task) if isinstance(c.get("name"), str)
        }
        for name, c in containers.items():
            for other, condition in _dependencies(c):
                if condition in ("COMPLETE", "SUCCESS") and other in containers and _essential(containers[other]):
                    yield (
                        task,
                        f"container {name} waits for {other} to exit ({condition}), but {other} is "
                        "essential, and the task stops when an essential container exits, so "
                        f"{name} never starts; give {other} essential=False",
                    )


DEPENDENCY_RULES: tuple[ServiceRule, ...] = (
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
)
