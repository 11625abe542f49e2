"""``chaosdb images build NAME... [--bin-dir DIR] [--wheel PATH] [--out DIR] [--import-into SOCKET]`` and
``chaosdb images list``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from chaosdb.core.console import print_json, show_progress
from chaosdb.images.build import build_images
from chaosdb.images.cache import ImageCache
from chaosdb.images.containerd import CRI_NAMESPACE, import_image
from chaosdb.images.prereqs import require_ctr
from chaosdb.images.recipes import PLANNED, RECIPES

__all__ = ["add_parser", "cmd_build", "cmd_list"]


def _cache(args: argparse.Namespace) -> ImageCache:
    return ImageCache(Path(args.cache) if args.cache else None)


def cmd_build(args: argparse.Namespace) -> int:
    """``chaosdb images build``: build (or find in the cache) each image, copy its archive to ``--out``, import it
    into the containerd of ``--import-into``."""
    if args.import_into:
        require_ctr()  # refused before anything is built
    if not args.json:
        show_progress()  # a cold build takes minutes: say what it is doing
    built = build_images(args.names, Path(args.bin_dir) if args.bin_dir else None,
                         Path(args.out) if args.out else None, _cache(args), refresh=args.refresh,
                         wheel=Path(args.wheel) if args.wheel else None)
    imported = [import_image(b.archive, args.import_into, args.namespace) for b in built] if args.import_into else []
    if args.json:
        print_json({"images": [b.as_dict() for b in built], "imported": imported})
        return 0
    for b in built:
        how = f"from the cache in {b.seconds:.1f} s" if b.cached else f"built in {b.seconds:.1f} s"
        where = Path(args.out) / b.archive.name if args.out else b.archive
        print(f"{b.reference}  {how}  {b.archive_bytes / 1e6:.1f} MB  {b.manifest_digest[:19]}  {where}")
    for i in imported:
        print(f"{i['reference']}  {'imported into' if i['imported'] else 'already in'} {args.import_into} "
              f"(namespace {i['namespace']})")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """``chaosdb images list``: the recipes, and the images built into the cache."""
    cache = _cache(args)
    records = cache.image_records()
    if args.json:
        print_json({"recipes": [{"name": r.name, "reference": r.reference(), "summary": r.summary,
                                 "debian_packages": list(r.debian_packages()),
                                 "bin_dir_files": [f.names[0] for f in r.bin_dir_files()]} for r in RECIPES.values()],
                    "planned": PLANNED, "cache": str(cache.root),
                    "cached": [{k: r.get(k) for k in ("name", "reference", "key", "archive", "archive_bytes",
                                                      "manifest_digest", "built_at", "build_seconds")}
                               for r in records]})
        return 0
    width = max(len(r.reference()) for r in RECIPES.values())
    for r in RECIPES.values():
        print(f"{r.name:<13} {r.reference():<{width}}  {r.summary}")
    for name, what in PLANNED.items():
        print(f"{name:<13} {'(planned)':<{width}}  {what}")
    print(f"\nbuilt images in {cache.root}: {len(records)}")
    for rec in records:
        print(f"  {rec['reference']:<{width}}  {int(rec['archive_bytes']) / 1e6:7.1f} MB  built {rec['built_at'][:19]}"
              f"  key {rec['key'][:12]}  {rec['archive']}")
    return 0


def add_parser(sub: Any) -> None:
    """``chaosdb images build|list`` under the ``chaosdb`` command's subcommands *sub*."""
    images = sub.add_parser("images", help="container images built on this machine from Debian packages "
                                           f"({', '.join(RECIPES)}), cached, imported into a containerd")
    isub = images.add_subparsers(dest="images_command", required=True)
    cache_help = ("the image cache folder (default: $CHAOSDB_IMAGE_CACHE, else /var/cache/chaosdb/images as root, "
                  "else $XDG_CACHE_HOME/chaosdb/images or ~/.cache/chaosdb/images)")

    p = isub.add_parser("build", help="build images into the cache (an unchanged recipe is taken from the cache "
                                      "in seconds)")
    p.add_argument("names", nargs="+", metavar="NAME", help=f"the images to build: {', '.join(RECIPES)}")
    p.add_argument("--bin-dir", default="", metavar="DIR",
                   help="a folder with the binaries an image takes from you: chaos-daemon needs chaos-daemon, cdh, "
                        "nsexec, libnsenter.so, cm-pause (or pause) and memStress, built from Chaos Mesh")
    p.add_argument("--wheel", default="", metavar="PATH",
                   help="the pack's wheel for the chaosdb image (chaostoolkit_db-VERSION-py3-none-any.whl, of this "
                        "version); default: built from the source checkout this chaosdb runs from, which a chaosdb "
                        "installed from a wheel does not have")
    p.add_argument("--out", default="", metavar="DIR",
                   help="also put each image's OCI archive (NAME-VERSION.tar, for 'ctr images import') here")
    p.add_argument("--import-into", default="", metavar="SOCKET",
                   help="then import each image into the containerd listening on SOCKET, unless it has it")
    p.add_argument("--namespace", default=CRI_NAMESPACE,
                   help="the containerd namespace for --import-into (Kubernetes' CRI uses k8s.io)")
    p.add_argument("--refresh", action="store_true",
                   help="make every layer again, ignoring the cache (Debian packages as the mirror has them now)")
    p.add_argument("--cache", default="", metavar="DIR", help=cache_help)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_build)

    p = isub.add_parser("list", help="the image recipes and the images built into the cache")
    p.add_argument("--cache", default="", metavar="DIR", help=cache_help)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_list)
