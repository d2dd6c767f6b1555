"""The ``vmrt`` command: ``vmrt run`` behaves like ``iree-run-module``."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Iterable, Sequence, TextIO

from ..errors import StatusCode, UsageError, VmError

USAGE = """\
usage: vmrt [--help] [--version] run [FLAGS]
       vmrt executable (list|dispatch) ...   (dispatch libraries; see 'vmrt executable --help')

Run a function of a VM bytecode module (.vmfb), like iree-run-module.

vmrt run flags (--flag=value or --flag value; list flags may repeat):
  --module=PATH[@FN][?K=V&...]  module to load (repeatable; registration order,
                                the last one is the main module).  PATH is a
                                .vmfb file, '-' for stdin, or FILE.py@create_fn
                                (a Python module factory called with
                                (instance, params))
  --function=NAME               export of the main module to run (optional when
                                it has exactly one public export)
  --input=VALUE                 one argument per flag: 5, 1.5, 4xf32=1 2 3 4,
                                2x2xi32=[1 2][3 4], @file.npy, (null)
  --output=TARGET               per result: '' discard, '-' print bare,
                                @file.npy / +file.npy write / append
  --output_max_element_count=N  elide printed tensors after N elements (1024)
  --expected_output=VALUE       compare each result with VALUE (same grammar as
                                --input; '(ignored)' skips one); prints
                                [SUCCESS]/[FAILED] lines, exit 1 on mismatch
  --expected_f32_threshold=T    absolute tolerance for f32 (0.0001); also
                                --expected_f16_threshold, --expected_f64_threshold
  --device=URI                  HAL device: local-sync or local-task (both run
                                synchronously); programs compiled for the local
                                device with llvm-cpu need one (default local-task)
  --executable_plugin=PATH      executable plugin (.sos/.so, embedded:/system:
                                prefixes, ?k=v params); repeatable, the last
                                one is asked first
  --module_mode=preload|mmap    accepted for compatibility
  --instruction_budget=N        stop after N VM instructions (vmrt extension)
  --timeout=SECONDS             stop after SECONDS of wall time (vmrt extension)
  --flagfile=PATH               read more flags from PATH, one per line
  --trace_execution, --print_statistics   accepted, ignored
  --help                        show this help
