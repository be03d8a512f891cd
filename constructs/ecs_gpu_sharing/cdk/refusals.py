"""A refusal on the construct road in a few lines: the construct path, rule id, numbers and fix, without the
JavaScript and Python stack that jsii puts around it.

The library refuses bad input in two places: in a constructor (a ``GpuSharingError``, raised in the app's own
Python) and when the app synthesizes (CDK's validation: the construct validations and the fleet plan's policy
plugin, which jsii raises as a ``RuntimeError`` from a ``JavaScriptError``). An aws-cdk construct that refuses its
props as it is made (a ``ValidationError``, such as an option a library construct passes on) names its construct in
the ``JavaScriptError`` ("Relates to construct:"); it is printed with that path. Loading the constructs installs a
``sys.excepthook`` that prints either as its own lines and nothing else when it ends the program; every other
exception, and every error that is caught, is left as it was. ``ECS_GPU_SHARING_TRACEBACK=1`` shows the whole trace.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from ..core.errors import GpuSharingError

_INSTALLED = "_ecs_gpu_sharing_hook"


def check_options(
    construct: type, path: str, given: Iterable[str], known: type, passed_to: str, error: type[GpuSharingError]
) -> None:
    """Refuses, naming the construct, an option that neither it nor ``passed_to`` takes (``known``: what it passes
    on, typed, cdk/options.py), with the nearest one either takes: without this, Python's TypeError arrives from
    inside aws-ecs without the construct's name."""
    options = set(known.__annotations__)
    # The nearest class's own __init__ (a team's subclass may not write one), not jsii's metaclass call.
    init = next(vars(c)["__init__"] for c in construct.__mro__ if "__init__" in vars(c))
    own = {p.name for p in inspect.signature(init).parameters.values() if p.kind is p.KEYWORD_ONLY}
    for name in given:
        if name not in options:
            near = difflib.get_close_matches(name, sorted(options | own), n=1)
            raise error(
                f"{path}: {name} is not an option of it or of aws_ecs.{passed_to}"
                + (f"; did you mean {near[0]}?" if near else f"; its options are in {known.__name__}")
            )


def kind_of(value: Any) -> str:
    """What ``value`` is, for a refusal: its class, or for an object jsii gives as a proxy of an interface (a resource
    imported with ``from_..._attributes``, ``from_..._arn``) "an imported" and the interface, such as
    ``aws_ecs.ICluster``, where Python's own name of its class is jsii's ``InterfaceDynamicProxy``."""
    interfaces = [getattr(d, "__jsii_type__", "") for d in getattr(value, "_delegates", None) or ()]
    named = [t.removeprefix("aws-cdk-lib.") for t in interfaces if t.rpartition(".")[2][:1] == "I"]
    return f"an imported {named[-1]}" if named else type(value).__name__


def require_kind(
    name: str,
    value: Any,
    kind: type | str,
    label: str,
    *,
    owner: str,
    error: type[GpuSharingError],
    required: bool = False,
    hint: str = "",
) -> None:
    """Refuses, naming the construct and the option, a value that is not ``kind`` (a class, or for a jsii interface
    the attribute every implementation has, such as ``topic_arn``); ``None`` is left to the option's default, or
    refused where the option is ``required``. Without this, aws-cdk-lib's deserializer refuses it later, naming only
    its own class, or the construct fails on it with Python's AttributeError."""
    if value is None:
        if required:
            raise error(f"{owner}: {name} must be an {label}, got None" + (f"; {hint}" if hint else ""))
        return
    ok = isinstance(value, kind) if isinstance(kind, type) else hasattr(value, kind)
    if not ok:
        shown = f"{owner}: {name} must be an {label}, got {kind_of(value)} {value!r:.80}"
        raise error(shown + (f"; {hint}" if hint else ""))


def require_cluster(cluster: Any, *, owner: str, error: type[GpuSharingError]) -> None:
    """Refuses, naming the option, a ``cluster`` that is no ECS cluster (its name as a string, say, or None)."""
    hint = "give the cluster itself (an ecs.Cluster, or Cluster.from_cluster_attributes), not its name"
    require_kind(
        "cluster", cluster, "cluster_name", "aws_ecs.ICluster", owner=owner, error=error, required=True, hint=hint
    )


