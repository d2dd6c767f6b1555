"""elfkit/tools/cli_spec.py: the exact parser gives argparse's Namespace for every plain command
line of every elfkit command, and leaves everything else to argparse.

The corpora are built from the commands' own descriptions (elfkit.tools.ROOT): each option
present and absent, in each of its spellings, before and after the positionals, ``--``,
repeated ``append`` options, the optional positional given or not; then lines that are
wrong in one way each.  argparse's side is the parser elfkit/tools/cli_argparse.py builds from
the same description, with all commands built (as for ``elfkit --help``)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from elfkit import tools as cli
from elfkit.tools.cli_argparse import build_parser
from elfkit.tools.cli_spec import Arg, Command, Exit, Namespace, OneOf, parse
from tests.vmrt.iree_tools import REPO


def _leaves(cmd: Command, path: tuple[str, ...] = ()):
    for c in cmd.subcommands():
        if c.commands:
            yield from _leaves(c, (*path, c.name))
        else:
            yield (*path, c.name), c


LEAVES = dict(_leaves(cli.ROOT))


def _value(a: Arg) -> str:
    """A word ``a`` accepts that is not its default."""
    if a.choices is not None:
        return next(c for c in reversed(a.choices) if c != a.default)
    return {int: "7", float: "2.5"}.get(a.type, f"{a.dest}-v")  # type: ignore[call-overload]


def _spellings(a: Arg) -> list[list[str]]:
    """Every way of giving option ``a`` one value (three for nargs +)."""
    v = _value(a)
    out: list[list[str]] = []
    for f in a.flags:
        if a.action == "store_true":
            out.append([f])
            continue
        out.append([f, v] if a.nargs is None else [f, v, v + "2", v + "3"])
        if f.startswith("--"):
            out.append([f"{f}={v}"])
    return out


def _positionals(cmd: Command, *, optional: bool = False) -> list[str]:
    words = []
    for a in cmd.arguments():
        if a.positional and (a.nargs != "?" or optional):
            words += [f"{a.dest}.x", f"{a.dest}.y"] if a.nargs == "+" else [f"{a.dest}.x"]
    return words


def _required(cmd: Command, but: Arg | None = None) -> list[str]:
    """Words for the required options and groups (the first member of each group),
    leaving out ``but`` and its group."""
    words: list[str] = []
    for x in cmd.args:
        if isinstance(x, OneOf):
            if x.required and but not in x.args:
                words += _spellings(x.args[0])[0]
        elif x.required and not x.positional and x is not but:
            words += _spellings(x)[0]
    return words


def _options(cmd: Command) -> list[Arg]:
    return [a for a in cmd.arguments() if not a.positional]


def valid_lines(path: tuple[str, ...], cmd: Command) -> list[list[str]]:
    pos, req = _positionals(cmd), _required(cmd)
    dashes = ["--"] if pos else []     # "--" with nothing after it is an error
    lines = [[*path, *pos, *req], [*path, *req, *pos], [*path, *req, *dashes, *pos],
             [*path, *req, *_positionals(cmd, optional=True)],
             [*path, *req, *dashes, *_positionals(cmd, optional=True)]]
    if pos:
        lines.append([*path, "-", *pos[1:], *req])
    for a in _options(cmd):
        others = _required(cmd, but=a)
        for s in _spellings(a):
            lines.append([*path, *pos, *others, *s])
            if a.nargs is None:         # nargs + would take the positionals too
                lines.append([*path, *s, *pos, *others])
                lines.append([*path, *s, *others, *dashes, *pos])
        if a.action == "append":
            lines.append([*path, *pos, *req, *_spellings(a)[0], *_spellings(a)[-1]])
    every: list[str] = []               # each option once, one per group
    for x in cmd.args:
        if isinstance(x, OneOf):
            every += _spellings(x.args[-1])[0]
        elif not x.positional:
            every += _spellings(x)[-1]
    lines.append([*path, *_positionals(cmd, optional=True), *every])
    return lines


def invalid_lines(path: tuple[str, ...], cmd: Command) -> list[list[str]]:
    pos, req = _positionals(cmd), _required(cmd)
    full = _positionals(cmd, optional=True)
    lines = [[*path, *pos, *req, "--no-such-option"], [*path, *pos, "-Z", *req]]
    if not any(a.nargs == "+" for a in cmd.arguments() if a.positional):
        lines.append([*path, *full, *req, "extra.x"])
    if pos:
        lines.append([*path, *req])
        lines.append([*path, *full, *req, *full])
    for a in _options(cmd):
        others = _required(cmd, but=a)
        if a.action == "store_true":
            lines.append([*path, *pos, *others, f"{a.flags[-1]}=1"])
            continue
        lines.append([*path, *pos, *others, a.flags[0]])                 # no value
        if a.choices is not None or a.type is not None:
            lines.append([*path, *pos, *others, a.flags[-1], "nope"])
        if a.required:
            lines.append([*path, *pos, *others])
    for x in cmd.args:
        if isinstance(x, OneOf):
            both = [w for a in x.args for w in _spellings(a)[0]]
            lines.append([*path, *pos, *_required(cmd, but=x.args[0]), *both])
            if x.required:
                lines.append([*path, *pos, *_required(cmd, but=x.args[0])])
    return lines


def unusual_lines(path: tuple[str, ...], cmd: Command) -> list[list[str]]:
    """Lines argparse may accept but the exact parser must leave to it."""
    pos, req = _positionals(cmd), _required(cmd)
    lines = [[*path, *pos, *req, "-h"], [*path, "--help"]]
    if pos:                             # a second "--"; "--" among the positionals
        lines.append([*path, *req, "--", *pos, "--", "x"])
        lines.append([*path, *req, *pos[:1], "--", *pos[1:]])
    if len(pos) > 1:
        lines.append([*path, *pos[:1], *req, *pos[1:]])
    for a in _options(cmd):
        long = next((f for f in a.flags if f.startswith("--")), None)
        others = _required(cmd, but=a)
        if long and a.action != "store_true":   # an empty value
            lines.append([*path, *pos, *others, long + "="])
        if long:                        # an abbreviation (argparse takes unique ones)
            lines.append([*path, *pos, *others, *_spellings(a)[0]])
            lines[-1][len(path) + len(pos) + len(others)] = long[:4]
        if a.action != "store_true":    # a value that looks like an option
            lines.append([*path, *pos, *others, a.flags[0], "-5"])
    return lines


def _argparse(argv: list[str], capsys) -> tuple[object, str, str]:
    """(namespace or exit code, stdout, stderr) of the argparse parser with every
    command built."""
    try:
        got: object = build_parser(cli.ROOT).parse_args(argv, Namespace())
    except SystemExit as e:
        got = e.code
    out = capsys.readouterr()
    return got, out.out, out.err


@pytest.fixture(autouse=True)
def _width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")


@pytest.mark.parametrize("path", list(LEAVES), ids=" ".join)
def test_plain_command_lines_parse_as_argparse_parses_them(path, capsys):
    lines = valid_lines(path, LEAVES[path])
    assert len(lines) >= 6
    for argv in lines:
        fast = parse(cli.ROOT, argv)
        assert fast is not None, argv
        slow, _out, err = _argparse(argv, capsys)
        assert isinstance(slow, Namespace), (argv, err)
        assert fast == slow, argv
        assert vars(fast) == vars(build_parser(cli.ROOT, argv).parse_args(argv, Namespace()))
        assert fast.func is LEAVES[path].run


@pytest.mark.parametrize("path", list(LEAVES), ids=" ".join)
def test_wrong_command_lines_get_argparses_message(path, capsys):
    for argv in invalid_lines(path, LEAVES[path]):
        assert parse(cli.ROOT, argv) is None, argv
        want = _argparse(argv, capsys)
        assert want[0] == 2, (argv, want)
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        out = capsys.readouterr()
        assert (e.value.code, out.out, out.err) == want, argv
        assert out.err.count("\n") >= 2 and "error: " in out.err.splitlines()[-1]


@pytest.mark.parametrize("path", list(LEAVES), ids=" ".join)
def test_unusual_command_lines_are_left_to_argparse(path, capsys):
    for argv in unusual_lines(path, LEAVES[path]):
        assert parse(cli.ROOT, argv) is None, argv
        want = _argparse(argv, capsys)
        if isinstance(want[0], Namespace):      # accepted: the parser main() builds agrees
            assert build_parser(cli.ROOT, argv).parse_args(argv, Namespace()) == want[0]
            continue
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        out = capsys.readouterr()
        assert (e.value.code, out.out, out.err) == want, argv


@pytest.mark.parametrize("argv", [[], ["fatelf"], ["toolchain"], ["fatlf", "list", "x"],
                                  ["fatelf", "lst", "x"], ["--version"], ["-h"],
                                  ["--cmake-dir"], ["--", "fatelf", "list", "x"],
                                  ["fatelf", "--", "list", "x"], ["fatelf", "-h", "list"]])
def test_families_and_the_program_options_go_to_argparse(argv):
    assert parse(cli.ROOT, argv) is None


def test_a_word_a_family_would_take_as_its_own_option_goes_to_argparse():
    # the root parser would read "--vers" as --version, "--c" as --cmake-dir, even after
    # the sub-command's name; "--hel" as --help at the fatelf level
    leaf = Command("leaf", Arg("--c"), Arg("--vers", action="store_true"),
                   Arg("--hel", action="store_true"), run=print)
    root = Command("prog", Arg("--version", action="version", version="1"),
                   Arg("--cmake-dir"),
                   commands=[Command("fam", commands=[leaf], dest="sub")], dest="cmd")
    for argv in (["fam", "leaf", "--vers"], ["fam", "leaf", "--c", "x"],
                 ["fam", "leaf", "--hel"]):
        assert parse(root, argv) is None, argv
    ns = parse(root, ["fam", "leaf", "--", "--vers"])   # after --: a word, not an option
    assert ns is None        # (leaf takes no positionals: argparse reports it)
    assert parse(root, ["fam", "leaf"]) == Namespace(cmd="fam", sub="leaf", cmake_dir=None,
                                                    c=None, vers=False, hel=False, func=print)


def test_options_that_exit_are_left_to_argparse(capsys):
    leaf = Command("leaf", Arg("--where", action=Exit(lambda: 3)),
                   Arg("--version", action="version", version="v9"), Arg("--x"), run=print)
    root = Command("p", commands=[leaf], dest="cmd")
    assert parse(root, ["leaf", "--x", "1"]) == Namespace(cmd="leaf", x="1", func=print)
    for argv, code, out in ((["leaf", "--where", "x"], 3, ""),
                            (["leaf", "--version", "x"], 0, "v9\n")):
        assert parse(root, argv) is None
        with pytest.raises(SystemExit) as e:
            build_parser(root).parse_args(argv, Namespace())
        assert (e.value.code, capsys.readouterr().out) == (code, out)


def test_defaults_and_types_as_argparse_applies_them(capsys):
    cmd = Command("c", Arg("n", nargs="?", type=int, default="5"),
                  Arg("--k", type=int, default="9"), Arg("--m", type=float, default=1),
                  Arg("--x", action="append"), Arg("--y", action="extend", nargs="+",
                                                   default=["a"]),
                  run=print)
    root = Command("p", commands=[cmd], dest="cmd")
    parser = build_parser(root)
    for argv in (["c"], ["c", "3"], ["c", "--k", "2", "--x", "a", "--x=b"],
                 ["c", "--y", "b", "c", "--y=d", "--", "4"], ["c", "--m", "1e3"]):
        fast = parse(root, argv)
        assert fast is not None and fast == parser.parse_args(argv, Namespace()), argv
    assert parse(root, ["c"]) == Namespace(cmd="c", n=5, k=9, m=1, x=None, y=["a"],
                                           func=print)
    assert cmd.arguments()[4].default == ["a"]          # the default list is copied


@pytest.mark.parametrize("make", [
    lambda: Arg("--x", action="count"),
    lambda: Arg("--x", nargs="*"),
    lambda: Arg("--x", const=3),
    lambda: Arg("x", dest="y"),
    lambda: Arg("--x", action="append", default=("a",)),
    lambda: OneOf(Arg("x")),
    lambda: Command("c", Arg("x", nargs="?"), Arg("y"), run=print),
    lambda: Command("c"),
    lambda: Command("c", Arg("x"), commands=[Command("d", run=print)]),
])
def test_what_the_exact_parser_cannot_follow_cannot_be_described(make):
    with pytest.raises(ValueError, match="elfkit CLI description"):
        make()


def test_namespace_behaves_as_argparses():
    ns = Namespace(a=1, b=[2])
    assert ns == Namespace(b=[2], a=1) and ns != Namespace(a=1)
    assert "a" in ns and "c" not in ns and repr(ns) == "Namespace(a=1, b=[2])"
    assert ns != {"a": 1, "b": [2]}


_NO_ARGPARSE = """
import sys
before = set(sys.modules)
from elfkit.tools import ROOT
from elfkit.tools.cli_spec import parse
for argv in {lines!r}:
    assert parse(ROOT, argv) is not None, argv
print(sorted({{"argparse", "gettext", "locale"}} & (set(sys.modules) - before)))
"""


def test_plain_command_lines_import_no_argparse():
    lines = [valid_lines(path, cmd)[0] for path, cmd in LEAVES.items()]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-S", "-c", _NO_ARGPARSE.format(lines=lines)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