"""

_LIST_FLAGS = {"module", "input", "output", "device", "executable_plugin", "expected_output"}
_VALUE_FLAGS = {"function", "output_max_element_count", "module_mode", "instruction_budget",
                "timeout", "flagfile", "expected_f16_threshold", "expected_f32_threshold",
                "expected_f64_threshold"}
_BOOL_FLAGS = {"help", "trace_execution", "print_statistics", "version"}


@dataclass
class RunFlags:
    lists: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in _LIST_FLAGS})
    values: dict[str, str] = field(default_factory=dict)
    bools: set[str] = field(default_factory=set)


def parse_flags(argv: Sequence[str], flags: RunFlags | None = None, depth: int = 0) -> RunFlags:
    flags = flags or RunFlags()
    i = 0
    argv = list(argv)
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("--"):
            raise UsageError(f"unexpected argument '{arg}' (flags are --name=value)")
        name, eq, value = arg[2:].partition("=")
        name = name.strip()
        if name in _BOOL_FLAGS:
            if eq and value.strip().lower() in ("false", "0"):
                flags.bools.discard(name)
            else:
                flags.bools.add(name)
            continue
        if name not in _LIST_FLAGS and name not in _VALUE_FLAGS:
            raise UsageError(f"flag '{name}' not recognized")
        if not eq:
            if i >= len(argv) or argv[i].startswith("--"):
                raise UsageError(f"flag '{name}' needs a value (--{name}=VALUE)")
            value = argv[i]
            i += 1
        if name == "flagfile":
            if depth > 8:
                raise UsageError("--flagfile nesting too deep")
            try:
                with open(value.strip(), encoding="utf-8") as fh:
                    lines = [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
            except OSError as e:
                raise UsageError(f"cannot read flagfile '{value}': {e.strerror}") from None
            parse_flags(lines, flags, depth + 1)
        elif name in _LIST_FLAGS:
            flags.lists[name].append(value.strip() if name != "input" else value)
        else:
            flags.values[name] = value.strip()
    return flags


def _int_flag(flags: RunFlags, name: str, default: int | None) -> int | None:
    v = flags.values.get(name)
    if v is None:
        return default
    try:
        return int(v, 0)
    except ValueError:
        raise UsageError(f"flag --{name} expects an integer, got '{v}'") from None


def _pick_function(main, name: str | None) -> str:
    if name:
        return name
    candidates = [e.name for e in main.exports
                  if not e.name.startswith("__") and "$" not in e.name]
    if not candidates:
        raise UsageError("no exported functions found in module; at least one must be present")
    if len(candidates) > 1:
        raise UsageError("more than one exported function present; --function= must be "
                         "specified explicitly")
    return candidates[0]


def run(flags: RunFlags, stdout: TextIO, providers: Iterable = (), stdin=None) -> int:
    """Execute ``vmrt run``; raises VmError on failure, returns the exit code."""
    from ..vm.context import Context
    from ..vm.instance import Instance
    from .function_io import format_results, parse_inputs, write_output
    from .module_specs import (RunOptions, all_providers, load_module_spec, parse_module_spec,
                          resolve_modules)
    from ..hal.buffer_view import BUFFER_VIEW_TYPE

    options = RunOptions(devices=flags.lists["device"],
                         executable_plugins=flags.lists["executable_plugin"])
    mode = flags.values.get("module_mode", "preload")
    if mode not in ("preload", "mmap"):
        raise UsageError(f"unrecognized --module_mode= value '{mode}'")
    max_elements = _int_flag(flags, "output_max_element_count", 1024)
    budget = _int_flag(flags, "instruction_budget", None)
    timeout = None
    if "timeout" in flags.values:
        try:
            timeout = float(flags.values["timeout"])
        except ValueError:
            raise UsageError(f"flag --timeout expects seconds, got "
                             f"'{flags.values['timeout']}'") from None
    thresholds = {}
    for kind, default in (("f16", 0.001), ("f32", 0.0001), ("f64", 0.0001)):
        text = flags.values.get(f"expected_{kind}_threshold")
        try:
            thresholds[kind] = default if text is None else float(text)
        except ValueError:
            raise UsageError(f"flag --expected_{kind}_threshold expects a number, got "
                             f"'{text}'") from None
    specs = flags.lists["module"]
    if not specs:
        raise UsageError("no --module= specified")

    instance = Instance()
    instance.register_type(BUFFER_VIEW_TYPE)
    table = all_providers(providers)
    try:
        try:
            user = []
            registered: set[str] = set()
            for s in specs:
                spec = parse_module_spec(s)
                if spec.kind in ("bytecode", "stdin"):
                    # like IREE's REGISTER_TYPES hook, but skipping providers whose
                    # module was given explicitly (its own types take precedence)
                    given = {m.name for m in user}
                    for pname, prov in table.items():
                        if pname not in given and pname not in registered:
                            prov.register_types(instance)
                            registered.add(pname)
                user.append(load_module_spec(instance, spec, stdin))
        except VmError as e:
            raise e.annotate("loading modules and dependencies")
        main = user[-1]
        try:
            modules = resolve_modules(instance, user, table, options)
        except VmError as e:
            raise e.annotate("creating VM context")
        try:
            ctx = Context(instance, modules, budget=budget, timeout=timeout)
        except VmError as e:
            raise e.annotate("creating VM context")
        name = _pick_function(main, flags.values.get("function"))
        fn = main.lookup_function(name)
        if fn is None:
            raise VmError(f"no function `{name}` exported by module", StatusCode.NOT_FOUND) \
                .annotate(f"looking up function '{name}'")
    except VmError as e:
        raise e.annotate("creating run context")
    with ctx:
        decl = main.function_attrs(name).get("iree.abi.declaration")
        try:
            args = parse_inputs(flags.lists["input"], fn.cconv)
        except VmError as e:
            if decl:
                e.annotate(f"`{decl}`")
            raise
        stdout.write(f"EXEC @{name}\n")
        stdout.flush()
        try:
            results = ctx.invoke(fn, args)
        except VmError as e:
            e.annotate(f"invoking function '{name}'")
            if decl:
                e.annotate(f"`{decl}`")
            raise
        outputs = flags.lists["output"]
        if flags.lists["expected_output"]:
            from .function_io import check_expected
            try:
                ok, text = check_expected(results, fn.cconv, flags.lists["expected_output"],
                                          thresholds, max_elements)
            except VmError as e:
                if decl:
                    e.annotate(f"`{decl}`")
                raise
            stdout.write(text)
            stdout.flush()
            return 0 if ok else 1
        if outputs:
            if len(outputs) != len(results):
                raise VmError(f"{len(outputs)} outputs specified but the provided variant list "
                              f"only has {len(results)} elements", StatusCode.OUT_OF_RANGE)
            from ..vm.module import cconv_fragments
            codes = cconv_fragments(fn.cconv)[1]
            for target, v, c in zip(outputs, results, codes):
                write_output(target, v, c, max_elements, stdout)
        else:
            stdout.write(format_results(results, fn.cconv, max_elements))
    stdout.flush()
    return 0


def main(argv: Sequence[str] | None = None, *, providers: Iterable = (),
         stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Entry point of the ``vmrt`` console script.

    ``providers`` adds module providers (objects with ``name``,
    ``register_types(instance)`` and ``create(instance, options)``), e.g. a
    HAL module; they override built-in and entry-point providers of the same
    name.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if not argv or argv[0] in ("--help", "-h", "help"):
        stdout.write(USAGE)
        return 0 if argv else 1
    if argv[0] == "--version":
        from elfkit._version import __version__
        stdout.write(f"vmrt {__version__}\n")
        return 0
    if argv[0] == "executable":
        from .executable import main as executable_main
        return executable_main(argv[1:], stdout=stdout, stderr=stderr)
    if argv[0] != "run":
        stderr.write(f"INVALID_ARGUMENT; unknown command '{argv[0]}' (try 'vmrt --help')\n")
        return 1
    try:
        flags = parse_flags(argv[1:])
        if "help" in flags.bools:
            stdout.write(USAGE)
            return 0
        if "version" in flags.bools:
            from elfkit._version import __version__
            stdout.write(f"vmrt {__version__}\n")
            return 0
        return run(flags, stdout, providers)
    except BaseException as e:
        return report_error(e, stdout, stderr)


def report_error(e: BaseException, stdout: TextIO, stderr: TextIO) -> int:
    """One line on stderr in IREE's ``CODE; message`` style and exit code 1;
    never a traceback on the command line (shared by the vmrt sub-commands)."""
    if isinstance(e, (SystemExit, GeneratorExit)):
        raise e
    if isinstance(e, VmError):
        stdout.flush()
        stderr.write(" ".join(str(e).splitlines()) + "\n")
    elif isinstance(e, KeyboardInterrupt):
        stderr.write("CANCELLED; interrupted\n")
    elif isinstance(e, RecursionError):
        stderr.write("RESOURCE_EXHAUSTED; call stack exhausted\n")
    else:
        stderr.write(f"INTERNAL; {type(e).__name__}: {e}\n")
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
