"""Which mpiexec: the one that belongs to the MPI library mpi4py loads.

An mpiexec of another MPI (Open MPI's beside pip's MPICH, say) would start N
separate one-rank worlds: every rank rank 0, every number silently wrong. So the
candidates, in order (the one next to ``sys.executable``, where pip's mpich puts
it; the one next to mpi4py's configured compiler; then every one on PATH), count
only if their family (MPICH or Open MPI) is the library's, read without starting
MPI in this process. Open MPI also needs flags to run more ranks than cores, or
as root (``mpiexec_flags``).

    mpiexec = find_mpiexec()
    cmd = [mpiexec] + mpiexec_flags(mpiexec, 4) + ["-n", "4", ...]
"""
import functools
import os
import subprocess
import sys

from minimegatron.i18n import text_or_english as say
from minimegatron.runtime.threads import cores


def find_mpiexec():
    """Path of the mpiexec that belongs to the MPI library mpi4py loads.

    An mpiexec of another MPI (Open MPI's beside pip's MPICH, say) would start N
    separate one-rank worlds: every rank rank 0, every number silently wrong. So
    a candidate counts only if its family (MPICH or Open MPI) is the library's.
    """
    candidates = [os.path.join(os.path.dirname(sys.executable), "mpiexec")]
    try:
        import mpi4py
        mpicc = mpi4py.get_config().get("mpicc")
        if mpicc:
            candidates.append(os.path.join(os.path.dirname(mpicc), "mpiexec"))
    except ImportError:
        pass
    for folder in os.environ.get("PATH", "").split(os.pathsep):      # every one, in order
        candidates += [os.path.join(folder, name) for name in ("mpiexec", "mpirun")]
    found = list(dict.fromkeys(p for p in candidates
                               if p and os.path.isfile(p) and os.access(p, os.X_OK)))
    library = library_family()
    for path in found:
        if library is None or mpi_family(mpiexec_version(path)) in (library, None):
            return path
    if found:
        raise FileNotFoundError(say("mpiexec.other", library=library, found=", ".join(found)))
    raise FileNotFoundError(say("mpiexec.none"))


def mpi_family(version_text):
    """"Open MPI", "MPICH" or None (unknown), from a library's or an mpiexec's version."""
    if "Open MPI" in version_text or "OpenRTE" in version_text:
        return "Open MPI"
    if any(mark in version_text for mark in ("MPICH", "HYDRA", "Intel(R) MPI")):
        return "MPICH"
    return None


@functools.lru_cache(maxsize=None)
def mpiexec_version(mpiexec):
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout + out.stderr


@functools.lru_cache(maxsize=None)
def library_family():
    """The family of the MPI library mpi4py loads, read without starting MPI here."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        return mpi_family(mpi.Get_library_version())
    code = ("import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; "
            "print(MPI.Get_library_version())")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return mpi_family(out.stdout)


def mpiexec_flags(mpiexec, nprocs):
    """Extra flags Open MPI needs to run more ranks than cores (and as root)."""
    if mpi_family(mpiexec_version(mpiexec)) != "Open MPI":
        return []
    flags = ["--oversubscribe"] if nprocs > cores() else []
    return flags + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
