"""Chaos Mesh: create, watch, pause and delete chaos objects aimed at database roles.

What is in it:

* ``actions``: create, pause, resume and delete chaos objects, a role target narrowing the selector to the resolved pod
* ``objects``: the objects built and read: kinds, plurals, selectors, their status conditions
* ``physical``: PhysicalMachineChaos and PhysicalMachine objects for chaosd on the database's machines
* ``capabilities``: what chaos-daemon can carry out on nodes that share this machine's kernel, refused before creation
* ``probes``: whether an object is injected, paused or recovered
* ``revert_handler``: what this engine undoes of a fault record: the PhysicalMachineChaos objects of chaosd attacks
"""

#: this package is the fault engine called so (:mod:`chaosdb.core.engines`)
ENGINE = "chaosmesh"
