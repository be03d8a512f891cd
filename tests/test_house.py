"""The house's shape, held by tests: one builder of planner inputs, one plan per synth, an app that composes only the
public package and the fleet-file package, no boto3 at synth, one rule table."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ecs_gpu_sharing.core import rules
from ecs_gpu_sharing.core.errors import GpuSharingError
from ecs_gpu_sharing.core.rules import RULES, Level, Source

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "constructs" / "ecs_gpu_sharing"
BUILDER = PACKAGE / "core" / "plan_inputs.py"
# Everything but the tests, which build planner inputs by hand to test the planner itself.
SOURCES = [
    *PACKAGE.rglob("*.py"),
    *(REPO / "stacks").rglob("*.py"),
    *(REPO / "benchmarks").rglob("*.py"),
    *(REPO / "examples").rglob("*.py"),
    *(REPO / "scripts").rglob("*.py"),
    REPO / "app.py",
]
INPUT_TYPES = {"CapacityInput", "ServiceInput"}


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        inner = func.value
        prefix = inner.id + "." if isinstance(inner, ast.Name) else ""
        return prefix + func.attr
    return ""


def input_builders(path: Path, source: str | None = None) -> list[str]:
    """Where ``path`` constructs a planner input itself (line: call); ``source``: its text, for a module not written
    there (a test's: the repository's files are read by other tests at the same time)."""
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    return [
        f"{path.relative_to(REPO)}:{node.lineno}: {_called_name(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _called_name(node).split(".")[-1] in INPUT_TYPES
    ]


def test_planner_inputs_are_built_only_by_the_one_builder() -> None:
    outside = [line for path in SOURCES if path != BUILDER for line in input_builders(path)]
    assert outside == [], "build planner inputs with core.plan_inputs (capacity_input, service_input, from_fleet)"
    assert input_builders(BUILDER), "the builder itself constructs them"


def test_the_walk_finds_a_planner_input_built_elsewhere() -> None:
    stray = REPO / "benchmarks" / "_stray_builder_for_test.py"
    source = "from ecs_gpu_sharing.core.planner import ServiceInput\nx = ServiceInput('a', 'b', None, 1)\n"
    assert input_builders(stray, source) == ["benchmarks/_stray_builder_for_test.py:2: ServiceInput"]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
    return out


def _app_may_import(module: str) -> bool:
    if not module.startswith("ecs_gpu_sharing"):
        return module not in ("boto3",) and not module.startswith("boto3.")
    return (
        module == "ecs_gpu_sharing"
        or module == "ecs_gpu_sharing.core.fleet"
        or module.startswith("ecs_gpu_sharing.core.fleet.")
    )


def test_the_app_imports_only_the_public_package_and_the_fleet_file_package() -> None:
    files = [*(REPO / "stacks").glob("*.py"), REPO / "app.py"]
    wrong = [f"{p.relative_to(REPO)}: {m}" for p in files for m in _imports(p) if not _app_may_import(m)]
    assert wrong == []
    assert not _app_may_import("ecs_gpu_sharing.core.rules")
    assert not _app_may_import("ecs_gpu_sharing.cdk.discovery")
    assert not _app_may_import("boto3")


SYNTH = """
import json, sys
sys.path.insert(0, sys.argv[1])
import aws_cdk as cdk
from ecs_gpu_sharing.core import rules
calls = []
real = rules.plan
def counted(*args, **kwargs):
    calls.append(kwargs.get("surge", False))
    return real(*args, **kwargs)
