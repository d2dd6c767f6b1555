"""elfkit/tools/cli_argparse.py: the argparse parser built from the commands' descriptions
prints the same ``--help`` and usage errors as the hand-written argparse parsers it
replaced (cli_outputs.json, captured from them at COLUMNS=80; see its note)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from elfkit import tools as cli

OUTPUTS = json.loads((Path(__file__).parent / "cli_outputs.json").read_text())


def _main(argv: list[str], capsys) -> tuple[object, str, str]:
    try:
        code: object = cli.main(list(argv))
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("case", OUTPUTS["help"] + OUTPUTS["bad"],
                         ids=lambda c: " ".join(c["argv"]) or "(nothing)")
def test_help_and_usage_errors_are_unchanged(case, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(OUTPUTS["columns"]))
    assert _main(case["argv"], capsys) == (case["code"], case["stdout"], case["stderr"])


def test_every_command_has_its_help_in_the_fixture():
    helped = {tuple(c["argv"][:-1]) for c in OUTPUTS["help"]}
    paths = {()}
    for c in cli.ROOT.subcommands():
        paths.add((c.name,))
        paths.update((c.name, s.name) for s in c.subcommands())
    assert helped == paths
