"""What a ``vmrt run`` imports: a host-only program needs neither the FatELF
code, nor numpy, nor unicorn, nor typing; a program whose dispatches run natively does
not import the emulator, typing, pathlib or platform; neither creates dataclasses, nor
imports importlib or warnings, the execution-trace renderer, the ``check`` module
or the providers of modules the program does not import; a program run twice is translated once (the translation
cache).  The output is that of
the pip ``iree-run-module`` on the same program."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.startup_imports import heavy, imports_of
from tests.vmrt.iree_tools import REPO, require_tool

#: the providers of modules neither program below imports (imported when a program
#: does: vmrt.tools.providers), the entry-point sample ``custom`` among them
PROVIDERS = ("vmrt.samples.custom", "vmrt.modules.vmvx", "vmrt.modules.hal_loader.provider",
             "vmrt.modules.hal_inline.provider", "vmrt.modules.io_parameters.provider",
             "vmrt.modules.check.provider")
HEAVY = ("dataclasses", "unicorn", "elfkit.exec.emulated", "elfkit.fatelf", "numpy", "typing",
         "pathlib", "urllib.parse", "platform", "vmrt.bytecode.translate.codegen", "importlib",
         "warnings", "vmrt.bytecode.translate.disasm", "vmrt.modules.check.module", "numbers",
         "vmrt.bytecode.translate.regkinds", "vmrt.hal.local.emulated_workers", *PROVIDERS)
#: what translating a program (no cached translation) imports
TRANSLATOR = ["vmrt.bytecode.translate.codegen", "vmrt.bytecode.translate.disasm", "vmrt.bytecode.translate.regkinds"]

#: runs ``vmrt run`` in a fresh interpreter, then prints which HEAVY modules it imported.
#: Modules the interpreter had before vmrt was imported do not count: a site's ``.pth``
#: files may import typing or pathlib themselves (CI's interpreter has one that does).
RUN = ("import sys\n"
       "before = set(sys.modules)\n"
       "from vmrt.tools.main import main\n"
       "rc = main(sys.argv[1:])\n"
       "print('IMPORTED', *sorted(m for m in {heavy!r} if m in sys.modules and m not in before))\n"
       "sys.exit(rc)\n")


def _vmrt_run(*args: str) -> tuple[str, list[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", RUN.format(heavy=HEAVY), "run", *args],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    out, _, imported = proc.stdout.rpartition("IMPORTED")
    return out, imported.split()


def _iree_run(*args: str) -> str:
    exe = require_tool("iree-run-module", "iree-base-runtime")
    proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_host_only_run_imports_no_fatelf_numpy_typing_or_emulator(compile_mlir):
    vmfb = compile_mlir("control.mlir")
    args = (f"--module={vmfb}", "--function=collatz", "--input=27")
    out, imported = _vmrt_run(*args)
    assert out == _iree_run(*args)
    assert imported in ([], sorted(TRANSLATOR))     # translated unless cached
    # the program imports no hal function: not even the hal provider is imported, nor
    # the HAL's fences (its functions take none)
    imported_all = imports_of("vmrt", "run", *args)[1]
    assert "vmrt.modules.hal.provider" not in imported_all
    assert "vmrt.hal.objects" not in imported_all
    out2, imported2 = _vmrt_run(*args)
    assert out2 == out and imported2 == []


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the dispatches are built for x86_64")
def test_native_run_does_not_import_the_emulator(hal_compile):
    vmfb = hal_compile("elementwise.mlir")
    args = (f"--module={vmfb}", "--device=local-sync", "--function=add",
            "--input=8xf32=1 2 3 4 5 6 7 8", "--input=8xf32=0.5")
    out, imported = _vmrt_run(*args)
    assert out == _iree_run(*args)
    assert "unicorn" not in imported and "elfkit.exec.emulated" not in imported
    assert "vmrt.hal.local.emulated_workers" not in imported
    # the first run with empty caches (the test session has its own) translates
    # the program and reads the plugin's DWARF with pyelftools (which imports
    # typing and dataclasses); every later run finds both in the caches
    out2, imported2 = _vmrt_run(*args)
    assert out2 == out and not set(TRANSLATOR) & set(imported2)
    assert "unicorn" not in imported2 and "elfkit.exec.emulated" not in imported2
    assert "vmrt.hal.local.emulated_workers" not in imported2
    assert "dataclasses" not in imported2
    # no typing, no pathlib (nor the urllib.parse it imports), no platform, no importlib
    # or warnings, no check module, no parser of relocatable objects (a plugin is a
    # shared object)
    for name in ("typing", "pathlib", "urllib.parse", "platform", "importlib", "warnings",
                 "vmrt.modules.check.module", "numbers", "elfkit.loader.objparse"):
        assert name not in imported2
    assert set(imported2) <= set(imported)
    assert not set(PROVIDERS) & set(imported)


def test_import_vmrt_defers_the_vm_core_until_a_name_is_used():
    # ``vmrt run`` raises the collector's thresholds before the VM core is imported
    code = ("import sys\n"
            "before = set(sys.modules)\n"
            "import vmrt\n"
            "print(sorted(m for m in sys.modules if m.startswith('vmrt.vm') and m not in before))\n"
            "from vmrt import Context, NativeModule, export\n"
            "print(Context.__module__, NativeModule.__module__, export.__module__)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "[]", "vmrt.vm.context vmrt.vm.native_module vmrt.vm.native_module"]


# ---------------------------------------------------------------- every command
# (run as a plain Python install starts: tests/startup_imports.py)

#: what no command line below needs
NEVER = ("numpy", "unicorn", "typing", "dataclasses", "pathlib", "argparse", "statistics",
         "json", "socket", "datetime", "tempfile")


def test_help_of_every_command_imports_no_command():
    from vmrt.tools import usage
    from vmrt.tools.main import COMMANDS, SUBCOMMANDS
    commands = {"RUN": "run", "TEST": "test", "BENCHMARK": "benchmark", "REPLAY": "replay",
                "EXECUTABLE": "executable", "EXECUTABLE_BENCHMARK": "executable_benchmark"}
    lines = [[], *([c] for c in COMMANDS), *([c, s] for c, subs in SUBCOMMANDS.items()
                                            for s in subs)]
    for words in lines:
        out, imported = imports_of("vmrt", *words, "--help")
        text = "EXECUTABLE_BENCHMARK" if words == ["executable", "benchmark"] else \
            "EXECUTABLE" if words[:1] == ["executable"] else (words or ["run"])[0].upper()
        assert out == getattr(usage, text)
        assert heavy(imported, NEVER + tuple(f"vmrt.tools.{m}" for m in commands.values())
                     + ("vmrt.vm", "vmrt.hal", "vmrt.bytecode", "vmrt.modules")) == []
        # the same text the command itself prints (a line the fast path does not know:
        # the command parses it)
        if words and words != ["executable"]:
            own, imported = imports_of("vmrt", *words, "--help", "--help")
            assert own == out and f"vmrt.tools.{commands[text]}" in imported


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the dispatches are built for x86_64")
def test_vmrt_test_imports_no_numpy(compile_mlir):
    vmfb = compile_mlir("check_add.mlir", "--iree-hal-target-device=local",
                        "--iree-hal-local-target-device-backends=llvm-cpu",
                        "--iree-llvmcpu-target-triple=x86_64-pc-linux-elf",
                        "--iree-llvmcpu-target-cpu=generic")
    for _ in range(2):      # the second run finds the translation and DWARF caches
        out, imported = imports_of("vmrt", "test", f"--module={vmfb}")
        assert "[  PASSED  ] 1 test." in out
    assert heavy(imported, NEVER) == []


def test_vmrt_benchmark_imports_no_statistics_json_or_socket(compile_mlir):
    vmfb = compile_mlir("control.mlir")
    for _ in range(2):
        out, imported = imports_of("vmrt", "benchmark", f"--module={vmfb}",
                                   "--function=collatz", "--input=27", "--benchmark_min_time=1x")
        assert "BM_collatz" in out
    assert heavy(imported, NEVER) == []


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the dispatch library is for x86_64")
def test_executable_dispatch_and_benchmark_of_tensor_bindings_import_no_numpy(iree):
    # bindings parsed from text are aligned host memory (HostBytes), printed from it;
    # the dispatch runs through the export's prepared form
    lib = iree.compile("codegen", "x86_64").library
    for _ in range(2):      # the second run finds the library's caches
        out, imported = imports_of("vmrt", "executable", "dispatch", lib, "--export=saxpy",
                                   "--binding=4xf32=1 2 3 4", "--binding=4xi32=10",
                                   "--binding=4xf32", "--constant=0.5", "--constant=4",
                                   "--constant=0")
    # saxpy: binding 2 = 0.5 * binding 0 + binding 1 (binding 1's bits read as f32:
    # 10 is the denormal 1.4e-44, lost in the sum); an i32 binding prints as numpy's si32
    assert out.splitlines()[1:] == [
        "binding[0]: hal.buffer_view", "4xf32=1 2 3 4", "binding[1]: hal.buffer_view",
        "4xsi32=10 10 10 10", "binding[2]: hal.buffer_view", "4xf32=0.5 1 1.5 2"]
    assert heavy(imported, NEVER) == []
    out, imported = imports_of("vmrt", "executable", "benchmark", f"--executable_file={lib}",
                               "--entry_point=1", "--workgroup_count=1,1,1",
                               "--binding=4xf32=1 2 3 4", "--binding=4xf32=10",
                               "--binding=4xf32", "--constant=1056964608",   # 0.5f
                               "--constant=4", "--constant=0", "--benchmark_min_time=1x")
    assert "BM_dispatch_1x1x1" in out
    assert heavy(imported, NEVER) == []


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the dispatch library is for x86_64")
def test_executable_list_imports_no_buffer_views_or_output_files(iree):
    # ``list`` loads and describes the library: the binding parser, the buffer view
    # printer, the output files and the import report are the other commands'
    lib = iree.compile("codegen", "x86_64").library
    out, imported = imports_of("vmrt", "executable", "list", lib)
    assert "saxpy" in out
    assert heavy(imported, NEVER + ("vmrt.hal.buffer_view", "vmrt.hal.element_types",
                                    "vmrt.tools.function_io",
                                    "vmrt.tools.executable_imports")) == []
