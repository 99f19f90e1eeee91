"""Real PostgreSQL, Redis and Celery worker processes on loopback, for tests and benchmarks.

Run a command with the servers up::

    python -m tests.servers -- pytest -m integration

starts a throw-away PostgreSQL cluster, a streaming hot standby of it
(``pg_basebackup -R``) and a Redis server in a temporary directory, exports
``DATABASE_URL``, ``STANDBY_DATABASE_URL``, ``STANDBY_READER_URL``,
``CELERY_BROKER_URL`` and ``CACHE_URL``, runs the command and stops them afterwards.
Missing Debian packages (``postgresql``, ``redis-server``) are installed with apt-get
when running as root; otherwise the run fails with a message saying what to install. Nothing
is ever skipped silently.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent


class ServerUnavailable(RuntimeError):
    """A server the tests need could not be installed or started."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _is_root() -> bool:
    return os.geteuid() == 0


_apt_updated = False


def apt_install(*packages: str) -> None:
    """Install Debian packages, or explain what is missing when we may not."""
    global _apt_updated
    if not _is_root() or shutil.which("apt-get") is None:
        raise ServerUnavailable(
            f"Missing {' '.join(packages)}: install it (sudo apt-get install {' '.join(packages)}) "
            "and run the tests again."
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"[servers] installing {' '.join(packages)} with apt-get", file=sys.stderr, flush=True)
    if not _apt_updated:
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        _apt_updated = True
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def _wait_for(
    check, what: str, timeout: float, process: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerUnavailable(f"{what} exited with {process.returncode}:\n{_tail(log)}")
        if check():
            return
        time.sleep(0.1)
    raise ServerUnavailable(f"{what} did not become ready within {timeout:.0f} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(
    process: subprocess.Popen[bytes],
    sig: int = signal.SIGTERM,
    timeout: float = 15,
    *,
    group: bool = False,
) -> None:
    """Signal ``process`` (its whole process group with ``group``: ``runuser`` passes no
    SIGINT on, so PostgreSQL started through it only stops when the group is signalled)."""
    if process.poll() is not None:
        return
    if group:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
    else:
        process.send_signal(sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


# --------------------------------------------------------------------------- PostgreSQL


def _postgres_bin() -> Path:
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4])
    )
    if not candidates:
        apt_install("postgresql")
        candidates = sorted(
            glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4])
        )
    if not candidates:
        raise ServerUnavailable("postgresql is installed but no postgres binary was found")
    return Path(candidates[-1]).parent


def _as_postgres(*paths: Path) -> list[str]:
    """The command prefix that runs a server tool as ``postgres`` when we are root
    (PostgreSQL refuses to run as root); ``paths`` are handed to that user first."""
    if not _is_root():
        return []
    try:
        owner = pwd.getpwnam("postgres")
    except KeyError:
        raise ServerUnavailable(
            "the postgres system user is missing; reinstall postgresql"
        ) from None
    for path in paths:
        os.chown(path, owner.pw_uid, owner.pw_gid)
    return ["runuser", "-u", "postgres", "--"]


def _pg_settings(sockets: Path, durable: bool) -> list[str]:
    settings = [
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        f"unix_socket_directories={sockets}",
        "-c",
        "max_connections=200",
        "-c",
        "shared_buffers=256MB",
        # Streaming replication (a standby made with pg_basebackup -R): initdb's
        # pg_hba.conf already trusts replication connections from loopback.
        "-c",
        "wal_level=replica",
        "-c",
        "max_wal_senders=5",
        "-c",
        "hot_standby=on",
        "-c",
        "hot_standby_feedback=on",
    ]
    if not durable:
        settings += [
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]
    return settings


