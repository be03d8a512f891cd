"""The ECS tasks a Step Functions state machine runs, read from its definition as written. Pure Python.

A state machine runs a task definition with a Task state whose resource is ``arn:<partition>:states:::ecs:runTask``
(``.sync`` and ``.waitForTaskToken`` alike; AWS Step Functions Developer Guide, "Run Amazon ECS or Fargate tasks with
Step Functions"), its request in ``Parameters`` (JSONPath) or ``Arguments`` (JSONata). CDK writes the definition as
``DefinitionString``, an ``Fn::Join`` of JSON text around the references it holds (the cluster's ARN, the task
definition); a template may also give ``Definition`` as an object. Each reference is put back where it stood, so the
request reads as CloudFormation values; a field given by a path into the state's input (``Cluster.$``,
``TaskDefinition.$``) or by a JSONata expression is known only when the machine runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

RUN_TASK = ":states:::ecs:runTask"
_MARK = "@@ecs-gpu-sharing-ref-{}@@"  # stands in for a reference inside the JSON text while it is parsed
_BARE_MARK = re.compile(r'(?<!")@@ecs-gpu-sharing-ref-\d+@@(?!")')


def definition(props: Mapping[str, Any]) -> Any:
    """A state machine's definition as an object, references in place; ``None`` where it cannot be read."""
    if isinstance(props.get("Definition"), Mapping):
        return props["Definition"]
    return json_text(props.get("DefinitionString"))


def json_text(value: Any) -> Any:
    """JSON written as a CloudFormation value (a string, or an ``Fn::Join`` of JSON text around references, as CDK
    writes a state machine's definition or an EventBridge target's input), parsed, each reference put back where it
    stood; ``None`` where it cannot be read."""
    references: list[Any] = []
    text = value
    if isinstance(value, Mapping) and isinstance(value.get("Fn::Join"), list) and len(value["Fn::Join"]) == 2:
        separator, parts = value["Fn::Join"]
        if not isinstance(separator, str) or not isinstance(parts, list):
            return None
        pieces = []
        for part in parts:
            if isinstance(part, str):
                pieces.append(part)
            else:
                references.append(part)
                pieces.append(_MARK.format(len(references) - 1))
        text = separator.join(pieces)
    if not isinstance(text, str):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        try:  # a reference that stands for a whole value (an object, a list) is joined in without quotes
            parsed = json.loads(_BARE_MARK.sub(lambda m: json.dumps(m.group()), text))
        except ValueError:
            return None
    return _restored(parsed, references)


def _restored(value: Any, references: list[Any]) -> Any:
    if isinstance(value, str):
        for index, reference in enumerate(references):
            mark = _MARK.format(index)
            if value == mark:
                return reference
            if mark in value:  # a reference inside a longer text: the text with the reference's place unknown
                value = value.replace(mark, "*")
        return value
    if isinstance(value, Mapping):
        return {k: _restored(v, references) for k, v in value.items()}
    if isinstance(value, list):
        return [_restored(v, references) for v in value]
    return value


def run_task_requests(machine: Any) -> Iterator[Mapping[str, Any]]:
    """The request of every Task state, at any depth (Parallel branches, Map processors), that runs an ECS task."""
    if isinstance(machine, Mapping):
        resource = machine.get("Resource")
        if machine.get("Type") == "Task" and isinstance(resource, str) and RUN_TASK in resource:
            request = machine.get("Parameters", machine.get("Arguments"))
            yield request if isinstance(request, Mapping) else {"TaskDefinition.$": request}
        for value in machine.values():
            yield from run_task_requests(value)
    elif isinstance(machine, list):
        for value in machine:
            yield from run_task_requests(value)
