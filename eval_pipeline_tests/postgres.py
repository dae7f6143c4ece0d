"""A throwaway Postgres server for tests: a new cluster in a temp dir, on a free loopback port, stopped after.

The binaries are Debian's (`/usr/lib/postgresql/<version>/bin`, the machines' `postgresql` package). Postgres
refuses to run as root, so as root every command runs as the `postgres` OS user the package created, which
then owns the temp dir. The cluster asks for a password (scram-sha-256) on 127.0.0.1, as a managed server
would, so the instance configuration under test really reads its secret from the environment.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg2
from psycopg2 import sql

from eval_pipeline.warehouse.lake import Lake
from eval_pipeline_tests.test_ui import free_port

USER = "eval"
_PORT_ATTEMPTS = 3  # another process may take the free port between our look and the server's bind


@dataclass(frozen=True)
class PostgresServer:
    """Where a running server listens and who may log in."""

    host: str
    port: int
    user: str
    password: str

    def environment(self, db_name: str) -> dict[str, str]:
        """The variables `deploy/dagster-postgres.yaml` reads, for database `db_name` on this server."""
        return {"DAGSTER_PG_HOST": self.host, "DAGSTER_PG_PORT": str(self.port), "DAGSTER_PG_USERNAME": self.user,
                "DAGSTER_PG_PASSWORD": self.password, "DAGSTER_PG_DB": db_name}  # fmt: skip

    def connect(self, db_name: str = "postgres"):  # -> psycopg2 connection (untyped)
        return psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password, dbname=db_name)

    @contextmanager
    def database(self, name: str) -> Iterator[str]:
        """A new empty database `name`, dropped after (with whatever connections are still open to it)."""
        self._admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield name
        finally:
            self._admin(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))

    def _admin(self, statement: sql.Composed) -> None:
        connection = self.connect()
        try:
            connection.autocommit = True  # CREATE/DROP DATABASE cannot run inside a transaction
            with connection.cursor() as cursor:
                cursor.execute(statement)
        finally:
            connection.close()


def lake_on(server: PostgresServer, db_name: str, root: Path) -> Lake:
    """A DuckLake warehouse whose catalog is database `db_name` of `server`, its data under `root/lake`."""
    catalog = f"postgres:host={server.host} port={server.port} user={server.user} password={server.password} dbname={db_name}"
    return Lake(catalog=catalog, data_path=f"{root / 'lake'}/")


def postgres_bin_dir() -> Path | None:
    """The newest installed server's binaries, or None where no Postgres server is installed."""
    installed = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda path: int(path.parts[-3]))
    if installed:
        return installed[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


# Run as a process of its own session: it waits for its stdin to close, which happens when the test session ends
# however it ends (teardown, an error, SIGTERM, SIGKILL), then stops the server and removes its directory.
_CLEAN_UP_AFTER_SESSION = """
import os, shutil, signal, subprocess, sys
root, pid_file, stop = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.stdin.read()
try:
    with open(pid_file) as lines:
        pid = int(lines.readline())
except (OSError, ValueError):
    pid = None  # it never started
if pid is not None and subprocess.run(stop, cwd=root, capture_output=True).returncode != 0:
    try:
        os.kill(pid, signal.SIGKILL)  # pg_ctl could not stop it; its children notice their postmaster is gone
    except ProcessLookupError:
        pass
shutil.rmtree(root, ignore_errors=True)
"""


@contextmanager
def running_postgres(bin_dir: Path) -> Iterator[PostgresServer]:
    """A server of a new cluster in a temp dir; stopped and the dir removed at exit, or when this process dies."""
    root = Path(tempfile.mkdtemp(prefix="eval-postgres-"))
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    data = root / "data"
    stop = [*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "-t", "30", "stop"]
    keeper = subprocess.Popen([sys.executable, "-c", _CLEAN_UP_AFTER_SESSION, str(root), str(data / "postmaster.pid"), *stop],
                              stdin=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        if as_postgres:
            shutil.chown(root, user="postgres", group="postgres")
        password = secrets.token_urlsafe(18)
        password_file = root / "password"
        password_file.write_text(password)
        if as_postgres:
            shutil.chown(password_file, user="postgres", group="postgres")
        _run([*as_postgres, str(bin_dir / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={password_file}",
              "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync"], root)  # fmt: skip
        password_file.unlink()
        port = _start(as_postgres, bin_dir, root, data)
        yield PostgresServer(host="127.0.0.1", port=port, user=USER, password=password)
    finally:
        assert keeper.stdin is not None
        keeper.stdin.close()
        keeper.wait()


def _start(as_postgres: list[str], bin_dir: Path, root: Path, data: Path) -> int:
    """Start the server on a free loopback port (its Unix socket in `root`); the port."""
    for attempt in range(_PORT_ATTEMPTS):
        port = free_port()
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c full_page_writes=off"
        command = [*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-w", "-t", "60",
                   "-o", options, "start"]  # fmt: skip
        # A session of its own: Ctrl-C on the test run reaches pytest, not the server, which the keeper stops after.
        started = subprocess.run(command, cwd=root, capture_output=True, text=True, start_new_session=True)
        if started.returncode == 0:
            return port
        if attempt == _PORT_ATTEMPTS - 1 or "could not bind" not in _log(root):
            raise RuntimeError(f"postgres did not start: {started.stderr.strip()} {_log(root)[-2000:]}")
    raise AssertionError("unreachable")


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")


def _log(root: Path) -> str:
    log = root / "server.log"
    return log.read_text(errors="replace") if log.exists() else ""
