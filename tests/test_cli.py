"""The command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import cost, fleet, plan_document, plan_inputs, plan_report
from ecs_gpu_sharing.core.rules import assess

from conftest import THREE_MODELS


def test_catalog_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "show", "g6.xlarge"]) == 0
    assert "1 x NVIDIA L4, 22888 MiB per GPU" in capsys.readouterr().out


def test_catalog_show_unknown_type_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "show", "m5.large"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'m5.large' is not in the GPU catalog" in err


def test_catalog_list_hides_unsupported_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    main(["catalog", "list"])
    usable = capsys.readouterr().out
    main(["catalog", "list", "--all"])
    everything = capsys.readouterr().out
    assert "g6.xlarge" in usable and "g6f.large" not in usable and "g6f.large" in everything


# --- plan -----------------------------------------------------------------------------------------------

EXAMPLE = str(THREE_MODELS)


def test_plan_prints_a_table_for_the_example_fleet(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", EXAMPLE]) == 0
    out = capsys.readouterr().out
    assert "l4 (g6.2xlarge): 2 instances" in out and "fits: yes" in out
    assert "reranker x2, embedder x3" in out and "small-llm x2" in out and "(optimal)" in out


def test_plan_json_follows_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", EXAMPLE, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert plan_document.load(doc, source="plan --json").to_json() == doc  # the one reader reads it all back
    assert set(doc) == {"capacities", "services", "outside_plan", "allowances", "not_judged", "findings", "summary"}
    assert doc["allowances"] == doc["not_judged"] == []  # read from written templates: a synth's
    assert all(s["allocation"] is None for s in doc["services"])  # this fleet has no allocation notes
    assert {s["name"]: (s["tasks"], s["placed"]) for s in doc["services"]} == {
        "embedder": (4, 4),
        "reranker": (2, 2),
        "small-llm": (2, 2),
    }
    placed = sum(
        h["count"] * t["tasks"]
        for c in doc["capacities"]
        for h in c["instances"]
        for g in h["gpus"]
        for t in g["tasks"]
    )
    assert placed == 8 and doc["summary"]["fits"] is True


_AWSVPC_FLEET = """
name = "eni"
[capacity.big]
instance_types = ["g6e.12xlarge"]
[service.llm]
capacity = "big"
image = "my-registry/llm:1"
desired_count = 3
cpu_units = 2048
memory_mib = 8192
gpu_budget_mib = 40000
network_mode = "{mode}"
[service.embed]
capacity = "big"
image = "my-registry/embed:1"
desired_count = 10
cpu_units = 2048
memory_mib = 8192
gpu_budget_mib = 4000
network_mode = "{mode}"
"""


@pytest.mark.parametrize("mode", ["awsvpc", "bridge"])
def test_plan_says_when_network_interfaces_bind(tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str) -> None:
    """13 awsvpc tasks fill four L40S GPUs' memory on one g6e.12xlarge and half its CPU, but it has 10 network
    interfaces, one the host's own: 9 tasks a host, so 2 hosts, and the plan says which figure made it two. In
    bridge mode one host holds them and no line speaks of interfaces."""
    path = tmp_path / "eni.toml"
    path.write_text(_AWSVPC_FLEET.format(mode=mode))
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    if mode == "bridge":
        assert "big (g6e.12xlarge): 1 instance (optimal)" in out and "interface" not in out
        return
    assert "big (g6e.12xlarge): 2 instances (optimal)" in out
    assert "awsvpc tasks 9 / 9" in out and "awsvpc tasks 4 / 9" in out  # each host's row
    assert (
        "big: at most 9 awsvpc tasks a host (each takes one of the host's 10 network interfaces, less the host's "
        "own; ENI trunking is not assumed): 1 of 2 instances at it" in out
    )
    markdown = plan_report.to_markdown(assess(*plan_inputs.from_fleet(fleet.load(path))))  # gpu-fleet-plan.md
    assert "- big: at most 9 awsvpc tasks a host" in markdown


def test_plan_svg_draws_every_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "plan.svg"
    assert main(["plan", EXAMPLE, "--svg", str(svg)]) == 0
    root = ElementTree.fromstring(svg.read_text())
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert sum(1 for t in texts if " GPU " in t and t.startswith(("host ", "hosts "))) == 3
    titles = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert titles.count("embedder: 3072 MiB") == 4 and sum(1 for t in titles if ": " in t and "MiB" in t) >= 8
    assert {"embedder", "reranker", "small-llm"} <= set(texts)  # the legend
    # Each capacity says its maximum and the surge; each host group its CPU and memory; a caption the totals.
    assert any(t.startswith("l4 (g6.2xlarge): 2 instances, max ") and "deployment surge needs" in t for t in texts)
    assert any(t.startswith("CPU ") and "memory" in t for t in texts)
    assert any(t.startswith("3 instances (lower bound 3)") for t in texts)
    assert f"cost: {cost.NOT_PRICED}" in texts  # how to price it is said once, on the terminal
    # Colours a converter can draw: hex, never hsl().
    fills = {e.get("fill") for e in root.iter("{http://www.w3.org/2000/svg}rect")}
    assert all(f and f.startswith("#") and len(f) == 7 for f in fills), fills
    # Each bar wide enough carries its service's name (or its start), in white on the service's colour.
    labels = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("fill") == "#ffffff"]
    assert "embedder" in labels or any(label.startswith("embed") for label in labels)


def test_a_services_colour_follows_its_name_not_its_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A service inserted before another leaves the other's colour as it was: screenshots of two versions compare."""
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    edited = tmp_path / "fleet.toml"
    text = Path(EXAMPLE).read_text()
    edited.write_text(
        text.replace("[service.embedder]", "[service.aaa-first]\n" + _service_body(text) + "\n[service.embedder]", 1)
    )
    assert main(["plan", EXAMPLE, "--svg", str(first)]) == 0
    main(["plan", str(edited), "--svg", str(second)])

    def fill_of(path: Path, name: str) -> str:
        root = ElementTree.fromstring(path.read_text())
        for rect in root.iter("{http://www.w3.org/2000/svg}rect"):
            title = rect.find("{http://www.w3.org/2000/svg}title")
            if title is not None and (title.text or "").startswith(f"{name}:"):
                return str(rect.get("fill"))
        raise AssertionError(name)

    assert fill_of(first, "reranker") == fill_of(second, "reranker")