def require_name(name: Any, *, owner: str, error: type[GpuSharingError]) -> str:
    """A capacity's or service's name in the fleet plan (``name=``): a non-empty string."""
    if not isinstance(name, str) or not name:
        raise error(f"{owner}: name must be a non-empty string, got {kind_of(name)} {name!r:.80}")
    return name


_DESERIALIZE_KEY = re.compile(r"Key '(\w+)': Unable to deserialize")


@contextmanager
def passed_on(owner: str, to: str, error: type[GpuSharingError]) -> Iterator[None]:
    """Refuses, naming the construct and the options, a value the aws-cdk-lib construct ``to`` cannot take: jsii's
    Python type check of an argument (a TypeError from inside aws-cdk-lib), or its SerializationError for a field of
    a struct, which names only that class, inside a JavaScript trace."""
    try:
        yield
    except TypeError as raised:
        if not str(raised).startswith("type of argument "):
            raise
        raise error(f"{owner}: a value passed on to {to} is not of the type it takes: {raised}") from raised
    except RuntimeError as raised:
        text = f"{raised}\n{raised.__cause__ or ''}"
        if "Unable to deserialize value" not in text:
            raise
        keys = [re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower() for k in dict.fromkeys(_DESERIALIZE_KEY.findall(text))]
        raise error(
            f"{owner}: a value passed on to {to} is not of the type it takes"
            + (f" ({', '.join(keys)})" if keys else "")
            + "; give each option the type aws-cdk-lib's signature names (a cdk.Duration, not a number of seconds)"
        ) from raised


def refusal_lines(error: BaseException) -> list[str] | None:
    """The lines to print for a refusal, or ``None`` for an error that is not one."""
    if isinstance(error, GpuSharingError):
        return [f"error: {line}" for line in str(error).splitlines() if line.strip()]
    text = str(error)
    if not isinstance(error, RuntimeError):
        return None
    if "alidation" not in text.split("\n", 1)[0]:  # an aws-cdk construct's own refusal, made as the app runs
        path = _construct_path(str(error.__cause__)) if error.__cause__ is not None else None
        return [f"error: [{path}] {text.strip().splitlines()[0]}"] if path and text.strip() else None
    if "Validation failed with the following errors" in text:  # construct validations: one line per error
        return [f"error: {line.strip()}" for line in text.splitlines()[1:] if line.strip()]
    if text.startswith("ValidationFailed"):  # the policy report: its ERROR entries, without warnings or advice
        lines, keep = [], False
        for line in text.removeprefix("ValidationFailed: ").splitlines():
            if line.startswith(("ERROR", "WARNING", "A copy of this report")):
                keep = line.startswith("ERROR")
                if keep:
                    lines.append(f"error: {line.removeprefix('ERROR ').strip()}")
            elif keep and line.strip() and not line.strip().startswith("Acknowledge with"):
                lines.append(f"  at {line.strip()}")
        if lines:
            return lines
        copy = text.split("A copy of this report can be found in:", 1)
        where = f" (a copy: {copy[1].strip()})" if len(copy) > 1 else ""
        return [f"error: the synth failed the checks reported above{where}"]  # CDK printed the report itself
    return None


def _construct_path(stack: str) -> str | None:
    """The construct an aws-cdk ValidationError names ("Relates to construct:", then the tree from the app down,
    one construct a line), as a path; None where it names none."""
    _, found, tree = stack.partition("Relates to construct:")
    if not found:
        return None
    names = []
    for line in tree.strip().splitlines():
        name = line.strip().removeprefix("└─").strip().split(" (", 1)[0]
        if not name or not line.strip().startswith(("<.>", "└─")):
            break
        if name != "<.>":
            names.append(name)
    return "/".join(names) or None


def install() -> None:
    """Installs the hook once, in front of whatever hook was there."""
    previous: Callable[..., None] = sys.excepthook
    if getattr(previous, _INSTALLED, False):
        return

    def hook(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
        lines = None if os.environ.get("ECS_GPU_SHARING_TRACEBACK") else refusal_lines(error)
        if lines is None:
            previous(kind, error, trace)
            return
        print("\n".join(lines), file=sys.stderr)
        print("(ECS_GPU_SHARING_TRACEBACK=1 shows the whole trace)", file=sys.stderr)

    setattr(hook, _INSTALLED, True)
    sys.excepthook = hook
