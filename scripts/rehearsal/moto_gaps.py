"""Where moto differs from AWS in what a deploy needs, completed at run time (each gap named in MODEL_GAPS)."""

# This module completes moto (an emulator) at run time: it replaces methods of moto's models and registers models
# of its own, which mypy cannot type against moto's classes.
# mypy: disable-error-code="assignment,method-assign,attr-defined,abstract,arg-type,call-overload,unused-ignore,misc"
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .account import missing_key_policy_roles
from .adapters import _MODELS, ADAPTED_IDS, ADAPTERS, _delete_ecs_service
from .report import ACCOUNT, REGION


def _client(service: str) -> Any:
    import boto3

    return boto3.client(service, region_name=REGION)


MODEL_GAPS = (
    "moto keeps a change set's outputs from the empty template of a stack under review: outputs are parsed again",
    "moto teaches no Fn::GetStackOutput: read from moto's stacks in the region",
    "moto registers a stack's exports only when CreateStack makes it, and `cdk deploy` makes and updates stacks "
    "through change sets, so Fn::ImportValue found no export: a change set's stack exports its outputs when it is "
    "executed (the names unique in the region, as CloudFormation requires)",
    "moto's target group answers no Fn::GetAtt: TargetGroupFullName, TargetGroupName, LoadBalancerArns",
    "moto's KMS key from CloudFormation keeps its policy as a JSON object, not text: stored as text",
    "moto's KMS takes a key policy naming a role that does not exist; KMS refuses it "
    "(MalformedPolicyDocumentException): the rehearsal refuses it too, so a key policy naming a service-linked role "
    "a new account lacks fails the deploy",
    "moto keeps an Auto Scaling group's scale-in-protected instances when the group is deleted; CloudFormation "
    "deletes a group with its instances (ForceDelete): they are terminated with it",
    "moto keeps a terminated instance's primary network interface and a deleted NAT gateway's interface, which "
    "EC2 deletes: deleted with them, so the VPC can go",
    "moto's stack deletion skips NAT gateways and route tables: deleted (with their subnet associations)",
    "moto looks change sets up by name across all stacks, and `cdk deploy` names every one cdk-deploy-change-set: "
    "looked up within the stack named, ChangeSetNotFound when it has none, as CloudFormation does",
    "moto resolves an SSM-typed parameter's previous value again on update, though it holds the resolved value: "
    "a value that names no parameter is kept as it is",
    "moto's task definition update reads ContainerDefinitions and Volumes as CloudFormation writes them (PascalCase), "
    "where its create path turns them into the API's camelCase first; an edited task definition then fails "
    "registration (SharingStrategy must have one and only one member set): the update turns them first too",
    "moto models Auto Scaling group capacity providers only: a Managed Instances provider's request is checked against "
    "botocore's ECS model, and the provider is held in moto's ECS backend by name",
)
"""Where the rehearsal completes moto itself; docs/app.md lists them. None makes a resource the template lacks."""


def _scope_change_sets() -> None:
    from moto.cloudformation.exceptions import CloudFormationError
    from moto.cloudformation.responses import CloudFormationResponse

    class ChangeSetNotFound(CloudFormationError):
        code = "ChangeSetNotFound"

    for method in ("describe_change_set", "delete_change_set", "execute_change_set"):
        original = getattr(CloudFormationResponse, method)

        def scoped(self: Any, original: Any = original) -> Any:
            name, stack = self._get_param("ChangeSetName"), self._get_param("StackName")
            if name and stack and not str(name).startswith("arn:"):
                matches = [
                    arn
                    for arn, change_set in self.cloudformation_backend.change_sets.items()
                    if change_set.change_set_name == name and stack in (change_set.stack_name, change_set.stack_id)
                ]
                if not matches:
                    raise ChangeSetNotFound(f"ChangeSet [{name}] does not exist")
                self.querystring["ChangeSetName"] = [matches[-1]]
            return original(self)

        setattr(CloudFormationResponse, method, scoped)


