"""The command line."""

from __future__ import annotations

import pytest

from ecs_gpu_sharing.cli import main


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
