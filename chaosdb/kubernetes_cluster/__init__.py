"""A local Kubernetes control plane with Chaos Mesh, made of real servers and fake pods (``chaosdb cluster up
--kind kubernetes``): :mod:`~chaosdb.kubernetes_cluster.cluster` runs it, :mod:`~chaosdb.kubernetes_cluster.pki` makes its
certificates, :mod:`~chaosdb.kubernetes_cluster.resources` and :mod:`~chaosdb.kubernetes_cluster.workloads` are what it holds,
:mod:`~chaosdb.kubernetes_cluster.apply` creates them.

What is in it:

* ``cluster_command``: ``chaosdb cluster up|status|down --kind kubernetes``
"""
