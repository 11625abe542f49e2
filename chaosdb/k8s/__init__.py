"""The Kubernetes engine, through the official ``kubernetes`` client: pods (read, delete, a signal inside a
container through the exec stream), StatefulSets (scale, rolling restart with each pod's down time), database
role targets (``{"role": "tikv-leader", "key": ...}``) and the after-experiment cleanup.

Configuration: ``k8s_namespace`` (default ``default``), ``k8s_kubeconfig`` (else ``$KUBECONFIG`` or
``~/.kube/config``), ``k8s_context``, ``k8s_in_cluster: true`` for a pod's service account (see
:mod:`chaosdb.k8s.api`).
What is in it:

* ``actions``: Kubernetes-level failures aimed at database roles: pod delete, process kill, scale, rolling restart
* ``control``: Chaos Toolkit control
* ``created``: what this process created on Kubernetes, so the control deletes what a run left
* ``pods``: Pods through the official client
* ``probes``: Kubernetes probes
* ``roles``: Which pod a Kubernetes fault hits, decided by database role when the action runs
* ``rollout``: Rolling restarts and image changes of a StatefulSet, with each pod's down time measured (official client)
"""

#: this package is the fault engine called so (:mod:`chaosdb.core.engines`)
ENGINE = "kubernetes"
