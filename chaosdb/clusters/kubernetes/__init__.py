"""A local Kubernetes control plane with Chaos Mesh, made of real servers, kwok's fake pods and optionally a real
node that runs real containers (``chaosdb cluster up --kind kubernetes [--real-nodes 1]``):
:mod:`~chaosdb.clusters.kubernetes.cluster` runs it, :mod:`~chaosdb.clusters.kubernetes.pki` makes its
certificates, :mod:`~chaosdb.clusters.kubernetes.resources` and :mod:`~chaosdb.clusters.kubernetes.workloads` are what it holds,
:mod:`~chaosdb.clusters.kubernetes.apply` creates them.

What is in it:

* ``cluster_command``: ``chaosdb cluster up|status|down --kind kubernetes``
* ``realnode/``: a real node: containerd, runc, the CNI plugins and kubelet on this machine, its bridge and forwarders
* ``node_images``: the images a real node's pods run, built here and imported into its containerd
* ``chaos_daemon``: Chaos Mesh's chaos-daemon on the real nodes (DaemonSet, headless Service)
* ``litmus``: the LitmusChaos operator on the real node (``--litmus``: its RBAC, the Litmus CRDs, its Deployment)
* ``patroni_pods``: Patroni + PostgreSQL in pods of the real node, Kubernetes as its DCS, local volumes
"""
