"""Each copy's student side in a sandbox: bubblewrap where the machine has it, else a fallback.

In teacher mode a student's block runs with the teacher's rights, beside the
teacher's package, the teacher's answers and every other copy of the class. So
the student side of each copy (``exercise_checks/runner.py``, under mpiexec or
alone) starts inside bubblewrap (``bwrap``, the Debian package ``bubblewrap``;
the sandbox Flatpak uses), one launch per staged copy that runs student code
(copies whose block is the reference's or the handout's blank share one):

    bwrap --unshare-user --unshare-pid --unshare-net --unshare-ipc --unshare-uts
          --die-with-parent --new-session           own pids: all die with the launch
          --ro-bind /usr /usr ... --ro-bind PYTHON  the system and Python, read-only
          --tmpfs PACKAGE                            the teacher's install hidden
          --size 256M --tmpfs /tmp                   a private /tmp with a size cap
          --ro-bind COPY COPY                        the staged copy, read-only
          --bind RUN RUN                             where the evidence is written
          -- mpiexec -n 4 python -m ...runner

plus rlimits set before exec (address space, CPU seconds, file size, processes:
``process_cap.py``, with a pids cgroup where one can be made), a private bytecode cache
(PYTHONPYCACHEPREFIX under the private /tmp), and an environment that starts empty:
only ENV_NAMES, ENV_PREFIXES and a PATH of Python's, mpiexec's and the system's folders
(``clean_env``), never the teacher's tokens or paths. This process is the child
subreaper of its launches: what one orphans is reaped by ``sweep`` at its end (and by
``reap`` in the gradebook at each tick), so no zombie waits for the class to end.
Nothing else of the machine exists inside: not the teacher's checkout, not the class
folder, not the other staged copies, not the grader (its pid is in another namespace).
When the launch ends, every process it started is gone (the namespace's first process
ended), and the RUN folder can no longer be written: the grader reads it after, as
data, through ``runtime/plain_files.py``, and never reads or writes through a link,
FIFO or device a check left there.

Without bubblewrap (or with ``MINIMEGATRON_SANDBOX=off``, for tests) the
grader says so on its first line, every cell is marked "unsandboxed", and the
launch gets the fallback: the same rlimits and environment, a private TMPDIR and
bytecode cache inside RUN (removed with it), and this process as child subreaper, so a
process that left its session (setsid, a double fork) is still found and killed
(``sweep``). What the fallback cannot stop (student code reading or writing any
file the teacher's user may: the teacher's install, other copies) is listed in
docs/teaching.md. ``MINIMEGATRON_SANDBOX=bwrap`` makes a missing bubblewrap an
error instead (CI).
"""
import ctypes
import functools
import importlib.util
import os
import resource
import shutil
import signal
import site
import subprocess
import sys
import time

from minimegatron import i18n
from minimegatron.classroom import PACKAGE_DIR, process_cap

MODE_ENV = "MINIMEGATRON_SANDBOX"    # "off": the fallback; "bwrap": required; unset: if found
MEMORY_BYTES = 4 * 2 ** 30           # address space of each process (RLIMIT_AS)
FILE_BYTES = 128 * 2 ** 20           # the largest file a process may write (RLIMIT_FSIZE)
TMP_BYTES = 256 * 2 ** 20            # the private /tmp (and /dev/shm) of bubblewrap
CPU_S_PER_TIMEOUT = 20               # RLIMIT_CPU: 20 x --timeout CPU seconds per process
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
SWEEP_S = 5.0                        # how long a sweep waits for what it killed to end
PRIVATE_TMP = "tmp"                  # the fallback's TMPDIR, inside the run folder
SYSTEM_PATH = ["/usr/local/bin", "/usr/bin", "/bin"]
ENV_NAMES = {"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "MINIMEGATRON_LANG",
             "MINIMEGATRON_JOB_DIR", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
             "MKL_NUM_THREADS", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX",
             "PYTHONHASHSEED", "PYTHONUTF8", "PYTHONIOENCODING",
             "LD_LIBRARY_PATH"}                     # where a module system put MPI's libraries
ENV_PREFIXES = ("HYDRA_", "MPIR_CVAR_", "MPICH_", "FI_")   # how the teacher runs MPI here


