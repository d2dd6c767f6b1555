"""Opening files safely: inputs must be regular files (a FIFO would block
forever, a device has no end); outputs that are special files (``/dev/null``,
a FIFO) are written as streams, never replaced by a regular file.

``open_regular`` gives a descriptor of a regular file to read;
``open_special_output`` one for writing to a special file; ``replace_file``
puts a finished temporary file in place of an output atomically;
``clone_range`` and ``offloads_copies`` choose how file data is copied.  Used by
``elfkit.fatelf`` (whose ``read_input`` adds the bounded read) and by
vmrt, which needs these without importing the FatELF code.
"""
from __future__ import annotations

import os
import stat as _stat

from ..errors import ElfkitError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["CACHE_MAX_SIZE", "clone_range", "exclusive_dir", "file_kind", "filesystem_type",
           "offloads_copies", "open_regular", "open_special_output", "private_dir",
           "private_temp_dir", "read_private", "replace_dir", "replace_file", "user_cache_dir",
           "write_private"]

_RENAME_EXCHANGE = 2     # renameat2's flag (linux/fs.h)
_AT_FDCWD = -100
_renameat2: list[Any] = []    # [libc renameat2 or None], looked up on first use
_FICLONERANGE = 0x4020940D   # _IOW(0x94, 13, struct file_clone_range) (linux/fs.h)
_CLONE_BLOCK = 4096          # clone offsets must be multiples of the filesystem block
# Filesystems whose copy_file_range can copy without moving the data through
# this machine (NFS 4.2 / SMB server-side copy, Ceph object copy, a FUSE daemon).
_OFFLOADING = frozenset({"nfs", "nfs4", "cifs", "smb3", "ceph"})

