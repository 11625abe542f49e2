"""The Kubernetes engine, through the official ``kubernetes`` client: pods (read, delete, a signal inside a
container through the exec stream), StatefulSets (scale, rolling restart with each pod's down time), database
role targets (``{"role": "tikv-leader", "key": ...}``) and the after-experiment cleanup.

Configuration: ``k8s_namespace`` (default ``default``), ``k8s_kubeconfig`` (else ``$KUBECONFIG`` or
``~/.kube/config``), ``k8s_context``, ``k8s_in_cluster: true`` for a pod's service account (see
:mod:`chaosdb.k8s.api`).
"""

#: this package is the fault engine called so (:mod:`chaosdb.core.engines`)
ENGINE = "kubernetes"
