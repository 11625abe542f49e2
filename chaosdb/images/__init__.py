"""Container images built on this machine: no image registry is needed, and none is asked.

Root file systems come from Debian packages (``mmdebstrap``), the pack's own programs are compiled here, the
binaries a user brings are added from a folder; the result is an OCI image layout and archive that
``ctr images import`` reads, kept in a cache named by what each image was built from, so that a second build
of an unchanged recipe takes seconds. The same images, as files for ``docker build`` or ``buildah``, are in the
shipped folder ``images/<name>/``.

What is in it:

* ``build``: building a recipe's image, or taking it from the cache (the entry point: :func:`build.build_images`)
* ``cache``: where built images and their parts are kept, named by the hash of their inputs
* ``command``: ``chaosdb images build|list``
* ``containerd``: importing an image archive into a containerd with ``ctr``, skipped when it is there
* ``cprogram``: the pack's C programs (the pause program) compiled as static binaries
* ``layers``: one layer of a recipe: its inputs and how it is made
* ``oci``: OCI blobs, image config and manifest, the image layout and its archive, written deterministically
* ``packwheel``: the pack's own wheel for the ``chaosdb`` image (given, or built from the checkout once per
  sources) and the shipped pins of its Python packages
* ``prereqs``: what a build or an import needs from this machine, refused with the install line
* ``recipes``: the images (pause, chaos-daemon, patroni, chaosdb) as data
* ``rootfs``: Debian root file systems from ``mmdebstrap``, with this machine's mirror
* ``tarlayer``: the members of a layer tar, sorted, with fixed times and numeric owners
"""
