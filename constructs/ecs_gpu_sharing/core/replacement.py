"""Which resources a stack update would replace under the custom name they keep, which CloudFormation refuses.
Pure Python: a deployed template and the new one in, findings out.

CloudFormation replaces a resource when one of its create-only properties changes (the registry schema's
``createOnlyProperties``, in ``core/data/resource_schemas.json``). It creates the replacement first, so a resource
whose name the template writes, and keeps, cannot be replaced: "You can't perform an update that causes a
custom-named resource to be replaced. If you must replace the resource, specify a new name" (AWS CloudFormation
Template Reference, "CloudFormation resource custom naming"). The update fails there and rolls back. No synth and no
emulator sees it: it takes the template that is deployed. The names are the identities ``NameClaimedTwice`` reads (a
service's name within its cluster, a target group's name, an identifier the template writes whole); a resource whose
name changes with the replacement, or that CloudFormation names, is replaced freely.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .service_rules.names import Identity, identities, resource_schemas

Template = Mapping[str, Any]
_ABSENT = object()


@dataclass(frozen=True)
class Replacement:
    stack: str
    logical_id: str
    kind: str
    name: str  # the name it keeps, as written: "ServiceName chat"
    changed: tuple[str, ...]  # the create-only properties whose values change

    @property
    def problem(self) -> str:
        return (
            f"{self.stack}/{self.logical_id} ({self.kind}): {', '.join(self.changed)} changes, which replaces it, and "
            f"its {self.name} stays: CloudFormation cannot replace a resource under the custom name it keeps, and the "
            "update rolls back; give it a new name in the same change (or leave the name out), or keep "
            f"{', '.join(self.changed)} as deployed"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "logical_id": self.logical_id,
            "type": self.kind,
            "name": self.name,
            "changed": list(self.changed),
            "problem": self.problem,
        }


def _at(props: Any, pointer: str) -> Any:
    """The value at a schema pointer below ``/properties`` (``A/B``); a ``*`` (every item) reads the whole list."""
    value = props
    for part in pointer.split("/"):
        if part == "*":
            return value
        if not isinstance(value, Mapping) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def _same(a: Any, b: Any) -> bool:
    return a is b or (
        a is not _ABSENT and b is not _ABSENT and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    )


def _kept_name(identity: Identity, old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """The name an identity gives both versions of a resource, where the template writes it and it stays."""
    said = []
    for prop, required in identity:
        before, after = old.get(prop, _ABSENT), new.get(prop, _ABSENT)
        if (after is _ABSENT and required) or not _same(before, after):
            return None
        if after is not _ABSENT:
            said.append(f"{prop} {after if isinstance(after, str) else json.dumps(after, sort_keys=True)}")
    return " and ".join(said)


def replaced(deployed: Template, new: Template) -> dict[str, tuple[str, ...]]:
    """Each resource of both templates that the update replaces, with the create-only properties that change."""
    old_resources, new_resources = deployed.get("Resources") or {}, new.get("Resources") or {}
    schemas = resource_schemas()
    found = {}
    for logical_id, resource in sorted(new_resources.items()):
        before = old_resources.get(logical_id)
        kind = resource.get("Type")
        if not isinstance(before, Mapping) or before.get("Type") != kind or kind not in schemas:
            continue  # new, or of another type: CloudFormation creates it beside the old one's deletion
        old_props, new_props = before.get("Properties") or {}, resource.get("Properties") or {}
        changed = tuple(p for p in schemas[kind]["create_only"] if not _same(_at(old_props, p), _at(new_props, p)))
        if changed:
            found[logical_id] = changed
    return found


def replacements(stack: str, deployed: Template, new: Template) -> list[Replacement]:
    """Each resource of ``stack`` that the new template replaces while its name stays."""
    named = identities()
    found = []
    for logical_id, changed in replaced(deployed, new).items():
        kind = new["Resources"][logical_id]["Type"]
        old_props = deployed["Resources"][logical_id].get("Properties") or {}
        new_props = new["Resources"][logical_id].get("Properties") or {}
        for identity in named.get(kind, ()):
            name = _kept_name(identity, old_props, new_props)
            if name:
                found.append(Replacement(stack, logical_id, kind, name, changed))
                break
    return found
