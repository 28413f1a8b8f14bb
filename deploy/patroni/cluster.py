#!/usr/bin/env python3
"""A Patroni-managed PostgreSQL 15 cluster on loopback, for failover tests and trials (docs/ha.md "Failover").

One etcd and two or three PostgreSQL instances, each run by its own Patroni, all in one directory of their
own and on ports of their own: the machine's PostgreSQL (5432) is never touched. Debian's packages
(`apt-get install patroni etcd-server`, PostgreSQL 15 binaries in /usr/lib/postgresql/15/bin); standard
library only, so it runs with the system python3.

    deploy/patroni/cluster.py start [--dir DIR] [--members 3] [--async] [--pg-port 25432] [--haproxy-port 25430] ...
    deploy/patroni/cluster.py status|primary|url|switchover|kill-primary|stop [--dir DIR]

`start` waits until one member is the primary and every other streams from it (in synchronous mode: until
one is the synchronous standby), creates the database `gravimeta`, writes DIR/state.json and prints the
multi-host URL for gravimeta (the libpq form, `?host=...&host=...&target_session_attrs=read-write`).
`stop` ends every process it started (Patroni stops its PostgreSQL) and removes DIR unless --keep.
`kill-primary` SIGKILLs the primary's postmaster: with `primary_start_timeout: 0` its Patroni then fails
over to a standby instead of restarting it in place (docs/ha.md).

Run as root, Patroni and PostgreSQL run as the `postgres` user (PostgreSQL refuses root) and DIR is
handed to it. tests/support/patroni.py drives the same class from pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

BIN_DIR = os.environ.get("PATRONI_PG_BIN_DIR", "/usr/lib/postgresql/15/bin")
DATABASE = "gravimeta"
SUPERUSER = ("postgres", "postgres")  # loopback only, trust in pg_hba as well
REPLICATION = ("replicator", "replicator")
PATRONI_TTL, LOOP_WAIT, RETRY_TIMEOUT = 10, 1, 4  # loop_wait + 2 * retry_timeout <= ttl


@dataclass
class Member:
    name: str
    pg_port: int
    rest_port: int
    pid: int = 0  # Patroni's

    @property
    def rest(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"


@dataclass
class PatroniCluster:
    """The cluster's layout; `start()` brings it up, `stop()` takes it all down."""

    dir: Path
    members: list[Member]
    etcd_port: int = 22379
    synchronous: bool = True
    strict: bool = False
    scope: str = field(default_factory=lambda: f"gravimeta-{uuid.uuid4().hex[:8]}")
    etcd_pid: int = 0
    haproxy_port: int = 0  # 0: no HAProxy
    haproxy_pid: int = 0

    @classmethod
    def layout(cls, dir: Path, count: int = 3, pg_port: int = 25432, rest_port: int = 28008,
               etcd_port: int = 22379, synchronous: bool = True, strict: bool = False) -> PatroniCluster:
        members = [Member(f"pg{i}", pg_port + i, rest_port + i) for i in range(count)]
        return cls(Path(dir), members, etcd_port, synchronous, strict)

    # ---- state on disk (so that `stop` in another process finds the pids)
    def save(self) -> None:
        raw = asdict(self)
        raw["dir"] = str(self.dir)
        (self.dir / "state.json").write_text(json.dumps(raw, indent=2))

    @classmethod
    def load(cls, dir: Path) -> PatroniCluster:
        raw = json.loads((Path(dir) / "state.json").read_text())
        raw["dir"] = Path(raw["dir"])
        raw["members"] = [Member(**m) for m in raw["members"]]
        return cls(**raw)

    # ---- URLs
    def url(self, database: str = DATABASE, driver: str = "postgresql+psycopg") -> str:
        """gravimeta's store URL: every member as a host; libpq connects to the one that accepts writes."""
        hosts = "&".join(f"host=127.0.0.1:{m.pg_port}" for m in self.members)
        user, password = SUPERUSER
        return f"{driver}://{user}:{password}@/{database}?{hosts}&target_session_attrs=read-write&connect_timeout=2"

    def haproxy_url(self, database: str = DATABASE, driver: str = "postgresql+psycopg") -> str:
        """gravimeta's store URL through HAProxy, which sends connections only to the member whose Patroni
        REST /primary answers 200."""
        user, password = SUPERUSER
        return f"{driver}://{user}:{password}@127.0.0.1:{self.haproxy_port}/{database}?connect_timeout=2"

    def haproxy_config(self) -> str:
        """TCP proxy to the primary: each member is checked on its Patroni REST port (GET /primary: 200 only
        on the leader with a running primary); when a member is marked down, HAProxy closes the connections
        it holds to it, so clients' pools see them fail at once instead of talking to a demoted server."""
        servers = "\n".join(f"    server {m.name} 127.0.0.1:{m.pg_port} check port {m.rest_port}" for m in self.members)
        return f"""# written by deploy/patroni/cluster.py
global
    maxconn 1000

defaults
    mode tcp
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 2s

listen primary
    bind 127.0.0.1:{self.haproxy_port}
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
{servers}
"""

    def member_url(self, member: Member, database: str = DATABASE) -> str:
        user, password = SUPERUSER
        return f"postgresql+psycopg://{user}:{password}@127.0.0.1:{member.pg_port}/{database}"

    # ---- start
    def start(self, timeout: float = 90.0) -> PatroniCluster:
        self.dir.mkdir(parents=True, exist_ok=True)
        user = _service_user()
        if user:
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        self.save()
        try:
            self._start_etcd()
            for member in self.members:
                self._start_patroni(member, user)
            self.save()
            primary = self.wait_primary(timeout=timeout)
            self.wait_replicas(timeout=timeout)
            self.psql(primary, f"CREATE DATABASE {DATABASE}", database="postgres")
            if self.haproxy_port:
                self._start_haproxy()
        except BaseException:
            self.stop(remove=False)
            raise
        return self

    def _start_etcd(self) -> None:
        peer = f"http://127.0.0.1:{self.etcd_port + 1}"
        client = f"http://127.0.0.1:{self.etcd_port}"
        log = open(self.dir / "etcd.log", "ab")  # noqa: SIM115 (the child keeps it)
        proc = subprocess.Popen(
            [shutil.which("etcd") or "/usr/bin/etcd", "--name", "gm-etcd", "--data-dir", str(self.dir / "etcd"),
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"gm-etcd={peer}", "--initial-cluster-state", "new",
             "--initial-cluster-token", self.scope],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=_clean_env(self.dir))
        self.etcd_pid = proc.pid
        self.save()
        _wait(f"etcd on {client}", lambda: _http_status(f"{client}/health") == 200, 30)

    def _start_haproxy(self) -> None:
        config = self.dir / "haproxy.cfg"
        config.write_text(self.haproxy_config())
        log = open(self.dir / "haproxy.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen([shutil.which("haproxy") or "/usr/sbin/haproxy", "-db", "-f", str(config)],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=_clean_env(self.dir))
        self.haproxy_pid = proc.pid
        self.save()
        _wait("HAProxy routes to the primary", lambda: self._haproxy_ready(), 20)

    def _haproxy_ready(self) -> bool:
        """HAProxy starts with every server up until its checks say otherwise: ready once several new
        connections in a row reach a primary."""
        primary = self.primary()
        if primary is None:
            return False
        try:
            return all(self.psql(primary, "SELECT pg_is_in_recovery()", database="postgres",
                                 port=self.haproxy_port) == "f" for _ in range(2 * len(self.members)))
        except RuntimeError:
            return False

    def _start_patroni(self, member: Member, user: pwd.struct_passwd | None) -> None:
        config = self.dir / f"{member.name}.yml"
        config.write_text(json.dumps(self.patroni_config(member), indent=2))  # JSON is YAML
        log = open(self.dir / f"{member.name}.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen([shutil.which("patroni") or "/usr/bin/patroni", str(config)],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env=_clean_env(self.dir), cwd=self.dir,
                                user=user.pw_uid if user else None, group=user.pw_gid if user else None)
        member.pid = proc.pid

    def patroni_config(self, member: Member) -> dict:
        hba = ["local all all trust", "host all all 127.0.0.1/32 trust",
               f"host replication {REPLICATION[0]} 127.0.0.1/32 trust"]
        return {
            "scope": self.scope, "namespace": "/gravimeta/", "name": member.name,
            "log": {"level": "INFO"},
            "restapi": {"listen": f"127.0.0.1:{member.rest_port}", "connect_address": f"127.0.0.1:{member.rest_port}"},
            "etcd3": {"hosts": f"127.0.0.1:{self.etcd_port}"},
            "bootstrap": {
                "dcs": {
                    "ttl": PATRONI_TTL, "loop_wait": LOOP_WAIT, "retry_timeout": RETRY_TIMEOUT,
                    "maximum_lag_on_failover": 1048576,
                    # a crashed primary is failed over, not restarted in place (docs/ha.md); alone, it
                    # is restarted (Patroni's default)
                    "primary_start_timeout": 0 if len(self.members) > 1 else 300,
                    "synchronous_mode": self.synchronous, "synchronous_mode_strict": self.strict,
                    "postgresql": {"use_pg_rewind": True, "use_slots": True, "pg_hba": hba,
                                   "parameters": {"wal_level": "replica", "hot_standby": "on", "wal_log_hints": "on",
                                                  "max_wal_senders": 10, "max_replication_slots": 10,
                                                  "wal_keep_size": "64MB", "max_connections": 100}},
                },
                # bootstrap only: initdb and the standbys' base backups need not wait for the disk
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}, "no-sync"],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{member.pg_port}", "connect_address": f"127.0.0.1:{member.pg_port}",
                "data_dir": str(self.dir / member.name), "bin_dir": BIN_DIR,
                "pgpass": str(self.dir / f"{member.name}.pgpass"),
                "basebackup": ["no-sync", {"checkpoint": "fast"}],
                "authentication": {
                    "superuser": {"username": SUPERUSER[0], "password": SUPERUSER[1]},
                    "replication": {"username": REPLICATION[0], "password": REPLICATION[1]},
                    "rewind": {"username": SUPERUSER[0], "password": SUPERUSER[1]},
                },
                "parameters": {"unix_socket_directories": str(self.dir), "shared_buffers": "32MB"},
            },
            "tags": {"nofailover": False, "noloadbalance": False, "clonefrom": False, "nosync": False},
        }

    # ---- inspect
    def roles(self) -> dict[str, str]:
        """Member name -> role Patroni's REST API reports now ('primary', 'replica', ... or 'down')."""
        out = {}
        for m in self.members:
            status = _http_json(f"{m.rest}/patroni")
            out[m.name] = status.get("role", "?") if status else "down"
        return out

    def primary(self) -> Member | None:
        """The member whose REST /primary answers 200 (it holds the leader lock) and whose PostgreSQL takes a
        connection and is not in recovery. REST alone is not enough: after its postmaster died, Patroni
        answers /primary from its cached role until its next loop, and on through the crash recovery it runs
        before restarting PostgreSQL, seconds in all (docs/ha.md "Measured")."""
        for m in self.members:
            if _http_status(f"{m.rest}/primary") == 200 and self.writable(m):
                return m
        return None

    def writable(self, member: Member) -> bool:
        try:
            return self.psql(member, "SELECT pg_is_in_recovery()", database="postgres") == "f"
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    def wait_primary(self, timeout: float = 60.0, other_than: str | None = None) -> Member:
        def found() -> Member | None:
            p = self.primary()
            return p if p is not None and p.name != other_than else None
        return _wait("a primary" + (f" other than {other_than}" if other_than else ""), found, timeout)

    def cluster_info(self) -> dict:
        for m in self.members:
            info = _http_json(f"{m.rest}/cluster")
            if info:
                return info
        return {}

    def wait_replicas(self, timeout: float = 60.0, count: int | None = None) -> None:
        """Until `count` (default: all but the primary) members stream from the primary; in synchronous
        mode one of them is the synchronous standby."""
        want = len(self.members) - 1 if count is None else count

        def ready() -> bool:
            members = self.cluster_info().get("members", [])
            streaming = [m for m in members if m.get("role") in ("replica", "sync_standby")
                         and m.get("state") in ("streaming", "running") and m.get("lag", 0) == 0]
            if len(streaming) < want:
                return False
            return not self.synchronous or any(m.get("role") == "sync_standby" for m in members)
        _wait(f"{want} streaming standby(s)", ready, timeout)

    def psql(self, member: Member, sql: str, database: str = DATABASE, port: int | None = None) -> str:
        out = subprocess.run([f"{BIN_DIR}/psql", "-h", "127.0.0.1", "-p", str(port or member.pg_port), "-U", SUPERUSER[0],
                              "-d", database, "-tAXc", sql], capture_output=True, text=True, timeout=30,
                             env={**_clean_env(self.dir), "PGPASSWORD": SUPERUSER[1], "PGCONNECT_TIMEOUT": "2"})
        if out.returncode != 0:
            raise RuntimeError(f"psql on {member.name}: {out.stderr.strip()}")
        return out.stdout.strip()

    # ---- faults
    def postmaster_pid(self, member: Member) -> int | None:
        try:
            return int((self.dir / member.name / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill_postmaster(self, member: Member) -> int:
        """SIGKILL the member's postmaster (its backends die with it: they notice the postmaster is gone)."""
        pid = self.postmaster_pid(member)
        if pid is None:
            raise RuntimeError(f"{member.name} has no postmaster.pid")
        os.kill(pid, signal.SIGKILL)
        return pid

    def walsender_pids(self, primary: Member) -> list[int]:
        """The primary's WAL senders: SIGSTOP them and its standbys lag (a stopped WAL receiver would not
        do: the kernel still takes the stream into its socket buffer, and it reads that on SIGCONT)."""
        out = self.psql(primary, "SELECT pid FROM pg_stat_replication", database="postgres")
        return [int(pid) for pid in out.split()]

    def switchover(self, candidate: str | None = None) -> None:
        """A planned switchover through Patroni's REST API (what `patronictl switchover` sends)."""
        primary = self.primary()
        if primary is None:
            raise RuntimeError("no primary to switch over from")
        body = {"leader": primary.name, **({"candidate": candidate} if candidate else {})}
        req = urllib.request.Request(f"{primary.rest}/switchover", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()

    # ---- stop
    def stop(self, remove: bool = True, timeout: float = 20.0, kill: bool = False) -> None:
        """End every process started here: Patroni (SIGTERM: it stops its PostgreSQL), then whatever is
        left of each member's postmaster, then etcd. Bounded: SIGKILL after `timeout`. `kill`: SIGKILL
        everything at once (a test's throw-away cluster; the backends exit when their postmaster dies)."""
        for m in self.members:
            _signal(m.pid, signal.SIGKILL if kill else signal.SIGTERM)
            if kill:
                _signal(self.postmaster_pid(m) or 0, signal.SIGKILL)
        deadline = time.monotonic() + (0 if kill else timeout)
        for m in self.members:
            if not _gone(m.pid, deadline):
                _signal_group(m.pid, signal.SIGKILL)
            pm = self.postmaster_pid(m)
            if pm is not None:
                _signal(pm, signal.SIGQUIT)
                if not _gone(pm, time.monotonic() + (0 if kill else 5)):
                    _signal(pm, signal.SIGKILL)
        for pid in (self.haproxy_pid, self.etcd_pid):
            _signal(pid, signal.SIGKILL if kill else signal.SIGTERM)
            if not _gone(pid, time.monotonic() + 10):
                _signal(pid, signal.SIGKILL)
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)


def _service_user() -> pwd.struct_passwd | None:
    """As root, PostgreSQL must run as another user: Debian's `postgres`."""
    if os.geteuid() != 0:
        return None
    return pwd.getpwnam("postgres")


def _clean_env(home: Path) -> dict[str, str]:
    """Patroni runs on the system python3: no virtualenv or PYTHONPATH of the caller."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    keep["PATH"] = ":".join(p for p in keep.get("PATH", "/usr/bin:/bin").split(":") if "venv" not in p)
    return {**keep, "HOME": str(home)}


def _http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def _http_json(url: str) -> dict:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        try:
            return json.loads(e.read())
        except ValueError:
            return {}
    except (OSError, ValueError):
        return {}


def _wait(what, condition, timeout: float, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"{what}: not within {timeout:.0f}s")


def _signal(pid: int, sig: int) -> None:
    if pid:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _signal_group(pid: int, sig: int) -> None:
    if pid:
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _gone(pid: int, deadline: float) -> bool:
    """Whether `pid` has exited (reaped if it is our child; a zombie another parent has not reaped yet
    counts as exited) by `deadline`. Pid 0 (never started) has."""
    if not pid:
        return True
    while True:
        if _zombie(pid):
            return True
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return True
        except ChildProcessError:  # not our child: is it still there?
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "status", "primary", "url", "switchover", "kill-primary"])
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "gravimeta-patroni"))
    parser.add_argument("--members", type=int, default=3, choices=[2, 3])
    parser.add_argument("--async", dest="synchronous", action="store_false",
                        help="asynchronous standbys (default: synchronous_mode: true)")
    parser.add_argument("--strict", action="store_true", help="synchronous_mode_strict: true")
    parser.add_argument("--pg-port", type=int, default=25432)
    parser.add_argument("--rest-port", type=int, default=28008)
    parser.add_argument("--etcd-port", type=int, default=22379, help="etcd's client port; its peer port is the next one")
    parser.add_argument("--haproxy-port", type=int, default=0, help="start: also HAProxy on this port, to the primary")
    parser.add_argument("--keep", action="store_true", help="stop: leave the directory (logs, data) in place")
    args = parser.parse_args(argv)
    dir = Path(args.dir)
    if args.command == "start":
        if (dir / "state.json").exists():
            parser.error(f"{dir} holds a cluster already: `stop --dir {dir}` it first")
        cluster = PatroniCluster.layout(dir, args.members, args.pg_port, args.rest_port, args.etcd_port,
                                        args.synchronous, args.strict)
        cluster.haproxy_port = args.haproxy_port
        cluster.start()
        print(f"primary {cluster.wait_primary().name}; roles {cluster.roles()}")
        print(cluster.url())
        if cluster.haproxy_port:
            print(cluster.haproxy_url())
        return 0
    cluster = PatroniCluster.load(dir)
    if args.command == "stop":
        cluster.stop(remove=not args.keep)
    elif args.command == "status":
        print(json.dumps(cluster.cluster_info(), indent=2))
    elif args.command == "primary":
        p = cluster.primary()
        print(f"{p.name} 127.0.0.1:{p.pg_port}" if p else "none")
    elif args.command == "url":
        print(cluster.url())
        if cluster.haproxy_port:
            print(cluster.haproxy_url())
    elif args.command == "switchover":
        cluster.switchover()
        print(f"primary {cluster.wait_primary().name}")
    elif args.command == "kill-primary":
        p = cluster.wait_primary()
        print(f"SIGKILL postmaster {cluster.kill_postmaster(p)} of {p.name}")
        print(f"primary {cluster.wait_primary(other_than=p.name).name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
