"""Real nodes of the local Kubernetes cluster: containerd, runc, the CNI plugins and kubelet on this machine, so
pods run real containers (``chaosdb cluster up --kind kubernetes --real-nodes 1``).

What is in it:

* ``prerequisites``: what a real node needs here, every missing part named at once with its install line
* ``network``: the node's bridge on a private range that exists only inside this machine, its CNI configuration, the
  host sysctls recorded and restored
* ``forwarder``: the TCP forwarder that lets pods reach the API server at ``10.96.0.1:443``
* ``containerd``: containerd's configuration (the CRI plugin, the traps found here) and ``ctr``
* ``kubelet``: kubelet's configuration and command line
* ``node``: a node's plan, start, status and complete removal
"""
