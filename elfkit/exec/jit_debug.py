"""GDB's JIT interface: natively loaded plugins show up in gdb.

GDB looks, in every library of the process, for a global
``__jit_debug_descriptor`` (a list of in-memory ELF "symfiles") and a
function ``__jit_debug_register_code`` it puts a breakpoint on; after
each change to the list the program calls that function and gdb reads the
entry named in the descriptor.  Python cannot define global C symbols, so
the first registration builds a small C library that defines both (and
links or unlinks an entry and tells gdb, in one call), with the host's C
compiler (``cc``) or the ``ziglang`` wheel, caches it
(``$ELFKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/elfkit``, else
``~/.cache/elfkit``; when that is not a private directory of the user,
``$TMPDIR/elfkit-UID`` or a fresh private one) and loads it with
``ctypes`` -- only a private regular file holding the bytes recorded at
build time (see :func:`helper_library`), never one someone planted; each
entry and its symfile live in one buffer Python keeps.  ``ELFKIT_GDB_JIT=0`` turns
registration off.  Without a compiler nothing is registered and
``available()`` says why.

A module's symfile is built and registered when a debugger can use it (see
:func:`at_load`): at load when a debugger watches the interface
(its breakpoint is on ``__jit_debug_register_code``) or ``ELFKIT_GDB_JIT=eager``;
else before the module's code first runs through its machine (a call, a
typed function, init; not through a typed function asked for with
``jit=False``, as vmrt's HAL asks for a library's query at load: its first
dispatch registers it), or when :func:`register_pending` is called.  The
machine keeps the others waiting (:func:`wait`).
"""
from __future__ import annotations

import ctypes
import os
import stat
import struct
import sys
import threading
import weakref
import zlib
from collections.abc import Iterator

from .._support import cachebound, codecache
from .._support.files import private_dir, private_temp_dir, read_private
from .cache import cache_dir
from .environ import getenv
from .symfile import cached_symfile

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

HELPER_SOURCE = b"""\
#include <stdint.h>
struct jit_code_entry {
  struct jit_code_entry *next_entry, *prev_entry;
  const char *symfile_addr;
  uint64_t symfile_size;
};
struct jit_descriptor {
  uint32_t version, action_flag;
  struct jit_code_entry *relevant_entry, *first_entry;
};
__attribute__((visibility("default"), used))
struct jit_descriptor __jit_debug_descriptor = {1, 0, 0, 0};
__attribute__((visibility("default"), noinline, used))
void __jit_debug_register_code(void) { __asm__ volatile("" ::: "memory"); }

static void tell(struct jit_code_entry *e, uint32_t action) {
  __jit_debug_descriptor.relevant_entry = e;
  __jit_debug_descriptor.action_flag = action;
  __jit_debug_register_code();
  __jit_debug_descriptor.action_flag = 0;
}
/* elfkit's side: link an entry first in the list, or unlink it; gdb is told */
__attribute__((visibility("default")))
void elfkit_jit_add(struct jit_code_entry *e) {
  e->prev_entry = 0;
  e->next_entry = __jit_debug_descriptor.first_entry;
  if (e->next_entry) e->next_entry->prev_entry = e;
  __jit_debug_descriptor.first_entry = e;
  tell(e, 1);
}
__attribute__((visibility("default")))
void elfkit_jit_remove(struct jit_code_entry *e) {
  if (e->prev_entry) e->prev_entry->next_entry = e->next_entry;
  else __jit_debug_descriptor.first_entry = e->next_entry;
  if (e->next_entry) e->next_entry->prev_entry = e->prev_entry;
  tell(e, 2);
}
"""

JIT_NOACTION, JIT_REGISTER_FN, JIT_UNREGISTER_FN = 0, 1, 2


class CodeEntry(ctypes.Structure):
    """``struct jit_code_entry``; the links are raw addresses (0 or None: NULL)."""

    _fields_ = [("next_entry", ctypes.c_void_p), ("prev_entry", ctypes.c_void_p),
                ("symfile_addr", ctypes.c_void_p), ("symfile_size", ctypes.c_uint64)]


