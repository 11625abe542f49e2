"""The image builder without mmdebstrap or containerd: the deterministic OCI writer (same inputs, same digests; a
valid layout and archive), the layer tars, the cache and its keys, the refusals before anything starts, the
mmdebstrap command, the shipped build files, and the pause program (compiled here with cc)."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from chaosdb.core.errors import ChaosDBError
from chaosdb.images import build, cache, command, containerd, cprogram, oci, prereqs, recipes, rootfs, tarlayer
from chaosdb.shipped import shipped_dir
from tests.polling import poll

REFERENCE = "chaosdb.local/test:1.2.3"


def _files(folder: Path, mtime: float) -> list[tarlayer.FileEntry]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tool").write_bytes(b"#!/bin/sh\necho tool\n")
    (folder / "lib.so").write_bytes(bytes(range(256)) * 40)
    for name in ("tool", "lib.so"):
        os.utime(folder / name, (mtime, mtime))
    return [tarlayer.FileEntry("/usr/local/lib/lib.so", folder / "lib.so", 0o644),
            tarlayer.FileEntry("/usr/local/bin/tool", folder / "tool", 0o755, 0, 50)]


def _image(tmp: Path, mtime: float) -> tuple[oci.BlobStore, oci.Image]:
    store = oci.BlobStore(tmp / "blobs")
    entries = _files(tmp / "src", mtime)
    layer = store.put_layer(lambda out: tarlayer.add_files(out, entries))
    config = oci.ImageConfig(entrypoint=("/usr/local/bin/tool",), cmd=("--help",), user="1000:1000",
                             labels={"b": "2", "a": "1"})
    return store, oci.compose_image(store, REFERENCE, [layer], config, "amd64")


def _sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_same_files_give_the_same_layer_config_manifest_and_archive_whatever_their_times(tmp_path):
    store1, first = _image(tmp_path / "one", mtime=1_000_000)
    store2, second = _image(tmp_path / "two", mtime=1_700_000_000)
    assert first == second
    one = oci.write_archive(store1, first, tmp_path / "one.tar")
    two = oci.write_archive(store2, second, tmp_path / "two.tar")
    assert one.read_bytes() == two.read_bytes()


def test_a_layer_is_gzip_without_time_or_name_and_its_diff_id_is_the_tar_inside(tmp_path):
    store, image = _image(tmp_path, mtime=1_000_000)
    blob = store.path(image.layers[0].blob.digest)
    raw = blob.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0" and not raw[3] & 0x08  # no MTIME, no FNAME
    assert _sha256(blob) == image.layers[0].blob.digest and len(raw) == image.layers[0].blob.size
    inner = gzip.decompress(raw)
    assert "sha256:" + hashlib.sha256(inner).hexdigest() == image.layers[0].diff_id
    with tarfile.open(fileobj=io.BytesIO(inner)) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["usr/local/bin/tool", "usr/local/lib/lib.so"]
    assert {m.mtime for m in members} == {tarlayer.LAYER_MTIME} and {m.uname for m in members} == {""}
    assert [(m.mode, m.uid, m.gid) for m in members] == [(0o755, 0, 50), (0o644, 0, 0)]


def test_the_layout_is_valid_oci_json_with_the_right_media_types_and_names(tmp_path):
    store, image = _image(tmp_path, mtime=1_000_000)
    layout = oci.write_layout(store, image, tmp_path / "layout")
    assert json.loads((layout / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads((layout / "index.json").read_text())
    assert index["schemaVersion"] == 2 and index["mediaType"] == oci.MEDIA_TYPE_INDEX
    [entry] = index["manifests"]
    assert entry["mediaType"] == oci.MEDIA_TYPE_MANIFEST and entry["platform"] == {"architecture": "amd64",
                                                                                    "os": "linux"}
    assert entry["annotations"] == {oci.ANNOTATION_REF_NAME: "1.2.3", oci.ANNOTATION_IMAGE_NAME: REFERENCE}
    blobs = layout / "blobs" / "sha256"
    for path in blobs.iterdir():  # every blob is named by its content
        assert _sha256(path) == f"sha256:{path.name}"
    manifest = json.loads((blobs / entry["digest"].split(":")[1]).read_text())
    assert manifest["mediaType"] == oci.MEDIA_TYPE_MANIFEST and manifest["schemaVersion"] == 2
    assert manifest["config"]["mediaType"] == oci.MEDIA_TYPE_CONFIG
    assert [layer["mediaType"] for layer in manifest["layers"]] == [oci.MEDIA_TYPE_LAYER_GZIP]
    assert entry["size"] == (blobs / entry["digest"].split(":")[1]).stat().st_size
    config = json.loads((blobs / manifest["config"]["digest"].split(":")[1]).read_text())
    assert config["architecture"] == "amd64" and config["os"] == "linux"
    assert config["rootfs"] == {"type": "layers", "diff_ids": [image.layers[0].diff_id]}
    assert config["config"] == {"Entrypoint": ["/usr/local/bin/tool"], "Cmd": ["--help"], "User": "1000:1000",
                                "Labels": {"a": "1", "b": "2"}, "Env": [oci.DEFAULT_PATH]}
    assert sorted(p.name for p in blobs.iterdir()) == sorted(d.split(":")[1] for d in image.blob_digests())


def test_the_archive_holds_the_layout_sorted_and_names_its_image(tmp_path):
    store, image = _image(tmp_path, mtime=1_000_000)
    archive = oci.write_archive(store, image, tmp_path / "out" / "test.tar")
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names[:2] == ["blobs", "blobs/sha256"] and names[-2:] == ["index.json", "oci-layout"]
    assert names[2:-2] == sorted(names[2:-2]) and len(names) == 2 + 3 + 2
    assert {(m.mtime, m.uid, m.gid) for m in members} == {(oci.ARCHIVE_MTIME, 0, 0)}
    [manifest] = oci.read_archive_index(archive)
    assert manifest["reference"] == REFERENCE and manifest["digest"] == image.manifest.digest
    assert not list(archive.parent.glob(".*")), "no partial file is left beside the archive"


def test_a_reference_needs_a_tag_and_a_file_that_is_not_an_archive_is_named(tmp_path):
    assert oci.split_reference("chaosdb.local/pause:0.1.0") == ("chaosdb.local/pause", "0.1.0")
    with pytest.raises(ChaosDBError, match="no tag"):
        oci.split_reference("localhost:5000/pause")
    (tmp_path / "x.tar").write_bytes(b"not a tar")
    with pytest.raises(ChaosDBError, match="is not an OCI image archive"):
        oci.read_archive_index(tmp_path / "x.tar")


def _source_tar(path: Path) -> Path:
    """A root file system tar as mmdebstrap writes one: './' names, real owners' names, times, a hard link that
    sorts before its file, documentation and logs."""
    def add(tar: tarfile.TarFile, name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = "",
            mode: int = 0o644, uid: int = 0, mtime: int = 1_711_111_111) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname, info.mode, info.uid, info.gid, info.mtime = kind, link, mode, uid, uid, mtime
        info.uname = info.gname = "someone"
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        info.pax_headers = {"atime": "1711111112.5", "SCHILY.xattr.user.kept": "yes"}
        tar.addfile(info, io.BytesIO(data) if data else None)

    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "./", kind=tarfile.DIRTYPE, mode=0o755)
        add(tar, "./usr/", kind=tarfile.DIRTYPE, mode=0o755)
        add(tar, "./usr/bin/", kind=tarfile.DIRTYPE, mode=0o755)
        add(tar, "./usr/bin/zz-real", b"payload", mode=0o755, uid=7)
        add(tar, "./usr/bin/aa-link", kind=tarfile.LNKTYPE, link="./usr/bin/zz-real", mode=0o755, uid=7)
        add(tar, "./usr/bin/mm-second", kind=tarfile.LNKTYPE, link="./usr/bin/zz-real", mode=0o755, uid=7)
        add(tar, "./usr/bin/sh", kind=tarfile.SYMTYPE, link="dash")
        add(tar, "./usr/share/", kind=tarfile.DIRTYPE, mode=0o755)
        add(tar, "./usr/share/doc/", kind=tarfile.DIRTYPE, mode=0o755)
        add(tar, "./var/log/dpkg.log", b"2026-11-26 installed")
        add(tar, "./usr-local", b"sorts between usr and usr/...")
    return path


def test_a_root_file_system_is_copied_sorted_trimmed_and_with_hard_links_after_their_data(tmp_path):
    source = _source_tar(tmp_path / "rootfs.tar")
    store = oci.BlobStore(tmp_path / "blobs")
    layer = store.put_layer(lambda out: tarlayer.copy_normalized(source, out, rootfs.keep_in_layer))
    with tarfile.open(store.path(layer.blob.digest)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        names = list(members)
        assert names == ["usr", "usr/bin", "usr/bin/aa-link", "usr/bin/mm-second", "usr/bin/sh", "usr/bin/zz-real",
                         "usr/share", "usr/share/doc", "usr-local"]
        assert members["usr/bin/aa-link"].isreg() and tar.extractfile("usr/bin/aa-link").read() == b"payload"
        for name in ("usr/bin/mm-second", "usr/bin/zz-real"):
            assert members[name].islnk() and members[name].linkname == "usr/bin/aa-link"
        assert members["usr/bin/sh"].issym() and members["usr/bin/sh"].linkname == "dash"
        assert {(m.mtime, m.uname, m.gname) for m in members.values()} == {(tarlayer.LAYER_MTIME, "", "")}
        assert members["usr/bin/zz-real"].uid == 7 and members["usr/bin/zz-real"].mode == 0o755
        assert members["usr"].pax_headers.get("SCHILY.xattr.user.kept") == "yes"
        assert "atime" not in members["usr"].pax_headers
        tar.extractall(tmp_path / "unpacked", filter="tar")  # a reader never meets a link before its file
    assert (tmp_path / "unpacked/usr/bin/zz-real").read_bytes() == b"payload"
    again = oci.BlobStore(tmp_path / "again").put_layer(
        lambda out: tarlayer.copy_normalized(source, out, rootfs.keep_in_layer))
    assert again == layer


def test_the_cache_key_is_stable_and_changes_with_any_input():
    inputs = {"packages": ["a", "b"], "sha256": "00", "builder": 1}
    assert cache.cache_key(inputs) == cache.cache_key(dict(reversed(list(inputs.items()))))
    assert len({cache.cache_key(inputs), cache.cache_key({**inputs, "packages": ["a", "c"]}),
                cache.cache_key({**inputs, "sha256": "01"}), cache.cache_key({**inputs, "builder": 2})}) == 4


def test_the_cache_folder_comes_from_the_environment_then_root_then_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("CHAOSDB_IMAGE_CACHE", str(tmp_path / "mine"))
    assert cache.default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("CHAOSDB_IMAGE_CACHE")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert cache.default_cache_dir() == Path("/var/cache/chaosdb/images")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_cache_dir() == tmp_path / "xdg" / "chaosdb" / "images"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.default_cache_dir() == tmp_path / "home" / ".cache" / "chaosdb" / "images"


def _bin_dir(folder: Path, content: bytes = b"binary") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("chaos-daemon", "cdh", "nsexec", "libnsenter.so", "cm-pause", "memStress"):
        (folder / name).write_bytes(content + name.encode())
    return folder


def test_an_image_key_follows_its_binaries_packages_reference_and_builder(tmp_path, monkeypatch):
    monkeypatch.setattr(rootfs, "mirror_lines", lambda suite, apt_dir=None: [f"deb http://mirror/debian {suite} main"])
    daemon = recipes.recipe("chaos-daemon")
    key = cache.cache_key(build.image_inputs(daemon, _bin_dir(tmp_path / "a")))
    assert key == cache.cache_key(build.image_inputs(daemon, _bin_dir(tmp_path / "b")))
    assert key != cache.cache_key(build.image_inputs(daemon, _bin_dir(tmp_path / "c", b"other")))
    assert key != cache.cache_key(build.image_inputs(daemon, _bin_dir(tmp_path / "a"), version="9.9.9"))
    more = recipes.Recipe(daemon.name, daemon.summary,
                          (recipes.DebianRootfs(("iproute2", "iptables", "ipset", "stress-ng", "procps")),
                           *daemon.layers[1:]), daemon.config)
    assert key != cache.cache_key(build.image_inputs(more, _bin_dir(tmp_path / "a")))
    monkeypatch.setattr(build, "BUILDER_VERSION", build.BUILDER_VERSION + 1)
    assert key != cache.cache_key(build.image_inputs(daemon, _bin_dir(tmp_path / "a")))


def test_a_missing_tool_is_refused_with_its_install_line_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    where = tmp_path / "cache"
    with pytest.raises(ChaosDBError) as refused:
        build.build_images(["pause", "patroni"], cache=cache.ImageCache(where))
    text = str(refused.value)
    assert text.startswith("cannot build pause, patroni: ")
    assert "apt-get install -y mmdebstrap" in text and "apt-get install -y gcc libc6-dev" in text
    assert not where.exists(), "nothing may start before the refusal"
    with pytest.raises(ChaosDBError, match=r"ctr is not installed \(apt-get install -y containerd\)"):
        containerd.import_image(tmp_path / "x.tar", tmp_path / "sock")


def test_building_without_root_needs_newuidmap(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "newuidmap" else f"/usr/bin/{name}")
    missing = prereqs.missing_for_build([recipes.recipe("patroni")])
    assert missing and "apt-get install -y uidmap" in missing[0] and "or run as root" in missing[0]


def test_the_binaries_chaos_daemon_needs_are_named(tmp_path):
    daemon = recipes.recipe("chaos-daemon")
    [need] = prereqs._bin_dir_needs(daemon, None)
    assert "needs --bin-dir" in need and "cm-pause or pause" in need and "libnsenter.so" in need
    folder = _bin_dir(tmp_path / "bin")
    (folder / "memStress").unlink()
    (folder / "cm-pause").unlink()
    (folder / "pause").write_bytes(b"pause")  # the other accepted name
    assert prereqs._bin_dir_needs(daemon, folder) == [f"--bin-dir {folder} lacks memStress (needed by chaos-daemon)"]


def test_an_unknown_or_planned_image_is_refused_with_the_buildable_ones(monkeypatch):
    with pytest.raises(ChaosDBError, match="no image recipe 'postgres'; known: pause, chaos-daemon, patroni, chaosdb"):
        recipes.recipe("postgres")
    monkeypatch.setitem(recipes.PLANNED, "later", "an image to come")
    with pytest.raises(ChaosDBError, match="'later' has no recipe yet \\(planned: an image to come\\)"):
        recipes.recipe("later")
    assert recipes.recipe("pause").reference("0.1.0") == "chaosdb.local/pause:0.1.0"
    assert recipes.recipe("patroni").reference().endswith(":" + recipes.pack_version())


def test_the_mirror_is_this_machines_debian_mirror(tmp_path):
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian\nSuites: trixie trixie-updates\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: trixie-security\nComponents: main\n")
    (apt / "sources.list.d" / "vendor.list").write_text("deb [arch=amd64] https://vendor.example/apt stable main\n")
    (apt / "sources.list.d" / "other.sources").write_text(
        "Types: deb\nURIs: https://packages.example/repo\nSuites: jammy\nComponents: main\n")
    assert rootfs.mirror_lines("bookworm", apt) == [
        "deb http://mirror.example/debian bookworm main", "deb http://mirror.example/debian bookworm-updates main",
        "deb http://mirror.example/debian-security bookworm-security main"]
    empty = tmp_path / "none"
    empty.mkdir()
    assert rootfs.mirror_lines("bookworm", empty) == []  # mmdebstrap's default then


def test_the_mmdebstrap_command_trims_offers_the_downloads_and_guards_its_hooks(tmp_path):
    spec = recipes.recipe("patroni").layers[0]
    assert isinstance(spec, recipes.DebianRootfs)
    argv = rootfs.mmdebstrap_argv(spec, tmp_path / "out.tar", ["deb http://m/debian bookworm main"], tmp_path / "debs")
    assert argv[0] == "mmdebstrap" and "--variant=essential" in argv and "--format=tar" in argv
    assert "--include=postgresql-15,patroni" in argv
    assert argv[-3:] == ["bookworm", str(tmp_path / "out.tar"), "deb http://m/debian bookworm main"]
    assert {f"--dpkgopt={o}" for o in rootfs.TRIMMED_PATHS} <= set(argv)
    assert f"--setup-hook=sync-in {tmp_path / 'debs'} /var/cache/apt/archives/" in argv
    assert f"--customize-hook=sync-out /var/cache/apt/archives {tmp_path / 'debs'}" in argv
    hooks = [a.split("=", 1)[1] for a in argv if a.startswith(("--essential-hook=", "--customize-hook=chroot",
                                                                "--customize-hook=test"))]
    assert len(hooks) == 3 and all(h.startswith('test -n "$1" && test "$1" != / || exit 1; set -e; ') for h in hooks)
    assert not any("$1/var/run" in a for a in argv), "a host path through an absolute symlink"
    pip = recipes.DebianRootfs(("python3", "python3-venv"), pip_requirements=("psycopg[binary]==3.2.3",))
    [hook] = [a for a in rootfs.mmdebstrap_argv(pip, tmp_path / "o.tar", []) if "pip" in a]
    assert "-m pip download" in hook and "--only-binary=:all:" in hook  # with this machine's pip configuration
    assert "/opt/venv/bin/pip --isolated install" in hook and "--no-index" in hook  # then offline, in the image
    assert hook.count("'psycopg[binary]==3.2.3'") == 2
    with pytest.raises(ChaosDBError, match="pinned as NAME==VERSION: requests"):
        rootfs.mmdebstrap_argv(recipes.DebianRootfs(("python3",), pip_requirements=("requests",)), tmp_path, [])


def test_the_installed_packages_are_read_from_dpkgs_status(tmp_path):
    status = (b"Package: libc6\nStatus: install ok installed\nVersion: 2.36-9+deb12u13\nDescription: x\n y\n\n"
              b"Package: gone\nStatus: deinstall ok config-files\nVersion: 1\n\n"
              b"Package: bash\nStatus: install ok installed\nVersion: 5.2.15-2+b7\n")
    with tarfile.open(tmp_path / "r.tar", "w") as tar:
        info = tarfile.TarInfo("./var/lib/dpkg/status")
        info.size = len(status)
        tar.addfile(info, io.BytesIO(status))
    assert rootfs.installed_packages(tmp_path / "r.tar") == {"bash": "5.2.15-2+b7", "libc6": "2.36-9+deb12u13"}


def _final_stage(dockerfile: Path) -> list[str]:
    """The instructions of the last stage (continuation lines joined, comments dropped)."""
    text = re.sub(r"\\\n", " ", "\n".join(line for line in dockerfile.read_text().splitlines()
                                          if not line.lstrip().startswith("#")))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = max(i for i, line in enumerate(lines) if line.upper().startswith("FROM "))
    return lines[last:]


def _installed(stage: list[str]) -> set[str]:
    names = set()
    for line in stage:
        for install in re.findall(r"apt-get install ([^&;]*)", line):
            names |= {word.split("=")[0] for word in install.split() if not word.startswith("-")}
    return names


@pytest.mark.parametrize("name", list(recipes.RECIPES))
def test_each_shipped_build_file_installs_the_recipes_packages_and_runs_the_same(name):
    image = recipes.recipe(name)
    stage = _final_stage(shipped_dir() / "images" / name / "Dockerfile")
    assert _installed(stage) == set(image.debian_packages())
    words = {line.split(None, 1)[0].upper(): line.split(None, 1)[1] for line in stage}
    config = image.config
    assert json.loads(words.get("ENTRYPOINT", "[]")) == list(config.entrypoint)
    assert json.loads(words.get("CMD", "[]")) == list(config.cmd)
    assert words.get("USER", "") == config.user and words.get("WORKDIR", "") == config.working_dir
    for wanted in image.bin_dir_files():
        assert any(line.startswith("COPY ") and wanted.target in line for line in stage), wanted.target
    if name == "pause":
        assert (shipped_dir() / "images" / "pause" / "pause.c").is_file()


def test_the_images_command_lists_the_recipes_and_an_empty_cache(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["images", "list", "--cache", str(tmp_path / "c"), "--json"])
    assert args.func(args) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in listed["recipes"]] == ["pause", "chaos-daemon", "patroni", "chaosdb", "litmus-operator",
                                                      "litmus-runner", "litmus-go-runner"]
    assert listed["cached"] == [] and listed["planned"] == {}
    args = parser.parse_args(["images", "build", "pause", "--bin-dir", "/x", "--out", "/y", "--import-into", "/s"])
    assert (args.names, args.bin_dir, args.out, args.import_into, args.namespace) == (["pause"], "/x", "/y", "/s",
                                                                                       "k8s.io")
    args = parser.parse_args(["images", "build", "chaosdb", "--wheel", "/w/chaostoolkit_db-1-py3-none-any.whl"])
    assert (args.names, args.wheel) == (["chaosdb"], "/w/chaostoolkit_db-1-py3-none-any.whl")


def test_ctrs_image_table_is_read_by_reference_and_digest():
    table = ("REF                            TYPE                                       DIGEST         SIZE      "
             "PLATFORMS   LABELS\nchaosdb.local/pause:0.1.0      application/vnd.oci.image.manifest.v1+json "
             "sha256:abc 370.1 KiB linux/amd64 -\n")
    assert containerd.parse_images_list(table) == {"chaosdb.local/pause:0.1.0": "sha256:abc"}


needs_cc = pytest.mark.skipif(not cprogram.static_libc(),
                              reason="the pause program needs a C compiler with a static libc "
                                     "(apt-get install -y gcc libc6-dev)")


@needs_cc
def test_a_second_build_of_the_pause_image_comes_from_the_cache_with_the_same_digest(tmp_path):
    where = cache.ImageCache(tmp_path / "cache")
    first = build.build_image("pause", cache=where, out_dir=tmp_path / "out")
    second = build.build_image("pause", cache=where)
    assert not first.cached and second.cached and second.manifest_digest == first.manifest_digest
    assert (tmp_path / "out" / first.archive.name).read_bytes() == first.archive.read_bytes()
    again = build.build_image("pause", cache=cache.ImageCache(tmp_path / "other"))
    assert again.manifest_digest == first.manifest_digest, "the same compiler gives the same image"
    assert not list((tmp_path / "cache" / "tmp").iterdir()), "the scratch space is emptied"
    [manifest] = oci.read_archive_index(first.archive)
    assert manifest["reference"] == recipes.recipe("pause").reference()


PT_INTERP = 3


def _program_header_types(path: Path) -> list[int]:
    """The types of a 64-bit little-endian ELF file's program headers."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1
    phoff = int.from_bytes(data[32:40], "little")
    size, count = int.from_bytes(data[54:56], "little"), int.from_bytes(data[56:58], "little")
    return [int.from_bytes(data[phoff + i * size:phoff + i * size + 4], "little") for i in range(count)]


