"""Standalone dispatch repros (``vmrt run --dump_dispatches=DIR[,GLOB]``).

Every dispatch (or every one whose export name matches the shell pattern
GLOB) is written to ``DIR/NNNN_EXPORT/`` (NNNN: its ordinal in the program):

* ``executable.so``: the dispatch library as loaded (ELF or FatELF);
* ``pluginK_NAME``: the embedded executable plugins it was loaded with;
* ``bindingK.npy`` / ``expectedK.npy``: each binding before / after the
  dispatch (element type from the export name, else bytes); bindings that
  share a buffer are ``bufferJ.npy`` byte ranges instead, so they share
  memory in the replay too;
* ``dispatch.json``: export, workgroup count and size, constants, CPU;
* ``replay.sh``: runs ``vmrt executable dispatch`` on those files with
  ``--expected_output`` and exits 0 when the outputs match (``VMRT`` picks
  the command, default ``vmrt``).

A folder appears whole or not at all (written to a temporary name, then
renamed); one of an earlier run with the same name stays whole until it is
swapped with the new one (``elfkit.support.replace_dir``).
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import tempfile
import urllib.parse
from collections.abc import Callable
from typing import Any

from elfkit.support import replace_dir

from ..errors import StatusCode, UsageError, os_error
from ..hal.dispatch_observer import ObservedDispatch
from ..hal.element_types import export_element_type
from .binding_diff import typed


def parse_dump_spec(text: str) -> tuple[str, str | None]:
    """``DIR[,GLOB]`` (split at the last comma) as (dir, glob or None)."""
    directory, comma, pattern = text.rpartition(",")
    if not comma:
        directory, pattern = text, ""
    if not directory:
        raise UsageError(f"--dump_dispatches='{text}': expected DIR[,GLOB]")
    return directory, pattern or None


def _plugin_files(exe: Any) -> list[tuple[str, bytes, dict[str, str]]]:
    """(file name, bytes, params) of the embedded plugins ``exe`` was loaded
    with, oldest first."""
    mgr = getattr(exe, "plugins", None)
    out = []
    for k, p in enumerate(getattr(mgr, "plugins", None) or []):
        data = getattr(p, "data", None)
        if isinstance(data, bytes):
            base = re.sub(r"[^\w.-]", "_", os.path.basename(str(getattr(p, "source", ""))))
            out.append((f"plugin{k}_{base or 'plugin.sos'}", data,
                        dict(getattr(p, "params", {}) or {})))
    return out


class DispatchDumper:
    """The ``--dump_dispatches`` observer: runs each dispatch through
    ``inner`` (default: as usual) and writes the matching ones."""

    def __init__(self, directory: str, pattern: str | None = None,
                 inner: Callable[[ObservedDispatch], None] | None = None,
                 element_type: str | None = None):
        self.directory = directory
        self.pattern = pattern
        self.inner = inner
        self.element_type = element_type
        self.count = 0
        self.written: list[str] = []
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise UsageError(f"--dump_dispatches: cannot create directory '{directory}': "
                             f"{e.strerror or e}", StatusCode.INVALID_ARGUMENT) from None

    def __call__(self, obs: ObservedDispatch) -> None:
        ordinal = self.count
        self.count += 1
        exe_name, export = obs.names()
        wanted = (self.pattern is None or fnmatch.fnmatchcase(export, self.pattern)) and \
            isinstance(getattr(obs.command.executable.exe, "data", None), bytes)
        before = [obs.binding(i).copy() for i in range(len(obs.ranges))] if wanted else []
        if self.inner is None:
            obs.run()
        else:
            self.inner(obs)
        if wanted:
            after = [obs.binding(i) for i in range(len(obs.ranges))]
            self.write(ordinal, obs, export, before, after)

    def write(self, ordinal: int, obs: ObservedDispatch, export: str, before: list[Any],
              after: list[Any]) -> str:
        """Write one dispatch's folder; returns its path."""
        import numpy as np
        cmd = obs.command
        exe = cmd.executable.exe
        name = f"{ordinal:04d}_{re.sub(r'[^A-Za-z0-9_.-]', '_', export)}"
        final = os.path.join(self.directory, name)
        if os.path.lexists(final) and not os.path.isdir(final) or os.path.islink(final):
            raise UsageError(f"--dump_dispatches: cannot write the folder '{final}': something "
                             "that is not a folder has its name", StatusCode.ALREADY_EXISTS)
        try:
            tmp = tempfile.mkdtemp(prefix=f".{name}.", dir=self.directory)
        except OSError as e:
            raise os_error(e, f"--dump_dispatches: cannot write in '{self.directory}'") from None
        try:
            with open(os.path.join(tmp, "executable.so"), "wb") as f:
                f.write(exe.data)
            plugins = _plugin_files(exe)
            for fname, data, _params in plugins:
                with open(os.path.join(tmp, fname), "wb") as f:
                    f.write(data)
            etype = export_element_type(export, self.element_type)
            sources = _binding_sources(obs, before, etype, tmp)
            for i, (b, a) in enumerate(zip(before, after)):
                if not b.size:          # an empty binding: the dispatch gets 64 unused bytes
                    b = a = np.zeros(64, np.uint8)
                if sources[i] == f"binding{i}.npy":
                    np.save(os.path.join(tmp, sources[i]), typed(b, etype)[0])
                np.save(os.path.join(tmp, f"expected{i}.npy"), typed(a, etype)[0])
            info = self.info(ordinal, obs, export, etype)
            info["bindings"] = sources
            with open(os.path.join(tmp, "dispatch.json"), "w") as f:
                json.dump(info, f, indent=2)
                f.write("\n")
            script = os.path.join(tmp, "replay.sh")
            with open(script, "w") as f:
                f.write(_replay_script(info, len(before), plugins))
            os.chmod(script, 0o755)
            os.chmod(tmp, 0o755)
            replace_dir(tmp, final)     # a folder of an earlier run is swapped out whole
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise os_error(e, f"--dump_dispatches: cannot write the folder '{final}'") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.written.append(final)
        return final

    @staticmethod
    def info(ordinal: int, obs: ObservedDispatch, export: str,
             etype: str | None) -> dict[str, Any]:
        cmd = obs.command
        exe = cmd.executable.exe
        try:
            size = list(exe.export(cmd.ordinal).workgroup_size)
        except (AttributeError, LookupError):
            size = None
        return {"dispatch": ordinal, "executable": obs.names()[0], "export": export,
                "export_ordinal": cmd.ordinal, "workgroup_count": list(cmd.workgroups),
                "workgroup_size": size, "constants": [c & 0xFFFFFFFF for c in cmd.constants],
                "arch": getattr(getattr(exe, "arch", None), "name", None),
                "element_type": etype,
                "binding_sizes": [n for _b, _s, n in obs.ranges]}


