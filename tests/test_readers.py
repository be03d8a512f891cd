"""Every reader and writer as careful as the fleet loader: regular files only, a size limit, finite numbers in range,
one clear line otherwise; writers that refuse a device, a pipe or the command's own input; text escaped for where it
lands; reasons that say something."""

from __future__ import annotations

import enum
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import plan_diff, text
from ecs_gpu_sharing.core.errors import GpuSharingError
from ecs_gpu_sharing.core.files import check_output_path, json_text, parse_json, read_input

FLEETS = Path(__file__).parent / "fleets"


def _plan_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["plan", str(FLEETS / "platform.toml"), "--json"]) in (0, 1)
    return dict(json.loads(capsys.readouterr().out))


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError("the reader blocked")


def test_a_fifo_as_a_plan_is_refused_without_blocking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)
    try:
        err = _error(capsys, ["plan", str(fifo)])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert "not a regular file" in err
    err = _error(capsys, ["plan", "diff", str(fifo), str(fifo)])
    assert "not a regular file" in err and len(err.splitlines()) == 1


def test_a_device_as_a_plan_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert "not a regular file" in _error(capsys, ["plan", "diff", "/dev/zero", "/dev/zero"])


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e400"])
def test_a_number_json_does_not_allow_is_one_line(number: str) -> None:
    with pytest.raises(GpuSharingError, match=r"p.json: .*(not a number JSON allows|out of range)"):
        parse_json(f'{{"x": {number}}}', where="p.json", what="plan")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("capacities", 0, "usable_gpu_memory_mib"), 0),
        (("capacities", 0, "usable_gpu_memory_mib"), -1),
        (("capacities", 0, "usable_gpu_memory_mib"), 1e300),
        (("capacities", 0, "max_instances"), "<script>"),
        (("services", 0, "tasks"), -3),
    ],
)
def test_figures_out_of_range_in_a_plan_file_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], path: tuple[Any, ...], value: Any
) -> None:
    doc = _plan_json(tmp_path, capsys)
    target: Any = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    for argv in (["plan", str(forged)], ["plan", str(forged), "--svg", str(tmp_path / "p.svg")]):
        err = _error(capsys, argv)
        assert f"{path[-1]} is {value!r}" in err and len(err.splitlines()) == 1


def test_a_big_input_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    with pytest.raises(GpuSharingError, match="more than a plan file may hold"):
        read_input(big, what="plan", max_bytes=1024)


def test_a_writer_refuses_a_device_a_fifo_and_its_own_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(GpuSharingError, match="not a regular file"):
        check_output_path("/dev/null", what="SVG", option="--svg")
    fifo = tmp_path / "out.svg"
    os.mkfifo(fifo)
    with pytest.raises(GpuSharingError, match="not a regular file"):
        check_output_path(fifo, what="SVG", option="--svg")
    fleet = tmp_path / "fleet.toml"
    fleet.write_text((FLEETS / "platform.toml").read_text())
    before = fleet.read_text()
    err = _error(capsys, ["plan", str(fleet), "--svg", str(fleet)])
    assert "is the file this command reads" in err
    assert fleet.read_text() == before


def test_a_forged_name_cannot_forge_a_line_in_a_pr_comment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _plan_json(tmp_path, capsys)
    new = json.loads(json.dumps(old))
    new["services"][0]["name"] = "x\n\n**Nothing grew.** [approve](https://evil.example) <img src=x>"
    d = plan_diff.diff(old, new, old_source="old", new_source="new")
    markdown = plan_diff.to_markdown(d)
    assert "\n**Nothing grew.**" not in markdown and "[approve](" not in markdown and " <img" not in markdown
    assert "\\[approve\\]" in markdown and "\\<img" in markdown
    new["services"][0]["name"] = "y\x1b[2J"
    assert "\x1b" not in plan_diff.to_text(plan_diff.diff(old, new, old_source="old", new_source="new"))