_KINDS = ((_stat.S_ISDIR, "a directory"), (_stat.S_ISFIFO, "a FIFO (named pipe)"),
          (_stat.S_ISCHR, "a character device"), (_stat.S_ISBLK, "a block device"),
          (_stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """``"a FIFO (named pipe)"``, ``"a character device"`` ... for a st_mode."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if _stat.S_ISREG(mode) else "not a regular file"


def open_regular(path: str | os.PathLike[str], what: str = "input") -> tuple[int, int]:
    """``(fd, size)`` of a regular file opened for reading.

    Opened non-blocking (opening a FIFO would otherwise wait for a writer),
    then refused unless it is a regular file: ElfkitError naming the path
    and what it is.  The caller closes ``fd``."""
    name = os.fspath(path)
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
                 | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            raise ElfkitError(f"{name}: is {file_kind(st.st_mode)}; the {what} must be a "
                              f"regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return fd, st.st_size
    except BaseException:
        os.close(fd)
        raise


def open_special_output(path: str) -> int | None:
    """A descriptor for writing to ``path`` when it is an existing special
    file (a character device such as /dev/null, or a FIFO with a reader),
    which must be written as a stream rather than replaced; None when
    ``path`` is a regular file or does not exist.  A FIFO without a reader,
    a block device or a socket is refused (ElfkitError)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    mode = st.st_mode
    if _stat.S_ISREG(mode):
        return None
    if _stat.S_ISDIR(mode):
        raise ElfkitError(f"{path}: is a directory")
    if not (_stat.S_ISCHR(mode) or _stat.S_ISFIFO(mode)):
        raise ElfkitError(f"{path}: is {file_kind(mode)}; refusing to write to it")
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        import errno  # only here: reading a file (fatelf list) does not need it
        if e.errno == errno.ENXIO:
            raise ElfkitError(f"{path}: is a FIFO with no reader; refusing to wait for one") \
                from None
        raise
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


def user_cache_dir(env_var: str, name: str) -> str:
    """A per-user cache directory: ``$env_var``, else ``$XDG_CACHE_HOME/name``,
    else ``~/.cache/name`` (a string: pathlib costs start-up time)."""
    env = os.environ.get(env_var)
    if env:
        return env
    xdg = os.environ.get("XDG_CACHE_HOME")
    return os.path.join(xdg, name) if xdg else os.path.join(
        os.path.expanduser("~"), ".cache", name)


def _private(st: os.stat_result) -> bool:
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


#: the default bound of a cache file's size (:func:`read_private`)
CACHE_MAX_SIZE = 64 << 20


def private_dir(directory: str) -> bool:
    """Whether ``directory`` is a directory owned by the current user and
    writable by nobody else (the rule every cache follows)."""
    try:
        st = os.stat(directory)
    except (OSError, ValueError):
        return False
    return _stat.S_ISDIR(st.st_mode) and _private(st)


def private_temp_dir(name: str) -> tuple[str, bool]:
    """``($TMPDIR/name, False)`` when that is, or can be made, a directory
    (not a symbolic link) of the current user that nobody else can enter
    (mode 0700); otherwise -- another user made it first, it is open to
    others, it is a file or a link someone planted -- ``(a fresh private
    directory made by mkdtemp, True)``, which the caller removes.  Nothing
    in a shared temporary directory is trusted unless this process's user
    made it private."""
    import tempfile  # only here: few callers need a temporary directory
    path = os.path.join(tempfile.gettempdir(), name)
    try:
        os.mkdir(path, 0o700)
    except OSError:
        pass
    if exclusive_dir(path):
        return path, False
    return tempfile.mkdtemp(prefix=f"{name}-"), True


def exclusive_dir(path: str) -> bool:
    """Whether ``path`` is a directory (not a symbolic link) of the current
    user that nobody else can enter (mode 0700)."""
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return False
    return _stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def read_private(directory: str, name: str, max_size: int = CACHE_MAX_SIZE,
                 touch: Callable[[int, float], None] | None = None) -> bytes | None:
    """The bytes of cache file ``directory/name``, or None when it is missing
    or unreadable, or when it or ``directory`` is not owned by the current
    user or is writable by anyone else (a cache is trusted only then).

    Never waits and never exhausts memory: the file is opened without
    following a symbolic link and without blocking (a FIFO planted there
    would wait for a writer forever), and anything but a regular file of at
    most ``max_size`` bytes (a device, a FIFO, a 64 GiB sparse file) is
    treated as missing.  ``touch(fd, mtime)`` is called on a file about to be
    read (a cache marks it used)."""
    if not private_dir(directory):
        return None
    try:
        fd = os.open(os.path.join(directory, name),
                     os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not (_stat.S_ISREG(st.st_mode) and _private(st)) or st.st_size > max_size:
            return None
        if touch is not None:
            touch(fd, st.st_mtime)
        chunks = []
        left = st.st_size + 1               # one more: a file that grew is refused
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= max_size and left > 0 else None
    except OSError:
        return None
    finally:
        os.close(fd)


def write_private(directory: str, name: str, data: bytes) -> bool:
    """Write cache file ``directory/name`` whole or not at all (a temporary
    file renamed over it; the directory made private if missing); whether it
    was written.  Nothing is written into a directory that is not private
    (:func:`private_dir`: another user's, or writable by others), where
    :func:`read_private` would never read it back.  Best effort: an I/O
    failure is silent, a cache is only a cache."""
    path = os.path.join(directory, name)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if not private_dir(directory):
            return False
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        return False
    return True


def _exchange(a: str, b: str) -> bool:
    """Swap the directory entries ``a`` and ``b`` atomically (Linux's
    ``renameat2(RENAME_EXCHANGE)``); False where that cannot be done."""
    if not _renameat2:
        try:
            import ctypes  # only here: most commands never replace an existing file
            _renameat2.append(ctypes.CDLL(None, use_errno=True).renameat2)
        except (AttributeError, OSError, ImportError):   # not glibc >= 2.28 / not Linux
            _renameat2.append(None)
    fn = _renameat2[0]
    return fn is not None and fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b),
                                 _RENAME_EXCHANGE) == 0


#: a new file smaller than this replaces an existing one by ``os.replace``:
#: flushing its data costs less than the swap's ctypes (start-up time)
SWAP_MIN_BYTES = 1 << 20


def replace_file(tmp: str, path: str) -> None:
    """Put the finished file ``tmp`` in place of ``path`` atomically (a reader
    sees the old file or the new one, never neither): ``os.replace``, except
    that an existing regular file is first swapped with a ``tmp`` of at least
    :data:`SWAP_MIN_BYTES` and then deleted.  The result is the same; the swap
    spares ext4 the flush of the new file's data that it forces on a rename
    over an existing file (``auto_da_alloc``), which made overwriting a
    256 MiB output take about twice as long as writing it fresh."""
    try:
        regular = _stat.S_ISREG(os.lstat(path).st_mode) and \
            os.lstat(tmp).st_size >= SWAP_MIN_BYTES
    except OSError:
        regular = False
    if regular and _exchange(tmp, path):
        try:
            os.unlink(tmp)                  # the old file, now under the temporary name
            return
        except OSError:                     # path changed kind meanwhile: undo the swap
            if not _exchange(tmp, path):
                raise
    os.replace(tmp, path)


def replace_dir(tmp: str, path: str) -> None:
    """Put the finished directory ``tmp`` in place of ``path`` (``tmp`` on the
    same filesystem).  An existing directory is swapped with ``tmp``
    atomically -- a reader sees the whole old tree or the whole new one, never
    a partly deleted one -- and then deleted under ``tmp``'s name.  Where the
    swap cannot be done it is deleted first (not atomic).  Anything but a
    directory in the way (a file, a symlink) is an ``OSError``."""
    try:
        is_dir = _stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        is_dir = False
    if is_dir:
        import shutil  # only here: most outputs are files
        if _exchange(tmp, path):
            shutil.rmtree(tmp, ignore_errors=True)      # the old tree, now under tmp's name
            return
        shutil.rmtree(path)
    os.replace(tmp, path)


def clone_range(src: int, offset: int, dst: int, count: int) -> int:
    """Share ``count`` bytes at ``offset`` of ``src`` into ``dst`` at its
    current position (a reflink: no data is copied) where the filesystem can
    (btrfs, XFS, bcachefs, NFS 4.2 with CLONE ...), and move ``dst``'s
    position past them.  Returns how many bytes were shared: all of them, a
    block-aligned prefix (the rest must then be copied), or 0 where cloning
    is impossible (ext4, tmpfs, two filesystems, a pipe, unaligned offsets);
    a refusal costs one or two system calls and changes nothing."""
    try:
        pos = os.lseek(dst, 0, os.SEEK_CUR)
        if offset % _CLONE_BLOCK or pos % _CLONE_BLOCK or count <= 0:
            return 0
        n = count if offset + count == os.fstat(src).st_size else count - count % _CLONE_BLOCK
        if n == 0:
            return 0
        import fcntl  # only here: only copies of file data need these (start-up time)
        import struct
        # struct file_clone_range {s64 src_fd; u64 src_offset, src_length, dest_offset}
        fcntl.ioctl(dst, _FICLONERANGE, struct.pack("=qQQQ", src, offset, n, pos))
        os.lseek(dst, pos + n, os.SEEK_SET)
        return n
    except (OSError, ImportError):
        return 0


def filesystem_type(fd: int) -> str:
    """The type of the filesystem holding descriptor ``fd`` as the kernel
    names it (``"ext4"``, ``"btrfs"``, ``"nfs4"``, ``"fuse.sshfs"`` ...): its
    mount id from /proc/self/fdinfo looked up in /proc/self/mountinfo (st_dev
    would not do: a btrfs file's device number is not its mount's); ``""``
    where that cannot be read (not Linux, a pipe).  Read afresh each time
    (~0.1 ms): a mount id is reused once its filesystem is unmounted."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii", errors="replace") as fh:
            mnt = next((line.split()[1] for line in fh if line.startswith("mnt_id:")), "")
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.split(" ", 1)[0] == mnt and " - " in line:
                    return line.split(" - ", 1)[1].split()[0]
    except (OSError, IndexError):
        pass
    return ""


def offloads_copies(fd: int) -> bool:
    """Whether ``copy_file_range`` into ``fd`` is worth its cost: only on a
    network or FUSE filesystem, where it can copy on the server instead of
    pulling the data here and pushing it back.  On a local filesystem that
    could not clone (see :func:`clone_range`) it is an in-kernel copy that
    was measured slower than a plain 1 MiB buffered copy (ext4, 256 MiB to a
    4096-aligned position: ~100 ms against ~70 ms)."""
    kind = filesystem_type(fd)
    return kind in _OFFLOADING or kind.startswith("fuse")