def _binding_sources(obs: ObservedDispatch, before: list[Any], etype: str | None,
                     folder: str) -> list[str]:
    """Per binding, the file its replay reads: ``bindingK.npy`` (written by
    the caller), or for bindings that share a buffer ``bufferJ.npy[START:END]``
    (written here: the span of the buffer they cover, so they alias again)."""
    import numpy as np
    groups: dict[int, list[int]] = {}
    for i, (buf, _s, _n) in enumerate(obs.ranges):
        groups.setdefault(id(buf), []).append(i)
    sources = [f"binding{i}.npy" for i in range(len(before))]
    for j, members in enumerate(m for m in groups.values() if len(m) > 1):
        lo = min(obs.ranges[i][1] for i in members)
        hi = max(obs.ranges[i][1] + obs.ranges[i][2] for i in members)
        span = np.zeros(hi - lo, np.uint8)
        for i in members:
            start, n = obs.ranges[i][1] - lo, obs.ranges[i][2]
            span[start:start + n] = before[i]
            sources[i] = f"buffer{j}.npy[{start}:{start + n}]"
        np.save(os.path.join(folder, f"buffer{j}.npy"), typed(span, etype)[0])
    return sources


def _replay_script(info: dict[str, Any], bindings: int,
                   plugins: list[tuple[str, bytes, dict[str, str]]]) -> str:
    args = ["executable", "dispatch", "executable.so", f"--export={info['export']}",
            "--workgroup_count=" + ",".join(str(x) for x in info["workgroup_count"])]
    for fname, _data, params in plugins:
        query = urllib.parse.urlencode(params)
        args.append(f"--executable_plugin={fname}" + (f"?{query}" if query else ""))
    args += [f"--binding=@{source}" for source in info["bindings"]]
    args += [f"--constant={hex(c)}" for c in info["constants"]]
    args += [f"--expected_output=@expected{i}.npy" for i in range(bindings)]
    x, y, z = info["workgroup_count"]
    return ("#!/bin/sh\n"
            f"# Replays dispatch {info['dispatch']} ({x}x{y}x{z} workgroups of export "
            f"'{info['export']}' of executable '{info['executable']}') and checks every\n"
            "# binding against what the program computed; exit 0 when all match.\n"
            "# VMRT names the vmrt command (default: vmrt), e.g. VMRT='python -m vmrt'.\n"
            'cd "$(dirname "$0")" || exit 1\n'
            "exec ${VMRT:-vmrt} " + " \\\n  ".join(shlex.quote(a) for a in args) + "\n")
