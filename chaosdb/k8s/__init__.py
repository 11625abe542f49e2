"""Kubernetes through ``kubectl`` (argv lists, never a shell): pods, exec, delete, rollouts.

Configuration: ``k8s_namespace`` (default ``default``), ``k8s_kubectl`` (the binary, default
``kubectl``), ``k8s_context``, ``k8s_kubeconfig``. kubectl reads the usual kubeconfig / in-cluster
service account, so an experiment run from a pod with a service account needs nothing else.
"""
