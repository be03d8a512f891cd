"""The templates as the rules read them (resources by type, deploy-time values resolved where they can be)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..shape import camel_keys, folded_keys
from ..template_limits import output_value

Template = Mapping[str, Any]
CAPACITY_METADATA = "ecs-gpu-sharing:capacity"
"""The metadata key on a GPU capacity's provider resource, by which the written templates tell the library's
capacities from others (``core.tenancy``), whoever names them; its value is the capacity's plan name."""


@dataclass(frozen=True)
class Resource:
    stack: str
    logical_id: str
    kind: str
    props: Mapping[str, Any]
    attributes: Mapping[str, Any]  # UpdatePolicy, DependsOn, ...: everything beside Type and Properties


class Templates:
    """Every stack's resources, with references followed within a stack and across stacks (outputs read back)."""

    def __init__(self, templates: Mapping[str, Template]) -> None:
        self.templates = templates
        self._before: dict[str, set[str]] = {}  # a stack -> the stacks deployed before it (``created_before``)
        self._by_id: dict[tuple[str, str], Resource] = {}
        for stack, template in templates.items():
            for logical_id, raw in (template.get("Resources") or {}).items():
                if not isinstance(raw, Mapping):
                    continue
                props = raw.get("Properties")
                self._by_id[(stack, logical_id)] = Resource(
                    stack,
                    logical_id,
                    str(raw.get("Type")),
                    props if isinstance(props, Mapping) else {},
                    {k: v for k, v in raw.items() if k not in ("Type", "Properties")},
                )

    def resource(self, stack: str, logical_id: str) -> Resource | None:
        return self._by_id.get((stack, logical_id))

    def all(self) -> Iterator[Resource]:
        return iter(self._by_id.values())

    def of_type(self, kind: str) -> Iterator[Resource]:
        return (r for r in self._by_id.values() if r.kind == kind)

    def target(self, value: Any, stack: str) -> Resource | None:
        """The resource a ``Ref`` or ``Fn::GetAtt`` names, in ``stack`` or, through an output, in another stack."""
        if not isinstance(value, Mapping) or len(value) != 1:
            return None
        ((key, arg),) = value.items()
        if key == "Ref" and isinstance(arg, str):
            return self._by_id.get((stack, arg))
        if key == "Fn::GetAtt":
            name = arg[0] if isinstance(arg, list) and arg else str(arg).split(".", 1)[0]
            return self._by_id.get((stack, str(name)))
        exported = output_value(value, self.templates)
        return None if exported is None else self.target(exported[1], exported[0])

    def text(self, value: Any, stack: str) -> str:
        """A template value as the text it will be once deployed, so that two values that read alike here are alike
        in AWS: strings as written; ``Fn::Base64``, ``Fn::Join`` and ``Fn::Sub`` read through; a reference to a
        resource of the templates (in its stack or through an output) as ``${stack/logical id}`` (``.attribute``
        added for ``Fn::GetAtt``); a parameter or pseudo parameter as ``${name}``, one value wherever its stack reads
        it; anything else (a condition, a selection) as ``UNKNOWN_TEXT``."""
        if isinstance(value, str):
            return value
        if not isinstance(value, Mapping) or len(value) != 1:
            return UNKNOWN_TEXT
        ((key, arg),) = value.items()
        if key == "Fn::Base64":
            return self.text(arg, stack)
        if key == "Fn::Join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            return str(arg[0]).join(self.text(part, stack) for part in arg[1])
        if key == "Fn::Sub":
            return self._substituted(arg, stack)
        target = self.target(value, stack)
        if target is not None:
            attribute = _attribute(arg) if key == "Fn::GetAtt" else None
            return "${" + f"{target.stack}/{target.logical_id}" + (f".{attribute}" if attribute else "") + "}"
        if key == "Ref" and isinstance(arg, str):
            return "${" + arg + "}"
        return UNKNOWN_TEXT

    def _substituted(self, arg: Any, stack: str) -> str:
        """An ``Fn::Sub`` read through: each ``${name}`` its variable's text, else the reference it names
        (``${X.Y}``: an attribute); ``${!name}`` the literal ``${name}``."""
        template, variables = (arg[0], arg[1]) if isinstance(arg, list) and len(arg) == 2 else (arg, {})
        if not isinstance(template, str) or not isinstance(variables, Mapping):
            return UNKNOWN_TEXT

        def one(match: re.Match[str]) -> str:
            literal, name = match.group(1), match.group(2)
            if literal:
                return "${" + name + "}"
            if name in variables:
                return self.text(variables[name], stack)
            head, _, attribute = name.partition(".")
            return self.text({"Fn::GetAtt": [head, attribute]} if attribute else {"Ref": name}, stack)

        return _SUB_VARIABLE.sub(one, template)

    def created_before(self, resource: Resource) -> tuple[set[str], set[str]]:
        """What CloudFormation has created before ``resource``: the logical ids of its stack it depends on, through
        ``DependsOn`` and the references of its properties, transitively; and the stacks deployed before its own (those
        its stack reads outputs of, transitively). The deploy order of stacks that share nothing is not in the
        templates (``Stack.add_dependency`` is in the assembly's manifest), so those are not counted."""
        ids: set[str] = set()
        todo = [resource.logical_id]
        while todo:
            current = self._by_id.get((resource.stack, todo.pop()))
            if current is None:
                continue
            for name in [*listed(current.attributes.get("DependsOn")), *_referenced(current.props)]:
                if isinstance(name, str) and name not in ids:
                    ids.add(name)
                    todo.append(name)
        return ids, self._stacks_before(resource.stack)

    def _stacks_before(self, stack: str) -> set[str]:
        if stack in self._before:
            return self._before[stack]
        found: set[str] = set()
        todo = [stack]
        while todo:
            template = self.templates.get(todo.pop()) or {}
            for value in _cross_stack(template.get("Resources") or {}):
                exported = output_value(value, self.templates)
                if exported is not None and exported[0] not in found and exported[0] != stack:
                    found.add(exported[0])
                    todo.append(exported[0])
        self._before[stack] = found
        return found


