"""Read a file someone else may have planted: a plain file only, never past a size cap.

A student's copy, or a folder a sandboxed check could write, may hold a symbolic link
(to the teacher's package, to ``/dev/zero``), a FIFO (an ``open`` that never returns)
or a huge file. Everything the grader reads from such places goes through here:

    lstat first (a link is never followed), then open with O_NOFOLLOW | O_NONBLOCK
    (a FIFO swapped in after the lstat does not block), then fstat: a plain file
    of at most ``cap`` bytes, read at most cap + 1 bytes, or ``NotPlain``.

    odd = odd_entry(path, cap)      # None, or why: "symbolic link", "FIFO", ...
    data = read_plain(path, cap)    # bytes, or NotPlain(why)
"""
import os
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