def _prctl(option, value):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def become_subreaper():
    """Orphans below this process come back to it (PR_SET_CHILD_SUBREAPER), not to init:
    a process that left its session is still ours to find and kill (``sweep``)."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def seal_process():
    """This grader's /proc/PID/fd and memory closed to processes of the same user
    (PR_SET_DUMPABLE 0): student code cannot write into its pipes or read its secrets."""
    _prctl(PR_SET_DUMPABLE, 0)


@functools.lru_cache(maxsize=None)
def _bwrap_works(bwrap):
    """'' if ``bwrap`` starts a sandbox here (user namespaces may be switched off), else why."""
    try:
        proc = subprocess.run([bwrap, "--unshare-user", "--unshare-pid", "--unshare-net",
                               "--ro-bind", "/", "/", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    return "" if proc.returncode == 0 else proc.stderr.decode("utf-8", "replace").strip()


@functools.lru_cache(maxsize=None)
def _has_size(bwrap):
    """True if this bubblewrap caps a tmpfs (``--size``, bubblewrap 0.7 and later)."""
    try:
        return subprocess.run([bwrap, "--unshare-user", "--ro-bind", "/", "/", "--size", "4096",
                               "--tmpfs", "/tmp", "true"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def choose():
    """The Sandbox this machine gives: bubblewrap, else the fallback (with why)."""
    mode = os.environ.get(MODE_ENV, "").strip().lower()
    if mode == "off":
        return Sandbox(None, i18n.text("sandbox.why_off", env=MODE_ENV))
    bwrap = shutil.which("bwrap") or ("/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK)
                                      else None)
    why = i18n.text("sandbox.why_missing") if bwrap is None else _bwrap_works(bwrap)
    if why and mode == "bwrap":
        raise ValueError(i18n.text("sandbox.required", env=MODE_ENV, why=why))
    return Sandbox(None if why else bwrap, why)


def _under(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _python_roots():
    """Folders Python, NumPy, mpi4py and mpiexec need, outside the system folders."""
    import numpy
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix,
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
             os.path.dirname(os.path.dirname(numpy.__file__))}
    spec = importlib.util.find_spec("mpi4py")      # where it is; MPI itself never starts here
    if spec is not None and spec.origin:
        found.add(os.path.dirname(os.path.dirname(spec.origin)))
    try:
        from minimegatron.runtime.mpiexec import find_mpiexec
        found.add(os.path.dirname(os.path.dirname(os.path.realpath(find_mpiexec()))))
    except FileNotFoundError:
        pass
    user_site = site.getusersitepackages()
    if os.path.isdir(user_site):
        found.add(user_site)
    roots = [p for p in sorted(found) if os.path.isdir(p)
             and not any(_under(p, s) for s in SYSTEM)]
    return [p for p in roots if not any(_under(p, q) for q in roots if q != p)]


def _hidden(roots):
    """Paths inside the bound folders that must not be seen: the teacher's package, its
    checkout, and every trace of its install (``minimegatron*`` / editable finders)."""
    teacher = [PACKAGE_DIR, os.path.dirname(PACKAGE_DIR)]
    hide = [p for p in teacher if any(_under(p, r) and p != r for r in roots)
            and not any(_under(r, p) for r in roots)]
    for folder in site.getsitepackages() + [site.getusersitepackages()]:
        if not os.path.isdir(folder) or not any(_under(folder, r) for r in roots + list(SYSTEM)):
            continue
        for name in os.listdir(folder):
            if "minimegatron" in name.lower():
                hide.append(os.path.join(folder, name))
    return sorted(set(hide))


def clean_env(env):
    """The launch's environment: only the names in ENV_NAMES and the prefixes in ENV_PREFIXES
    from ``env``, and a PATH of Python's, mpiexec's and the system's folders; nothing else
    of the teacher's environment (a token, a password, a home folder) exists inside."""
    from minimegatron.runtime.mpiexec import find_mpiexec
    kept = {name: value for name, value in env.items()
            if name in ENV_NAMES or name.startswith(ENV_PREFIXES)}
    folders = [os.path.dirname(sys.executable)]
    try:
        folders.append(os.path.dirname(find_mpiexec()))
    except FileNotFoundError:
        pass
    kept["PATH"] = os.pathsep.join(dict.fromkeys(folders + SYSTEM_PATH))
    return kept