rules.plan = counted
from stacks.fleet_app import build_app
context = json.load(open(sys.argv[1] + "/cdk.json"))["context"]
app = cdk.App(outdir=sys.argv[2], context=context)
build_app(app)
app.synth()
print(json.dumps({"plans": calls, "boto3": sorted(m for m in sys.modules if m.split(".")[0] == "boto3")}))
"""


@pytest.fixture(scope="module")
def example_synth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("synth")
    done = subprocess.run(
        [sys.executable, "-c", SYNTH, str(REPO), str(out)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=600,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_synth_of_the_example_fleet_plans_once(example_synth: dict[str, object]) -> None:
    assert example_synth["plans"] == [False, True]  # one assessment: the steady plan and the deployment surge


def test_a_synth_imports_no_boto3(example_synth: dict[str, object]) -> None:
    assert example_synth["boto3"] == []


# --- one rule table ------------------------------------------------------------------------------------------


def test_every_rule_id_the_library_writes_is_in_the_one_table() -> None:
    ids = {r.rule_id for r in RULES}
    assert len(ids) == len(RULES), "a rule id appears twice in the table"
    written = set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            value = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value
            elif isinstance(node, ast.JoinedStr) and len(node.values) == 2:  # f"{PREFIX}RuleName"
                head, tail = node.values
                named = isinstance(head, ast.FormattedValue) and isinstance(head.value, ast.Name)
                if named and head.value.id == "PREFIX" and isinstance(tail, ast.Constant):  # type: ignore[attr-defined]
                    value = f"ecs-gpu-sharing:{tail.value}"
            if value and value.startswith("ecs-gpu-sharing:") and value[16:17].isupper() and value[16:].isalnum():
                written.add(value)
    assert written - ids == set(), "every rule id the library writes has a row in core.rules.RULES"


def test_rules_checked_elsewhere_say_where_and_plan_rules_carry_their_check() -> None:
    for rule in RULES:
        assert rule.explanation and rule.level in (Level.ERROR, Level.WARNING)
        assert (rule.check is not None) == (rule.source is Source.PLAN and rule.rule_id != rules.RULE_FAILED)


def test_acknowledgeable_warnings_are_the_tables_warnings_by_subject() -> None:
    assert "ecs-gpu-sharing:SurgeDoesNotFit" in rules.acknowledgeable("capacity")
    assert "ecs-gpu-sharing:SurgeDoesNotFit" not in rules.acknowledgeable("service")
    assert "ecs-gpu-sharing:ContainerUserNotSet" in rules.acknowledgeable("service")
    assert "ecs-gpu-sharing:UnverifiedInstanceFamily" in rules.acknowledgeable("capacity")
    assert "ecs-gpu-sharing:TaskExceedsGpuMemory" not in rules.acknowledgeable("service")  # an error


def test_a_rule_that_crashes_becomes_a_finding_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from ecs_gpu_sharing.core.capacity_facts import host_facts
    from ecs_gpu_sharing.core.plan_inputs import capacity_input, service_input
    from ecs_gpu_sharing.core.shape import TaskShape

    def broken(ctx: rules.Context) -> list[tuple[str, str]]:
        raise ZeroDivisionError("division by zero")

    table = tuple(replace(r, check=broken) if r.rule_id == rules.SURGE_WARNING else r for r in rules.PLAN_RULES)
    monkeypatch.setattr(rules, "PLAN_RULES", table)
    cap = capacity_input("l4", host_facts(["g6.xlarge"]), max_instances=3)
    svc = service_input("a", "l4", TaskShape(512, 1024, (4096,)), 2, count_source="desired count")
    result = rules.assess([cap], [svc])
    (failed,) = [f for f in result.findings if f.rule_id == rules.RULE_FAILED]
    assert failed.error and failed.subject == "l4"
    assert "rule ecs-gpu-sharing:SurgeDoesNotFit failed" in failed.message and "ZeroDivisionError" in failed.message


# --- layers (#34): core imports neither cdk nor operations; cdk does not import operations; no import cycle -------

PACKAGE = REPO / "constructs" / "ecs_gpu_sharing"
LAYERS = {  # a module under the key may not import anything under these
    "ecs_gpu_sharing.core": ("ecs_gpu_sharing.cdk", "ecs_gpu_sharing.operations", "ecs_gpu_sharing.cli"),
    "ecs_gpu_sharing.cdk": ("ecs_gpu_sharing.operations", "ecs_gpu_sharing.cli"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _library_imports(path: Path, *, top_level_only: bool = False, source: str | None = None) -> set[str]:
    """The library modules ``path`` imports, relative imports resolved (``top_level_only``: not inside a function or
    an ``if TYPE_CHECKING`` block, which run later or never). ``source``: the text of a module at ``path`` that is not
    written there (a test's, which must not put a file into the package other tests read at the same time)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    nodes: list[ast.AST] = []
    if top_level_only:
        stack: list[ast.AST] = list(tree.body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            nodes.append(node)
            stack.extend(ast.iter_child_nodes(node))
    else:
        nodes = list(ast.walk(tree))
    out = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names]
            out.update(n for n in [target, *names] if n.startswith("ecs_gpu_sharing"))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("ecs_gpu_sharing"))
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    return {m for m in out if m in modules}


