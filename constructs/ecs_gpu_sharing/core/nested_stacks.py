"""Nested stacks (``cdk.NestedStack``) as the written-template checks read them.

A nested stack is deployed by its parent, through an ``AWS::CloudFormation::Stack`` resource: its template is a file
of its own in the cloud assembly, each value of the parent it reads comes in as a parameter the resource passes
(aws-cdk names them ``referenceto...Ref``), and the parent reads its outputs as the resource's ``Outputs.<name>``
attributes (AWS CloudFormation User Guide, "AWS::CloudFormation::Stack"). The checks follow references within a
template and across templates through outputs (``service_rules.base.Templates``), so ``joined`` gives them each nested
template beside its parent's with both crossings written as outputs read (``Fn::GetStackOutput``): a parameter the
parent passes becomes an output of the parent, and a read of a nested output reads that output. A service in a nested
stack is then seen on the parent's capacity provider, in the parent's cluster, as CloudFormation will create it.

Only the checks read these templates: the per-template limits (resources, outputs, parameters, size) are counted on
the templates as written.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .template_limits import Template

NESTED_STACK = "AWS::CloudFormation::Stack"
ASSET_PATH = "aws:asset:path"  # aws-cdk's metadata on the resource: the nested template's file in the assembly
_SUB_NAME = re.compile(r"\$\{([^!}][^}]*)\}")


def nested_stack_resources(template: Template) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each nested stack resource of ``template``: its logical id and the resource."""
    for logical_id, resource in (template.get("Resources") or {}).items():
        if isinstance(resource, Mapping) and resource.get("Type") == NESTED_STACK:
            yield logical_id, resource


def template_file(resource: Mapping[str, Any], files_by_object_key: Mapping[str, str]) -> str | None:
    """The file of a nested stack resource's template in the assembly: aws-cdk's asset metadata where it is written,
    else the file asset whose object key ends its ``TemplateURL`` (``files_by_object_key``: from the assets
    manifests)."""
    path = (resource.get("Metadata") or {}).get(ASSET_PATH)
    if isinstance(path, str):
        return path
    url = (resource.get("Properties") or {}).get("TemplateURL")
    parts = url.get("Fn::Join", [None, []])[1] if isinstance(url, Mapping) else [url]
    last = parts[-1] if isinstance(parts, list) and parts else None
    return files_by_object_key.get(last.rsplit("/", 1)[-1]) if isinstance(last, str) else None


def read_nested(
    templates: Mapping[str, Template], files: Mapping[str, Path], key: Callable[[str, str, Path], str]
) -> dict[tuple[str, str], tuple[str, Path, Template]]:
    """The nested stacks of ``templates`` (``files``: each one's file in the assembly), and theirs in turn, read from
    the assembly: (the key of the template holding the nested stack resource, its logical id) -> (the nested
    template's key, ``key(parent key, logical id, file)``; its file; the template). One whose template is not in the
    assembly is left out: it cannot be read."""
    out: dict[tuple[str, str], tuple[str, Path, Template]] = {}
    assets: dict[Path, dict[str, str]] = {}  # a folder's file assets, read once
    todo = [(name, files[name], template) for name, template in templates.items()]
    while todo:
        parent, path, template = todo.pop()
        folder = path.parent
        for logical_id, resource in nested_stack_resources(template):
            if folder not in assets:
                assets[folder] = _files_by_object_key(folder)
            file = template_file(resource, assets[folder])
            if file is None or not (folder / file).is_file():
                continue
            child = key(parent, logical_id, folder / file)
            nested = json.loads((folder / file).read_text())
            out[(parent, logical_id)] = (child, folder / file, nested)
            todo.append((child, folder / file, nested))
    return out


def _files_by_object_key(folder: Path) -> dict[str, str]:
    """The file assets of the assets manifests in ``folder`` (aws-cdk's ``*.assets.json``): object key -> file."""
    out: dict[str, str] = {}
    for manifest in sorted(folder.glob("*.assets.json")):
        for asset in (json.loads(manifest.read_text()).get("files") or {}).values():
            for destination in (asset.get("destinations") or {}).values():
                out[str(destination.get("objectKey"))] = str((asset.get("source") or {}).get("path"))
    return out


