"""Regenerate docs/profile.png: a headless-browser screenshot of the
committed profile docs/profile-trace.json (``vmrt run --profile``) in the
speedscope viewer, nothing drawn by hand.

    python docs/tools/screenshot_profile.py            # screenshot the committed trace
    python docs/tools/screenshot_profile.py --record   # first record the trace anew

``--record`` compiles tests/vmrt/hal/programs/task_matmul.mlir for aarch64
with ``iree-compile`` and runs its 256x256 ``@matmul`` emulated on the
local-task device with three threads::

    vmrt run --device=local-task --task_topology_group_count=3 \\
        --module=matmul_aarch64.vmfb --function=matmul \\
        --input=256x256xf32=1 --input=256x256xf32=0.5 --profile=docs/profile-trace.json

The screenshot shows two speedscope panes, one above the other: the calling
thread (the context's creation, the invocation, its dispatch and the
workgroups it ran itself) and the first worker thread (the workgroups it
ran, at the same time).

Needs what CI does not: Chromium (``apt-get install chromium``) and npm (the
viewer is the ``speedscope`` npm package, unpacked into build/speedscope/).
The page is served from 127.0.0.1 for the screenshot; nothing else is
fetched.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "docs" / "profile-trace.json"
PNG = REPO / "docs" / "profile.png"
PROGRAM = REPO / "tests" / "vmrt" / "hal" / "programs" / "task_matmul.mlir"
SPEEDSCOPE = "speedscope@1.25.0"
WIDTH, PANE = 1400, 215

#: the page: two speedscope frames on the trace; the second shows the next
#: profile (thread), as pressing "n" in speedscope does
PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; background: #fff; }}
iframe {{ display: block; width: {width}px; height: {pane}px; border: 0; }}
</style></head><body>
<iframe id="caller" src="index.html#profileURL=trace.json&title={title}"></iframe>
<iframe id="worker" src="index.html#profileURL=trace.json&title={title}"></iframe>
<script>
const worker = document.getElementById("worker");
worker.addEventListener("load", () => setTimeout(() => {{
  for (const type of ["keydown", "keypress"])
    worker.contentWindow.dispatchEvent(new KeyboardEvent(type, {{key: "n"}}));
}}, 1500));
</script></body></html>
"""


def record(work: Path) -> None:
    """Compile the program for aarch64 and profile one emulated run into TRACE."""
    vmfb = work / "matmul_aarch64.vmfb"
    subprocess.run([_tool("iree-compile"), "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=llvm-cpu",
                    "--iree-llvmcpu-target-triple=aarch64-pc-linux-elf",
                    "--iree-llvmcpu-target-cpu=generic", str(PROGRAM), "-o", str(vmfb)],
                   check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "vmrt", "run", "--device=local-task",
                    "--task_topology_group_count=3", f"--module={vmfb}", "--function=matmul",
                    "--input=256x256xf32=1", "--input=256x256xf32=0.5", f"--profile={TRACE}"],
                   check=True, cwd=REPO, stdout=subprocess.DEVNULL)


def speedscope(work: Path) -> Path:
    """The speedscope viewer's files (``npm pack``, cached under build/)."""
    release = work / "package" / "dist" / "release"
    if not (release / "index.html").is_file():
        work.mkdir(parents=True, exist_ok=True)
        out = subprocess.run(["npm", "pack", SPEEDSCOPE, "--silent"], cwd=work, check=True,
                             capture_output=True, text=True).stdout.split()[-1]
        with tarfile.open(work / out) as tar:
            if hasattr(tarfile, "data_filter"):     # (Python >= 3.10.12 / 3.11.4)
                tar.extractall(work, filter="data")
            else:
                tar.extractall(work)
    return release


def screenshot(release: Path, out: Path) -> None:
    """Serve the viewer with TRACE and screenshot the page into ``out``."""
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        shutil.copytree(release, site)
        shutil.copy(TRACE, site / "trace.json")
        (site / "page.html").write_text(PAGE.format(
            width=WIDTH, pane=PANE, title="vmrt%20run%20--profile%20(emulated%20aarch64)"))
        handler = functools.partial(_QuietHandler, directory=str(site))
        with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
            threading.Thread(target=server.serve_forever, daemon=True).start()
            url = f"http://127.0.0.1:{server.server_address[1]}/page.html"
            subprocess.run([_tool("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", f"--window-size={WIDTH},{2 * PANE}",
                            "--virtual-time-budget=10000", f"--user-data-dir={tmp}/profile",
                            f"--screenshot={out}", url],
                           check=True, capture_output=True, timeout=300)
            server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        sys.exit(f"screenshot_profile: {name} is not installed")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true",
                        help="record docs/profile-trace.json anew first")
    parser.add_argument("--output", type=Path, default=PNG)
    args = parser.parse_args()
    work = REPO / "build" / "profile_screenshot"
    work.mkdir(parents=True, exist_ok=True)
    if args.record:
        record(work)
    json.loads(TRACE.read_text())      # (a readable trace, or stop here)
    screenshot(speedscope(REPO / "build" / "speedscope"), args.output)
    print(f"wrote {args.output} ({args.output.stat().st_size} bytes) from "
          f"{TRACE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
