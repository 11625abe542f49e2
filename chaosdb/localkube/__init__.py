"""A local Kubernetes control plane with Chaos Mesh, made of real servers and fake pods (``chaosdb cluster up
--kind kubernetes``): :mod:`~chaosdb.localkube.cluster` runs it, :mod:`~chaosdb.localkube.pki` makes its
certificates, :mod:`~chaosdb.localkube.resources` and :mod:`~chaosdb.localkube.workloads` are what it holds,
:mod:`~chaosdb.localkube.apply` creates them.

What is in it:

* ``cluster_command``: ``chaosdb cluster up|status|down --kind kubernetes``
"""