def _service_body(text: str) -> str:
    """The first service table's keys (for a copy under another name)."""
    start = text.index("[service.")
    body = text[text.index("\n", start) + 1 :]
    return body[: body.index("\n[")]


def test_plan_exits_1_with_the_reason_when_the_fleet_does_not_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(THREE_MODELS.read_text().replace("gpu_budget_mib = 18432", "gpu_budget_mib = 48000"))
    assert main(["plan", str(fleet)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {fleet}: service.small-llm.gpu_budget_mib: one task needs 48000 MiB of GPU memory")


def test_plan_refuses_a_malformed_fleet_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('name = "x"\n[capacity.a]\ninstance_types = ["g6.xlarge"]\n[service]\n[extra]\n')
    assert main(["plan", str(fleet)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"error: {fleet}: unknown key extra; the keys here are: name, account, region, vpc_id, "
        "service_connect_namespace, telemetry, prices, capacity, service, load_balancer",
        f"error: {fleet}: no [service.<name>] table; a fleet needs at least one service to plan",
    ]


def test_a_reader_that_leaves_early_gets_no_traceback() -> None:
    """`plan --json | head -1` on a wide fleet: the pipe closes while the plan is printed."""
    import subprocess
    import sys

    from conftest import REPO

    run = subprocess.run(
        f"{sys.executable} -m ecs_gpu_sharing.cli plan {REPO / 'tests' / 'fleets' / 'wide.toml'} --json | head -1",
        shell=True,
        capture_output=True,
        text=True,
        executable="/bin/bash",
    )
    assert run.stdout.strip() == "{" and "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr


_LEAVING = """
import atexit, sys, threading, time
class Kept:
    def __del__(self):
        sys.stderr.write("torn down\\n")
kept = Kept()  # freed as the interpreter is torn down, and only then
if "atexit" in sys.argv:
    atexit.register(lambda: sys.stderr.write("at exit\\n"))
import ecs_gpu_sharing.cli as cli
if "thread" in sys.argv:  # still running once main has returned, however long the plan took
    returned = threading.Event()
    planned = cli.main
    cli.main = lambda argv: (planned(argv), returned.set())[0]
    threading.Thread(target=lambda: (returned.wait(), time.sleep(0.3), sys.stderr.write("thread done\\n"))).start()
cli.run(sys.argv[1:3])
"""


@pytest.mark.parametrize(
    ("fleet_name", "waiting", "code", "said"),
    [
        ("three-models.toml", "", 0, []),
        ("three-models.toml", "atexit", 0, ["at exit", "torn down"]),
        ("three-models.toml", "thread", 0, ["thread done", "torn down"]),
        ("no-such-fleet.toml", "", 1, []),
    ],
)
def test_the_command_leaves_without_tearing_the_interpreter_down_unless_something_waits(
    fleet_name: str, waiting: str, code: int, said: list[str]
) -> None:
    """The ``ecs-gpu-sharing`` command (``cli.run``) prints what ``main`` prints and exits with its status, then leaves
    without freeing its objects (an object freed only by the teardown says nothing); where an exit function is
    registered or a thread runs, the process leaves as Python's exit does, and they run."""
    import subprocess
    import sys

    from conftest import REPO

    fleet_path = REPO / "tests" / "fleets" / fleet_name
    done = subprocess.run(
        [sys.executable, "-c", _LEAVING, "plan", str(fleet_path), waiting], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == code, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("error:")]
    assert lines == said
    if code == 0:
        assert "gpu" in done.stdout and done.stdout.endswith("\n")
    else:
        assert "error:" in done.stderr and fleet_name in done.stderr


def test_plan_shows_draws_and_costs_a_plan_json_a_construct_app_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", EXAMPLE, "--json"]) == 0
    made = tmp_path / "gpu-fleet-plan.json"
    made.write_text(capsys.readouterr().out)
    svg = tmp_path / "plan.svg"
    assert main(["plan", str(made), "--svg", str(svg)]) == 0
    out = capsys.readouterr().out
    assert "l4 (g6.2xlarge): 2 instances, 2 GPUs used, max " in out and "fits: yes" in out and "cost: no prices" in out
    root = ElementTree.fromstring(svg.read_text())
    assert sum(1 for t in root.iter("{http://www.w3.org/2000/svg}text") if (t.text or "").endswith(" GPU 0")) == 3
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "region": "us-east-1",
                "retrieved_on": "2026-12-01",
                "currency": "USD",
                "on_demand_per_hour": {"g6.2xlarge": 0.98, "g6e.2xlarge": 2.24},
                "source": "test",
            }
        )
    )
    assert main(["plan", str(made), "--prices", str(prices), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["cost"]["per_hour"] == round(2 * 0.98 + 2.24, 2)


def test_plan_refuses_a_json_that_is_no_plan_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"capacities": [{"name": "x"}]}')
    assert main(["plan", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a fleet plan" in err


def test_help_is_plain_text_and_plan_help_names_diff(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    assert "``" not in top
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    assert "plan diff OLD NEW" in capsys.readouterr().out


def test_findings_read_the_same_from_a_fleet_file_and_from_its_plan_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conftest import REPO

    def finding_lines(text: str) -> list[str]:
        return sorted(line for line in text.splitlines() if line.startswith(("warning [", "error [", "acknowledged [")))

    fleet = str(REPO / "fleet.toml")
    assert main(["plan", fleet]) == 0
    from_fleet = finding_lines(capsys.readouterr().out)
    assert main(["plan", fleet, "--json"]) == 0
    doc = tmp_path / "plan.json"
    doc.write_text(capsys.readouterr().out)
    assert main(["plan", str(doc)]) == 0
    assert from_fleet and finding_lines(capsys.readouterr().out) == from_fleet


def _guessing_fleet(path: Path, services: int) -> Path:
    """A fleet of ``services`` services whose GPU budgets are guesses (BudgetIsAGuess on each), the last acknowledged."""
    lines = ['name = "many"', "", "[capacity.l4]", 'instance_types = ["g6.12xlarge"]', ""]
    for i in range(services):
        lines += [
            f"[service.s{i}]",
            'capacity = "l4"',
            'image = "ghcr.io/huggingface/text-embeddings-inference:1.8"',
            "desired_count = 1",
            "cpu_units = 1024",
            "memory_mib = 2048",
            "gpu_budget_mib = 2048",
            "port = 80",
        ]
        if i == services - 1:
            lines.append('acknowledge = { "ecs-gpu-sharing:BudgetIsAGuess" = "a new model, measured next week" }')
        lines.append("")
    path.write_text("\n".join(lines))
    return path


@pytest.mark.parametrize(("services", "shown"), [(6, 5), (9, 3)])
def test_a_warning_on_many_services_is_shown_for_three_and_the_rest_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], services: int, shown: int
) -> None:
    """Up to five services a warning is shown for each; past five, for the first three and one line counts the rest.
    The acknowledged one is shown as it is, and the plan JSON lists every finding; read back, it prints the same."""
    fleet = str(_guessing_fleet(tmp_path / "fleet.toml", services))
    assert main(["plan", fleet]) == 0
    out = capsys.readouterr().out.splitlines()
    guesses = [line for line in out if line.startswith("warning [ecs-gpu-sharing:BudgetIsAGuess]: service s")]
    assert len(guesses) == shown
    counted = [line for line in out if "the same on" in line]
    unshown = services - 1 - shown
    assert counted == (
        [f"warning [ecs-gpu-sharing:BudgetIsAGuess]: the same on {unshown} more services (the plan JSON lists each)"]
        if unshown
        else []
    )
    assert [line for line in out if line.startswith("acknowledged [")] == [
        f"acknowledged [ecs-gpu-sharing:BudgetIsAGuess]: service s{services - 1}: a new model, measured next week"
    ]
    assert main(["plan", fleet, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sum(1 for f in doc["findings"] if f["rule_id"] == "ecs-gpu-sharing:BudgetIsAGuess") == services
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    assert main(["plan", str(tmp_path / "plan.json")]) == 0
    back = capsys.readouterr().out.splitlines()
    assert [line for line in back if line.startswith(("warning [", "acknowledged ["))] == [
        line for line in out if line.startswith(("warning [", "acknowledged ["))
    ]


def test_errors_are_never_folded() -> None:
    from ecs_gpu_sharing.core.plan_report import finding_rows
    from ecs_gpu_sharing.core.rules import Finding, Level

    errors = [Finding("ecs-gpu-sharing:X", Level.ERROR, "service", f"s{i}", "too big") for i in range(8)]
    warnings = [Finding("ecs-gpu-sharing:Y", Level.WARNING, "service", f"s{i}", "a guess") for i in range(8)]
    rows = finding_rows([*errors, *warnings])
    assert rows[:8] == [f"error [ecs-gpu-sharing:X]: service s{i}: too big" for i in range(8)]
    assert rows[8:] == [
        *(f"warning [ecs-gpu-sharing:Y]: service s{i}: a guess" for i in range(3)),
        "warning [ecs-gpu-sharing:Y]: the same on 5 more services (the plan JSON lists each)",
    ]


def test_a_command_runs_with_the_collector_less_often_and_leaves_the_process_as_it_was(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plan makes millions of small objects and almost no cycles: the command raises the collector's thresholds
    while it runs, and gives the caller's back after, when it succeeds and when it fails."""
    import gc

    from ecs_gpu_sharing import cli

    seen = []
    plan = cli._plan

    def watched(args: object) -> int:
        seen.append(gc.get_threshold())
        return plan(args)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "_plan", watched)
    before = gc.get_threshold()
    assert main(["plan", EXAMPLE]) == 0
    assert main(["plan", "no-such-fleet.toml"]) == 1
    assert seen == [cli.GC_THRESHOLD] * 2 and seen[0] != before
    assert gc.get_threshold() == before
    capsys.readouterr()


@pytest.mark.parametrize("given", [{}, {"OPENBLAS_NUM_THREADS": "3"}, {"OMP_NUM_THREADS": "2"}])
def test_a_command_runs_with_one_blas_thread_unless_the_caller_chose_and_leaves_the_environment_as_it_was(
    given: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """numpy's OpenBLAS starts threads when it loads, which take CPU from the plan's other processes; the plan's
    products are of a few numbers. The command asks for one thread where the caller named no count, and gives the
    environment back after, when it succeeds and when it fails."""
    import os

    from ecs_gpu_sharing import cli

    for name in cli.BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    before = {name: os.environ.get(name) for name in cli.BLAS_THREAD_VARIABLES}
    seen = []
    plan = cli._plan

    def watched(args: object) -> int:
        seen.append({name: os.environ.get(name) for name in cli.BLAS_THREAD_VARIABLES})
        return plan(args)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "_plan", watched)
    assert main(["plan", EXAMPLE]) == 0
    assert main(["plan", "no-such-fleet.toml"]) == 1
    expected = {**before, "OPENBLAS_NUM_THREADS": "1"} if not given else before
    assert seen == [expected] * 2
    assert {name: os.environ.get(name) for name in cli.BLAS_THREAD_VARIABLES} == before
    capsys.readouterr()


def test_numpy_loaded_by_a_command_runs_no_thread_of_its_own() -> None:
    """In a fresh interpreter, as the console script runs: numpy loaded while a command runs (the planner loads it on
    first use) starts no BLAS thread, so the process stays one thread and can fork its next replays (``beside``)."""
    import subprocess
    import sys

    from ecs_gpu_sharing import cli

    script = (
        "import os\n"
        f"for name in {cli.BLAS_THREAD_VARIABLES!r}:\n"
        "    os.environ.pop(name, None)\n"
        "from ecs_gpu_sharing import cli\n"
        "from ecs_gpu_sharing.core.beside import threads\n"
        "plan = cli._plan\n"
        "def loading(args):\n"
        "    import numpy\n"
        "    return plan(args)\n"
        "cli._plan = loading\n"
        f"code = cli.main(['plan', {EXAMPLE!r}])\n"
        "print(code, threads())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split()[-2:] == ["0", "1"], done.stderr[-2000:]


def test_plan_imports_no_rule_family_checked_outside_the_plan_and_the_table_is_whole_when_read() -> None:
    """The families checked only on a synthesized app or a written template are imported on the rule table's first
    read (``rules.other_rules``), not ahead of a plan: a fleet file that acknowledges nothing plans without them."""
    import subprocess
    import sys

    outside = [f"ecs_gpu_sharing.core.{m}" for m in ("container_guards", "service_rules", "tenancy", "written_fit")]
    script = (
        "import contextlib, io, sys\n"
        "from ecs_gpu_sharing import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = cli.main(['plan', {EXAMPLE!r}, '--json'])\n"
        f"before = [m for m in {outside!r} if m in sys.modules]\n"
        "from ecs_gpu_sharing.core import rules\n"
        "from ecs_gpu_sharing.core.service_rules import RULES as SERVICE_RULES\n"
        "ids = {r.rule_id for r in rules.RULES}\n"
        "print(code, before, all(row.rule_id in ids for row in SERVICE_RULES.rows), len(rules.RULES_BY_ID) == len(ids))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "0 [] True True", done.stderr[-2000:]


def test_plan_loads_the_documents_modules_after_its_plans() -> None:
    """The plan document's modules (``plan_document``, ``plan_report``, ``cost``) are not imported before the plans
    begin (the console script's import), but while ECS's placement is replayed beside them, and the document is
    written whole."""
    import subprocess
    import sys

    document = [f"ecs_gpu_sharing.core.{m}" for m in ("plan_document", "plan_report", "cost")]
    script = (
        "import contextlib, io, json, sys\n"
        "from ecs_gpu_sharing import cli\n"
        "from ecs_gpu_sharing.core import rules\n"
        "seen = []\n"
        "plan = rules.plan\n"
        "def watched(*args, **kwargs):\n"
        f"    seen.append([m for m in {document!r} if m in sys.modules])\n"
        "    return plan(*args, **kwargs)\n"
        "rules.plan = watched\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = cli.main(['plan', {EXAMPLE!r}, '--json'])\n"
        "doc = json.loads(out.getvalue())\n"
        f"after = [m for m in {document!r} if m in sys.modules]\n"
        "print(code, seen[0], len(after), bool(doc['capacities'][0]['instances']))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "0 [] 3 True", done.stderr[-2000:]


def test_a_command_is_parsed_by_its_own_parser_and_refused_in_the_whole_parsers_words(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``main`` builds the parser of the command named alone (the whole took 5-8 ms before every command), and any
    argument it refuses is refused as the whole parser refuses it: the usage line names every command."""
    from ecs_gpu_sharing import cli

    built: list[str | None] = []
    build = cli.build_parser

    def recorded(only: str | None = None) -> argparse.ArgumentParser:
        built.append(only)
        return build(only)

    monkeypatch.setattr(cli, "build_parser", recorded)
    assert cli.main(["plan", EXAMPLE]) == 0
    assert built == ["plan"]
    capsys.readouterr()
    for arguments in (["plan", EXAMPLE, "--bogus"], ["catalog", "show"], ["bogus"]):
        with pytest.raises(SystemExit) as refused:
            build().parse_args(arguments)
        said = capsys.readouterr().err
        with pytest.raises(SystemExit) as again:
            cli.main(arguments)
        assert (again.value.code, capsys.readouterr().err) == (refused.value.code, said)
        assert arguments[-1] != "--bogus" or "{catalog,ami,cluster,evaluate,plan,prices,fleet,stacks}" in said
