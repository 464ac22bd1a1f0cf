"""Run the grading kernel inside a bubblewrap sandbox (``grade --sandbox``, ``grade batch --sandbox``).

The kernel that executes a student's notebook starts as
``bwrap [mounts] -- prlimit [limits] -- setpriv [unprivileged user] -- python -m ipykernel_launcher``:

- no network: its own network namespace, with nothing but a loopback of its own;
- the file system is an empty root with, read-only, the system (``/usr``, ``/etc``),
  the Python environment and the ``grader`` and ``harness`` packages. The project
  (solutions, other notebooks), the other submissions and the instructor's private
  fixtures are not there at all;
- the only writable folder is this grading's own temporary folder;
- its own PID namespace: it sees and signals only its own processes, and all of them
  die with it;
- an environment of its own: locale and search paths, none of the grader's other
  variables (an instructor's API key never reaches a submission);
- limits on processes (``RLIMIT_NPROC``) and file size, beside the memory limit
  (``RLIMIT_DATA``) every grading sets.
  ``RLIMIT_NPROC`` never applies to root, so when the grader runs as root the kernel
  runs as an unprivileged user id of its own (one per grading process), where the
  limit holds.

As root, ``grade batch --sandbox`` starts the kernels faster: each worker runs one
bubblewrap (``template_bwrap_arguments``: the same mounts and namespaces, with the
worker's folder of grading folders writable) holding a kernel template, and each kernel
is forked there and, before running anything, lowers its limits and becomes a user id
of its own (grader/core/kernel_template.py, ``_confine``). Kernels of one worker then
share a PID namespace, but not a user: they cannot signal, trace or enter each other,
and what an ended kernel's user left running is killed before that id serves again.

What the sandbox does not stop is described in docs/instrutores.md: the checks run in
the same kernel as the student's code, so that code can tamper with them.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.core import grading_files
from grader.core.environment import GRADER_ENV
from grader.core.errors import GraderError

SANDBOX_UID_BASE = 61000  # unprivileged ids with no passwd entry; one per grading process
SANDBOX_UID_SPAN = 4000
SANDBOX_PAIR_BASE = 100000  # two ids per worker whose kernels share one sandbox (kernel_uids)
SANDBOX_PAIR_SPAN = 50000
DEFAULT_MAX_PROCESSES = 128  # threads count too: the kernel itself uses about ten
DEFAULT_MAX_FILE_MB = 256
# The only variables of the grader's environment a sandboxed kernel gets: locale, search paths and
# Python's own switches. Everything else (an instructor's API key, a database URL...) stays out,
# since anything the kernel can read a student's code can print into its own feedback.
KERNEL_ENV_ALLOWED = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TERM",
                      "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUTF8", "PYTHONIOENCODING",
                      "PYTHONDONTWRITEBYTECODE")
_SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

# jupyter_client interrupts a kernel with SIGINT to its whole process group, which holds bwrap
# too: bwrap would die of it, and take the kernel with it (--die-with-parent). bwrap starts with
# SIGINT ignored (an exec keeps that), and ipykernel sets its own handler while a cell runs, so
# the interrupt reaches the cell as a KeyboardInterrupt and the sandbox stays up.
IGNORING_INTERRUPTS = [sys.executable, "-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                       "os.execvp(sys.argv[1], sys.argv[1:])"]

INSTALL_HELP = (
    "--sandbox precisa do bubblewrap (o comando bwrap), que não foi encontrado. Instale-o e "
    "rode de novo: no Debian/Ubuntu, `sudo apt-get install bubblewrap`; no Fedora, "
    "`sudo dnf install bubblewrap`; no Arch, `sudo pacman -S bubblewrap`. Sem ele a correção "
    "não roda isolada, e por isso não roda."
)


class SandboxUnavailable(GraderError):
    """bwrap is missing or cannot create a sandbox here; the message says what to do."""


@dataclass(frozen=True)
class Sandbox:
    """How one grading's kernel is confined."""

    uid: int | None  # the user id the kernel runs as; None keeps the caller's (not root)
    max_processes: int = DEFAULT_MAX_PROCESSES
    max_file_mb: int = DEFAULT_MAX_FILE_MB

    def prepare(self, workdir: Path) -> None:
        """Make the grading folder the kernel's: it writes its sockets, results and temp files there."""
        for name in ("home", "tmp"):
            (workdir / name).mkdir(exist_ok=True)
        if self.uid is not None:
            for path in (workdir, *workdir.rglob("*")):
                os.chown(path, self.uid, self.uid, follow_symlinks=False)

    def give(self, path: Path) -> None:
        """Hand a file the grader wrote (the kernel's connection file, mode 600) to the kernel's user."""
        if self.uid is not None:
            os.chown(path, self.uid, self.uid, follow_symlinks=False)

    def confinement(self) -> dict[str, int]:
        """What a sandboxed kernel template applies to a kernel it forks for this sandbox."""
        return {"uid": self.uid, "max_processes": self.max_processes,
                "max_file_bytes": self.max_file_mb * 1024 * 1024}

    def command(self, kernel_cmd: list[str], workdir: Path) -> list[str]:
        return [*IGNORING_INTERRUPTS, *bwrap_arguments(workdir), *self._limits(), *self._user(), *kernel_cmd]

    def _limits(self) -> list[str]:
        processes = self.max_processes
        if self.uid is None:
            # The limit counts every process of the user, the sandbox's and the rest of the session's.
            processes += _processes_of(os.getuid())
        # Memory is capped by the grading itself (grader/core/kernel.py); as an unprivileged user
        # the kernel cannot raise that cap again.
        return ["prlimit", f"--nproc={processes}", f"--fsize={self.max_file_mb * 1024 * 1024}", "--"]

    def _user(self) -> list[str]:
        if self.uid is None:
            return []
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"]