@pytest.mark.parametrize("reason", ["", " ", "\u200b", "\u00a0", "\u3000\u200d", "\t\n", "\u2800", "\u3164"])
def test_a_reason_of_blanks_is_no_reason(reason: str) -> None:
    assert not text.visible(reason)


@pytest.mark.parametrize("reason", ["x", " ok ", "理由", "✓"])
def test_a_reason_with_a_visible_character_is_one(reason: str) -> None:
    assert text.visible(reason)


def _isolated_fleet(services: int, gpus: str, seed: int) -> str:
    import random

    rng = random.Random(seed)
    lines = ['name = "iso"', "", "[capacity.one]", f'instance_types = ["{gpus}"]', ""]
    for i in range(services):
        lines += [
            f"[service.s{i}]",
            'capacity = "one"',
            'image = "public.ecr.aws/x/y@sha256:' + "0" * 64 + '"',
            "desired_count = 1",
            "cpu_units = 256",
            "memory_mib = 512",
            "gpu_budget_mib = 1024",
        ]
        if rng.random() < 0.8:
            lines += [
                f"[service.s{i}.allocation]",
                "residency_mib = 256",
                "peak_working_mib = 256",
                'shared_failure = "retry"',
                f'isolation_group = "g{rng.randrange(4)}"',
                f"isolate_host = {'true' if rng.random() < 0.3 else 'false'}",
            ]
        lines.append("")
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("gpus", ["g6.2xlarge", "g6.12xlarge"])
def test_isolation_lengths_are_the_expressions_lengths(seed: int, gpus: str) -> None:
    """The linear count of each placement expression's length matches the expressions the app writes."""
    import tomllib

    from ecs_gpu_sharing.core import fleet

    spec = fleet.parse(tomllib.loads(_isolated_fleet(12, gpus, seed)), source="iso.toml")
    assert spec.host_isolation_lengths() == {name: len(e) for name, e in spec.host_isolation().items()}


def test_thousands_of_problems_are_shown_a_hundred_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = ['name = "unk"', "[capacity.l4]", 'instance_types = ["g6.2xlarge"]', *(f"k{i} = 1" for i in range(3000))]
    path = tmp_path / "fleet.toml"
    path.write_text("\n".join(body))
    err = _error(capsys, ["plan", str(path)])
    lines = err.splitlines()
    assert len(lines) == 101 and lines[-1].endswith("more problems; fix these first")


def test_five_thousand_isolation_groups_on_one_gpu_hosts_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fleet.toml"
    lines = ['name = "iso"', "[capacity.l4]", 'instance_types = ["g6.2xlarge"]']
    for i in range(5000):
        lines += [
            f"[service.s{i}]",
            'capacity = "l4"',
            'image = "public.ecr.aws/x/y@sha256:' + "0" * 64 + '"',
            "desired_count = 1",
            "cpu_units = 256",
            "memory_mib = 512",
            "gpu_budget_mib = 1024",
            f"[service.s{i}.allocation]",
            "residency_mib = 256",
            "peak_working_mib = 256",
            'shared_failure = "r"',
            f'isolation_group = "g{i}"',
        ]
    path.write_text("\n".join(lines))
    err = _error(capsys, ["plan", str(path)])
    assert "and 4997 more: allocation.isolation_group" in err and len(err.splitlines()) == 1


def test_a_refused_load_balancer_is_reported_once_not_for_every_service(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conftest import REPO

    fleet = tmp_path / "fleet.toml"
    text = (
        (REPO / "fleet.toml")
        .read_text()
        .replace(
            '[load_balancer.internal]             # internal to the VPC; HTTP (give certificate_arn for HTTPS)\ntype = "application"',
            '[load_balancer.internal]\ntype = "gateway"',
            1,
        )
    )
    fleet.write_text(text)
    err = _error(capsys, ["plan", str(fleet)])
    assert "load_balancer.internal" in err and "which is not defined" not in err


class _Word(str):
    """A str of another type: json_text writes a plain str and int itself, and every other type as json does."""


class _Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.text(max_size=3).map(_Word)
    | st.sampled_from(list(_Level)),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        | st.dictionaries(st.integers() | st.booleans(), inner, min_size=1, max_size=2)
    ),
    max_leaves=30,
)


