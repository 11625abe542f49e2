"""Faults carried out by chaosd, Chaos Mesh's agent for databases on physical and virtual machines: process stop
and kill, CPU and memory stress, network partition, disk fill and clock skew of a node's processes, each with a
fault record, a rollback and a timer like the local engine's faults (the record service,
:mod:`chaosdb.core.faultrecords`).

What is in it:

* ``actions``: the faults, each asked of chaosd directly or through Chaos Mesh's PhysicalMachineChaos, and their rollback
* ``revert_handler``: what this engine undoes of a fault record (its attacks), and chaosd's leftovers on the machine
"""

#: this package is the fault engine called so (:mod:`chaosdb.core.engines`)
ENGINE = "chaosd"