class Descriptor(ctypes.Structure):
    """``struct jit_descriptor``; the entry pointers are raw addresses."""

    _fields_ = [("version", ctypes.c_uint32), ("action_flag", ctypes.c_uint32),
                ("relevant_entry", ctypes.c_void_p), ("first_entry", ctypes.c_void_p)]


#: a registration's buffer: its entry, then (16-byte aligned) the symfile
_ENTRY = struct.Struct("@PPPQ")
_HEADER = bytes((_ENTRY.size + 15) & ~15)


class Registration:
    """One symfile in gdb's list; ``unregister()`` takes it out."""

    def __init__(self, interface: JitInterface, symfile: bytes):
        self.interface = interface
        self.symfile = symfile
        self.buffer = ctypes.create_string_buffer(_HEADER + symfile)
        self.address = ctypes.addressof(self.buffer)
        _ENTRY.pack_into(self.buffer, 0, 0, 0, self.address + len(_HEADER), len(symfile))
        self.active = False

    def unregister(self) -> None:
        self.interface.remove(self)


#: unlinked registrations a JitInterface keeps for reuse (each symfile at
#: most SPARE_MAX_SIZE bytes)
SPARE_MAX = 8
SPARE_MAX_SIZE = 256 << 10


class JitInterface:
    """The process's descriptor and list (in the helper library, which
    links and unlinks entries and tells gdb; called holding the GIL)."""

    def __init__(self, lib: ctypes.PyDLL):
        self.lib = lib
        self.descriptor = Descriptor.in_dll(lib, "__jit_debug_descriptor")
        self.link, self.unlink = lib.elfkit_jit_add, lib.elfkit_jit_remove
        # the function a debugger puts its breakpoint on, and its first bytes
        # as built (read while no process traces this one; None until then)
        self.hook = ctypes.cast(getattr(lib, "__jit_debug_register_code"),
                                ctypes.c_void_p).value or 0
        self.pristine: bytes | None = None
        for f in (self.link, self.unlink):
            f.restype = None
            f.argtypes = (ctypes.c_void_p,)
        self.lock = threading.Lock()
        # unlinked registrations kept for the same symfile object (a reload
        # of a plugin at the same base gets the cached symfile again), so a
        # load does not build and fill a new buffer; at most SPARE_MAX
        self.spare: dict[int, tuple[bytes, Registration]] = {}
        # every linked registration, by address: its buffer is part of the
        # native list until it is unlinked, so it must outlive its module's
        # Python objects (a module collected without close() would free a
        # linked entry, and the next link writes into freed memory)
        self.linked: dict[int, Registration] = {}

    def add(self, symfile: bytes) -> Registration:
        with self.lock:
            kept = self.spare.pop(id(symfile), None)
            if kept is not None and kept[0] is symfile:
                reg = kept[1]
            else:
                reg = Registration(self, symfile)
            self.link(reg.address)
            reg.active = True
            self.linked[reg.address] = reg
        return reg

    def remove(self, reg: Registration) -> None:
        with self.lock:
            if reg.active:
                reg.active = False
                self.unlink(reg.address)
                self.linked.pop(reg.address, None)
                if len(self.spare) < SPARE_MAX and len(reg.symfile) <= SPARE_MAX_SIZE:
                    self.spare[id(reg.symfile)] = (reg.symfile, reg)

    def watched(self) -> bool:
        """Whether a debugger watches the list now: its breakpoint is on
        ``__jit_debug_register_code`` (a debugger inserts it while this
        process runs: gdb and lldb do), or, until the function's own bytes
        are known, the process is traced."""
        if self.pristine is not None:
            return ctypes.string_at(self.hook, len(self.pristine)) != self.pristine
        if tracer_pid():
            return True
        self.pristine = ctypes.string_at(self.hook, HOOK_BYTES)
        return False

    def entries(self) -> list[bytes]:
        """The symfiles in the list as gdb walks it (newest first)."""
        out = []
        with self.lock:
            p = self.descriptor.first_entry
            while p:
                e = CodeEntry.from_address(p)
                out.append(ctypes.string_at(e.symfile_addr, e.symfile_size))
                p = e.next_entry
        return out