@given(_JSON_VALUES, st.sampled_from([1, 2]))
def test_json_text_is_json_dumps_character_for_character(doc: Any, indent: int) -> None:
    """The plan's writer (files.json_text): what json.dumps with the same indent writes, for every value JSON takes,
    with non-ASCII and control characters, NaN and infinities, tuples, and keys that are not strings."""
    assert json_text(doc, indent) == json.dumps(doc, indent=indent)


@pytest.mark.parametrize("name", ["wide.toml", "three-models.toml", "platform.toml", "managed-instances.toml"])
def test_json_text_writes_a_plan_document_from_its_parts_as_from_their_dicts(name: str) -> None:
    """A plan document's parts are written from the parts themselves (``json_names``), not from dicts made of them
    first: the text of their ``to_json()`` dicts at each indent, with prices and without. Where a part holds a value
    json_text leaves to the json module (a price of NaN), the whole is json's text of the dicts."""
    import datetime
    import math
    from dataclasses import replace

    from ecs_gpu_sharing.core import cost, fleet, plan_inputs, plan_report
    from ecs_gpu_sharing.core.rules import assess

    from conftest import REPO

    result = assess(*plan_inputs.from_fleet(fleet.load(REPO / "tests" / "fleets" / name)))
    types = {c.instance_type for c in plan_report.document(result).capacities}
    for capacity in plan_report.document(result).capacities:  # GPUs alike in a capacity are one part, written once
        gpus = [gpu for group in capacity.instances for gpu in group.gpus]
        assert len({id(gpu) for gpu in gpus}) == len(set(gpus))
        tasks = [t for gpu in gpus for t in gpu.tasks]  # and a service's tasks alike on them
        assert len({id(t) for t in tasks}) == len(set(tasks))
    prices = cost.Prices("us-east-1", datetime.date(2026, 12, 1), "USD", {t: 1.25 for t in types}, "test")
    for doc in (plan_report.document(result), plan_report.document(result, prices)):
        for indent in (1, 2):
            assert json_text(doc, indent) == json.dumps(doc.to_json(), indent=indent)
    assert doc.summary.cost is not None
    odd = replace(doc, summary=replace(doc.summary, cost=replace(doc.summary.cost, per_hour=math.nan)))
    assert "NaN" in json_text(odd, 2)
    assert json_text(odd, 2) == json.dumps(odd.to_json(), indent=2)


def test_json_text_writes_a_part_met_again_as_it_wrote_it_at_that_indent() -> None:
    """A part met again (the same object: a plan's GPUs alike are one part) is written from the text kept for it at
    that indent, and afresh at another: the same text as json.dumps of the dicts, wherever the part stands."""
    from ecs_gpu_sharing.core import plan_document as pd

    one = pd.GpuTasks(service="llm", tasks=2, task_gpu_budget_mib=20480, containers=1)
    gpu = pd.Gpu(tasks=(one, one), used_gpu_memory_mib=40960, whole=False)
    other = pd.Gpu(tasks=(one,), used_gpu_memory_mib=20480, whole=False)
    doc = {
        "gpus": [gpu, other, gpu],
        "deeper": [[gpu, one], {"gpu": gpu, "empty": pd.Gpu(tasks=(), used_gpu_memory_mib=0, whole=True)}],
        "one": one,
    }

    def plain(value: Any) -> Any:
        if isinstance(value, pd.Gpu | pd.GpuTasks):
            return value.to_json()
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return [plain(v) for v in value] if isinstance(value, list) else value

    for indent in (1, 2):
        assert json_text(doc, indent) == json.dumps(plain(doc), indent=indent)