def _parameter_output(resource_id: str, parameter: str) -> str:
    """The parent's output a passed parameter is read from: a name no template has (a dot is not allowed there)."""
    return f"{resource_id}.{parameter}"


def _stack_output(stack: str, output: str) -> dict[str, Any]:
    return {"Fn::GetStackOutput": {"StackName": stack, "OutputName": output}}


def _rewritten(node: Any, replace: Callable[[Any], Any | None], sub: Callable[[str], dict[str, Any]]) -> Any:
    """``node`` with every value ``replace`` gives a replacement for replaced, and each ``Fn::Sub`` given the
    variables ``sub`` finds in its string (those it already names kept)."""
    if isinstance(node, list):
        return [_rewritten(v, replace, sub) for v in node]
    if not isinstance(node, Mapping):
        return node
    replaced = replace(node)
    if replaced is not None:
        return replaced
    if len(node) == 1 and "Fn::Sub" in node:
        arg = node["Fn::Sub"]
        text, variables = (arg[0], arg[1]) if isinstance(arg, list) and len(arg) == 2 else (arg, {})
        if isinstance(text, str) and isinstance(variables, Mapping):
            found = {k: v for k, v in sub(text).items() if k not in variables}
            if found:
                kept = {k: _rewritten(v, replace, sub) for k, v in variables.items()}
                return {"Fn::Sub": [text, {**kept, **found}]}
    return {k: _rewritten(v, replace, sub) for k, v in node.items()}


def joined(
    templates: Mapping[str, Template], nested: Mapping[tuple[str, str], tuple[str, Template]]
) -> dict[str, Template]:
    """``templates`` and the nested templates (``nested``: the parent's key and the nested stack resource's logical
    id -> the nested template's key and the template), with the references across each nesting written as outputs
    read (module docstring). The templates given are not changed."""
    out: dict[str, dict[str, Any]] = {key: copy.deepcopy(dict(t)) for key, t in templates.items()}
    out.update({key: copy.deepcopy(dict(t)) for key, t in nested.values()})
    for (parent, resource_id), (child, _) in nested.items():
        resource = (out[parent].get("Resources") or {}).get(resource_id) or {}
        passed = (resource.get("Properties") or {}).get("Parameters") or {}
        passed = passed if isinstance(passed, Mapping) else {}
        outputs = out[parent].setdefault("Outputs", {})
        for name, value in passed.items():
            outputs[_parameter_output(resource_id, name)] = {"Value": copy.deepcopy(value)}

        def parameter(
            node: Mapping[str, Any], parent: str = parent, rid: str = resource_id, names: Any = passed
        ) -> Any:
            name = node.get("Ref") if len(node) == 1 else None
            return (
                _stack_output(parent, _parameter_output(rid, name)) if isinstance(name, str) and name in names else None
            )

        def parameters_in(text: str, parent: str = parent, rid: str = resource_id, names: Any = passed) -> Any:
            return {n: _stack_output(parent, _parameter_output(rid, n)) for n in _SUB_NAME.findall(text) if n in names}

        out[child] = _rewritten(out[child], parameter, parameters_in)

        def nested_output(node: Mapping[str, Any], child: str = child, rid: str = resource_id) -> Any:
            arg = node.get("Fn::GetAtt") if len(node) == 1 else None
            head, attribute = (arg[0], arg[1]) if isinstance(arg, list) and len(arg) == 2 else (None, None)
            if isinstance(arg, str):
                head, _, attribute = arg.partition(".")
            if head == rid and isinstance(attribute, str) and attribute.startswith("Outputs."):
                return _stack_output(child, attribute.removeprefix("Outputs."))
            return None

        def outputs_in(text: str, child: str = child, rid: str = resource_id) -> Any:
            prefix = f"{rid}.Outputs."
            return {
                n: _stack_output(child, n.removeprefix(prefix)) for n in _SUB_NAME.findall(text) if n.startswith(prefix)
            }

        out[parent] = _rewritten(out[parent], nested_output, outputs_in)
    return dict(out)
