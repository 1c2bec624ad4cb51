"""Read or write a file someone else may have planted: a plain file only, never past a cap.

A student's copy, or a folder a sandboxed check could write, may hold a symbolic link
(to the teacher's package, to ``/dev/zero``), a FIFO (an ``open`` that never returns),
a device or a huge file. Every file the grader or the gradebook reads from such
places, or writes into them, goes through here:

    read    lstat first (a link is never followed), then open with O_NOFOLLOW |
            O_NONBLOCK (a FIFO swapped in after the lstat does not block), then
            fstat: a plain file of at most ``cap`` bytes, read at most cap + 1
            bytes, or ``NotPlain``.
    write   a new file: O_CREAT | O_EXCL | O_NOFOLLOW (whatever is already there,
            a link included, makes it fail: nothing is followed or truncated); or,
            with ``replace``, the same open on an existing path that must be a
            plain file of one link (never a link, FIFO, device or a hard link to
            someone's file), truncated only after the fstat; ``append`` the same
            open, written at the end (O_APPEND), nothing truncated.
    publish a new file under a random name, then renamed over ``name`` (a rename
            replaces the entry, never follows it): readers see all or nothing.

    odd = odd_entry(path, cap)            # None, or why: "symbolic link", "FIFO", ...
    data = read_plain(path, cap)          # bytes, or NotPlain(why)
    write_plain(path, data)               # a new plain file, or NotPlain / OSError
    append_plain(path, line)              # new, or added to a plain file of one link
    publish(folder, "dump.request", text) # all at once, never through what was there
    with create_plain(path) as log: ...   # a new plain file held open (a process's output)
    tail_of(log.fileno(), 3000)           # its last bytes, read through the fd we hold
"""
import os
import secrets
import stat

FILE_CAP = 8 * 2 ** 20          # bytes: no source file of a copy is near this


class NotPlain(OSError):
    """The path is a link, FIFO, device, socket or a file over the cap."""


def _kind(mode):
    for test, name in ((stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "special file"


def odd_entry(path, cap=FILE_CAP):
    """None for a plain file (at most cap bytes) or a real directory; else why not."""
    info = os.lstat(path)
    kind = _kind(info.st_mode)
    if kind is None and stat.S_ISREG(info.st_mode) and info.st_size > cap:
        kind = f"file over {cap // 2 ** 20} MiB"
    return kind


def read_plain(path, cap=FILE_CAP):
    """The bytes of a plain file of at most cap bytes, never following a link or waiting."""
    why = odd_entry(path, cap)
    if why is not None or os.path.isdir(path):
        raise NotPlain(f"{path}: {why or 'directory'}")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotPlain(f"{path}: {_kind(info.st_mode)}")
        chunks, left = [], cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 2 ** 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > cap:
        raise NotPlain(f"{path}: file over {cap // 2 ** 20} MiB")
    return data


NEW = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _why(path, default):
    """What is at path, for a message (never raises)."""
    try:
        return odd_entry(path) or default
    except OSError:
        return default


def _open_for_write(path, replace, append=False):
    """An fd open for writing on a plain file at path: new, or (``replace``, ``append``)
    an existing plain file of one link, truncated or written at its end; NotPlain for
    anything else."""
    flags = NEW | (os.O_APPEND if append else 0)
    try:
        return os.open(path, flags, 0o600)
    except FileExistsError:
        if not (replace or append):
            raise NotPlain(f"{path}: already there ({_why(path, 'file')})") from None
    except OSError as err:
        raise NotPlain(f"{path}: {err.strerror}") from None
    info = os.lstat(path)                       # a device is never even opened
    if _kind(info.st_mode) is not None:
        raise NotPlain(f"{path}: {_kind(info.st_mode)}")
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | (os.O_APPEND if append else 0))
    except OSError as err:                      # swapped for a link or a FIFO since
        raise NotPlain(f"{path}: {_why(path, err.strerror)}") from None
    info = os.fstat(fd)                         # what we opened, not what lstat saw
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise NotPlain(f"{path}: {_kind(info.st_mode) or 'hard link'}")
    if not append:
        os.ftruncate(fd, 0)
    return fd


def write_plain(path, data, replace=False):
    """Write bytes (or text, as UTF-8) to a NEW plain file at path; with ``replace`` an
    existing plain file is written over. A link, FIFO, device or hard link there is never
    opened through: NotPlain (an OSError)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    with os.fdopen(_open_for_write(path, replace), "wb") as f:
        f.write(data)


def append_plain(path, data):
    """Add bytes (or text, as UTF-8) at the end of the plain file at path (O_APPEND), made
    new if missing. A link, FIFO, device or hard link there is never opened through:
    NotPlain."""
    view = memoryview(data.encode("utf-8") if isinstance(data, str) else data)
    fd = _open_for_write(path, replace=False, append=True)
    try:
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def create_plain(path):
    """A new plain file at path, open for binary writing (O_EXCL | O_NOFOLLOW): the caller
    holds it, so what happens to the name later never changes which file it writes."""
    return os.fdopen(_open_for_write(path, replace=False), "wb")


def publish(folder, name, text):
    """``folder/name`` holds ``text`` at once: written to a new file of a random name,
    then renamed over name (rename replaces whatever entry was there, never follows it)."""
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(8)}")
    write_plain(tmp, text)
    try:
        os.replace(tmp, os.path.join(folder, name))
    except OSError:
        os.unlink(tmp)
        raise


def tail_of(fd, size):
    """The last ``size`` bytes of the file open at fd (read with pread: no seek, no path)."""
    end = os.fstat(fd).st_size
    start = max(0, end - size)
    return os.pread(fd, end - start, start)


def odd_entries(root, cap=FILE_CAP):
    """[(relative path, why)] for every link, FIFO, device or oversized file under root
    (root itself included, as "."); links are listed, never followed."""
    found = []
    why = odd_entry(root, cap)
    if why is not None:
        return [(".", why)]
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            full = os.path.join(here, name)
            try:
                why = odd_entry(full, cap)
            except OSError:
                continue
            if why is not None:
                found.append((os.path.relpath(full, root), why))
    return sorted(found)
