"""The pack's images, built here and run by a real containerd: ``pause``, ``patroni`` and ``chaos-daemon`` (with
Chaos Mesh's binaries from the shared testenv, tests/realservers.py) are built into the image cache
(``$CHAOSDB_IMAGE_CACHE``, else the default folder: kept between runs, so a second run takes them from there),
imported into a containerd this module starts on its own root, state and socket (CRI off), and run with
``ctr run``; the containerd is stopped and its folder removed at the end, and the module fails if a process or a
mount of it survives."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from chaosdb.core.commands import die_with_parent
from chaosdb.images.build import build_images
from chaosdb.images.containerd import import_image, present_images
from chaosdb.images.recipes import PATRONI_DATA_DIR, POSTGRES_UID
from tests.polling import poll
from tests.realservers import real_binaries

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="building root file systems and running containerd need root"),
]

#: Chaos Mesh's binaries the chaos-daemon image takes (the testenv names cm-pause so)
CHAOS_DAEMON_BINARIES = ["chaos-daemon", "cdh", "nsexec", "libnsenter.so", "cm-pause", "memStress"]
NAMESPACE = "chaosdb-test"
CONTAINERD_CONFIG = """\
version = 2
root = "{folder}/root"
state = "{folder}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = "{folder}/containerd.sock"

[ttrpc]
  address = "{folder}/containerd.sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{folder}/opt"
"""


def _require(*tools: str) -> None:
    """Skip (fail when real servers are required) unless every tool is installed."""
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        why = (f"{', '.join(missing)} not installed (apt-get install -y mmdebstrap containerd runc gcc libc6-dev): "
               "the images are built with mmdebstrap and cc and run by containerd")
        if os.environ.get("CHAOSDB_REQUIRE_REAL_SERVERS"):
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The three images, built (or taken from the image cache)."""
    _require("mmdebstrap", "cc")
    bin_dir = Path(real_binaries(tmp_path_factory, CHAOS_DAEMON_BINARIES))
    return {b.name: b for b in build_images(["pause", "patroni", "chaos-daemon"], bin_dir=bin_dir)}, bin_dir


def _mounts_under(folder: Path) -> list[str]:
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == str(folder) or point.startswith(f"{folder}/"):
            found.append(point)
    return found