def _limits(timeout, nproc=None, cgroup=None):
    """The preexec function: rlimits of the launch (inherited by every process in it),
    RLIMIT_NPROC ``nproc`` if given, and the pids cgroup (``process_cap.py``) joined."""
    cpu = int(max(300, CPU_S_PER_TIMEOUT * timeout))
    limits = [(resource.RLIMIT_AS, MEMORY_BYTES), (resource.RLIMIT_FSIZE, FILE_BYTES),
              (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_CORE, 0)]
    limits += [(resource.RLIMIT_NPROC, nproc)] if nproc is not None else []

    def apply():
        for limit, value in limits:
            soft, hard = resource.getrlimit(limit)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(limit, (value, value))
        if cgroup is not None:
            cgroup.join()
    return apply


class Sandbox:
    """How one copy's launches run: ``bwrap`` (its path) or None for the fallback."""

    def __init__(self, bwrap, why=""):
        self.bwrap, self.why, self.cgroups = bwrap, why, []
        become_subreaper()          # what a launch orphans comes back here, to be reaped

    @property
    def kind(self):
        return "bwrap" if self.bwrap else "unsandboxed"

    def line(self):
        """The first line of a teacher-mode grade: sandboxed, or not and why."""
        if self.bwrap:
            tmp = (i18n.text("sandbox.tmp_cap", mib=TMP_BYTES // 2 ** 20)
                   if _has_size(self.bwrap) else i18n.text("sandbox.tmp_no_cap"))
            return i18n.text("sandbox.on", bwrap=self.bwrap, tmp=tmp,
                             mem_gib=MEMORY_BYTES // 2 ** 30)
        return i18n.text("sandbox.off", why=self.why)

    def wrap(self, cmd, env, run_dir, copies, timeout):
        """(cmd, env, preexec_fn) that run ``cmd`` on the staged ``copies`` (read-only),
        writing in run_dir only."""
        env = {**clean_env(env), "PYTHONPATH": copies[0], "PYTHONDONTWRITEBYTECODE": "1"}
        cgroup = process_cap.PidsCgroup(f"mm_{os.getpid()}_{os.path.basename(run_dir)}")
        self.cgroups.append(cgroup)
        limits = _limits(timeout, process_cap.rlimit_nproc(), cgroup)
        if not self.bwrap:
            private = os.path.join(run_dir, PRIVATE_TMP)
            os.makedirs(private, mode=0o700)
            env.update(TMPDIR=private, PYTHONPYCACHEPREFIX=os.path.join(private, "pycache"))
            return cmd, env, limits
        env.update(TMPDIR="/tmp", HOME="/tmp", PYTHONPYCACHEPREFIX="/tmp/pycache")
        box = [self.bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
               "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session",
               "--proc", "/proc", "--dev", "/dev"]
        size = ["--size", str(TMP_BYTES)] if _has_size(self.bwrap) else []   # else said
        box += size + ["--tmpfs", "/tmp"] + size + ["--tmpfs", "/dev/shm"]
        for path in SYSTEM:
            if os.path.islink(path):
                box += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                box += ["--ro-bind", path, path]
        roots = _python_roots()
        for path in roots:
            box += ["--ro-bind", path, path]
        for path in _hidden(roots):
            box += (["--tmpfs", path] if os.path.isdir(path)
                    else ["--ro-bind", "/dev/null", path])
        for copy in copies:
            box += ["--ro-bind", copy, copy]
        box += ["--bind", run_dir, run_dir, "--chdir", run_dir, "--"]
        return box + cmd, env, limits

    def release(self):
        """After a launch (its processes killed): its pids cgroup removed (one still busy
        is tried again at the next release)."""
        self.cgroups = [cgroup for cgroup in self.cgroups if not cgroup.remove()]


def descendants():
    """Every process below this one, from /proc."""
    from minimegatron.runtime.processes import descendants
    return descendants(os.getpid())


def reap(keep=()):
    """Wait for every zombie child of this process but those in ``keep`` (the ones a
    ``subprocess.Popen`` waits for itself): as this process is a subreaper, what each
    launch orphaned ends here, and is reaped at once, not when the class is done."""
    for pid in descendants():
        if pid in keep:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):        # not our child (a grandchild): its own
            pass


def sweep(before, grace=SWEEP_S):
    """SIGKILL every process below this one that was not there ``before`` a launch (what
    student code left behind), and reap each as it ends (this process is the subreaper
    its orphans come back to), for up to ``grace`` seconds: no zombie is left waiting."""
    deadline = time.monotonic() + grace
    while True:
        left = descendants() - before
        if not left or time.monotonic() > deadline:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in left:                       # reap the ones that are our own children
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.02)
