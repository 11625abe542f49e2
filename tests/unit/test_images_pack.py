"""The ``chaosdb`` image (the pack itself) without mmdebstrap or a network: its recipe and config, the shipped pins
(exact, and covering what the pack needs on bookworm's Python), the wheel's content and the pins in its key, the
pip hook that installs it, the wheel found (given, or built from the checkout once per sources), the refusals when
no wheel can be had, and the Dockerfiles that make the same image with other tools."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from chaosdb.core.errors import ChaosDBError
from chaosdb.images import build, cache, packwheel, prereqs, recipes, rootfs
from chaosdb.shipped import shipped_dir

ROOT = Path(__file__).resolve().parents[2]
#: the markers of the image's Python: Debian bookworm's 3.11 on this machine's architecture
BOOKWORM_PYTHON = {"python_version": "3.11", "python_full_version": "3.11.2", "sys_platform": "linux",
                   "platform_system": "Linux", "platform_machine": os.uname().machine, "os_name": "posix",
                   "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def _wheel(folder: Path, payload: bytes = b"", name: str = "chaostoolkit-db", version: str | None = None) -> Path:
    """A small wheel of *name* at *version* (the pack's by default) holding *payload*."""
    version = version or recipes.pack_version()
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{stem}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr("payload.bin", payload)
    return path


def _mirror(monkeypatch) -> None:
    monkeypatch.setattr(rootfs, "mirror_lines", lambda suite, apt_dir=None: [f"deb http://mirror/debian {suite} main"])


def test_the_chaosdb_recipe_is_the_pack_in_a_venv_on_debians_python_run_as_10001(tmp_path):
    image = recipes.recipe("chaosdb")
    [layer] = image.layers
    assert isinstance(layer, recipes.DebianRootfs)
    assert {"python3", "python3-venv", "ca-certificates", "libstdc++6"} == set(layer.packages)
    assert layer.pack_extras == ("postgres", "load", "report", "k8s", "serve") == recipes.PACK_EXTRAS
    assert not layer.wheels and not layer.pip_requirements, "the wheel and the pins come when the image is built"
    assert image.needs_pack_wheel()
    assert not any(recipes.recipe(n).needs_pack_wheel() for n in ("pause", "chaos-daemon", "patroni"))
    config = image.config.as_json()
    assert config["User"] == "10001:10001" and config["WorkingDir"] == "/home/chaosdb"
    assert "Entrypoint" not in config and config["Cmd"] == ["chaos", "--help"]
    env = dict(e.split("=", 1) for e in config["Env"])
    assert env["PATH"].split(":")[0] == "/opt/venv/bin" and "/usr/bin" in env["PATH"].split(":")
    assert env["CHAOSDB_HOME"] == "/tmp/chaosdb" and env["LANG"] == "C.UTF-8"
    assert config["Labels"]["org.opencontainers.image.title"] == "chaosdb"
    assert image.reference() == f"chaosdb.local/chaosdb:{recipes.pack_version()}"
    cronjob = (shipped_dir() / "templates" / "kubernetes" / "gameday-cronjob.yaml").read_text()
    assert f"runAsUser: {recipes.CHAOSDB_UID}" in cronjob and 'command: ["chaos", ' in cronjob


@pytest.mark.skipif(os.geteuid() != 0, reason="the user hook makes the home folder owned by 10001 (root only)")
def test_the_user_hook_adds_chaosdb_with_its_home_once(tmp_path):
    [hook] = recipes.recipe("chaosdb").layers[0].essential_hooks
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (root / "etc" / "group").write_text("root:x:0:\n")
    for _ in range(2):
        subprocess.run(["sh", "-c", f"set -e; {hook}", "sh", str(root)], check=True, timeout=30)
    assert (root / "etc" / "passwd").read_text().splitlines()[1:] == [
        "chaosdb:x:10001:10001:chaostoolkit-db:/home/chaosdb:/bin/sh"]
    assert (root / "etc" / "group").read_text().splitlines()[1:] == ["chaosdb:x:10001:"]
    home = (root / "home" / "chaosdb").stat()
    assert (home.st_uid, home.st_gid, home.st_mode & 0o777) == (10001, 10001, 0o755)


def _closure(name: str, extras: tuple[str, ...], found: dict[str, set[str]]) -> None:
    """Every distribution *name* with *extras* needs on bookworm's Python, from this environment's metadata."""
    try:
        requires = distribution(name).requires or []
    except PackageNotFoundError:
        pytest.fail(f"{name} is not installed here: install the test extra to check the pins")
    for text in requires:
        req = Requirement(text)
        if req.marker and not any(req.marker.evaluate({**BOOKWORM_PYTHON, "extra": e}) for e in extras or ("",)):
            continue
        key, known = canonicalize_name(req.name), found.get(canonicalize_name(req.name))
        if key == "chaostoolkit-db" or (known is not None and req.extras <= known):
            continue
        found[key] = found.get(key, set()) | req.extras
        _closure(key, tuple(sorted(req.extras)), found)


def test_the_shipped_pins_are_exact_and_cover_what_the_pack_needs_on_bookworms_python():
    pins = packwheel.constraints()
    assert pins and all(re.fullmatch(r"[A-Za-z0-9._-]+==[^=\s\[]+", p) for p in pins), "NAME==VERSION, no extras"
    names = [canonicalize_name(p.split("==")[0]) for p in pins]
    assert len(names) == len(set(names)), "one pin per package"
    pinned = dict(zip(names, (p.split("==")[1] for p in pins), strict=True))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    direct = project["dependencies"] + [r for e in recipes.PACK_EXTRAS for r in project["optional-dependencies"][e]]
    for text in direct:  # this checkout's requirements, each pinned at a version it accepts
        req = Requirement(text)
        assert req.specifier.contains(pinned.get(canonicalize_name(req.name), "0"), prereleases=True), text
    found: dict[str, set[str]] = {}
    for text in direct:
        req = Requirement(text)
        found.setdefault(canonicalize_name(req.name), set()).update(req.extras)
        _closure(req.name, tuple(sorted(req.extras)), found)
    assert sorted(set(found) - set(pinned)) == [], "what the pack needs is pinned"
    assert sorted(set(pinned) - set(found)) == [], "nothing pinned that the image does not hold"


def test_the_wheels_content_and_the_pins_are_in_the_key_and_its_path_is_not(tmp_path, monkeypatch):
    _mirror(monkeypatch)
    image = recipes.recipe("chaosdb")

    def key(wheel: Path) -> str:
        return cache.cache_key(build.image_inputs(image, wheel=wheel))

    one, same, other = _wheel(tmp_path / "a", b"x"), _wheel(tmp_path / "b", b"x"), _wheel(tmp_path / "c", b"y")
    assert key(one) == key(same) != key(other)
    inputs = build.image_inputs(image, wheel=one)
    [layer] = inputs["layers"]
    assert layer["spec"]["wheels"] == [{"name": one.name, "extras": list(recipes.PACK_EXTRAS),
                                        "sha256": cache.file_sha256(one)}]
    assert list(layer["spec"]["pip_constraints"]) == list(packwheel.constraints())
    assert str(tmp_path) not in json.dumps(inputs), "where the wheel lies is no input"
    before = key(one)
    monkeypatch.setattr(packwheel, "constraints", lambda: ("six==1.17.0",))
    assert key(one) != before, "other pins, another image"
    with pytest.raises(ChaosDBError, match="needs the pack's wheel"):
        build.image_inputs(image)
    patroni = build.image_inputs(recipes.recipe("patroni"), wheel=one)["layers"][0]["spec"]
    assert not {"wheels", "pip_constraints", "pack_extras"} & set(patroni), "the other images' keys stay as they were"


def test_the_pack_is_copied_in_downloaded_with_what_it_needs_within_the_pins_and_installed_offline(tmp_path):
    wheel = _wheel(tmp_path / "w")
    bare = recipes.recipe("chaosdb").layers[0]
    assert isinstance(bare, recipes.DebianRootfs)
    with pytest.raises(ChaosDBError, match="needs that wheel"):
        rootfs.mmdebstrap_argv(bare, tmp_path / "o.tar", [])
    spec = packwheel.with_pack(bare, wheel)
    [hook] = [a for a in rootfs.mmdebstrap_argv(spec, tmp_path / "o.tar", []) if " pip download " in a]
    assert f'cp -- {wheel} "$1/tmp/chaosdb-wheels/"; ' in hook
    printed = re.search(r"printf '%s\\n' (.*?) > \"\$1/tmp/chaosdb-pins.txt\"", hook)
    assert printed and printed.group(1).split() == list(packwheel.constraints())
    download, check, install = (hook.split(f"{sys.executable} -m pip download ")[1],
                                hook.split(f"{sys.executable} -c ")[1], hook.split("/opt/venv/bin/pip ")[1])
    extras = ",".join(recipes.PACK_EXTRAS)
    assert download.startswith("--quiet --disable-pip-version-check --only-binary=:all: $target ")
    assert f'-c "$1/tmp/chaosdb-pins.txt"  "$1"\'/tmp/chaosdb-wheels/{wheel.name}[{extras}]\'' in download
    assert check.split(";")[0].startswith("'import os, re, sys") and f'"$1/tmp/chaosdb-pins.txt" {wheel.name};' in check
    assert install.startswith("--isolated install --quiet --disable-pip-version-check --no-cache-dir --no-index "
                              "--find-links /tmp/chaosdb-wheels -c /tmp/chaosdb-pins.txt ")
    assert f"'/tmp/chaosdb-wheels/{wheel.name}[{extras}]'; " in install
    assert hook.endswith('rm -rf "$1/tmp/chaosdb-wheels" "$1/tmp/chaosdb-pins.txt"')
    loose = recipes.DebianRootfs(("python3",), pip_requirements=("six==1.17.0",), pip_constraints=("requests>=2",))
    with pytest.raises(ChaosDBError, match="pinned as NAME==VERSION: requests>=2"):
        rootfs.mmdebstrap_argv(loose, tmp_path / "o.tar", [])


def test_a_downloaded_wheel_that_nothing_pins_stops_the_build(tmp_path):
    folder = tmp_path / "wheels"
    folder.mkdir()
    for name in ("six-1.17.0-py2.py3-none-any.whl", "zope.event-6.2-py3-none-any.whl",
                 "Flask_Login-0.6.3-py3-none-any.whl", "chaostoolkit_db-0.1.0-py3-none-any.whl",
                 "requests-2.0.0-py3-none-any.whl", "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.whl"):
        (folder / name).write_bytes(b"")
    pins = tmp_path / "pins.txt"
    pins.write_text("six==1.17.0\nzope-event==6.2\nflask-login==0.6.3\nrequests==2.34.2\nnumpy==2.4.6\n")

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", rootfs._ALL_PINNED, str(folder), str(pins),
                               "chaostoolkit_db-0.1.0-py3-none-any.whl"], capture_output=True, text=True, timeout=30)

    refused = check()
    assert refused.returncode == 1
    assert refused.stderr.strip() == ("Python packages not pinned as NAME==VERSION (add them to the constraints): "
                                      "requests-2.0.0-py3-none-any.whl")
    pins.write_text(pins.read_text().replace("requests==2.34.2", "requests==2.0.0"))
    assert (check().returncode, check().stderr) == (0, "")


