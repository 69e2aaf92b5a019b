"""The exec sandbox: a pod's commands never run with kubesim's rights on this machine.

Each exec runs under bubblewrap (`bwrap`) in namespaces of its own — user, mount, pid,
network, ipc, uts and cgroup — over a read-only root made once at start from Debian's
`busybox-static` (`/bin/busybox` and a link for each of its applets): no file of this
machine is visible, there is no network but a loopback of its own, and the environment is
empty but for the container's plain `env` values, `PATH`, `HOME`, `HOSTNAME` and (on a tty)
`TERM`. bwrap itself starts under an empty environment, since its pid 1 inside keeps the
environment it was started with. `/tmp` (the working directory, and `HOME`) is a small
tmpfs of the exec's own.

Limits are rlimits set inside before the command starts (CPU seconds, address space, file
size, open files; and, when kubesim runs as root, the number of processes): when kubesim
runs as root each pod's commands run as a uid of the pod's own (derived from its UID, in
a range no account uses), so a pod's process count is its own; otherwise they run as
kubesim's user, whose process count cannot be told apart, and only the exec's timeout
bounds them.

When no sandbox can be made — bwrap or busybox missing, user namespaces refused — `reason`
says why and every exec is refused: a command is never run as a plain host process.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("kubesim")

MiB = 1024 * 1024
PATH = "/bin:/usr/bin:/sbin:/usr/sbin"
TMP = "/tmp"  # noqa: S108 - the sandbox's own tmpfs, not this machine's
FIRST_UID = 200_000  # pods' uids (as root): far above any account's, below 2^31
UIDS = 1_000_000


@dataclass(frozen=True)
class Limits:
    """What one exec may use. `memory` is the default and the most a container's own
    memory limit (or request) may ask for."""

    cpu_seconds: int = 600
    memory: int = 512 * MiB
    file_size: int = 64 * MiB
    tmp_size: int = 64 * MiB
    processes: int = 64
    open_files: int = 256


@dataclass(frozen=True)
class Launch:
    """How to start one sandboxed command: argv, the fd holding bwrap's options (closed by
    the caller once started), and the uid/gid to run bwrap as (None: kubesim's own)."""

    argv: list[str]
    options_fd: int
    uid: int | None


class Sandbox:
    def __init__(
        self, bwrap: str = "bwrap", busybox: str = "busybox", limits: Limits | None = None
    ) -> None:
        self.bwrap = bwrap
        self.busybox = busybox
        self.limits = limits or Limits()
        self.root: Path | None = None
        self.reason: str | None = "the sandbox is not prepared yet"
        self._bwrap_path = ""
        self._as_root = os.geteuid() == 0
        self.proc = True  # a procfs of the sandbox's own; False where none can be mounted

    def prepare(self) -> None:
        """Build the busybox root and run `true` in a sandbox once: `reason` is None if
        that worked, else why not."""
        self.reason = self._prepare()

    def log_mode(self) -> None:
        """One line: whether commands run sandboxed, and as whom; or why every exec is
        refused."""
        if self.reason is None:
            per_pod = "a uid of each pod's own" if self._as_root else "kubesim's own user"
            proc = "" if self.proc else " (without /proc: this machine's cannot be remounted)"
            log.info(
                "exec: commands run in a bubblewrap sandbox over busybox, as %s%s", per_pod, proc
            )
        else:
            log.warning("exec: no sandbox can be made (%s): every exec is refused", self.reason)

    def close(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def _prepare(self) -> str | None:
        bwrap = shutil.which(self.bwrap)
        if bwrap is None:
            return f"bubblewrap is not installed ({self.bwrap} not found)"
        busybox = shutil.which(self.busybox)
        if busybox is None:
            return f"busybox is not installed ({self.busybox} not found)"
        self._bwrap_path = bwrap
        try:
            self.root = _busybox_root(Path(busybox))
        except (OSError, subprocess.SubprocessError) as exc:
            return f"cannot build a root from {busybox}: {exc}"
        failure = self._probe()
        if failure is not None and "mount proc" in failure:
            # a container's masked /proc forbids a fresh procfs: go without one
            self.proc = False
            failure = self._probe()
        return failure

    def _probe(self) -> str | None:
        bwrap = self._bwrap_path
        launch = self.launch(["true"], {}, hostname="probe", pod_uid="probe", memory=None)
        try:
            done = subprocess.run(  # noqa: S603 - our own argument list
                launch.argv,
                env={},
                pass_fds=(launch.options_fd,),
                capture_output=True,
                timeout=30,
                check=False,
                **as_user(launch.uid),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"cannot start {bwrap}: {exc}"
        finally:
            os.close(launch.options_fd)
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            return said[-1] if said else f"{bwrap} exited with {done.returncode}"
        return None

    def found(self, program: str) -> bool:
        """Whether ``program`` is an executable of the sandbox's root (searched on PATH)."""
        if self.root is None:
            return False
        candidates = [program] if "/" in program else [f"{d}/{program}" for d in PATH.split(":")]
        for candidate in candidates:
            path = self.root / candidate.lstrip("/")
            if path.is_file() and os.access(path, os.X_OK) and _inside(self.root, path):
                return True
        return False

    def launch(
        self,
        command: list[str],
        env: dict[str, str],
        *,
        hostname: str,
        pod_uid: str,
        memory: int | None,
        tty: bool = False,
    ) -> Launch:
        """The bwrap command line running ``command`` with ``env`` under the limits; the
        options (the environment's values among them) go through a memfd, not argv."""
        if self.root is None:
            raise RuntimeError("the sandbox is not prepared")
        limits = self.limits
        memory = min(memory, limits.memory) if memory else limits.memory
        values = {"PATH": PATH, "HOME": TMP, "HOSTNAME": hostname, **env}
        if tty:
            values.setdefault("TERM", "xterm")
        options = [
            "--unshare-all", "--die-with-parent", "--new-session",
            "--ro-bind", str(self.root), "/",
            *(["--proc", "/proc"] if self.proc else []), "--dev", "/dev",
            "--size", str(limits.tmp_size), "--tmpfs", TMP, "--chdir", TMP,
            "--uid", "0", "--gid", "0", "--hostname", hostname[:63] or "pod",
            "--clearenv",
        ]  # fmt: skip
        for name, value in values.items():
            options += ["--setenv", name, value]
        ulimit = (
            f"ulimit -t {limits.cpu_seconds} -v {memory // 1024} "
            f"-f {limits.file_size // 512} -n {limits.open_files}"
        )
        if self._as_root:
            ulimit += f" -u {limits.processes}"
        fd = os.memfd_create("kubesim-sandbox", os.MFD_CLOEXEC)
        try:
            os.write(fd, b"".join(o.encode() + b"\0" for o in options))
            os.lseek(fd, 0, os.SEEK_SET)
        except OSError:
            os.close(fd)
            raise
        wrapper = ["/bin/sh", "-c", f'{ulimit} || exit 126; exec "$@"', "sh"]
        argv = [self._bwrap_path, "--args", str(fd), "--", *wrapper, *command]
        uid = FIRST_UID + zlib.crc32(pod_uid.encode()) % UIDS if self._as_root else None
        return Launch(argv, fd, uid)


def as_user(uid: int | None) -> dict[str, Any]:
    """Popen's keywords to run as ``uid`` (its own group, no others); none for None."""
    return {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}


def _inside(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def _busybox_root(busybox: Path) -> Path:
    """A folder with bin/busybox, a link for each applet, and the mount points bwrap
    needs; readable by every uid, writable by none but kubesim's."""
    root = Path(tempfile.mkdtemp(prefix="kubesim-root-"))
    try:
        for folder in ("bin", "dev", "proc", "tmp", "etc", "root", "usr"):
            (root / folder).mkdir()
        shutil.copy(busybox, root / "bin" / "busybox")
        listed = subprocess.run(  # noqa: S603 - busybox's own applet list
            [str(busybox), "--list"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.split()
        for applet in listed:
            if applet != "busybox" and "/" not in applet:
                (root / "bin" / applet).symlink_to("busybox")
        for alias in ("sbin", "usr/bin", "usr/sbin"):
            (root / alias).symlink_to("bin" if alias == "sbin" else "../bin")
        (root / "etc" / "passwd").write_text("root:x:0:0:root:/tmp:/bin/sh\n")
        (root / "etc" / "group").write_text("root:x:0:\n")
        for path in (root, *root.rglob("*")):
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() or path.name == "busybox" else 0o644)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return root