_SUB_NAME = re.compile(r"\$\{(?!!)([^}.]+)")
_SUB_VARIABLE = re.compile(r"\$\{(!?)([^}]*)\}")
UNKNOWN_TEXT = "${?}"  # what ``Templates.text`` writes for a value it cannot read
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")  # how ``Templates.text`` writes a reference, a parameter, the unreadable


def _attribute(arg: Any) -> str:
    """The attribute an ``Fn::GetAtt`` reads, in either of its spellings."""
    if isinstance(arg, list):
        return ".".join(str(part) for part in arg[1:])
    return str(arg).split(".", 1)[1] if "." in str(arg) else ""


def cdk_path(resource: Resource) -> str:
    """The construct path CDK records for a resource, else stack/logical id."""
    path = (resource.attributes.get("Metadata") or {}).get("aws:cdk:path")
    return str(path) if isinstance(path, str) else f"{resource.stack}/{resource.logical_id}"


_L1_IDS = ("/Resource", "/ASG", "/Subnet")  # the ids aws-cdk-lib's constructs give the resource they write


def construct_path(resource: Resource) -> str:
    """The path of the construct a team wrote that made a resource: ``cdk_path`` less the id aws-cdk-lib gives its
    resource (``Models/Vpc/hostsSubnet1``, not ``.../Subnet``)."""
    path = cdk_path(resource)
    for suffix in _L1_IDS:
        path = path.removesuffix(suffix)
    return path


def _referenced(value: Any) -> Iterator[str]:
    """The logical ids (or parameters) a value names through ``Ref``, ``Fn::GetAtt`` and ``Fn::Sub``."""
    if isinstance(value, list):
        for item in value:
            yield from _referenced(item)
    elif isinstance(value, Mapping):
        for key, arg in value.items():
            if key == "Ref" and isinstance(arg, str):
                yield arg
            elif key == "Fn::GetAtt":
                yield str(arg[0]) if isinstance(arg, list) and arg else str(arg).split(".", 1)[0]
            elif key == "Fn::Sub":
                text = arg[0] if isinstance(arg, list) and arg else arg
                if isinstance(text, str):
                    yield from _SUB_NAME.findall(text)
                yield from _referenced(arg[1:] if isinstance(arg, list) else [])
            else:
                yield from _referenced(arg)


