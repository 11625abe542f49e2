"""The images this pack builds, as data: each recipe is a stack of layer specifications (a Debian root file system,
files the user brings in ``--bin-dir``, a program compiled here) and the config of its containers.

* ``pause``: the pack's own static pause program, the only file of the image (containerd's CRI ``sandbox_image``);
* ``chaos-daemon``: Chaos Mesh's daemon and its helpers on Debian with the tools it runs (stress-ng, iptables,
  ipset, tc);
* ``patroni``: PostgreSQL 15 and Patroni from Debian, run as the ``postgres`` user (uid and gid
  :data:`POSTGRES_UID`), data in :data:`PATRONI_DATA_DIR`;
* ``chaosdb``: the pack itself, its wheel with the extras :data:`PACK_EXTRAS` in the virtualenv ``/opt/venv`` on
  Debian's Python, every Python package pinned by the shipped constraints, run as the ``chaosdb`` user (uid and
  gid :data:`CHAOSDB_UID`). Its wheel is the user's (``--wheel``) or built from the source checkout the builder
  runs from (:mod:`chaosdb.images.packwheel`);
* ``litmus-operator`` and ``litmus-runner``: LitmusChaos's chaos-operator and chaos-runner, each its static binary
  alone (from ``--bin-dir``), run as ``nobody`` (65534) as upstream's images do;
* ``litmus-go-runner``: litmus-go's ``experiments`` binary in :data:`LITMUS_GO_DIR` on Debian's essential packages
  (a ChaosExperiment runs ``/bin/bash -c "./experiments -name <fault>"`` there), run as the ``litmus`` user (uid and
  gid :data:`LITMUS_UID`).

:data:`PLANNED` names images that have a place but no recipe yet (none now).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import chaosdb
from chaosdb.core.errors import ChaosDBError
from chaosdb.images.oci import DEFAULT_PATH, ImageConfig

__all__ = ["REGISTRY", "DEBIAN_SUITE", "POSTGRES_UID", "PATRONI_DATA_DIR", "CHAOSDB_UID", "CHAOSDB_HOME_DIR",
           "VENV_DIR", "PACK_EXTRAS", "LITMUS_UID", "LITMUS_GO_DIR", "LocalWheel", "DebianRootfs", "BinDirFile", "BinDirFiles", "StaticProgram",
           "LayerSpec", "Recipe", "RECIPES", "PLANNED", "recipe", "pack_version"]

#: the registry part of every reference: a name no registry answers to, so nobody pulls these by mistake
REGISTRY = "chaosdb.local"
#: the Debian release of the root file systems
DEBIAN_SUITE = "bookworm"
#: uid and gid of the ``postgres`` user of the ``patroni`` image (fixed, so that a pod's ``runAsUser`` and
#: ``fsGroup`` can name it)
POSTGRES_UID = 999
#: the ``patroni`` image's data folder: empty, owned by ``postgres``, mode 0700 (mount the volume here)
PATRONI_DATA_DIR = "/var/lib/postgresql/data"
#: PostgreSQL 15's programs in Debian (not on Debian's PATH)
POSTGRES_BIN_DIR = "/usr/lib/postgresql/15/bin"
#: uid and gid of the ``chaosdb`` user of the ``chaosdb`` image (the shipped game-day CronJob runs as it)
CHAOSDB_UID = 10001
#: the ``chaosdb`` user's home and the image's working folder
CHAOSDB_HOME_DIR = "/home/chaosdb"
#: the virtualenv the Python packages of an image go into
VENV_DIR = "/opt/venv"
#: the extras of the pack's wheel in the ``chaosdb`` image: what a game day inside Kubernetes runs (PostgreSQL
#: probes and actions, the TPC-C load, the report, the Kubernetes activities, chaosdb serve)
PACK_EXTRAS = ("postgres", "load", "report", "k8s", "serve")
#: uid and gid of the ``litmus`` user of the ``litmus-go-runner`` image (upstream's go-runner image runs as 2000)
LITMUS_UID = 2000
#: the ``litmus-go-runner`` image's working folder, where ``experiments`` is: upstream's ChaosExperiments run
#: ``./experiments`` relative to it (the Job's container sets no working folder of its own)
LITMUS_GO_DIR = "/litmus"


def pack_version() -> str:
    """The pack's version: every image's tag."""
    return str(chaosdb.__version__)


@dataclass(frozen=True)
class LocalWheel:
    """A wheel file on this machine (*path*) installed into an image's virtualenv with its *extras*. Its content,
    not its path, is part of the layer's key."""

    path: str
    extras: tuple[str, ...] = ()