#: bytes of ``__jit_debug_register_code`` compared: any software
#: breakpoint (x86 int3, AArch64 brk, RISC-V ebreak) changes one of them
HOOK_BYTES = 4


def tracer_pid() -> int:
    """The id of the process tracing this one (0: none, or unknown)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"TracerPid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


_state: dict[str, Any] = {}
_state_lock = threading.Lock()


#: values of ELFKIT_GDB_JIT that turn registration off
_OFF = ("0", "no", "false", "off")


def _setting() -> str:
    """``ELFKIT_GDB_JIT`` as it is compared ("" when unset)."""
    v = getenv("ELFKIT_GDB_JIT")
    return "" if v is None else v.strip().lower()


def enabled() -> bool:
    """Whether plugins are registered (``ELFKIT_GDB_JIT=0`` turns it off)."""
    return _setting() not in _OFF


def interface() -> JitInterface | None:
    """The process's JIT interface, building and loading the helper library
    on first use; None when it cannot be had (``available()`` says why)."""
    if "interface" in _state:       # set once, under the lock, never changed
        return _state["interface"]
    with _state_lock:
        if "interface" not in _state:
            try:        # "why" first: a thread that sees "interface" finds it too
                jit = JitInterface(ctypes.PyDLL(helper_library()))
                _state["why"] = ""
                _state["interface"] = jit
            except (OSError, RuntimeError, ValueError, AttributeError) as e:
                # _build reports compiler failures as RuntimeError; a library
                # without the symbols (ValueError, AttributeError) is refused too
                _state["why"] = str(e)
                _state["interface"] = None
        return _state["interface"]


def available() -> tuple[bool, str]:
    """(True, "") when plugins can be registered with gdb, else (False, why)."""
    if not enabled():
        return False, "ELFKIT_GDB_JIT turns registration off"
    ok = interface() is not None
    return ok, _state.get("why", "")


def at_load() -> bool | None:
    """None when registration is off (:func:`enabled`), else whether a module
    loaded now is registered at once (a debugger watches, or
    ``ELFKIT_GDB_JIT=eager``) rather than before its code first runs; when
    a debugger watches, the modules waiting are registered too."""
    v = _setting()
    if v in _OFF:
        return None
    return v == "eager" or _watched_now()


def _watched_now() -> bool:
    """Whether a debugger watches now (the modules waiting are then registered)."""
    jit = interface()
    if jit is None or not jit.watched():
        return False
    register_pending()
    return True


#: native machines holding modules not registered yet (each has
#: ``register_waiting()``, which registers them)
_waiting: weakref.WeakSet[Any] = weakref.WeakSet()


def wait(machine: Any) -> None:
    """Note that ``machine`` holds modules waiting for registration."""
    _waiting.add(machine)


def register_pending() -> int:
    """Register, now, every natively loaded module still waiting (each is
    otherwise registered before its code first runs); the number registered.
    Call it before attaching a debugger that should see modules whose code
    has not run yet, or set ``ELFKIT_GDB_JIT=eager``."""
    return sum(m.register_waiting() for m in list(_waiting))


def register(module: Any) -> Registration | None:
    """Put a loaded module's symfile in gdb's list (None when off or unavailable)."""
    if not enabled():
        return None
    jit = interface()
    if jit is None:
        return None
    return jit.add(cached_symfile(module))


# -- the helper library ----------------------------------------------------------

def _compilers() -> list[list[str]]:
    import importlib.util
    import shutil
    out = []
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        path = shutil.which(cc) if cc else None
        if path:
            out.append([path])
    if importlib.util.find_spec("ziglang") is not None:
        out.append([sys.executable, "-m", "ziglang", "cc"])
    return out


#: the largest helper library read (it is a few KiB)
HELPER_MAX_SIZE = 1 << 20


def helper_library() -> str:
    """The helper library's path, built at first use (raises RuntimeError
    naming every compiler tried when none could build it).

    It is loaded only from a directory owned by the current user and
    writable by nobody else, only when it is a regular file there (not a
    symbolic link), owned by the user, not writable by others, and holding
    exactly the bytes recorded when it was built (their length and checksum,
    kept beside it as ``jit-debug-KEY.sum`` through :mod:`elfkit._support.codecache`):
    a planted library never runs, and a damaged one (truncated, which would
    kill the process with SIGBUS when mapped; replaced; a directory) is
    built again."""
    key = f"{zlib.crc32(HELPER_SOURCE + os.uname().machine.encode()):08x}"
    name = f"jit-debug-{key}.so"
    for root in _cache_roots():
        lib = os.path.join(root, name)
        if _intact(root, name, key):
            return lib
        if _build(lib) and _intact(root, name, key):
            return lib
    raise RuntimeError("no private writable cache directory for the gdb JIT helper library")


def _sum_name(name: str) -> str:
    return name.removesuffix(".so") + ".sum"


def _intact(root: str, name: str, key: str) -> bool:
    """Whether ``root/name`` is the library built there, byte for byte."""
    data = read_private(root, name, HELPER_MAX_SIZE, cachebound.touch)
    if data is None:
        return False
    kept = codecache.load(root, _sum_name(name), key.encode())
    return kept == (len(data), codecache.checksum(data))


def _cache_roots() -> Iterator[str]:
    """The cache directory, then ``$TMPDIR/elfkit-UID``; each only when it is
    (or can be made) a private directory of the current user.  When the
    second is not (another user made it, or it is open to others), a fresh
    private directory (removed at exit) is used instead."""
    root = cache_dir()
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
    except (OSError, ValueError):
        pass
    if private_dir(root):
        yield root
    if "tmp" not in _state:
        tmp, fresh = private_temp_dir(f"elfkit-{os.getuid()}")
        if fresh:
            import atexit
            import shutil
            atexit.register(shutil.rmtree, tmp, True)
        _state["tmp"] = tmp
    yield _state["tmp"]


def _build(lib: str) -> bool:
    """Compile the helper library into ``lib`` (replacing whatever damaged
    entry is there) and record its length and checksum beside it; False
    when ``lib``'s directory cannot be written."""
    # the compiler's plumbing is imported here: most processes find the library built
    import subprocess
    import tempfile
    errors = []
    root = os.path.dirname(lib)
    try:
        tmp_dir = tempfile.TemporaryDirectory(dir=root)
    except OSError:
        return False
    with tmp_dir as tmp:
        src = os.path.join(tmp, "jit_debug.c")
        with open(src, "wb") as fh:
            fh.write(HELPER_SOURCE)
        out = os.path.join(tmp, "jit_debug.so")
        for cc in _compilers():
            cmd = [*cc, "-shared", "-fPIC", "-O1", "-nostdlib", "-o", str(out), str(src)]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            except (OSError, subprocess.SubprocessError) as e:
                errors.append(f"{' '.join(cc)}: {e}")
                continue
            if r.returncode == 0 and os.path.isfile(out):
                with open(out, "rb") as fh:
                    data = fh.read()
                os.chmod(out, 0o755)
                name = os.path.basename(lib)
                key = name.removeprefix("jit-debug-").removesuffix(".so")
                codecache.store(root, _sum_name(name), key.encode(),
                                (len(data), codecache.checksum(data)))
                _clear(lib)
                try:
                    os.replace(out, lib)           # atomic: other processes see all or nothing
                except OSError:
                    return False
                return True
            errors.append(f"{' '.join(cc)}: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
    raise RuntimeError("cannot build the gdb JIT helper library: "
                       + ("; ".join(errors) or "no C compiler (cc, gcc, clang, ziglang) found"))


def _clear(path: str) -> None:
    """Remove a damaged entry that ``os.replace`` cannot replace (a directory)."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            import shutil
            shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass
