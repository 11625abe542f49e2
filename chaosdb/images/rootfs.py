"""Debian root file systems made by ``mmdebstrap``, written as an uncompressed tar.

The mirror is the one this machine's apt uses (``/etc/apt/sources.list.d/*.sources`` or ``sources.list``: a
local mirror or proxy keeps working), else mmdebstrap's default (``deb.debian.org``). Documentation, manual pages,
info pages and translations are never unpacked (dpkg ``path-exclude``; the copyright files stay), recommends are
not installed, and downloaded packages are kept in a folder offered to the next build, so two images that share
packages download them once.
"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from pathlib import Path

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import process_environment
from chaosdb.images.recipes import VENV_DIR, DebianRootfs
from chaosdb.images.tarlayer import image_path

__all__ = ["SOURCE_DATE_EPOCH", "TRIMMED_PATHS", "MERGED_USR_HOOKS", "hook_dirs", "host_debian_sources",
           "mirror_lines", "mmdebstrap_argv",
           "build_rootfs_tar", "keep_in_layer", "installed_packages", "installed_python_packages"]

#: the time the builds claim to happen at (2024-01-01T00:00:00Z): maintainer scripts that honour it write no
#: build time, and Python writes hash-checked byte code that does not depend on file times
SOURCE_DATE_EPOCH = 1704067200
#: what dpkg never unpacks into an image (``path-exclude`` / ``path-include`` options, in order)
TRIMMED_PATHS = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/lintian/*",
    "path-exclude=/usr/share/linda/*",
)
#: Debian release names a mirror entry of this machine may carry (its own release need not be the images')
_DEBIAN_SUITES = {"buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid", "oldoldstable", "oldstable",
                  "stable", "testing", "unstable", "experimental"}
#: files a build leaves that an image does not need (logs with build times, apt's caches, dpkg's backups) and the
#: building machine's name and resolver, which mmdebstrap copies in (a container runtime gives its own)
_LEFT_OUT = re.compile(r"^/(etc/resolv\.conf|etc/hostname|var/log/.+\.(log|xz|gz)|var/log/(apt|dpkg)/.+"
                       r"|var/cache/apt/.+\.bin"
                       r"|var/lib/apt/lists/.+|var/cache/debconf/.+-old|var/lib/dpkg/.+-old)$")
_SOURCES = Path("/etc/apt")
#: mmdebstrap's hooks that merge /usr with the small ``usr-is-merged`` package instead of ``usrmerge`` (which
#: brings perl, 20 MB)
MERGED_USR_HOOKS = Path("/usr/share/mmdebstrap/hooks/merged-usr")


def _stanzas(text: str) -> Iterable[dict[str, str]]:
    """The stanzas of a deb822 file (field names lower-cased)."""
    fields: dict[str, str] = {}
    last = ""
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if fields:
                yield fields
            fields, last = {}, ""
        elif line[:1].isspace() and last:
            fields[last] += " " + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            last = key.strip().lower()
            fields[last] = value.strip()


def _one_line_entries(text: str) -> Iterable[tuple[str, list[str], list[str]]]:
    """(uri, suites, components) of the ``deb`` lines of a sources.list."""
    for line in text.splitlines():
        words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb":
            yield words[1], [words[2]], words[3:]


def host_debian_sources(apt_dir: Path = _SOURCES) -> list[tuple[str, list[str], list[str]]]:
    """(uri, suites, components) of every enabled ``deb`` entry of this machine's apt that serves a Debian
    release (other vendors' and third-party repositories are left out)."""
    entries: list[tuple[str, list[str], list[str]]] = []
    parts = apt_dir / "sources.list.d"
    for path in sorted(parts.glob("*.sources")) if parts.is_dir() else []:
        for stanza in _stanzas(path.read_text(errors="replace")):
            if "deb" in stanza.get("types", "").split() and stanza.get("enabled", "yes").lower() != "no":
                for uri in stanza.get("uris", "").split():
                    entries.append((uri, stanza.get("suites", "").split(), stanza.get("components", "").split()))
    for path in [apt_dir / "sources.list", *sorted(parts.glob("*.list"))] if parts.is_dir() else \
            [apt_dir / "sources.list"]:
        if path.is_file():
            entries += list(_one_line_entries(path.read_text(errors="replace")))
    return [(uri, suites, components) for uri, suites, components in entries
            if any(s.split("-")[0].split("/")[0] in _DEBIAN_SUITES for s in suites)]


def mirror_lines(suite: str, apt_dir: Path = _SOURCES) -> list[str]:
    """One-line sources for *suite* on this machine's Debian mirrors: the archive (*suite* and
    *suite*-updates) and the security archive (*suite*-security); empty when this machine has no Debian mirror
    (mmdebstrap then uses its default)."""
    archive = security = ""
    for uri, suites, _ in host_debian_sources(apt_dir):
        if any(s.endswith("-security") or s.endswith("/updates") for s in suites):
            security = security or uri
        else:
            archive = archive or uri
    if not archive:
        return []
    lines = [f"deb {archive} {suite} main", f"deb {archive} {suite}-updates main"]
    return lines + ([f"deb {security} {suite}-security main"] if security else [])


def hook_dirs() -> list[str]:
    """The hook folders of mmdebstrap every build uses that this machine's mmdebstrap has."""
    return [str(MERGED_USR_HOOKS)] if MERGED_USR_HOOKS.is_dir() else []


def _guarded(hook: str) -> str:
    """A shell hook that refuses to run without its root folder argument (``$1``) or with ``/``."""
    return f'test -n "$1" && test "$1" != / || exit 1; set -e; {hook}'


#: prints the pip download options that select wheels for the root file system's Python (run inside it)
_TARGET_PYTHON = ("import platform, sys; v = '%d%d' % sys.version_info[:2]; m = platform.machine(); "
                  "glibc = int(platform.libc_ver()[1].split('.')[1]); "
                  "print(f'--python-version {v} --implementation cp --abi cp{v} --abi abi3 --abi none', "
                  "*(f'--platform manylinux_2_{n}_{m}' for n in range(glibc, 4, -1)))")


#: checks, with this machine's Python, that every wheel pip downloaded is pinned; its arguments: the download folder,
#: the pins file (``name==version`` lines), then the file names of the local wheels (pinned by their content)
_ALL_PINNED = ("import os, re, sys; folder, pins_file, *local = sys.argv[1:]; "
               "norm = lambda name: re.sub(r'[-_.]+', '-', name).lower(); "
               "pins = dict((norm(n), v.strip().lower()) for n, _, v in "
               "(line.partition('==') for line in open(pins_file).read().split())); "
               "loose = sorted(f for f in os.listdir(folder) if f.endswith('.whl') and f not in local "
               "and pins.get(norm(f.split('-')[0])) != f.split('-')[1].lower()); "
               "sys.exit('Python packages not pinned as NAME==VERSION (add them to the constraints): ' "
               "+ ', '.join(loose) if loose else None)")
_PINNED = re.compile(r"[A-Za-z0-9._-]+(\[[A-Za-z0-9,._-]+\])?==[^=\s]+")


def _pip_hook(spec: DebianRootfs) -> str:
    """Download the wheels of *spec*'s requirements and local wheels (and of what they need, within its
    constraints) with this machine's pip, whose configuration (index, proxy, certificates) works here, for the root
    file system's Python; refuse any downloaded wheel that is not pinned; then install them from that folder only
    into the virtualenv ``/opt/venv``."""
    pins = spec.pip_requirements + spec.pip_constraints
    unpinned = [r for r in pins if not _PINNED.fullmatch(r)]
    if unpinned:
        raise ChaosDBError(f"Python packages of an image must be pinned as NAME==VERSION: {', '.join(unpinned)}")
    if spec.pack_extras is not None and not spec.wheels:
        raise ChaosDBError("a root file system with the pack's wheel needs that wheel (chaosdb.images.packwheel."
                           "with_pack) before it is built")
    wanted = " ".join(shlex.quote(r) for r in spec.pip_requirements)
    names = [Path(w.path).name for w in spec.wheels]
    extras = [f"[{','.join(w.extras)}]" if w.extras else "" for w in spec.wheels]
    downloaded = " ".join(f'"$1"{shlex.quote(f"/tmp/chaosdb-wheels/{n}{e}")}' for n, e in zip(names, extras, strict=True))
    installed = " ".join(shlex.quote(f"/tmp/chaosdb-wheels/{n}{e}") for n, e in zip(names, extras, strict=True))
    copies = "".join(f'cp -- {shlex.quote(w.path)} "$1/tmp/chaosdb-wheels/"; ' for w in spec.wheels)
    # a constraints file takes no extras: psycopg[binary]==3.2.3 pins psycopg
    constraints = " ".join(shlex.quote(re.sub(r"\[[^]]*\]", "", p)) for p in pins)
    return (f'target=$(chroot "$1" python3 -c {shlex.quote(_TARGET_PYTHON)}); mkdir -p "$1/tmp/chaosdb-wheels"; '
            f"{copies}printf '%s\\n' {constraints} > \"$1/tmp/chaosdb-pins.txt\"; "
            f"{shlex.quote(sys.executable)} -m pip download --quiet --disable-pip-version-check --only-binary=:all: "
            f'$target --dest "$1/tmp/chaosdb-wheels" -c "$1/tmp/chaosdb-pins.txt" {wanted} {downloaded}; '
            f'{shlex.quote(sys.executable)} -c {shlex.quote(_ALL_PINNED)} "$1/tmp/chaosdb-wheels" '
            f'"$1/tmp/chaosdb-pins.txt" {" ".join(shlex.quote(n) for n in names)}; '
            f"chroot \"$1\" python3 -m venv {VENV_DIR}; "
            f"chroot \"$1\" {VENV_DIR}/bin/pip --isolated install --quiet --disable-pip-version-check --no-cache-dir "
            f"--no-index --find-links /tmp/chaosdb-wheels -c /tmp/chaosdb-pins.txt {wanted} {installed}; "
            'rm -rf "$1/tmp/chaosdb-wheels" "$1/tmp/chaosdb-pins.txt"')


def mmdebstrap_argv(spec: DebianRootfs, output: Path, mirrors: list[str], deb_cache: Path | None = None) -> list[str]:
    """The ``mmdebstrap`` command that writes *spec*'s root file system as the tar *output*."""
    argv = ["mmdebstrap", f"--variant={spec.variant}", "--format=tar",
            "--aptopt=APT::Install-Recommends \"false\"", "--aptopt=APT::Install-Suggests \"false\""]
    if spec.packages:
        argv.append("--include=" + ",".join(spec.packages))
    argv += [f"--dpkgopt={option}" for option in TRIMMED_PATHS]
    argv += [f"--hook-dir={folder}" for folder in hook_dirs()]
    if deb_cache is not None:  # offer earlier downloads, keep this build's for the next one
        cache = shlex.quote(str(deb_cache))
        argv += ["--skip=essential/unlink",
                 f"--setup-hook=mkdir -p {cache} \"$1/var/cache/apt/archives\"",
                 f"--setup-hook=sync-in {cache} /var/cache/apt/archives/",
                 f"--customize-hook=sync-out /var/cache/apt/archives {cache}"]
    argv += [f"--essential-hook={_guarded(hook)}" for hook in spec.essential_hooks]
    if spec.pip_requirements or spec.wheels or spec.pack_extras is not None:
        argv.append(f"--customize-hook={_guarded(_pip_hook(spec))}")
    argv += [f"--customize-hook={_guarded(hook)}" for hook in spec.customize_hooks]
    return argv + [spec.suite, str(output), *mirrors]


def _interrupt(proc: subprocess.Popen[bytes]) -> None:
    """Stop mmdebstrap the way that lets it unmount and remove its chroot (SIGINT), killing it only when it does not
    end within two minutes."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def build_rootfs_tar(spec: DebianRootfs, output: Path, log: Path, deb_cache: Path | None = None,
                     timeout: float = 1800.0) -> Path:
    """Run ``mmdebstrap`` for *spec* into the tar *output*, its messages into *log*; an error with its last lines
    when it fails."""
    argv = mmdebstrap_argv(spec, output, mirror_lines(spec.suite), deb_cache)
    env = process_environment(SOURCE_DATE_EPOCH=str(SOURCE_DATE_EPOCH), LC_ALL="C.UTF-8")
    with open(log, "ab") as messages:
        messages.write(("$ " + shlex.join(argv) + "\n").encode())
        messages.flush()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=messages, stderr=subprocess.STDOUT, env=env)
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _interrupt(proc)
            raise ChaosDBError(f"mmdebstrap did not finish within {timeout:.0f} s (messages: {log})") from None
        except BaseException:  # interrupted: mmdebstrap still takes its chroot down
            _interrupt(proc)
            raise
    if returncode != 0:
        # a failed hook's line repeats the whole hook: its start says which
        tail = [line if len(line) <= 300 else line[:300] + " ..."
                for line in log.read_text(errors="replace").splitlines() if line.strip()][-4:]
        raise ChaosDBError(f"mmdebstrap failed (exit {returncode}): {' / '.join(tail)} (messages: {log})")
    return output


def keep_in_layer(path: str) -> bool:
    """Whether a root file system's file belongs in the image (build logs, apt's lists and caches, dpkg's backup
    files do not)."""
    return not _LEFT_OUT.match(path)


def installed_packages(rootfs_tar: Path) -> dict[str, str]:
    """``{package: version}`` of what dpkg installed in a root file system tar (its ``var/lib/dpkg/status``)."""
    with tarfile.open(rootfs_tar, mode="r:") as tar:
        member = next((m for m in tar.getmembers()
                       if image_path(m.name) == "var/lib/dpkg/status" and m.isreg()), None)
        data = tar.extractfile(member) if member else None
        text = data.read().decode(errors="replace") if data else ""
    found = {}
    for stanza in _stanzas(text):
        if stanza.get("status", "").endswith(" installed") and "package" in stanza:
            found[stanza["package"]] = stanza.get("version", "")
    return dict(sorted(found.items()))


_DIST_INFO = re.compile(r"^opt/venv/lib/python3\.[0-9]+/site-packages/([^/]+)-([^/-]+)\.dist-info/METADATA$")


def installed_python_packages(rootfs_tar: Path) -> dict[str, str]:
    """``{distribution: version}`` of what pip installed into the virtualenv ``/opt/venv`` of a root file system
    tar (the names of its ``.dist-info`` folders)."""
    with tarfile.open(rootfs_tar, mode="r:") as tar:
        found = [_DIST_INFO.match(image_path(m.name)) for m in tar.getmembers() if m.isreg()]
    return dict(sorted((m.group(1), m.group(2)) for m in found if m))