@contextlib.contextmanager
def _postgres_process(
    bindir: Path, data: Path, sockets: Path, log: Path, prefix: list[str], durable: bool
) -> Iterator[int]:
    """Run ``postgres`` on ``data`` on a free loopback port until the block ends."""
    port = free_port()
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [
                *prefix,
                str(bindir / "postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                *_pg_settings(sockets, durable),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def ready() -> bool:
            return (
                subprocess.run(
                    [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-q"],
                    check=False,
                ).returncode
                == 0
            )

        _wait_for(ready, "PostgreSQL", 60, process, log)
        yield port
    finally:
        _stop(process, signal.SIGINT, group=True)  # SIGINT is PostgreSQL's "fast shutdown"


@contextlib.contextmanager
def postgres_server(workdir: Path, *, durable: bool = False) -> Iterator[str]:
    """Start a PostgreSQL cluster in ``workdir``; yield the database URL.

    PostgreSQL refuses to run as root, so as root the cluster belongs to the
    ``postgres`` system user. ``durable=False`` turns fsync off (tests);
    benchmarks pass ``durable=True`` to measure what production would see.
    """
    bindir = _postgres_bin()
    data = workdir / "pgdata"
    sockets = workdir / "pgsock"
    log = workdir / "postgres.log"
    data.mkdir()
    sockets.mkdir()
    log.touch()
    prefix = _as_postgres(workdir, data, sockets, log)
    subprocess.run(
        [
            *prefix,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    with _postgres_process(bindir, data, sockets, log, prefix, durable) as port:
        subprocess.run(
            [
                str(bindir / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "postgres",
                "consultations",
            ],
            check=True,
        )
        yield f"postgres://postgres@127.0.0.1:{port}/consultations"


READER = "analyses_reader"
"""The standby's login role for analyses: reads everything (``pg_read_all_data``), and
every transaction it opens is read-only (``default_transaction_read_only``)."""


@contextlib.contextmanager
def standby_server(workdir: Path, primary_url: str, *, durable: bool = False) -> Iterator[str]:
    """A streaming hot standby of ``primary_url``'s cluster, on loopback; yields its URL.

    ``pg_basebackup -R`` copies the primary and writes the standby's connection settings
    (``standby.signal``, ``primary_conninfo``); the standby then replays the primary's WAL
    as it streams and answers read-only queries (``hot_standby``). The primary gets the
    role :data:`READER` first (replicated like everything else); the URL yielded logs in
    as ``postgres``, whose transactions are not read-only (pausing replay needs it).
    """
    bindir = _postgres_bin()
    primary = urlsplit(primary_url)
    data = workdir / "standby"
    sockets = workdir / "standbysock"
    log = workdir / "standby.log"
    sockets.mkdir()
    log.touch()
    prefix = _as_postgres(workdir, sockets, log)
    reader = (
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{READER}') THEN "
        f"CREATE ROLE {READER} LOGIN; END IF; END $$; "
        f"GRANT pg_read_all_data TO {READER}; "
        f"ALTER ROLE {READER} SET default_transaction_read_only = on;"
    )
    subprocess.run(
        [
            str(bindir / "psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(primary.port),
            "-U",
            "postgres",
            "-d",
            primary.path.lstrip("/"),
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            reader,
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    copied = subprocess.run(
        [
            *prefix,
            str(bindir / "pg_basebackup"),
            "-h",
            "127.0.0.1",
            "-p",
            str(primary.port),
            "-U",
            "postgres",
            "-D",
            str(data),
            "-R",
            "-X",
            "stream",
            "--checkpoint=fast",
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    if copied.returncode != 0:
        raise ServerUnavailable(f"pg_basebackup failed:\n{copied.stderr[-2000:]}")
    with _postgres_process(bindir, data, sockets, log, prefix, durable) as port:
        yield f"postgres://postgres@127.0.0.1:{port}/{primary.path.lstrip('/')}"


def as_reader(url: str) -> str:
    """The same database as the read-only analyses role (:data:`READER`)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{READER}@{parts.hostname}:{parts.port}"))


# --------------------------------------------------------------------------- PgBouncer


def _pgbouncer_bin() -> str:
    path = shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
    )
    if path is None:
        apt_install("pgbouncer")
        path = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not Path(path).exists():
        raise ServerUnavailable("pgbouncer is installed but was not found")
    return path


@contextlib.contextmanager
def pgbouncer_server(
    workdir: Path, database_url: str, *, pool_mode: str = "transaction"
) -> Iterator[str]:
    """Start Debian's ``pgbouncer`` on loopback in front of ``database_url``'s server.

    Every database name is passed through to that server (a ``*`` entry), so the URL
    yielded (the same user and database, the pooler's port) also reaches the test
    database pytest-django creates. ``SHOW STATS`` and friends answer on the ``pgbouncer``
    admin database for the same user. PgBouncer refuses to run as root, so as root it
    runs as the ``postgres`` system user, like the cluster.
    """
    binary = _pgbouncer_bin()
    target = urlsplit(database_url)
    user = target.username or "postgres"
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = workdir / "pgbouncer.log"
    userlist = workdir / "userlist.txt"
    userlist.write_text(f'"{user}" ""\n')
    ini = workdir / "pgbouncer.ini"
    ini.write_text(
        "[databases]\n"
        f"* = host={target.hostname} port={target.port}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "auth_type = trust\n"
        f"auth_file = {userlist}\n"
        f"admin_users = {user}\n"
        f"stats_users = {user}\n"
        f"pool_mode = {pool_mode}\n"
        "max_client_conn = 400\n"
        "default_pool_size = 20\n"
        "ignore_startup_parameters = extra_float_digits\n"
        f"logfile = {log}\n"
        f"pidfile = {workdir / 'pgbouncer.pid'}\n"
    )
    log.touch()
    prefix: list[str] = []
    if _is_root():
        owner = pwd.getpwnam("postgres")
        for path in (workdir, log, userlist, ini):
            os.chown(path, owner.pw_uid, owner.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    out = workdir / "pgbouncer.out"
    with open(out, "ab") as handle:
        process = subprocess.Popen(
            [*prefix, binary, str(ini)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def ready() -> bool:
            with socket.socket() as sock:
                sock.settimeout(0.5)
                return sock.connect_ex(("127.0.0.1", port)) == 0

        _wait_for(ready, "PgBouncer", 30, process, out)
        yield urlunsplit(target._replace(netloc=f"{user}@127.0.0.1:{port}"))
    finally:
        _stop(process)


# --------------------------------------------------------------------------- Redis


def _redis_bin() -> str:
    path = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if path is None:
        apt_install("redis-server")
        path = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(path).exists():
        raise ServerUnavailable("redis-server is installed but was not found on PATH")
    return path


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """Start a Redis server in ``workdir`` (no persistence: it is a test broker)."""
    binary = _redis_bin()
    port = free_port()
    log = workdir / "redis.log"
    log.touch()
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(workdir),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.5)

        def ready() -> bool:
            try:
                return bool(client.ping())
            except redis.exceptions.ConnectionError:
                return False

        _wait_for(ready, "Redis", 30, process, log)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _stop(process)


# --------------------------------------------------------------------------- Celery worker

LANES = ("analyses", "panels", "reports", "webhooks", "ingest")
"""The Celery queues (config/settings.py, CELERY_LANE_NAMES); a test worker consumes all."""


@dataclass
class Worker:
    """A real ``celery worker`` process using the environment's broker and database."""

    process: subprocess.Popen[bytes]
    log: Path
    name: str

    def stop(self) -> None:
        _stop(self.process, signal.SIGTERM, timeout=30)

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool children)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def output(self) -> str:
        return _tail(self.log, 200)


def start_worker(
    workdir: Path,
    *,
    name: str = "worker",
    concurrency: int = 1,
    extra_env: dict[str, str] | None = None,
    timeout: float = 60,
    queues: tuple[str, ...] = LANES,
) -> Worker:
    """Start ``celery -A config worker`` on ``queues`` (every lane unless told) and wait
    until it answers a ping."""
    log = workdir / f"{name}-{time.monotonic_ns()}.log"
    env = {**os.environ, **(extra_env or {})}
    if not env.get("CELERY_BROKER_URL"):
        raise ServerUnavailable("start_worker needs CELERY_BROKER_URL (a real Redis)")
    # The node's host part is a name, not an address: the logs remove every IP address
    # (config/logfilters.py), so a worker named ...@127.0.0.1 never says "<node> ready."
    node = f"{name}-{os.getpid()}-{time.monotonic_ns()}@integration-tests"
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel=INFO",
                f"--concurrency={concurrency}",
                "--pool=prefork",
                "-Q",
                ",".join(queues),
                "-n",
                node,
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker = Worker(process=process, log=log, name=node)
    from config.celery import app

    broker = env["CELERY_BROKER_URL"]

    def ready() -> bool:
        try:
            if broker == app.conf.broker_url:
                return bool(app.control.ping(destination=[node], timeout=0.5))
            # A worker on a broker of its own (a test that isolates its tasks): this
            # process's app cannot ping it there, so wait for the worker's own word.
            return f"{node} ready." in log.read_text(errors="replace")
        except Exception:
            return False

    try:
        _wait_for(ready, "celery worker", timeout, process, log)
    except ServerUnavailable:
        worker.kill()
        raise
    return worker


# --------------------------------------------------------------------------- runner


@contextlib.contextmanager
def running_services(*, durable: bool = False, standby: bool = False) -> Iterator[dict[str, str]]:
    """PostgreSQL (a primary and, with ``standby``, a streaming hot standby of it) and
    Redis in a temporary directory; yields the environment to use (the test runner,
    :func:`main`, always starts the standby; benchmarks ask for it).

    The standby's URLs are exported as ``STANDBY_DATABASE_URL`` (superuser: pause and
    resume replay) and ``STANDBY_READER_URL`` (the read-only analyses role), not as
    ``DATABASE_REPLICA_URL``: the tests' own process writes in transactions the standby
    never sees, so only the processes a test starts for it read the standby.
    """
    workdir = Path(tempfile.mkdtemp(prefix="consultations-services-"))
    os.chmod(workdir, 0o755)
    try:
        with contextlib.ExitStack() as stack:
            db_url = stack.enter_context(postgres_server(_subdir(workdir, "pg"), durable=durable))
            redis_url = stack.enter_context(redis_server(_subdir(workdir, "redis")))
            env = {
                "DATABASE_URL": db_url,
                "CELERY_BROKER_URL": redis_url,
                "CACHE_URL": redis_url.rsplit("/", 1)[0] + "/1",
                "INTEGRATION_SERVICES": "1",
                "INTEGRATION_WORKDIR": str(workdir),
            }
            if standby:
                standby_url = stack.enter_context(
                    standby_server(_subdir(workdir, "standby"), db_url, durable=durable)
                )
                env["STANDBY_DATABASE_URL"] = standby_url
                env["STANDBY_READER_URL"] = as_reader(standby_url)
            yield env
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _subdir(workdir: Path, name: str) -> Path:
    path = workdir / name
    path.mkdir()
    os.chmod(path, 0o755)
    return path


def main(argv: list[str]) -> int:
    if "--" in argv:
        argv = argv[argv.index("--") + 1 :]
    if not argv:
        print("usage: python -m tests.servers -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    try:
        with running_services(standby=True) as env:
            print(
                "[servers] PostgreSQL at {DATABASE_URL} (standby {standby}), Redis at "
                "{CELERY_BROKER_URL}".format(
                    standby=env.get("STANDBY_DATABASE_URL", "none"), **env
                ),
                file=sys.stderr,
                flush=True,
            )
            return subprocess.run(argv, env={**os.environ, **env}, check=False).returncode
    except ServerUnavailable as exc:
        print(f"[servers] cannot start the test servers: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