def _change_set_exports() -> None:
    """A change set's stack imports from the region's exports, and after it runs its own exports are the region's
    (MODEL_GAPS): those it no longer has are dropped, and a name another stack exports is refused, as CreateStack
    refuses it."""
    from moto.cloudformation.exceptions import ValidationError
    from moto.cloudformation.models import CloudFormationBackend

    original = CloudFormationBackend.execute_change_set

    def execute(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        named = [
            cs
            for arn, cs in self.change_sets.items()
            if change_set_name in (arn, cs.change_set_name) and stack_name in (None, cs.stack_name, cs.stack_id)
        ]
        if not named:
            return original(self, change_set_name, stack_name)  # moto answers what it cannot find
        stack = self.stacks[named[-1].stack_id]
        # A stack a change set makes is born without the region's exports to import from
        stack.cross_stack_resources = stack.resource_map.cross_stack_resources = self.exports
        original(self, change_set_name, stack_name)
        for name in [n for n, e in self.exports.items() if e.exporting_stack_id == stack.stack_id]:
            del self.exports[name]
        for export in stack.exports:
            if export.name in self.exports:
                raise ValidationError(stack.stack_id, message="Export names must be unique across a given region")
            self.exports[export.name] = export

    CloudFormationBackend.execute_change_set = execute


def _task_definition_update() -> None:
    """moto's TaskDefinition update with the key conversion its create path does (MODEL_GAPS)."""
    from moto.core.utils import pascal_to_camelcase, remap_nested_keys
    from moto.ecs.models import TaskDefinition

    update = TaskDefinition.update_from_cloudformation_json.__func__  # type: ignore[attr-defined]
    if getattr(update, "_camel_keys", False):
        return

    def converted(cls: Any, *, cloudformation_json: Any, **kwargs: Any) -> Any:
        # moto's CloudFormation calls it by keyword (parsing.parse_and_update_resource)
        properties = dict(cloudformation_json.get("Properties") or {})
        for key in ("ContainerDefinitions", "Volumes"):
            if key in properties:
                properties[key] = remap_nested_keys(properties[key], pascal_to_camelcase)
        return update(cls, cloudformation_json={**cloudformation_json, "Properties": properties}, **kwargs)

    converted._camel_keys = True  # type: ignore[attr-defined]
    TaskDefinition.update_from_cloudformation_json = classmethod(converted)  # type: ignore[method-assign,assignment]


def _fill_model_gaps() -> None:
    _scope_change_sets()
    _change_set_exports()
    from moto.cloudformation.parsing import ResourceMap
    from moto.ssm.models import ssm_backends

    parse_ssm = ResourceMap.parse_ssm_parameter

    def parse_ssm_parameter(self: Any, value: str, value_type: str) -> Any:
        if ssm_backends[self._account_id][self._region_name].get_parameter(value) is None:
            return value  # already resolved: the previous value of the parameter, kept on an update
        return parse_ssm(self, value, value_type)

    ResourceMap.parse_ssm_parameter = parse_ssm_parameter
    _task_definition_update()
    from moto.elbv2.models import FakeTargetGroup
    from moto.kms import models as kms

    def target_group_attribute(self: Any, name: str) -> Any:
        attributes = {
            "TargetGroupFullName": self.arn.split(":", 5)[-1],
            "TargetGroupName": self.name,
            "TargetGroupArn": self.arn,
            "LoadBalancerArns": list(self.load_balancer_arns),
        }
        if name not in attributes:
            from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

            raise UnformattedGetAttTemplateException()
        return attributes[name]

    FakeTargetGroup.get_cfn_attribute = target_group_attribute

    create_key = kms.Key.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def key_from_cloudformation(
        cls: Any, resource_name: str, cloudformation_json: Any, *args: Any, **kwargs: Any
    ) -> Any:
        properties = cloudformation_json.get("Properties") or {}
        if isinstance(properties.get("KeyPolicy"), dict):
            properties["KeyPolicy"] = json.dumps(properties["KeyPolicy"])
        account = args[0] if args else kwargs.get("account_id", ACCOUNT)
        missing = missing_key_policy_roles(properties.get("KeyPolicy"), account_id=account)
        if missing:  # as KMS refuses it: the deploy fails, naming the role
            from moto.cloudformation.exceptions import ValidationError

            raise ValidationError(
                message=f"CreateKey {resource_name}: MalformedPolicyDocumentException: the policy names "
                f"{', '.join(missing)}, which does not exist in the account (KMS checks every principal)"
            )
        return create_key(cls, resource_name, cloudformation_json, *args, **kwargs)

    kms.Key.create_from_cloudformation_json = classmethod(key_from_cloudformation)

    from moto.autoscaling.models import AutoScalingBackend

    delete_group = AutoScalingBackend.delete_auto_scaling_group

    def force_delete(self: Any, group_name: str) -> None:
        group = self.autoscaling_groups.get(group_name)
        for state in group.instance_states if group is not None else []:
            state.protected_from_scale_in = False
        delete_group(self, group_name)

    AutoScalingBackend.delete_auto_scaling_group = force_delete

    from moto.ec2.models.instances import Instance
    from moto.ec2.models.nat_gateways import NatGatewayBackend

    terminate = Instance.terminate

    def terminate_with_interface(self: Any) -> Any:
        primary = self.nics.get(0)
        if primary is not None:
            primary.delete_on_termination = True  # EC2's default for an instance's primary interface
        return terminate(self)

    Instance.terminate = terminate_with_interface
    delete_nat = NatGatewayBackend.delete_nat_gateway

    def delete_nat_with_interface(self: Any, nat_gateway_id: str) -> Any:
        nat = delete_nat(self, nat_gateway_id)
        if getattr(nat, "_eni", None) is not None and nat._eni.id in self.enis:
            self.delete_network_interface(nat._eni.id)
        return nat

    NatGatewayBackend.delete_nat_gateway = delete_nat_with_interface
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.nat_gateways import NatGateway

    def delete_nat_from_stack(self: Any, account_id: str, region_name: str) -> None:
        ec2_backends[account_id][region_name].delete_nat_gateway(self.id)  # moto's stack deletion skips it

    NatGateway.delete = delete_nat_from_stack
    from moto.ec2.models.route_tables import RouteTable

    def delete_route_table_from_stack(self: Any, account_id: str, region_name: str) -> None:
        backend = ec2_backends[account_id][region_name]
        for association in list(self._associations):
            backend.disassociate_route_table(association)
        backend.delete_route_table(self.id)

    RouteTable.delete = delete_route_table_from_stack


DELETERS: dict[str, Callable[[Callable[[str], Any], str], None]] = {
    "AWS::ECS::Service": _delete_ecs_service,
    "AWS::ECS::CapacityProvider": lambda c, name: c("ecs").delete_capacity_provider(capacityProvider=name),
    "AWS::ElasticLoadBalancingV2::LoadBalancer": lambda c, arn: c("elbv2").delete_load_balancer(LoadBalancerArn=arn),
    "AWS::ServiceDiscovery::PrivateDnsNamespace": lambda c, ns: c("servicediscovery").delete_namespace(Id=ns),
    "AWS::SecretsManager::Secret": lambda c, arn: c("secretsmanager").delete_secret(
        SecretId=arn, ForceDeleteWithoutRecovery=True
    ),
}


def install_adapters() -> None:
    """Registers a CloudFormation model in moto for each type of ``ADAPTERS`` (replacing moto's own where it has a
    thinner one), and teaches moto's
    template parser ``Fn::GetStackOutput`` (an output of another stack in the region, read from moto's stacks)."""
    from moto.cloudformation import models, parsing
    from moto.cloudformation.exceptions import ValidationError
    from moto.cloudformation.models import cloudformation_backends
    from moto.core.common_models import CloudFormationModel

    for kind, (name_property, handler) in ADAPTERS.items():

        class Adapted(CloudFormationModel):  # type: ignore[misc]
            _kind, _name_property, _handler = kind, name_property, staticmethod(handler)

            def __init__(self, physical: str, attributes: dict[str, Any]) -> None:
                self._physical, self._attributes = physical, attributes

            @property
            def physical_resource_id(self) -> str:
                return self._physical

            @classmethod
            def has_cfn_attr(cls, attr: str) -> bool:
                return True

            def get_cfn_attribute(self, attribute_name: str) -> Any:
                if attribute_name not in self._attributes:
                    raise ValidationError(message=f"the rehearsal's adapter for {self._kind} has no {attribute_name}")
                return self._attributes[attribute_name]

            @staticmethod
            def cloudformation_name_type() -> str:
                return ""

            @classmethod
            def create_from_cloudformation_json(  # type: ignore[override]
                cls,
                resource_name: str,
                cloudformation_json: dict[str, Any],
                account_id: str,
                region_name: str,
                **kwargs: Any,
            ) -> Adapted:
                props = cloudformation_json.get("Properties") or {}
                physical, attributes = cls._handler(_client, props, props.get(cls._name_property) or resource_name)
                ADAPTED_IDS[(kwargs.get("StackId", ""), kwargs.get("LogicalId", ""))] = physical
                return cls(physical, attributes)

            @classmethod
            def update_from_cloudformation_json(  # type: ignore[override]
                cls,
                original_resource: Any,
                new_resource_name: str,
                cloudformation_json: dict[str, Any],
                account_id: str,
                region_name: str,
            ) -> Any:
                return original_resource  # the rehearsal checks creation; an update keeps what was made

            @classmethod
            def delete_from_cloudformation_json(  # type: ignore[override]
                cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
            ) -> None:
                return None

            def delete(self, account_id: str, region_name: str) -> None:
                deleter = DELETERS.get(self._kind)
                if deleter is not None:
                    deleter(_client, self._physical)

            def is_created(self) -> bool:
                return True

        Adapted.cloudformation_type = staticmethod(lambda kind=kind: kind)  # type: ignore[method-assign]
        Adapted.__name__ = f"Rehearsal{kind.replace(':', '')}"
        _MODELS.append(Adapted)  # moto finds models through __subclasses__, which holds them weakly
    parsing.get_model_list.cache_clear()
    parsing.get_model_map.cache_clear()
    parsing.get_name_type_map.cache_clear()
    model_map = parsing.get_model_map()  # cached: the adapters replace moto's thinner models in it
    for model in _MODELS:
        model_map[model.cloudformation_type()] = model  # type: ignore[attr-defined]

    original = parsing.clean_json
    if getattr(original, "_rehearsal", False):
        return

    # moto applies a change set's resources but keeps the outputs it parsed from the empty template of a stack under
    # review, so a stack created by `cdk deploy` (through a change set) would have no outputs: parse them again.
    change_set_apply = models.ChangeSet.apply

    def apply(self: Any) -> None:
        change_set_apply(self)
        self.stack.template = self.template
        self.stack._parse_template()
        self.stack.output_map = self.stack._create_output_map()

    models.ChangeSet.apply = apply
    _fill_model_gaps()

    def clean_json(resource_json: Any, resources_map: Any) -> Any:
        if isinstance(resource_json, dict) and "Fn::GetStackOutput" in resource_json:
            arg = original(resource_json["Fn::GetStackOutput"], resources_map)
            backend = cloudformation_backends[resources_map._account_id][resources_map._region_name]
            for stack in backend.stacks.values():
                if stack.name == arg["StackName"] and not stack.status.startswith("DELETE"):
                    for output in stack.outputs or []:
                        if output["OutputKey"] == arg["OutputName"]:
                            return output["OutputValue"]
            raise ValidationError(
                message=f"Fn::GetStackOutput: stack {arg['StackName']} has no output {arg['OutputName']}"
            )
        return original(resource_json, resources_map)

    clean_json._rehearsal = True  # type: ignore[attr-defined]
    parsing.clean_json = clean_json


# --- read-backs: what moto's CloudFormation made, read back through its API -------------------------------------------
