"""LitmusChaos on the real node, without one: the images' recipes (what each holds and runs as), the operator's
objects (upstream's RBAC rules and environment, the local images), ``cluster up --litmus``, the Patroni engine
template (a cmdProbe running ``chaosdb check`` in a pod of the pack's image) and ``run_chaos_engine(target=...)``
against the Kubernetes API stand-in. The facts are from chaos-operator, chaos-runner and litmus-go 3.18.0 (the
docstrings of :mod:`chaosdb.clusters.kubernetes.litmus` and ``tools/make_manifests.py`` say where)."""

from __future__ import annotations

from pathlib import Path

from chaosdb.images import prereqs, recipes
from chaosdb.images.recipes import BinDirFiles, DebianRootfs
from chaosdb.manifests.templates import render

ROOT = Path(__file__).resolve().parents[2]
LITMUS_IMAGES = ("litmus-operator", "litmus-runner", "litmus-go-runner")


# ---- the images ----------------------------------------------------------------------------------

def test_the_operator_and_runner_images_are_their_binary_alone_at_the_root_run_as_nobody():
    for name, binary in (("litmus-operator", "/chaos-operator"), ("litmus-runner", "/chaos-runner")):
        image = recipes.recipe(name)
        assert [type(layer) for layer in image.layers] == [BinDirFiles], name
        [wanted] = image.bin_dir_files()
        # containerd makes a folder a layer does not hold with mode 0700: a binary for uid 65534 sits at the root
        assert wanted.target == binary and Path(wanted.target).parent == Path("/")
        assert wanted.names[0] == f"litmus-chaos-{binary.strip('/').split('-')[1]}"
        assert image.config.entrypoint == (binary,) and image.config.user == "65534:65534"


def test_the_go_runner_image_runs_the_experiments_binary_where_the_chaos_experiment_looks_for_it():
    image = recipes.recipe("litmus-go-runner")
    debian, files = image.layers
    assert isinstance(debian, DebianRootfs) and debian.variant == "essential" and debian.packages == ()
    assert any(f"install -d -o {recipes.LITMUS_UID}" in hook and recipes.LITMUS_GO_DIR in hook
               for hook in debian.essential_hooks), "the working folder is made (and owned) in the Debian layer"
    assert isinstance(files, BinDirFiles)
    [wanted] = files.files
    assert wanted.names[0] == "litmus-experiments"
    setup = render("litmus/pod-delete-setup").objects
    definition = next(o for o in setup if o["kind"] == "ChaosExperiment")["spec"]["definition"]
    # upstream's command: bash runs ./experiments, relative to the image's working folder (the Job sets none)
    assert definition["command"] == ["/bin/bash"] and definition["args"] == ["-c", "./experiments -name pod-delete"]
    assert Path(image.config.working_dir) / "experiments" == Path(wanted.target)
    assert image.config.user == f"{recipes.LITMUS_UID}:{recipes.LITMUS_UID}"
    assert definition["imagePullPolicy"] == "IfNotPresent"   # never Always: the image was built on the node


def test_the_litmus_binaries_are_named_when_bin_dir_lacks_them(tmp_path):
    (tmp_path / "litmus-chaos-operator").write_bytes(b"\x7fELF")
    missing = prereqs.missing_for_build([recipes.recipe(n) for n in LITMUS_IMAGES], tmp_path)
    text = " ".join(missing)
    assert "litmus-chaos-runner" in text and "litmus-experiments" in text
    assert "lacks litmus-chaos-operator" not in text


