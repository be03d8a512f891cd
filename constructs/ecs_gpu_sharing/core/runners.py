"""Whatever runs a task definition on a cluster, as the templates write it, and what each overrides at run time. Pure
Python.

A service and a task set run their task definition as it is. The others start tasks with ``RunTask``, whose request may
override what the task definition says (Amazon ECS API Reference, ``TaskOverride``: each container's environment,
environment files and command, the task role, CPU and memory):

- an EventBridge rule's or an EventBridge Scheduler schedule's ECS target: the overrides are the target's ``Input``,
  a JSON object (``containerOverrides``, ``taskRoleArn``: Amazon ECS Developer Guide, "Amazon ECS EventBridge IAM
  Role", on a task role override; CDK's ``events_targets.EcsTask(container_overrides=...)`` writes them there), or the
  ``InputTemplate`` of its ``InputTransformer``, whose ``<placeholders>`` the event fills (a text holding one is known
  only at run time). A rule target that passes on part of the event (``InputPath``) carries overrides the synth cannot
  read;
- an EventBridge pipe's ECS target: ``TargetParameters.EcsTaskParameters.Overrides`` (EventBridge Pipes API
  Reference, ``EcsTaskOverride``), where a value that starts with ``$.`` is a dynamic path the event fills
  (EventBridge Pipes User Guide, "Dynamic path parameters");
- a Step Functions Task state that runs an ECS task: its request's ``Overrides``, or ``Overrides.$`` from the
  machine's input, which the synth cannot read;
- an SDK call at deploy (``custom_resources.AwsCustomResource``, a ``Custom::AWS`` resource whose ``Create``,
  ``Update`` or ``Delete`` is the call as JSON text): ECS's ``runTask`` and ``startTask`` with their ``overrides``,
  and ``createService`` and ``updateService``, which run a task definition as a service does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .service_rules import Resource, Templates
from .shape import camel_keys
from .state_machines import definition, json_text, run_task_requests
from .tokens import at_run_time, is_intrinsic


@dataclass(frozen=True)
class Runner:
    """Whatever runs a task definition on a cluster, as written: a service, a task set, a scheduled task (an
    EventBridge rule's or an EventBridge Scheduler schedule's ECS target), an EventBridge pipe's ECS target, a Step
    Functions Task state that runs an ECS task."""

    resource: Resource
    what: str  # "service", "task set", "scheduled task", "pipe", "state machine task"
    cluster: Any
    launch_type: Any
    strategy: Any
    task_definition: Any
    # what its RunTask request overrides, as written (keys in any case); a str says why the synth cannot read them
    overrides: Mapping[str, Any] | str | None = None
    serves: bool = False  # it keeps a count of tasks running, as a service does (not one RunTask)


def runners(ctx: Templates) -> Iterator[Runner]:
    """Every service, task set, scheduled ECS task, pipe and state machine task of the templates."""
    for kind, what in (("AWS::ECS::Service", "service"), ("AWS::ECS::TaskSet", "task set")):
        for resource in ctx.of_type(kind):
            p = resource.props
            if p.get("TaskDefinition") is None and (p.get("DeploymentController") or {}).get("Type") == "EXTERNAL":
                continue  # an external service's task sets name the task definitions, and are judged themselves
            strategy, task = p.get("CapacityProviderStrategy"), p.get("TaskDefinition")
            yield Runner(resource, what, p.get("Cluster"), p.get("LaunchType"), strategy, task, serves=True)
    for rule in ctx.of_type("AWS::Events::Rule"):
        for target in rule.props.get("Targets") or []:
            yield from _scheduled(rule, target)
    for schedule in ctx.of_type("AWS::Scheduler::Schedule"):
        yield from _scheduled(schedule, schedule.props.get("Target"))
    for pipe in ctx.of_type("AWS::Pipes::Pipe"):  # its target is the cluster, its ECS request in the parameters
        ecs = camel_keys(camel_keys(pipe.props.get("TargetParameters")).get("ecsTaskParameters"))
        if ecs:
            yield Runner(
                pipe,
                "pipe",
                pipe.props.get("Target"),
                ecs.get("launchType"),
                ecs.get("capacityProviderStrategy"),
                ecs.get("taskDefinitionArn"),
                _object(_run_time(ecs.get("overrides"), "$."), "its Overrides"),
            )
    for resource in ctx.of_type("Custom::AWS"):
        yield from _sdk_calls(resource)
    for machine in ctx.of_type("AWS::StepFunctions::StateMachine"):
        for request in run_task_requests(definition(machine.props)):
            overrides = (
                "its Overrides come from the machine's input (Overrides.$)"
                if "Overrides.$" in request
                else _object(_run_time(request.get("Overrides"), "{%"), "its Overrides")
            )
            yield Runner(
                machine,
                "state machine task",
                _request_field(request, "Cluster"),
                request.get("LaunchType"),
                request.get("CapacityProviderStrategy"),
                _request_field(request, "TaskDefinition"),
                overrides,
            )


def _request_field(request: Mapping[str, Any], name: str) -> Any:
    """A Step Functions request's field as written, or where the machine's input gives it (``Name.$``, a JSONata
    ``{% ... %}`` expression), a value that names no resource: the cluster or task definition is known only when the
    machine runs."""
    if name in request:
        given = request[name]
        if isinstance(given, str) and given.strip().startswith("{%"):  # a JSONata expression, evaluated at run time
            return at_run_time(given)
        return given
    if f"{name}.$" in request:
        return at_run_time(request[f"{name}.$"])
    return None


def _object(value: Any, what: str) -> Mapping[str, Any] | str | None:
    """Overrides written as an object, none, or why they cannot be read (an intrinsic, known only at deploy)."""
    if value is None or (isinstance(value, Mapping) and not is_intrinsic(value)):
        return value
    return f"{what} are a value the synth cannot read"


def _scheduled(resource: Resource, target: Any) -> Iterator[Runner]:
    """An EventBridge rule's or Scheduler schedule's ECS target: the cluster is its Arn, the rest its EcsParameters,
    the overrides its input."""
    ecs = target.get("EcsParameters") if isinstance(target, Mapping) else None
    if not isinstance(ecs, Mapping):
        return
    overrides: Mapping[str, Any] | str | None = None
    transformer = target.get("InputTransformer")
    if target.get("InputPath") is not None:
        overrides = "its input, which ECS reads as overrides, comes from the event (InputPath)"
    elif transformer is not None:
        template = transformer.get("InputTemplate") if isinstance(transformer, Mapping) else None
        parsed = _input_template(template) if isinstance(template, str) else None
        overrides = (
            parsed
            if isinstance(parsed, Mapping) and not is_intrinsic(parsed)
            else "its input, which ECS reads as overrides, is an InputTransformer template the synth cannot read"
        )
    elif target.get("Input") is not None:
        parsed = json_text(target["Input"])
        overrides = parsed if isinstance(parsed, Mapping) else "its Input, which ECS reads as overrides, is not JSON"
    yield Runner(
        resource,
        "scheduled task",
        target.get("Arn"),
        ecs.get("LaunchType"),
        ecs.get("CapacityProviderStrategy"),
        ecs.get("TaskDefinitionArn"),
        overrides,
    )


_STRING = re.compile(r'("(?:[^"\\]|\\.)*")')  # a JSON string literal, escapes included
_PLACEHOLDER = re.compile(r"<[A-Za-z0-9_.\-]+>")


def _input_template(text: str) -> Any:
    """An EventBridge InputTemplate as the object it becomes, each ``<placeholder>`` (where it stands alone) and each
    string that holds one (``"s3://<bucket>/<key>"``) a value known only when the event arrives; ``None`` when the
    template is no JSON."""
    parts = []
    for index, part in enumerate(_STRING.split(text)):
        if index % 2:  # a string literal
            parts.append(json.dumps(at_run_time(part)) if _PLACEHOLDER.search(part) else part)
        else:
            parts.append(_PLACEHOLDER.sub(lambda m: json.dumps(at_run_time(m.group())), part))
    try:
        return json.loads("".join(parts))
    except ValueError:
        return None


def _run_time(value: Any, marks: str) -> Any:
    """Overrides with each string that starts with ``marks`` (a pipe's dynamic path ``$.``, a state machine's JSONata
    ``{%``) as a value known only when the machine or the event supplies it."""
    if isinstance(value, str) and value.lstrip().startswith(marks):
        return at_run_time(value)
    if isinstance(value, Mapping):
        return {k: _run_time(v, marks) for k, v in value.items()}
    if isinstance(value, list):
        return [_run_time(v, marks) for v in value]
    return value


_ECS_CALLS = {"runtask": "runs", "starttask": "runs", "createservice": "serves", "updateservice": "serves"}


def _sdk_calls(resource: Resource) -> Iterator[Runner]:
    """The ECS calls an ``AwsCustomResource`` makes at deploy that run a task definition on a cluster (an
    ``updateService`` that names no task definition keeps the service's, and runs nothing new)."""
    for phase in ("Create", "Update", "Delete"):
        call = json_text(resource.props.get(phase)) if resource.props.get(phase) is not None else None
        if not isinstance(call, Mapping):
            continue
        service = str(call.get("service", "")).lower().removeprefix("@aws-sdk/client-")
        action = str(call.get("action", "")).lower().removesuffix("command")
        kind = _ECS_CALLS.get(action)
        parameters = camel_keys(call.get("parameters"))
        if service != "ecs" or kind is None or "taskDefinition" not in parameters:
            continue
        yield Runner(
            resource,
            f"SDK call {call.get('action')} at deploy of",
            parameters.get("cluster"),
            parameters.get("launchType"),
            parameters.get("capacityProviderStrategy"),
            parameters.get("taskDefinition"),
            _object(parameters.get("overrides"), "its overrides") if kind == "runs" else None,
            serves=kind == "serves",
        )
