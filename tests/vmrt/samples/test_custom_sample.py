"""The basic custom-module sample: a Python ``custom`` module plus a compiled
program, reproducing the transcripts the reference documents for the C
sample (debug and release runtime), as a static and as a dynamic module."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import iree_run, needs_iree, status_head, vmrt_run, vmrt_subprocess
from vmrt.samples.custom import STRING_TYPE, CustomModule, CustomString

pytestmark = needs_iree

DEBUG = """\
INVOKE BEGIN example.main
CREATE hello
PRINT hello
LENGTH hello = 5
CREATE debug
PRINT debug
INVOKE END
"""
RELEASE = """\
INVOKE BEGIN example.main
CREATE hello
PRINT hello
LENGTH hello = 5
CREATE debug
CREATE optimized
PRINT optimized
INVOKE END
"""
CUSTOM_PY = str(Path(vmrt.__file__).parent / "samples" / "custom.py")


@pytest.fixture(scope="module")
def example(compile_mlir):
    return compile_mlir("example.mlir")


@pytest.mark.parametrize("debug,expected", [(True, DEBUG), (False, RELEASE)],
                         ids=["debug", "release"])
def test_basic_sample_host_transcript(example, debug, expected):
    args = [sys.executable, "-m", "vmrt.samples.basic", str(example), "example.main"]
    proc = subprocess.run(args + (["--debug"] if debug else []), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected


def test_basic_sample_from_stdin(example):
    proc = subprocess.run([sys.executable, "-m", "vmrt.samples.basic", "-", "example.main"],
                          input=example.read_bytes(), capture_output=True, timeout=60)
    assert proc.stdout.decode() == RELEASE


def test_basic_sample_usage_exit_code():
    proc = subprocess.run([sys.executable, "-m", "vmrt.samples.basic", "x"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 255 and "usage" in proc.stderr


def _run_lines(transcript: str) -> str:
    body = transcript.splitlines()[1:-1]
    return "EXEC @main\n" + "\n".join(body) + "\n"


@pytest.mark.parametrize("env,expected", [({"VMRT_CUSTOM_DEBUG": "1"}, DEBUG),
                                          ({"VMRT_CUSTOM_DEBUG": "0"}, RELEASE)],
                         ids=["debug", "release"])
def test_static_module_loaded_for_dependency(example, env, expected):
    rc, out, err = vmrt_subprocess("run", f"--module={example}", env=env)
    assert (rc, err) == (0, "")
    assert out == _run_lines(expected)


@pytest.mark.parametrize("spec,expected", [
    ("@create_module?debug=1", DEBUG), ("@create_module?debug=0", RELEASE),
    ("@create_module", RELEASE), ("?debug=1", DEBUG), ("@?debug=true", DEBUG),
], ids=["at-debug", "at-release", "no-params", "bare-query", "empty-export"])
def test_dynamic_python_module(example, spec, expected, capsys):
    rc, out, err = vmrt_run(f"--module={CUSTOM_PY}{spec}", f"--module={example}")
    printed = capsys.readouterr().out     # the module prints through sys.stdout
    assert (rc, err) == (0, "")
    assert out + printed == _run_lines(expected)


def test_dynamic_python_module_subprocess(example):
    rc, out, err = vmrt_subprocess("run", f"--module={CUSTOM_PY}@create_module?debug=1",
                                   f"--module={example}", "--function=main")
    assert (rc, out, err) == (0, _run_lines(DEBUG), "")


def test_dynamic_module_errors(example, tmp_path):
    rc, _, err = vmrt_run(f"--module={CUSTOM_PY}@nope", f"--module={example}")
    assert rc == 1
    assert err.startswith("NOT_FOUND; symbol 'nope' not found in library; loading dynamic "
                          "module at ")
    rc, _, err = vmrt_run(f"--module={tmp_path}/missing.py", f"--module={example}")
    assert rc == 1 and err.startswith("NOT_FOUND;")
    bad = tmp_path / "bad.py"
    bad.write_text("def create_module(instance, params):\n    return 42\n")
    rc, _, err = vmrt_run(f"--module={bad}", f"--module={example}")
    assert rc == 1 and "not a vmrt.Module" in err
    rc, _, err = vmrt_run(f"--module={tmp_path}/lib.so@create", f"--module={example}")
    assert rc == 1 and err.startswith("UNIMPLEMENTED;")


def test_iree_run_module_rejects_the_custom_type(example):
    # the oracle has no custom module: loading fails on the type table
    rc, out, err = iree_run(f"--module={example}")
    assert rc == 1
    assert status_head(err) == "NOT_FOUND; no type registered with name '!custom.string'"
    # vmrt gives the same error when the type is missing
    inst = vmrt.Instance()
    with pytest.raises(vmrt.VmError) as ei:
        vmrt.BytecodeModule.load(inst, example)
    assert str(ei.value) == "NOT_FOUND; no type registered with name '!custom.string'"


def test_in_process_api(example, capsys):
    inst = vmrt.Instance()
    custom = CustomModule(inst, debug=False)
    prog = vmrt.BytecodeModule.load(inst, example)
    assert [(i.full_name, i.cconv, i.optional) for i in prog.imports] == [
        ("custom.string.create", "0r_r", False), ("custom.string.length", "0r_I", False),
        ("custom.string.print", "0r_v", False), ("custom.string.dprint", "0r_v", True)]
    assert [(d.name, d.minimum_version, int(d.flags)) for d in prog.dependencies()] == \
        [("custom", 0, 1)]
    with vmrt.Context(inst, [custom, prog]) as ctx:
        assert ctx.invoke("example.main") == []
        # the native exports are callable directly too
        s = ctx.invoke("custom.string.create", [b"abc"])[0]
        assert isinstance(s, CustomString) and s.vm_type is STRING_TYPE
        assert ctx.invoke("custom.string.length", [s]) == [3]
        with pytest.raises(vmrt.VmError) as ei:
            ctx.invoke("custom.string.length", [None])
        assert str(ei.value) == ("INVALID_ARGUMENT; null string arg; while invoking native "
                                 "function custom.string.length")
        with pytest.raises(vmrt.VmError) as ei:
            ctx.invoke("custom.string.length", [vmrt.Buffer(b"x")])
        assert str(ei.value).startswith(
            "INVALID_ARGUMENT; parameter contains a reference to the wrong type; have "
            "vm.buffer but expected custom.string")
    assert capsys.readouterr().out == "".join(
        line + "\n" for line in RELEASE.splitlines()[1:-1]) + "CREATE abc\nLENGTH abc = 3\n"


# A user's own ``custom`` module, published by an installed package through the
# ``vmrt.modules`` entry-point group, must replace vmrt's sample of that name.
USER_PROVIDER = '''
from vmrt import export
from vmrt.samples.custom import STRING_TYPE, CustomModule, register_types


class UserCustom(CustomModule):
    @export("string.print", "0r_v", arg_types=(STRING_TYPE,))
    def string_print(self, state, s):
        print("USER", s.value)


class Provider:
    name = "custom"

    def register_types(self, instance):
        register_types(instance)

    def create(self, instance, options=None):
        return UserCustom(instance)


PROVIDER = Provider()
'''


def _install_user_package(root: Path) -> None:
    """A real (if minimal) installed distribution: a module and a .dist-info
    whose entry_points.txt publishes its provider as ``custom``."""
    (root / "user_custom_mod.py").write_text(USER_PROVIDER)
    info = root / "user_custom-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: user-custom\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[vmrt.modules]\ncustom = user_custom_mod:PROVIDER\n")


def test_user_entry_point_replaces_sample(example, tmp_path):
    _install_user_package(tmp_path)
    rc, out, err = vmrt_subprocess("run", f"--module={example}",
                                   env={"PYTHONPATH": str(tmp_path), "VMRT_CUSTOM_DEBUG": "0"})
    assert (rc, err) == (0, "")
    expected = _run_lines(RELEASE).replace("PRINT hello", "USER hello") \
        .replace("PRINT optimized", "USER optimized")
    assert out == expected


@pytest.mark.parametrize("text,value", [("1", True), ("true", True), ("TRUE", True),
                                        ("0", False), ("false", False), ("", False)])
def test_sample_boolean_params(text, value):
    from vmrt.samples.custom import create_module, create_tensor_module
    inst = vmrt.Instance()
    assert create_module(inst, {"debug": text}).debug is value
    # ?static=0 means "not static": the tensor module keeps its ``error`` export
    names = {e.name for e in create_tensor_module(inst, {"static": text}).exports}
    assert ("error" in names) is (not value)


def test_sample_bad_boolean_param():
    from vmrt.samples.custom import create_module
    with pytest.raises(vmrt.UsageError, match="debug.*boolean.*'maybe'"):
        create_module(vmrt.Instance(), {"debug": "maybe"})