@dataclass(frozen=True)
class DebianRootfs:
    """A Debian root file system made by ``mmdebstrap``: *variant* plus *packages* (and what they depend on, no
    recommends), with shell hooks run with the root folder as ``$1`` after the essential packages
    (*essential_hooks*) and at the end (*customize_hooks*).

    Python packages go into the virtualenv ``/opt/venv`` (the packages must then include ``python3-venv``):
    *pip_requirements* and the local *wheels* with what they depend on, each version chosen within
    *pip_constraints*; this machine's pip downloads their wheels for the root file system's Python and glibc, and
    the image's own pip installs them from that folder only. Every package downloaded must be pinned, as
    ``name==version``, by *pip_requirements* or *pip_constraints*.

    *pack_extras* (not ``None``) puts the pack's own wheel in with those extras, within the constraints shipped
    for the ``chaosdb`` image: :func:`chaosdb.images.packwheel.with_pack` fills in *wheels* and *pip_constraints*
    when the wheel is known (the builder refuses such a layer until then)."""

    packages: tuple[str, ...]
    suite: str = DEBIAN_SUITE
    variant: str = "essential"
    essential_hooks: tuple[str, ...] = ()
    customize_hooks: tuple[str, ...] = ()
    pip_requirements: tuple[str, ...] = ()
    pip_constraints: tuple[str, ...] = ()
    wheels: tuple[LocalWheel, ...] = ()
    pack_extras: tuple[str, ...] | None = None


@dataclass(frozen=True)
class BinDirFile:
    """A file the user brings in ``--bin-dir`` (the first of *names* found there), put at *target*."""

    target: str
    names: tuple[str, ...]
    mode: int = 0o755


@dataclass(frozen=True)
class BinDirFiles:
    """A layer of files from ``--bin-dir``."""

    files: tuple[BinDirFile, ...]


@dataclass(frozen=True)
class StaticProgram:
    """A C program shipped with the pack (*source*, relative to the shipped images folder) compiled here as a
    static binary and put at *target*."""

    source: str
    target: str


#: what one layer of a recipe is made from
LayerSpec = Union[DebianRootfs, BinDirFiles, StaticProgram]


@dataclass(frozen=True)
class Recipe:
    """An image: its name, a one-line summary, its layers (bottom first) and its containers' config."""

    name: str
    summary: str
    layers: tuple[LayerSpec, ...]
    config: ImageConfig

    def reference(self, version: str | None = None) -> str:
        """``chaosdb.local/<name>:<version>`` (the pack's version unless another is given)."""
        return f"{REGISTRY}/{self.name}:{version or pack_version()}"

    def debian_packages(self) -> tuple[str, ...]:
        """The Debian packages the recipe names (their dependencies come with them)."""
        return tuple(p for layer in self.layers if isinstance(layer, DebianRootfs) for p in layer.packages)

    def bin_dir_files(self) -> tuple[BinDirFile, ...]:
        """The files the recipe needs from ``--bin-dir``."""
        return tuple(f for layer in self.layers if isinstance(layer, BinDirFiles) for f in layer.files)

    def needs_pack_wheel(self) -> bool:
        """Whether the image holds the pack's own wheel (given with ``--wheel``, or built from the checkout)."""
        return any(isinstance(layer, DebianRootfs) and layer.pack_extras is not None for layer in self.layers)


def _labels(name: str, summary: str) -> dict[str, str]:
    return {"org.opencontainers.image.title": name, "org.opencontainers.image.description": summary,
            "org.opencontainers.image.vendor": "chaostoolkit-db"}


_PAUSE_SUMMARY = "the pod sandbox's pause process (chaostoolkit-db's own static C program)"
_CHAOS_DAEMON_SUMMARY = "Chaos Mesh's chaos-daemon with nsexec, cdh, cm-pause, memStress, stress-ng, iptables, ipset, tc"
_PATRONI_SUMMARY = "PostgreSQL 15 and Patroni from Debian, run as postgres"
_LITMUS_OPERATOR_SUMMARY = "LitmusChaos's chaos-operator (static binary alone), run as nobody"
_LITMUS_RUNNER_SUMMARY = "LitmusChaos's chaos-runner (static binary alone), run as nobody"
_LITMUS_GO_RUNNER_SUMMARY = (f"litmus-go's experiments binary in {LITMUS_GO_DIR} on Debian's essential packages "
                             "(bash), run as litmus")
