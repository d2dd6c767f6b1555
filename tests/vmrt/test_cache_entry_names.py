"""Every file elfkit and vmrt write to their caches is an entry the size
bound counts and may prune (``cachebound.ENTRY``): a kind of entry whose name
the pattern missed would grow without bound (a module's compiled functions,
``<key>-code.vmtc``, did until the pattern named them)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from elfkit._support import cachebound
from tests.vmrt.iree_tools import REPO


def test_every_cache_file_is_an_entry_the_bound_counts(iree, tmp_path):
    vmfb = iree.compile("mlp").vmfb
    caches = {"ELFKIT_CACHE_DIR": tmp_path / "elfkit", "VMRT_CACHE_DIR": tmp_path / "vmrt"}
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NO_CACHE")}
    env.update({k: str(v) for k, v in caches.items()}, PYTHONPATH=str(REPO),
               ELFKIT_GDB_JIT="eager")
    cmd = [sys.executable, "-m", "vmrt", "run", f"--module={vmfb}", "--function=mlp",
           "--input=1x16xf32=1", "--input=16x8xf32=0.5", "--input=1x8xf32=2"]
    for _ in range(2):          # the first run translates, the second keeps compiled code
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert "1x8xf32=[10 10 10 10 10 10 10 10]" in out.stdout     # 16 * 0.5 + 2
    names = sorted(n for d in caches.values() for n in os.listdir(d))
    strays = [n for n in names if not re.fullmatch(cachebound.ENTRY, n) and n != cachebound.NOTE]
    assert strays == [], f"cache files the size bound never counts: {strays}"
    # the kinds this run writes are all there (else the check above proves little)
    for kind in (r"[0-9a-f]+\.vmtc", r"[0-9a-f]+-code\.vmtc", r"[0-9a-f]+-src\.vmtc",
                 r"dwarf-moves-.*\.bin", r"entry-points-.*\.bin"):
        assert any(re.fullmatch(kind, n) for n in names), (kind, names)