def test_without_a_wheel_or_a_checkout_the_chaosdb_image_is_refused_in_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setattr(packwheel, "source_checkout", lambda: None)
    where = tmp_path / "cache"
    with pytest.raises(ChaosDBError) as refused:
        build.build_images(["pause", "chaosdb"], cache=cache.ImageCache(where))
    text = str(refused.value)
    version = recipes.pack_version()
    assert text.startswith("cannot build pause, chaosdb: ") and "\n" not in text
    assert "installed from one, not run from a source checkout" in text and "give --wheel PATH" in text
    assert f"chaostoolkit_db-{version}-py3-none-any.whl" in text
    assert not where.exists(), "nothing may start before the refusal"
    (tmp_path / "x.whl").write_bytes(b"not a zip")
    assert packwheel.wheel_problem(tmp_path / "absent.whl") == f"--wheel {tmp_path / 'absent.whl'} is not a file"
    assert (packwheel.wheel_problem(tmp_path / "x.whl") or "").startswith(f"--wheel {tmp_path / 'x.whl'} is not a wheel")
    assert "is a wheel of requests, not of chaostoolkit-db" in (
        packwheel.wheel_problem(_wheel(tmp_path / "r", name="requests", version="2.0")) or "")
    assert f"is chaostoolkit-db 9.9.9 but this builder is {version}" in (
        packwheel.wheel_problem(_wheel(tmp_path / "v", version="9.9.9")) or "")
    given = _wheel(tmp_path / "ok")
    assert packwheel.wheel_problem(given) is None
    assert not [m for m in prereqs.missing_for_build([recipes.recipe("chaosdb")], None, given) if "wheel" in m]