def test_texts_kept_beforehand_are_what_a_plan_documents_text_takes_for_its_hosts_and_services() -> None:
    """The ``plan`` command writes a plan's hosts and services while ECS's placement is replayed (``assess``'s
    ``meanwhile``, ``plan_report.HostsAhead``), and the document's text takes each host group's and service's from
    there: marked kept texts show in the document where its hosts and services stand, once per group and service, and
    unmarked ones give json.dumps's text. A part's kept text is another object's no more once that part is gone (the
    part is held with it)."""
    from ecs_gpu_sharing.core import fleet, plan_document, plan_inputs, plan_report
    from ecs_gpu_sharing.core.files import WrittenParts
    from ecs_gpu_sharing.core.planner import Plan
    from ecs_gpu_sharing.core.rules import assess

    from conftest import REPO

    seen: list[tuple[Plan, Plan]] = []
    ahead = plan_report.HostsAhead(2)

    def meanwhile(steady: Plan, surge: Plan) -> None:
        seen.append((steady, surge))
        ahead(steady, surge)

    result = assess(*plan_inputs.from_fleet(fleet.load(REPO / "tests" / "fleets" / "wide.toml")), meanwhile=meanwhile)
    assert seen == [(result.steady, result.surge)] and ahead.stands(result)
    hosts, written = ahead.hosts, ahead.written
    doc = plan_report.document(result, ahead=ahead)
    assert doc == plan_report.document(result)
    assert doc.services is ahead.services and all(s.placement for s in doc.services)
    groups = [g for c in doc.capacities for g in c.instances]
    assert groups and all(any(g is h for h in hosts[c.name]) for c in doc.capacities for g in c.instances)
    marked = WrittenParts()  # the texts kept, host groups' marked (before the document's own are kept beside them)
    marked.texts = {
        2: {
            key: (part, '"kept"' if isinstance(part, plan_document.InstanceGroup | plan_document.Service) else text)
            for key, (part, text) in written.texts[2].items()
        }
    }
    assert json_text(doc, 2, written=written) == json.dumps(doc.to_json(), indent=2)
    assert json_text(doc, 2, written=marked).count('"kept"') == len(groups) + len(doc.services)
    assert json_text(doc, 1, written=marked) == json.dumps(doc.to_json(), indent=1)  # another indent: its own texts
    gone = WrittenParts()
    gone.texts = {2: {(id(part), at): (object(), '"kept"') for (_, at), (part, _) in written.texts[2].items()}}
    assert '"kept"' not in json_text(doc, 2, written=gone)


def test_services_made_ahead_are_not_taken_where_the_placement_model_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``HostsAhead`` makes the services as if ECS's placement is modelled on each EC2 capacity whose tasks all fit;
    where the model fails on one, the assessment says so and the document makes its own services, which carry no
    placement there, not those made ahead."""
    from ecs_gpu_sharing.core import fleet, plan_inputs, plan_report, rules

    from conftest import REPO

    def failing(*args: object, **kwargs: object) -> None:
        raise RuntimeError("model broken")

    monkeypatch.setattr(rules, "place_capacity", failing)
    ahead = plan_report.HostsAhead(2)
    result = rules.assess(*plan_inputs.from_fleet(fleet.load(REPO / "tests" / "fleets" / "wide.toml")), meanwhile=ahead)
    assert not result.placement and any("the model of ECS's placement failed" in f.message for f in result.findings)
    assert ahead.services and all(s.placement for s in ahead.services) and not ahead.stands(result)
    doc = plan_report.document(result, ahead=ahead)
    assert doc == plan_report.document(result) and all(s.placement is None for s in doc.services)


def test_json_text_writes_a_plan_as_json_dumps_does(capsys: pytest.CaptureFixture[str]) -> None:
    """The whole ``plan --json`` output of a fleet file, and a value json cannot write, refused in its words."""
    from conftest import REPO

    assert main(["plan", str(REPO / "tests" / "fleets" / "wide.toml"), "--json"]) == 0
    shown = capsys.readouterr().out
    assert shown == json.dumps(json.loads(shown), indent=2) + "\n"
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_text({"a": [1, {2, 3}]}, 2)