def _processes_of(uid: int) -> int:
    count = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        uid_line = next((line for line in text.splitlines() if line.startswith("Uid:")), "")
        threads = next((line for line in text.splitlines() if line.startswith("Threads:")), "Threads: 1")
        if uid_line.split()[1:2] == [str(uid)]:
            count += int(threads.split()[1])
    return count


def _ancestors(path: Path) -> list[Path]:
    return [parent for parent in reversed(path.parents) if parent != Path("/")]


def readable_paths() -> list[Path]:
    """What the kernel must read besides the system: the Python environment and the packages."""
    import grader
    import harness

    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(grader.__file__).parent, Path(harness.__file__).parent}
    executable = Path(sys.executable).resolve()
    paths.add(executable.parent)
    # Drop what the system folders already cover, and paths inside another one.
    kept = [p.resolve() for p in paths if not any(str(p.resolve()).startswith(d + "/") or str(p) == d for d in _SYSTEM_DIRS)]
    return sorted({p for p in kept if not any(p != q and q in p.parents for q in kept)})


def _isolation_arguments(writable: Path) -> list[str]:
    """bwrap's namespaces and mounts: the system, the Python environment and the packages read-only,
    ``writable`` (a grading folder, or a worker's folder of grading folders) the only place to write."""
    args = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--die-with-parent", "--hostname", "correcao"]
    if os.geteuid() != 0:
        args.append("--unshare-user")
    for folder in _SYSTEM_DIRS:
        path = Path(folder)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), folder]
        elif path.is_dir():
            args += ["--ro-bind", folder, folder]
    args += ["--proc", "/proc", "--dev", "/dev"]
    made: set[Path] = set()

    def make_parents(path: Path) -> None:
        nonlocal args
        for parent in _ancestors(path):
            if parent not in made and str(parent) not in _SYSTEM_DIRS:
                made.add(parent)
                args += ["--perms", "0755", "--dir", str(parent)]

    for path in readable_paths():
        make_parents(path)
        args += ["--ro-bind", str(path), str(path)]
    make_parents(Path("/tmp/x"))  # an empty /tmp the kernel cannot write to
    make_parents(writable)
    return [*args, "--bind", str(writable), str(writable)]


def _allowed_environment() -> dict[str, str]:
    """Locale and search paths from the grader's environment, none of its other variables."""
    return {name: os.environ[name] for name in KERNEL_ENV_ALLOWED if name in os.environ}