@pytest.fixture
def pause_binary(tmp_path) -> Path:
    return cprogram.compile_static(cprogram.shipped_source("pause/pause.c"), tmp_path / "pause")


@needs_cc
def test_pause_is_static_and_exits_on_sigterm_and_sigint(pause_binary):
    assert b"pause (chaostoolkit-db)" in subprocess.run([pause_binary, "--version"], capture_output=True,
                                                        timeout=30).stdout
    assert PT_INTERP not in _program_header_types(pause_binary), "a static binary names no dynamic loader"
    for sig in (signal.SIGTERM, signal.SIGINT):
        proc = subprocess.Popen([pause_binary], stderr=subprocess.PIPE)
        try:
            time.sleep(0.2)
            assert proc.poll() is None, "pause must wait for a signal"
            proc.send_signal(sig)
            assert proc.wait(timeout=30) == 0
            assert f"stopping on signal {int(sig)}".encode() in proc.stderr.read()
        finally:
            proc.kill()
            proc.wait()


def _zombie_children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@needs_cc
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nsenter"),
                    reason="a PID namespace of its own needs root, unshare and nsenter")
def test_pause_as_process_1_reaps_the_orphans_of_its_namespace(pause_binary):
    holder = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", str(pause_binary)],
                              stderr=subprocess.DEVNULL)
    try:
        def pause_pid() -> int | None:
            children = Path(f"/proc/{holder.pid}/task/{holder.pid}/children").read_text().split()
            return int(children[0]) if children else None

        pid = poll(pause_pid, timeout=30)
        assert pid, "pause did not start in its namespace"
        # an orphan in pause's namespace: sh starts a short sleep in the background and exits at once
        subprocess.run(["nsenter", "--target", str(pid), "--pid", "--", "sh", "-c", "sleep 0.3 & exit 0"],
                       check=True, timeout=30)
        time.sleep(1.0)
        assert poll(lambda: not _zombie_children(pid), timeout=10), "pause left a zombie unreaped"
        os.kill(pid, signal.SIGTERM)
        assert holder.wait(timeout=30) == 0
    finally:
        holder.kill()
        holder.wait()