_CHAOSDB_SUMMARY = (f"chaostoolkit-db with its {','.join(PACK_EXTRAS)} extras and chaostoolkit in {VENV_DIR} on "
                    "Debian's Python, run as chaosdb")

_POSTGRES_USER_HOOK = (
    f"grep -q '^postgres:' \"$1/etc/group\" || echo 'postgres:x:{POSTGRES_UID}:' >> \"$1/etc/group\"; "
    f"grep -q '^postgres:' \"$1/etc/passwd\" || echo 'postgres:x:{POSTGRES_UID}:{POSTGRES_UID}:"
    "PostgreSQL administrator:/var/lib/postgresql:/bin/bash' >> \"$1/etc/passwd\"")
_NO_MAIN_CLUSTER_HOOK = ("mkdir -p \"$1/etc/postgresql-common/createcluster.d\" && echo 'create_main_cluster = false' "
                         "> \"$1/etc/postgresql-common/createcluster.d/chaosdb-no-main-cluster.conf\"")
#: no cluster of Debian's own, no snakeoil key made at build time (random, so every build would differ, and the same
#: private key in every container), the empty data folder
_PATRONI_FOLDERS_HOOK = (
    "rm -rf \"$1/etc/postgresql/15\" \"$1/var/lib/postgresql/15\"; "
    "rm -f \"$1/etc/ssl/private/ssl-cert-snakeoil.key\" \"$1/etc/ssl/certs/ssl-cert-snakeoil.pem\"; "
    "find \"$1/etc/ssl/certs\" -lname ssl-cert-snakeoil.pem -delete; "
    f"install -d -o {POSTGRES_UID} -g {POSTGRES_UID} -m 0700 \"$1{PATRONI_DATA_DIR}\"")

#: the ``chaosdb`` user and group, its home owned by it (a pod run as another uid still has /tmp: CHAOSDB_HOME)
_CHAOSDB_USER_HOOK = (
    f"grep -q '^chaosdb:' \"$1/etc/group\" || echo 'chaosdb:x:{CHAOSDB_UID}:' >> \"$1/etc/group\"; "
    f"grep -q '^chaosdb:' \"$1/etc/passwd\" || echo 'chaosdb:x:{CHAOSDB_UID}:{CHAOSDB_UID}:"
    f"chaostoolkit-db:{CHAOSDB_HOME_DIR}:/bin/sh' >> \"$1/etc/passwd\"; "
    f"install -d -o {CHAOSDB_UID} -g {CHAOSDB_UID} -m 0755 \"$1{CHAOSDB_HOME_DIR}\"")

#: the ``litmus`` user and group, its home the experiments' working folder, owned by it
_LITMUS_USER_HOOK = (
    f"grep -q '^litmus:' \"$1/etc/group\" || echo 'litmus:x:{LITMUS_UID}:' >> \"$1/etc/group\"; "
    f"grep -q '^litmus:' \"$1/etc/passwd\" || echo 'litmus:x:{LITMUS_UID}:{LITMUS_UID}:"
    f"LitmusChaos experiments:{LITMUS_GO_DIR}:/bin/bash' >> \"$1/etc/passwd\"; "
    f"install -d -o {LITMUS_UID} -g {LITMUS_UID} -m 0755 \"$1{LITMUS_GO_DIR}\"")
#: a binary with no folder of its own above it: a layer holds no folders, and containerd makes a missing parent
#: folder with mode 0700 (root only), which a container run as another user could not enter
_NOBODY = "65534:65534"