def _bwrap_environment(env: dict[str, str]) -> list[str]:
    """bwrap arguments that give the sandbox exactly ``env``."""
    args = ["--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    return args


def kernel_environment(workdir: Path) -> dict[str, str]:
    """The whole environment of a sandboxed kernel: locale and search paths from the grader's, none of
    its other variables, and its home, temp and runtime folders inside its grading folder."""
    env = _allowed_environment()
    env.update({GRADER_ENV: "1", "HOME": str(workdir / "home"), "TMPDIR": str(workdir / "tmp"),
                "IPYTHONDIR": str(workdir / "home" / ".ipython"), "JUPYTER_RUNTIME_DIR": str(workdir)})
    return env


def bwrap_arguments(workdir: Path) -> list[str]:
    args = [*_isolation_arguments(workdir), *_bwrap_environment(kernel_environment(workdir))]
    # JPY_PARENT_PID is not passed: inside its PID namespace the kernel's parent is the
    # sandbox's init, which ipykernel would take for a dead grader; --die-with-parent
    # ties it to the grader instead.
    return [*args, "--chdir", str(workdir), "--"]


def template_bwrap_arguments(scratch: Path) -> list[str]:
    """bwrap for a worker's kernel template (root only): one sandbox for the worker's kernels, each
    forked into a user id of its own with its limits (kernel_template._confine). It keeps only the
    capabilities to switch users and to kill what an ended kernel's user left running."""
    env = {**_allowed_environment(), GRADER_ENV: "1", "HOME": str(scratch)}
    args = [*_isolation_arguments(scratch), *_bwrap_environment(env), "--chdir", str(scratch), "--cap-drop", "ALL"]
    for capability in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL"):
        args += ["--cap-add", capability]
    return [*args, "--"]


def sandbox_uid() -> int | None:
    """An unprivileged user id for this grading process, or None when not running as root."""
    if os.geteuid() != 0:
        return None
    return SANDBOX_UID_BASE + os.getpid() % SANDBOX_UID_SPAN


def kernel_uids() -> tuple[int, int]:
    """Two unprivileged user ids for a worker whose kernels are forked in one sandbox (root only):
    the kernel being graded and the next one, prelaunched beside it, never share a user."""
    first = SANDBOX_PAIR_BASE + (os.getpid() % SANDBOX_PAIR_SPAN) * 2
    return first, first + 1


@functools.lru_cache(maxsize=1)
def _probe() -> str | None:
    """Why a sandbox cannot start here (None when it can): bwrap missing, or refusing to run."""
    if shutil.which("bwrap") is None:
        return INSTALL_HELP
    for tool in ("prlimit", "setpriv"):
        if shutil.which(tool) is None:
            return f"--sandbox precisa do comando {tool} (pacote util-linux), que não foi encontrado."
    probe = Path(os.environ.get("TMPDIR", "/tmp"))
    try:
        done = subprocess.run(
            [*bwrap_arguments(probe), "true"], capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"o bubblewrap não conseguiu criar a sandbox aqui ({error})."
    if done.returncode != 0:
        return (
            f"o bubblewrap não conseguiu criar a sandbox aqui: {done.stderr.strip() or done.returncode}. "
            "Como usuário comum, ele precisa de user namespaces (sysctl kernel.unprivileged_userns_clone=1); "
            "como root, de permissão para montar."
        )
    return None


def require(max_processes: int = DEFAULT_MAX_PROCESSES) -> Sandbox:
    """A Sandbox for this process; SandboxUnavailable (Portuguese) when it cannot be had,
    never a silent fallback to running unsandboxed."""
    problem = _probe()
    if problem:
        raise SandboxUnavailable(problem)
    return Sandbox(uid=sandbox_uid(), max_processes=max_processes)


def sandboxed_connection(workdir: Path, sandbox: Sandbox, generation: int = 1, wrap: bool = True) -> dict[str, Any]:
    """Kernel manager settings for a sandboxed kernel. It has no network to reach the grader
    over TCP, only its own folder, which holds its sockets and its connection file (given
    to the kernel's user). Each kernel of one grading (``generation``) has its own names.
    ``wrap=False`` leaves the command alone: a sandboxed template forks the kernel instead."""
    from jupyter_client.manager import AsyncKernelManager

    name = "kernel" if generation == 1 else f"kernel{generation}"
    return {
        "transport": "ipc",
        "ip": str(workdir / name),
        "connection_file": str(workdir / f"{name}-connection.json"),
        "manager_class": sandboxed_manager_class(AsyncKernelManager, sandbox, workdir, wrap),
    }


def sandboxed_manager_class(base: Any, sandbox: Sandbox, workdir: Path, wrap: bool = True) -> Any:
    """A jupyter_client KernelManager class that starts its kernel inside ``sandbox``."""

    class SandboxedKernelManager(base):
        def format_kernel_cmd(self, extra_arguments=None):
            command = super().format_kernel_cmd(extra_arguments)
            return sandbox.command(command, workdir) if wrap else command

        def write_connection_file(self, **kwargs):
            # The grading folder is the kernel's: code that ran there may have put a link under this
            # name. The file is written where no kernel reaches, given to the kernel's user, and
            # renamed into place: a rename replaces such a link instead of writing through it.
            final = Path(self.connection_file)
            private = Path(tempfile.mkdtemp(prefix=".conexao-", dir=final.parent.parent))
            try:
                self.connection_file = str(private / final.name)
                super().write_connection_file(**kwargs)
                sandbox.give(Path(self.connection_file))
                grading_files.clear_name(final)  # a folder put there would make the rename fail
                os.rename(self.connection_file, final)
            finally:
                self.connection_file = str(final)
                shutil.rmtree(private, ignore_errors=True)

    return SandboxedKernelManager
