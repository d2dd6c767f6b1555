"""A native image closed untouched may be taken back as it is by the next
load of the same plugin at the same address.  Each check runs in a fresh
interpreter, so that the process's kept ranges are known (none)."""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile

import elfkit
from tests.elfkit.loader.reloc_oracle import relative_words

pytestmark = pytest.mark.skipif(elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
                                reason="native tests run on an x86_64 host")

ARCH = "x86_64"

_MAPS = """
def perms(addr):
    for line in open("/proc/self/maps"):
        span, p = line.split()[:2]
        lo, hi = (int(x, 16) for x in span.split("-"))
        if lo <= addr < hi:
            return p[:3]
    return None
"""


def _child(code: str, *args: str) -> object:
    r = subprocess.run([sys.executable, "-c", _MAPS + code, *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_reloads_after_close_look_like_fresh_loads(plugins):
    """Load and close the same plugin three times (the second and third
    loads take the closed range back as it was left): every load has the
    same bytes in every segment, its RELATIVE words are base + addend, and
    each segment's pages have its protections in the kernel's map, and
    none once closed."""
    path = plugins.path("standalone", ARCH)
    data = path.read_bytes()
    elf = ELFFile(io.BytesIO(data))
    loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD" and s["p_memsz"]]
    relro = [(s["p_vaddr"], s["p_vaddr"] + s["p_memsz"]) for s in elf.iter_segments()
             if s["p_type"] == "PT_GNU_RELRO"]
    segs = [(s["p_vaddr"], s["p_memsz"]) for s in loads]
    words = relative_words(data)
    assert words
    code = """
import json, sys, elfkit
data, segs, words = open(sys.argv[1], "rb").read(), json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = []
for _ in range(3):
    m = elfkit.load(data)
    out.append({"base": m.base,
                "bytes": [m.read(m.base + v, n).hex() for v, n in segs],
                "words": [int.from_bytes(m.read(m.base + p, w), "little") - m.base
                          for p, _a, w in words],
                "perms": [perms(m.base + v + n - 1) for v, n in segs]})
    m.close()
    out[-1]["closed"] = [perms(out[-1]["base"] + v + n - 1) for v, n in segs]
print(json.dumps(out))
"""
    states = _child(code, str(path), json.dumps(segs), json.dumps(words))
    assert isinstance(states, list) and len(states) == 3
    first = states[0]
    assert all(s == first for s in states), "a reload differs from the first load"
    assert first["words"] == [a for _p, a, _w in words]
    assert first["closed"] == ["---"] * len(segs)       # kept, but inaccessible
    for s, got in zip(loads, first["perms"]):
        last = s["p_vaddr"] + s["p_memsz"] - 1
        in_relro = any(a <= last < b for a, b in relro)
        want = ("r" + ("w" if s["p_flags"] & 2 and not in_relro else "-")
                + ("x" if s["p_flags"] & 1 else "-"))
        assert got == want, (hex(s["p_vaddr"]), got, want)


def test_a_released_image_comes_back_only_unchanged():
    """``release_image`` keeps a range that still holds the given bytes;
    ``reuse`` takes it back (that very bytes object, same address and size)
    inaccessible until protected, holding them.  A range changed before its
    release, or asked for with equal bytes of another object, is not given
    back: the next reservation of that size starts zero-filled."""
    code = """
import json
import elfkit
from elfkit.exec import create_machine
from elfkit.exec.base import PROT_READ, PROT_WRITE
from elfkit.errors import MemoryAccessError
m = create_machine(elfkit.arch.host(), "native")
size = 3 * 4096
content = bytes(range(256)) * (size // 256)
out = {}
base = m.reserve(size, 4096)
m.write(base, content)
m.protect(base, size, PROT_READ)
m.release_image(base, size, content)
out["other_object"] = m.reuse(base, size, bytes(bytearray(content)))
out["reused"] = m.reuse(base, size, content)
out["perms_kept"] = perms(base)
try:
    m.read(base, 1)
    out["readable_before_protect"] = True
except MemoryAccessError:
    out["readable_before_protect"] = False
m.protect(base, size, PROT_READ)
out["holds"] = m.read(base, size) == content
m.protect(base, size, PROT_READ | PROT_WRITE)
m.write(base + 5000, b"!")
m.release_image(base, size, content)
out["changed_reused"] = m.reuse(base, size, content)
again = m.reserve(size, 4096)
out["zeroed"] = m.read(again, size) == bytes(size)
m.close()
print(json.dumps(out))
"""
    out = _child(code)
    assert out == {"other_object": False, "reused": True, "perms_kept": "---",
                   "readable_before_protect": False, "holds": True, "changed_reused": False,
                   "zeroed": True}


def test_an_object_closed_untouched_is_taken_back_as_it_was():
    """A relocatable object's reload at the closed range takes it back with
    its bytes (nothing written again) and sets the protections; an object
    whose initialisers or callers changed its data is loaded afresh."""
    from tests.elfkit.loader.objects import build_object
    far = build_object("far_provider.c", ARCH)
    common = build_object("common_init.c", ARCH)
    code = """
import json, sys, elfkit
from elfkit.exec import native
writes = []
orig = native.NativeMachine.write
native.NativeMachine.write = lambda self, a, d: (writes.append(a), orig(self, a, d))[1]
far, common = (open(p, "rb").read() for p in sys.argv[1:3])
out = {"far": [], "common": []}
for _ in range(3):
    writes.clear()
    m = elfkit.load(far)
    lo, hi = m.address_range
    out["far"].append({"base": m.base, "writes": len(writes), "sum": m.call("host_add", 1, 2),
                       "image": m.read(lo, hi - lo).hex()[:4096], "perms": perms(lo)})
    m.close()
    out["far"][-1]["closed"] = perms(lo)
logged = []
for _ in range(3):
    m = elfkit.load(common, imports={"host_log": (logged.append, "void(i32)")})
    out["common"].append({"counter": m.call("get_common", restype="i32"),
                          "order": int.from_bytes(m.read(m.exports["init_order"], 4), "little")})
    m.call("set_common", 7)
    m.close()
print(json.dumps(out))
"""
    out = _child(code, str(far), str(common))
    assert isinstance(out, dict)
    first, *again = out["far"]
    assert first["sum"] == 1000003
    for s in again:
        assert (s["base"], s["sum"], s["image"], s["perms"]) == \
            (first["base"], first["sum"], first["image"], first["perms"])
        assert s["writes"] == 0                            # taken back as it was
    assert first["perms"] == "r-x" and first["closed"] == "---"
    # changed data (the initialisers ran, set_common wrote): each load starts afresh
    assert [c["counter"] for c in out["common"]] == [0, 0, 0]
    orders = [c["order"] for c in out["common"]]
    assert len(set(orders)) == 1 and orders[0] > 0     # not the last load's value run on