def _cross_stack(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every ``Fn::ImportValue`` and ``Fn::GetStackOutput`` in a value."""
    if isinstance(value, list):
        for item in value:
            yield from _cross_stack(item)
    elif isinstance(value, Mapping):
        if len(value) == 1 and next(iter(value)) in ("Fn::ImportValue", "Fn::GetStackOutput"):
            yield value
        else:
            for item in value.values():
                yield from _cross_stack(item)


def listed(value: Any) -> list[Any]:
    """A policy element that may be one value or a list of them, as a list (none: empty)."""
    return value if isinstance(value, list) else [] if value is None else [value]


def statements(document: Any) -> list[Mapping[str, Any]]:
    """A policy document's statements, from its JSON text or its parsed form; none for what is neither."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    if not isinstance(document, Mapping):
        return []
    return [s for s in listed(document.get("Statement")) if isinstance(s, Mapping)]


Finding = tuple[Resource, str]  # the resource and what is wrong with it, with what to do
Check = Callable[[Templates], Iterator[Finding]]


ECS_API = "Amazon ECS API Reference"  # the page most rows' sources are on


@dataclass(frozen=True)
class ServiceRule:
    rule_id: str
    service: str  # the AWS service that refuses
    requirement: str  # what it requires, one line
    source: str  # the page and its sentence
    check: Check
    rehearsal: str = "not enforced by moto: checked on the templates before deploying"


def literal_number(value: Any) -> int | None:
    """A literal whole number (CloudFormation writes some as strings); ``None`` for tokens and absences."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _containers(task: Resource) -> list[dict[str, Any]]:
    containers = task.props.get("ContainerDefinitions")
    return [camel_keys(c) for c in containers] if isinstance(containers, list) else []


def _compatibilities(task: Resource) -> set[str]:
    value = task.props.get("RequiresCompatibilities")
    return {str(v) for v in value} if isinstance(value, list) else set()


def _on_ec2(task: Resource) -> bool:
    """A task definition that may run on EC2 container instances (EC2 is also ECS's default compatibility)."""
    found = _compatibilities(task)
    return not found or "EC2" in found


def _network_mode(task: Resource) -> str:
    mode = task.props.get("NetworkMode")
    return mode if isinstance(mode, str) else "bridge"


def _services(ctx: Templates) -> Iterator[tuple[Resource, Resource]]:
    """Each ECS service with the task definition it runs, where the templates hold it (imported ones are skipped)."""
    for service in ctx.of_type("AWS::ECS::Service"):
        task = ctx.target(service.props.get("TaskDefinition"), service.stack)
        if task is not None and task.kind == "AWS::ECS::TaskDefinition":
            yield service, task


def _reserved(task: Resource) -> tuple[int, int]:
    """The containers' CPU units and memory as ECS reserves them on EC2: each container's reservation, else its limit
    (the same reading as ``core.shape.task_shape``; a token counts as nothing here)."""
    containers = _containers(task)
    cpu = sum(literal_number(c.get("cpu")) or 0 for c in containers)
    memory = sum(literal_number(c.get("memoryReservation", c.get("memory"))) or 0 for c in containers)
    return cpu, memory


def _service_connect(service: Resource) -> bool:
    config = service.props.get("ServiceConnectConfiguration")
    return isinstance(config, Mapping) and config.get("Enabled") in (True, "true")


_ROLE_NAME = re.compile(r":iam::(?:\$\{[^}]*\}|[^:]*):role/(?:.*/)?([^/]+)$")  # an account, or ${AWS::AccountId}


def role_made_after(ctx: Templates, resource: Resource, arn: str) -> Resource | None:
    """The role of ``resource``'s stack that ``arn`` names (the resource itself included), where nothing orders it
    before ``resource``: a principal named by text is no reference, so CloudFormation may create ``resource`` first,
    and the services that check a policy's principals (KMS, IAM) refuse one that does not exist yet. Roles of other
    stacks are left out: their order may come from ``Stack.add_dependency``, which no template shows."""
    match = _ROLE_NAME.search(arn)
    if match is None:
        return None
    before, _ = ctx.created_before(resource)
    for role in ctx.of_type("AWS::IAM::Role"):
        if (
            role.stack == resource.stack
            and role.props.get("RoleName") == match.group(1)
            and role.logical_id not in before
        ):
            return role
    return None


def none_made_before(runner: Resource, before: tuple[set[str], set[str]], enablers: list[Resource]) -> bool:
    """No enabler is created before ``runner``, and one is in its stack, where only DependsOn and references order
    them (a stack's order after another may come from ``Stack.add_dependency``, which no template shows)."""
    ids, stacks = before
    if any((r.stack == runner.stack and r.logical_id in ids) or r.stack in stacks for r in enablers):
        return False
    return any(r.stack == runner.stack for r in enablers)


def launch_data(ctx: Templates, group: Resource) -> dict[str, Any]:
    """The ``LaunchTemplateData`` of the launch template an Auto Scaling group names, as written (``{}``: none)."""
    spec = camel_keys(group.props.get("LaunchTemplate"))
    if not spec:
        policy = camel_keys(camel_keys(group.props.get("MixedInstancesPolicy")).get("launchTemplate"))
        spec = camel_keys(policy.get("launchTemplateSpecification"))
    template = ctx.target(spec.get("launchTemplateId") or spec.get("launchTemplateName"), group.stack)
    return camel_keys(template.props.get("LaunchTemplateData")) if template is not None else {}


def user_data_text(ctx: Templates, group: Resource) -> str:
    """The user data of an Auto Scaling group's launch template, or of its launch configuration (what
    aws-autoscaling writes without its launch-template feature flag), as text (``Templates.text``)."""
    written = launch_data(ctx, group).get("userData")
    configuration = ctx.target(group.props.get("LaunchConfigurationName"), group.stack)
    if written is None and configuration is not None:
        written = configuration.props.get("UserData")
    return ctx.text(written, group.stack)


def efs_volumes(task: Resource) -> list[tuple[Any, dict[str, Any]]]:
    """Each EFS volume of a task definition: its name and its configuration, keys in lower case (``folded_keys``)."""
    volumes = task.props.get("Volumes")
    found = []
    for volume in volumes if isinstance(volumes, list) else []:
        config = folded_keys(folded_keys(volume).get("efsvolumeconfiguration"))
        if config:
            found.append((folded_keys(volume).get("name"), config))
    return found


def provider_group(ctx: Templates, provider: Resource | None) -> Resource | None:
    """The Auto Scaling group of the templates a capacity provider scales; ``None`` for a Managed Instances provider,
    a group of the account, or no provider."""
    if provider is None:
        return None
    config = camel_keys(provider.props.get("AutoScalingGroupProvider"))
    return ctx.target(config.get("autoScalingGroupArn"), provider.stack)
