"""Which exports another stack imports that a stack update would remove or change, which CloudFormation refuses.
Pure Python: a deployed template, the new one and who imports what in, findings out.

"You can't modify or remove an output value that is referenced by another stack" (AWS CloudFormation Template
Reference, ``Fn::ImportValue``). aws-cdk writes an export for each value one stack reads
of another (``Fn::ImportValue``), so a change that removes such a value, or replaces the resource it names (a new
physical id), fails the producing stack's update until no stack imports it: the case of a capacity in a cluster stack
and its services in another, when the capacity's provider or group is replaced. The imports are the account's
(``ListImports``), so stacks of other apps count too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .replacement import replaced
from .service_rules.base import _referenced

Template = Mapping[str, Any]


@dataclass(frozen=True)
class ExportInUse:
    stack: str
    export: str
    importers: tuple[str, ...]
    change: str  # what the update does to it

    @property
    def problem(self) -> str:
        return (
            f"{self.stack}: export {self.export}, which {', '.join(self.importers)} "
            f"{'imports' if len(self.importers) == 1 else 'import'}, {self.change}: CloudFormation refuses to change "
            "or remove an export in use, and the update rolls back. Keep the export as deployed for one deploy "
            "(aws-cdk: stack.export_value(...) on the value as it was) while the importing stacks move off it, then "
            "change it"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "export": self.export,
            "importers": list(self.importers),
            "change": self.change,
            "problem": self.problem,
        }


def export_names(stack: str, template: Template) -> dict[str, Any]:
    """Each export of a template by its name (written, or with ``${AWS::StackName}`` filled in), with its value."""
    found = {}
    for output in (template.get("Outputs") or {}).values():
        name = (output.get("Export") or {}).get("Name") if isinstance(output, Mapping) else None
        if isinstance(name, Mapping) and "Fn::Sub" in name and isinstance(name["Fn::Sub"], str):
            name = name["Fn::Sub"].replace("${AWS::StackName}", stack)
        if isinstance(name, str) and "${" not in name:
            found[name] = output.get("Value")
    return found


def exports_in_use(
    stack: str, deployed: Template, new: Template, importers: Mapping[str, Sequence[str]]
) -> list[ExportInUse]:
    """Each export of the deployed ``stack`` that ``importers`` says is imported, and the update removes or changes."""
    before, after = export_names(stack, deployed), export_names(stack, new)
    replacing = replaced(deployed, new)
    found = []
    for name, value in sorted(before.items()):
        users = tuple(sorted(importers.get(name) or ()))
        if not users:
            continue
        if name not in after:
            change = "is removed"
        elif json.dumps(after[name], sort_keys=True) != json.dumps(value, sort_keys=True):
            change = "changes its value"
        else:
            gone = sorted({lid for lid in _referenced(value) if lid in replacing})
            if not gone:
                continue
            change = "changes as " + "; ".join(
                f"{lid} is replaced ({', '.join(replacing[lid])} change)" for lid in gone
            )
        found.append(ExportInUse(stack, name, users, change))
    return found