def _checkout(folder: Path) -> Path:
    """A source checkout of the pack as a build sees it, with what a build must not take: byte code, an old
    build/ folder, egg-info."""
    (folder / "chaosdb" / "shipped" / "__pycache__").mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "chaostoolkit-db"\nversion = "0.1.0"\n'
                                          'readme = "README.md"\nlicense = {text = "Apache-2.0"}\n')
    (folder / "README.md").write_text("readme\n")
    (folder / "LICENSE").write_text("license\n")
    (folder / "NOTES.md").write_text("no part of the build\n")
    (folder / "chaosdb" / "__init__.py").write_text("__version__ = '0.1.0'\n")
    (folder / "chaosdb" / "shipped" / "data.json").write_text("{}\n")
    (folder / "chaosdb" / "shipped" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (folder / "chaosdb" / "stale.egg-info").mkdir()
    (folder / "chaosdb" / "stale.egg-info" / "PKG-INFO").write_text("old\n")
    (folder / "build" / "lib" / "chaosdb").mkdir(parents=True)
    (folder / "build" / "lib" / "chaosdb" / "gone.py").write_text("removed long ago\n")
    (folder / "chaostoolkit_db.egg-info").mkdir()
    (folder / "tests").mkdir()
    (folder / "tests" / "test_x.py").write_text("\n")
    return folder


def test_the_checkouts_wheel_is_built_from_its_sources_only_and_once_per_sources(tmp_path, monkeypatch):
    assert packwheel.source_checkout() == ROOT, "the tests run from a checkout"
    checkout = _checkout(tmp_path / "checkout")
    assert [p.as_posix() for p in packwheel._source_files(checkout)] == [
        "LICENSE", "README.md", "chaosdb/__init__.py", "chaosdb/shipped/data.json", "pyproject.toml"]
    digest = packwheel.source_digest(checkout)
    (checkout / "chaosdb" / "shipped" / "__pycache__" / "y.cpython-311.pyc").write_bytes(b"\1")
    assert packwheel.source_digest(checkout) == digest, "byte code is no source"
    builds: list[Path] = []

    def fake_build(source: Path, out_dir: Path, timeout: float = 600.0) -> Path:
        builds.append(source)
        return _wheel(out_dir, source.joinpath("chaosdb", "__init__.py").read_bytes())

    monkeypatch.setattr(packwheel, "source_checkout", lambda: checkout)
    monkeypatch.setattr(packwheel, "build_wheel", fake_build)
    where = cache.ImageCache(tmp_path / "cache")
    image = recipes.recipe("chaosdb")
    with packwheel.pack_wheel([image], None, where) as first:
        assert first is not None and first.is_file() and first.parent == where.root / "wheels" / digest
    with packwheel.pack_wheel([image], None, where) as second:
        assert second == first
    assert builds == [checkout], "unchanged sources are not built again"
    (checkout / "chaosdb" / "__init__.py").write_text("__version__ = '0.1.0'  # changed\n")
    with packwheel.pack_wheel([image], None, where) as third:
        assert third is not None and third != first and third.read_bytes() != first.read_bytes()
    assert len(builds) == 2
    given = _wheel(tmp_path / "given", b"mine")
    with packwheel.pack_wheel([image], given, where) as used:
        assert used == given.resolve()
    with packwheel.pack_wheel([recipes.recipe("pause")], None, where) as none:
        assert none is None
    assert len(builds) == 2 and not list((where.root / "tmp").iterdir()), "the scratch space is emptied"


def test_the_python_packages_of_the_venv_are_read_from_the_root_file_system(tmp_path):
    with tarfile.open(tmp_path / "r.tar", "w") as tar:
        for name in ("./opt/venv/lib/python3.11/site-packages/psycopg-3.3.9.dist-info/METADATA",
                     "./opt/venv/lib/python3.11/site-packages/chaostoolkit_db-0.1.0.dist-info/METADATA",
                     "./opt/venv/lib/python3.11/site-packages/psycopg-3.3.9.dist-info/RECORD",
                     "./usr/lib/python3/dist-packages/six-1.16.0.dist-info/METADATA"):
            tar.addfile(tarfile.TarInfo(name))
    assert rootfs.installed_python_packages(tmp_path / "r.tar") == {"chaostoolkit_db": "0.1.0", "psycopg": "3.3.9"}


def _stage(dockerfile: Path) -> list[str]:
    """The instructions of the last stage (continuation lines joined, comments dropped)."""
    text = re.sub(r"\\\n", " ", "\n".join(line for line in dockerfile.read_text().splitlines()
                                          if not line.lstrip().startswith("#")))
    lines = [re.sub(r"\s+", " ", line.strip()) for line in text.splitlines() if line.strip()]
    return lines[max(i for i, line in enumerate(lines) if line.upper().startswith("FROM ")):]


def test_the_shipped_dockerfile_installs_the_wheel_within_the_pins_as_the_recipe_does():
    image = recipes.recipe("chaosdb")
    stage = _stage(shipped_dir() / "images" / "chaosdb" / "Dockerfile")
    [copy] = [line for line in stage if line.startswith("COPY ")]
    assert copy == "COPY constraints.txt chaostoolkit_db-*.whl /tmp/chaosdb-wheel/"
    assert (shipped_dir() / "images" / "chaosdb" / "constraints.txt").is_file()
    run = " ".join(line for line in stage if line.startswith("RUN "))
    assert "groupadd --gid 10001 chaosdb" in run and "useradd --uid 10001 --gid 10001 --home-dir /home/chaosdb" in run
    assert "install -d -o 10001 -g 10001 -m 0755 /home/chaosdb" in run
    assert "python3 -m venv /opt/venv" in run and "--only-binary=:all:" in run
    assert (f'-c /tmp/chaosdb-wheel/constraints.txt "$(ls /tmp/chaosdb-wheel/chaostoolkit_db-*.whl)'
            f'[{",".join(recipes.PACK_EXTRAS)}]"') in run
    [env] = [line for line in stage if line.startswith("ENV ")]
    assert env.split()[1:] == list(image.config.env)


def test_the_repositorys_dockerfile_makes_the_same_image_from_the_checkout():
    shipped = _stage(shipped_dir() / "images" / "chaosdb" / "Dockerfile")
    mine = _stage(ROOT / "Dockerfile")
    assert [line for line in mine if not line.startswith("COPY ")] == [
        line for line in shipped if not line.startswith("COPY ")]
    assert [line for line in mine if line.startswith("COPY ")] == [
        "COPY chaosdb/shipped/images/chaosdb/constraints.txt /tmp/chaosdb-wheel/",
        "COPY --from=wheel /dist/ /tmp/chaosdb-wheel/"]
    head = (ROOT / "Dockerfile").read_text()
    assert "FROM python:3.11-slim AS wheel" in head and "pip wheel --no-cache-dir --no-deps -w /dist ." in head
    assert {"build", "*.egg-info"} <= set((ROOT / ".dockerignore").read_text().split()), "no stale build copies"