def _processes_naming(text: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return [pid for pid in found if pid != os.getpid()]


#: folders of the host a containerd and ctr may create outside their own (removed afterwards when this module
#: created them and they are empty)
_HOST_FOLDERS = [Path("/run/containerd/s"), Path("/run/containerd/runc"), Path("/run/containerd/fifo"),
                 Path("/run/containerd")]


@pytest.fixture(scope="module")
def containerd_socket():
    """A containerd of this module's own (its root, state, socket and opt folder in a temp folder; CRI off)."""
    _require("containerd", "ctr", "runc", "containerd-shim-runc-v2")
    existed = {p for p in _HOST_FOLDERS if p.exists()}
    folder = Path(tempfile.mkdtemp(prefix="chaosdb-ctd-", dir="/tmp"))  # short: a socket path has 107 bytes at most
    (folder / "config.toml").write_text(CONTAINERD_CONFIG.format(folder=folder))
    socket = folder / "containerd.sock"
    with open(folder / "containerd.log", "wb") as log:
        daemon = subprocess.Popen(["containerd", "--config", str(folder / "config.toml")], stdout=log,
                                  stderr=subprocess.STDOUT, preexec_fn=die_with_parent(signal.SIGTERM))
    try:
        up = poll(lambda: socket.exists() and _ctr(socket, "version", check=False).returncode == 0, timeout=60)
        assert up, f"containerd did not answer: {(folder / 'containerd.log').read_text()[-2000:]}"
        yield socket
    finally:
        for task in _ctr(socket, "tasks", "ls", "-q", check=False).stdout.split():
            _ctr(socket, "tasks", "kill", "-s", "SIGKILL", task, check=False)
        for container in _ctr(socket, "containers", "ls", "-q", check=False).stdout.split():
            _ctr(socket, "tasks", "delete", "-f", container, check=False)
            _ctr(socket, "containers", "delete", container, check=False)
        daemon.terminate()
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        left = _processes_naming(str(socket))
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        mounts = _mounts_under(folder)
        for point in reversed(mounts):
            subprocess.run(["umount", "-l", point], check=False)
        shutil.rmtree(folder, ignore_errors=True)
        for path in _HOST_FOLDERS:
            if path not in existed and path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        assert not left, f"containerd processes left behind: {left}"
        assert not mounts, f"mounts left behind: {mounts}"


def _ctr(socket: Path, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ctr", "-a", str(socket), "-n", NAMESPACE, *args], capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert done.returncode == 0, f"ctr {' '.join(args)}: {done.stderr}{done.stdout}"
    return done


@pytest.fixture(scope="module")
def imported(built, containerd_socket):
    """The images, imported into the module's containerd."""
    images, _ = built
    return {name: import_image(b.archive, containerd_socket, NAMESPACE) for name, b in images.items()}


def _run_argv(socket: Path, name: str, reference: str, *args: str) -> list[str]:
    """``ctr run --rm`` of *reference* as container *name* (*args* replace the image's whole command line):
    runc's state and the FIFOs in the containerd's folder, the container's cgroup named after it (runc removes
    it with the container)."""
    return ["ctr", "-a", str(socket), "-n", NAMESPACE, "run", "--rm", "--fifo-dir", str(socket.parent / "fifo"),
            "--runc-root", str(socket.parent / "runc"), "--cgroup", "", reference, name, *args]


def _run(socket: Path, reference: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a container of *reference* to its end; the cgroup it had is gone afterwards."""
    name = f"chaosdb-test-{os.getpid()}-{time.monotonic_ns()}"
    done = subprocess.run(_run_argv(socket, name, reference, *args), capture_output=True, text=True,
                          timeout=timeout)
    assert not list(Path("/sys/fs/cgroup").glob(f"*/{name}")), "the container's cgroup is left"
    return done


def test_a_second_build_of_unchanged_recipes_comes_from_the_cache(built):
    images, bin_dir = built
    again = {b.name: b for b in build_images(list(images), bin_dir=bin_dir)}
    for name, image in images.items():
        assert again[name].cached and again[name].manifest_digest == image.manifest_digest, name
    print({name: {"first_s": b.seconds, "cached_first": b.cached, "again_s": again[name].seconds,
                  "archive_mb": round(b.archive_bytes / 1e6, 1)} for name, b in images.items()})


def test_the_images_are_imported_once_and_listed_by_reference(built, containerd_socket, imported):
    images, _ = built
    listed = present_images(containerd_socket, NAMESPACE)
    for name, image in images.items():
        assert imported[name]["imported"] and imported[name]["reference"] == image.reference
        assert listed[image.reference] == image.manifest_digest
        assert not import_image(image.archive, containerd_socket, NAMESPACE)["imported"], "the second is skipped"
    assert set(_ctr(containerd_socket, "images", "ls", "-q").stdout.split()) >= {b.reference for b in images.values()}


def test_the_pause_image_runs_until_sigterm(built, containerd_socket, imported):
    images, _ = built
    name = f"chaosdb-pause-{os.getpid()}"
    runner = subprocess.Popen(_run_argv(containerd_socket, name, images["pause"].reference),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        running = poll(lambda: any(line.split()[:1] == [name] and "RUNNING" in line
                                   for line in _ctr(containerd_socket, "tasks", "ls").stdout.splitlines()), 60)
        assert running, "the pause container did not start"
        time.sleep(0.5)
        assert runner.poll() is None, "pause must wait for a signal"
        _ctr(containerd_socket, "tasks", "kill", "-s", "SIGTERM", name)
        out, _ = runner.communicate(timeout=60)
        assert runner.returncode == 0 and "stopping on signal 15" in out
        assert name not in _ctr(containerd_socket, "containers", "ls", "-q").stdout.split()
        assert not list(Path("/sys/fs/cgroup").glob(f"*/{name}")), "the container's cgroup is left"
    finally:
        runner.kill()
        runner.wait()


def test_the_patroni_image_runs_postgres_15_and_patroni_as_postgres_with_its_data_folder(built, containerd_socket,
                                                                                        imported):
    images, _ = built
    # PostgreSQL started on a socket in /tmp: Debian's default socket folder is not in the image
    script = (f"id; ls -ldn {PATRONI_DATA_DIR}; patroni --version; postgres --version; "
              "python3 -c 'import patroni.dcs.kubernetes' && echo kubernetes-dcs-ok; "
              "initdb -D /tmp/pg -A trust >/dev/null && pg_ctl -D /tmp/pg -o '-k /tmp -c listen_addresses=' -w "
              "-l /tmp/pg.log start >/dev/null && psql -h /tmp -d postgres -Atc 'select 40 + 2' && "
              "pg_ctl -D /tmp/pg -m fast -w stop >/dev/null")
    done = _run(containerd_socket, images["patroni"].reference, "/bin/sh", "-c", script)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert f"uid={POSTGRES_UID}(postgres) gid={POSTGRES_UID}(postgres)" in out
    assert f"drwx------ 2 {POSTGRES_UID} {POSTGRES_UID}" in out and "patroni 3." in out
    assert "postgres (PostgreSQL) 15." in out and "kubernetes-dcs-ok" in out and "\n42\n" in out
    packages = images["patroni"].packages
    assert packages["postgresql-15"].startswith("15.") and "patroni" in packages


def test_the_chaos_daemon_image_runs_the_daemon_and_the_tools_it_calls(built, containerd_socket, imported):
    images, _ = built
    script = ("chaos-daemon --help 2>&1 | grep -- -grpc-port; "
              "for t in stress-ng iptables ipset tc nsexec cdh pause memStress; do command -v $t || exit 3; done; "
              "stress-ng --version && iptables -V && ipset version | head -1 && tc -V && nsexec --help | head -3 && "
              "LD_PRELOAD=/usr/local/lib/libnsenter.so true && echo libnsenter-ok")
    done = _run(containerd_socket, images["chaos-daemon"].reference, "/bin/sh", "-c", script)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for seen in ("-grpc-port", "stress-ng, version", "iptables v", "ipset v", "iproute2", "nsexec 0.", "libnsenter-ok"):
        assert seen in out, (seen, out)
    assert {"stress-ng", "iptables", "ipset", "iproute2"} <= set(images["chaos-daemon"].packages)