RECIPES: dict[str, Recipe] = {
    "pause": Recipe(
        "pause", _PAUSE_SUMMARY,
        (StaticProgram("pause/pause.c", "/pause"),),
        ImageConfig(entrypoint=("/pause",), env=(), user="65535:65535", labels=_labels("pause", _PAUSE_SUMMARY))),
    "chaos-daemon": Recipe(
        "chaos-daemon", _CHAOS_DAEMON_SUMMARY,
        (DebianRootfs(("iproute2", "iptables", "ipset", "stress-ng")),
         BinDirFiles((BinDirFile("/usr/local/bin/chaos-daemon", ("chaos-daemon",)),
                      BinDirFile("/usr/local/bin/cdh", ("cdh",)),
                      BinDirFile("/usr/local/bin/nsexec", ("nsexec",)),
                      BinDirFile("/usr/local/lib/libnsenter.so", ("libnsenter.so",), 0o644),
                      BinDirFile("/usr/local/bin/pause", ("cm-pause", "pause")),
                      BinDirFile("/usr/local/bin/memStress", ("memStress",))))),
        ImageConfig(entrypoint=("/usr/local/bin/chaos-daemon",),
                    labels=_labels("chaos-daemon", _CHAOS_DAEMON_SUMMARY))),
    "patroni": Recipe(
        "patroni", _PATRONI_SUMMARY,
        (DebianRootfs(("postgresql-15", "patroni"), essential_hooks=(_POSTGRES_USER_HOOK, _NO_MAIN_CLUSTER_HOOK),
                      customize_hooks=(_PATRONI_FOLDERS_HOOK,)),),
        ImageConfig(cmd=("/usr/bin/patroni",),
                    env=(f"{DEFAULT_PATH}:{POSTGRES_BIN_DIR}", "LANG=C.UTF-8", f"PGDATA={PATRONI_DATA_DIR}"),
                    working_dir="/var/lib/postgresql", user=f"{POSTGRES_UID}:{POSTGRES_UID}",
                    labels=_labels("patroni", _PATRONI_SUMMARY))),
    "chaosdb": Recipe(
        "chaosdb", _CHAOSDB_SUMMARY,
        # libstdc++6: manylinux wheels may link to it and do not bring it (greenlet for locust, matplotlib's parts)
        (DebianRootfs(("python3", "python3-venv", "ca-certificates", "libstdc++6"),
                      essential_hooks=(_CHAOSDB_USER_HOOK,), pack_extras=PACK_EXTRAS),),
        ImageConfig(cmd=("chaos", "--help"),
                    env=(f"PATH={VENV_DIR}/bin:{DEFAULT_PATH.partition('=')[2]}", "LANG=C.UTF-8",
                         "PYTHONUNBUFFERED=1", "CHAOSDB_HOME=/tmp/chaosdb"),
                    working_dir=CHAOSDB_HOME_DIR, user=f"{CHAOSDB_UID}:{CHAOSDB_UID}",
                    labels=_labels("chaosdb", _CHAOSDB_SUMMARY))),
    "litmus-operator": Recipe(
        "litmus-operator", _LITMUS_OPERATOR_SUMMARY,
        (BinDirFiles((BinDirFile("/chaos-operator", ("litmus-chaos-operator", "chaos-operator")),)),),
        ImageConfig(entrypoint=("/chaos-operator",), env=(), user=_NOBODY,
                    labels=_labels("litmus-operator", _LITMUS_OPERATOR_SUMMARY))),
    "litmus-runner": Recipe(
        "litmus-runner", _LITMUS_RUNNER_SUMMARY,
        (BinDirFiles((BinDirFile("/chaos-runner", ("litmus-chaos-runner", "chaos-runner")),)),),
        ImageConfig(entrypoint=("/chaos-runner",), env=(), user=_NOBODY,
                    labels=_labels("litmus-runner", _LITMUS_RUNNER_SUMMARY))),
    "litmus-go-runner": Recipe(
        "litmus-go-runner", _LITMUS_GO_RUNNER_SUMMARY,
        (DebianRootfs((), essential_hooks=(_LITMUS_USER_HOOK,)),
         BinDirFiles((BinDirFile(f"{LITMUS_GO_DIR}/experiments", ("litmus-experiments", "experiments")),))),
        ImageConfig(env=(DEFAULT_PATH, "LANG=C.UTF-8"), working_dir=LITMUS_GO_DIR,
                    user=f"{LITMUS_UID}:{LITMUS_UID}",
                    labels=_labels("litmus-go-runner", _LITMUS_GO_RUNNER_SUMMARY))),
}

#: images that have a place here but no recipe yet, with what they will be (none now)
PLANNED: dict[str, str] = {}


def recipe(name: str) -> Recipe:
    """The recipe called *name*, or an error naming the known ones."""
    if name in RECIPES:
        return RECIPES[name]
    if name in PLANNED:
        raise ChaosDBError(f"image {name!r} has no recipe yet (planned: {PLANNED[name]}); buildable: "
                           f"{', '.join(RECIPES)}")
    raise ChaosDBError(f"no image recipe {name!r}; known: {', '.join(RECIPES)}")