def test_the_layers_hold() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for layer, forbidden in LAYERS.items():
            if module == layer or module.startswith(f"{layer}."):
                wrong += [f"{module} imports {m}" for m in _library_imports(path) if m.startswith(forbidden)]
    assert not wrong, wrong


def test_no_library_module_imports_itself_back_at_load_time() -> None:
    graph = {_module_name(p): _library_imports(p, top_level_only=True) for p in PACKAGE.rglob("*.py")}

    def parents(m: str) -> set[str]:  # importing a.b.c loads a and a.b first
        parts = m.split(".")
        return {".".join(parts[:i]) for i in range(1, len(parts))}

    cycles = []
    for start in sorted(graph):
        seen, stack = set(), [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, set()) - parents(node)):
                if nxt == start:
                    cycles.append(" -> ".join([*path, nxt]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert not cycles, cycles[:5]


def test_the_layer_walk_sees_a_relative_import_across_layers() -> None:
    stray = PACKAGE / "core" / "_stray_layer_for_test.py"  # not written: other tests read the package meanwhile
    assert "ecs_gpu_sharing.operations.evaluate" in _library_imports(stray, source="from ..operations import evaluate")


def _rule_id_literals(extra: dict[Path, str] | None = None) -> dict[str, list[str]]:
    """Where each rule id of the table is written as a whole string constant in the library, the app and stacks
    (``extra``: modules not written, by the path they would have, and their text)."""
    ids = {rule.rule_id for rule in RULES}
    files = [*PACKAGE.rglob("*.py"), *(REPO / "stacks").glob("*.py"), REPO / "app.py"]
    texts = {path: path.read_text(encoding="utf-8") for path in files} | (extra or {})
    found: dict[str, list[str]] = {}
    for path, text in texts.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and node.value in ids:
                found.setdefault(node.value, []).append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_no_rule_id_is_written_twice() -> None:
    """#34: a rule id is a symbol, declared once; every other use names the symbol."""
    twice = {rule: where for rule, where in _rule_id_literals().items() if len(where) > 1}
    assert not twice, twice


def test_the_literal_walk_finds_a_second_spelling() -> None:
    stray = {PACKAGE / "core" / "_stray_rule_id_for_test.py": 'X = "ecs-gpu-sharing:TaskExceedsGpuMemory"\n'}
    assert len(_rule_id_literals(stray)["ecs-gpu-sharing:TaskExceedsGpuMemory"]) == 2


def test_one_helper_reads_cloudformation_properties() -> None:
    """#34: aws-cdk-lib's private _cfn_properties is read in cdk/rendered.py alone."""
    readers = sorted(
        str(p.relative_to(REPO)) for p in PACKAGE.rglob("*.py") if "_cfn_properties" in p.read_text(encoding="utf-8")
    )
    assert readers == ["constructs/ecs_gpu_sharing/cdk/rendered.py"]


# --- sizes (#34): a module a reader can hold, a function a reader can follow ------------------------------------

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100


def _long_functions(source: str, where: str) -> list[str]:
    tree = ast.parse(source)
    return [
        f"{where}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines"  # type: ignore[operator]
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES  # type: ignore[operator]
    ]


def test_no_library_function_is_over_100_lines() -> None:
    long = [f for p in sorted(PACKAGE.rglob("*.py")) for f in _long_functions(p.read_text(), str(p.relative_to(REPO)))]
    assert not long, "split these functions:\n" + "\n".join(long)


def test_the_size_walk_finds_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert _long_functions(f"def f():\n{body}\n", "m.py") == [f"m.py:1 f: {MAX_FUNCTION_LINES + 1} lines"]
    method = "\n".join(f"        x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 1))
    assert _long_functions(f"class C:\n    def g(self):\n{method}\n", "m.py") == []  # 100 lines: not over


def test_no_library_module_is_over_600_lines() -> None:
    long = [
        f"{p.relative_to(REPO)}: {n} lines"
        for p in sorted(PACKAGE.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, "split these modules by subject:\n" + "\n".join(long)


def test_the_rehearsal_is_not_in_the_library() -> None:
    """The deploy rehearsal completes moto at run time: a development tool (scripts/), never in a team's wheel."""
    assert not list(PACKAGE.rglob("rehearsal*")) and (REPO / "scripts" / "rehearsal" / "__init__.py").is_file()


def test_each_plan_rule_is_declared_beside_its_check() -> None:
    """#34: a plan rule's id, level, subject and explanation sit on its check (``@plan_rule``), not in a table apart;
    the table is what the declarations make, in their order."""
    from ecs_gpu_sharing.core.rules import plan_rules
    from ecs_gpu_sharing.core.task_rules import TASK_RULES

    source = Path(plan_rules.__file__).read_text()
    tree = ast.parse(source)
    decorated = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "plan_rule" for d in node.decorator_list)
    ]
    task_ids = {r.rule_id for r in TASK_RULES}
    named = [r.check.__name__ for r in plan_rules.PLAN_RULES if r.rule_id not in task_ids and r.check is not None]
    assert [n for n in named if n != "check"] == decorated  # the clash rules are checks built by a helper
    # A rule declared once the table is made would never run: it is refused, naming where to declare it.
    with pytest.raises(
        GpuSharingError, match=r"ecs-gpu-sharing:Late \(late\) is declared after .*core/rules/plan_rules"
    ):

        @plan_rules.plan_rule("ecs-gpu-sharing:Late", rules.Level.WARNING, "capacity", "too late")
        def late(ctx: rules.Context) -> list[tuple[str, str]]:
            return []

    assert "ecs-gpu-sharing:Late" not in {r.rule_id for r in plan_rules.PLAN_RULES}
    # No row is written apart from its check: the one Rule(...) besides the decorator's wraps the planner's task rules.
    built = [line.strip() for line in source.splitlines() if "Rule(" in line and "class " not in line]
    assert len(built) == 2 and "for r in TASK_RULES" in built[1], built


def test_each_rule_checked_elsewhere_is_declared_by_its_family_and_every_family_is_listed() -> None:
    """#34: a rule checked outside the plan is declared in the module that checks it (``Family.declare``); the rule
    table lists the families, and a family it did not list would leave its rules out of the reference, so none is."""
    import importlib

    from ecs_gpu_sharing.core.rules import other_rules

    listed = {id(f) for f in other_rules.families()}
    families = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", "") == "Family"
            ):
                module = ".".join(path.relative_to(REPO / "constructs").with_suffix("").parts).removesuffix(".__init__")
                families.append((module, node.targets[0].id))  # type: ignore[attr-defined]
    assert len(families) >= 9
    unlisted = [f"{m}.{name}" for m, name in families if id(getattr(importlib.import_module(m), name)) not in listed]
    assert not unlisted, f"families the rule table does not list: {unlisted}; add them to other_rules.families"
    assert [r.rule_id for r in other_rules.rows()] == [row.rule_id for f in other_rules.families() for row in f.rows]
    ids = [r.rule_id for r in rules.RULES]
    assert len(ids) == len(set(ids)), "a rule id declared in two places"


def test_a_family_refuses_an_id_twice_or_without_the_prefix() -> None:
    from ecs_gpu_sharing.core.rule_family import Family, Level, Source

    family = Family("test")
    assert family.declare("ecs-gpu-sharing:One", Level.ERROR, "stack", Source.TEMPLATE, "why") == "ecs-gpu-sharing:One"
    for bad in ("ecs-gpu-sharing:One", "One"):
        with pytest.raises(GpuSharingError, match=f"rule family test: '{bad}' is not a new"):
            family.declare(bad, Level.ERROR, "stack", Source.TEMPLATE, "why")


# --- constructs in aws-cdk's style (#34 move 7): every option documented with its unit and default, typed -----

_DEFAULT_WORDS = ("default", "without", "left out")
_UNITS = {"_mib": "MiB", "_gib": "GiB", "_percent": "percent", "_seconds": "second"}


def _param_docs(doc: str) -> dict[str, str]:
    return {
        m.group(1): " ".join(m.group(2).split())
        for m in re.finditer(r":param (\w+):(.*?)(?=\n\s*:param |\n\s*\n|\Z)", doc, re.S)
    }


def _undocumented_options(cls: type) -> list[str]:
    """Each option of ``cls`` that its docstring does not describe, or whose default or unit it does not say. A
    dataclass field declared as a fleet key (``file_key.key``) is described there."""
    import dataclasses
    import inspect

    docs = _param_docs(f"{cls.__doc__ or ''}\n\n{cls.__init__.__doc__ or ''}")
    keyed = {
        f.name: str(v[0].doc)
        for f in (dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ())
        for v in f.metadata.values()
        if isinstance(v, tuple) and hasattr(v[0], "doc")
    }
    out = []
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name in ("self", "scope", "id_"):
            continue
        text = docs.get(p.name) or keyed.get(p.name)
        if text is None:
            out.append(f"{cls.__name__}.{p.name}: not documented (:param {p.name}:)")
            continue
        if p.name in keyed:
            continue  # a fleet key's doc; the reference (fleet-file.md) gives its default and range
        if p.default is not inspect.Parameter.empty and not any(w in text.lower() for w in _DEFAULT_WORDS):
            out.append(f"{cls.__name__}.{p.name}: says nothing of its default ({p.default!r})")
        unit = next((u for suffix, u in _UNITS.items() if p.name.endswith(suffix)), None)
        if unit and unit not in text:
            out.append(f"{cls.__name__}.{p.name}: does not say its unit ({unit})")
        if p.kind is inspect.Parameter.VAR_KEYWORD and not str(p.annotation).startswith("Unpack["):
            out.append(f"{cls.__name__}.**{p.name}: untyped; type it with Unpack[...] (cdk/options.py)")
    return out


def _public_option_classes() -> list[type]:
    import inspect

    import ecs_gpu_sharing

    classes = [getattr(ecs_gpu_sharing, n) for n in ecs_gpu_sharing.__all__]
    # GpuAmi is built by its class methods; a class whose __init__ is inherited or takes *args (errors, a plugin)
    # has no options of its own.
    return [
        c
        for c in classes
        if inspect.isclass(c)
        and c.__name__ != "GpuAmi"
        and "__init__" in vars(c)
        and not any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(c.__init__).parameters.values())
    ]


def test_every_public_option_says_what_it_is_its_default_and_unit() -> None:
    classes = _public_option_classes()
    assert {"GpuCapacity", "SharedGpuService", "SharedGpuTaskDefinition", "GpuTelemetry", "MpsShare"} <= {
        c.__name__ for c in classes
    }
    missing = [line for c in classes for line in _undocumented_options(c)]
    assert not missing, "\n".join(missing)


def test_the_option_walk_finds_each_gap() -> None:
    from typing import Any

    class Sample:
        """:param size_mib: how big, in MiB; 4 by default.
        :param wait_seconds: how long.
        """

        def __init__(self, *, size_mib: int = 4, wait_seconds: int = 1, other: int = 0, **kwargs: Any) -> None: ...

    class Typed:
        """:param kwargs: every other option."""

        def __init__(self, **kwargs: Any) -> None: ...

    assert _undocumented_options(Typed) == ["Typed.**kwargs: untyped; type it with Unpack[...] (cdk/options.py)"]
    assert _undocumented_options(Sample) == [
        "Sample.wait_seconds: says nothing of its default (1)",
        "Sample.wait_seconds: does not say its unit (second)",
        "Sample.other: not documented (:param other:)",
        "Sample.kwargs: not documented (:param kwargs:)",
    ]


def test_the_planner_only_plans() -> None:
    """#34: no rule is declared in the planner; the task rules it asks live in core/task_rules.py."""
    planner = PACKAGE / "core" / "planner"
    written = [
        f"{p.relative_to(REPO)}:{node.lineno}"
        for p in sorted(planner.rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("ecs-gpu-sharing:")
    ]
    assert not written, written
