"""Faults carried out by chaosd, Chaos Mesh's agent for databases on physical and virtual machines: process stop
and kill, CPU and memory stress, network partition, disk fill and clock skew of a node's processes, each with a
fault record, a rollback and a timer like the local engine's faults (:mod:`chaosdb.chaosd.actions`)."""
