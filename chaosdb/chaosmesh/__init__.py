"""Chaos Mesh: create, watch, pause and delete chaos objects aimed at database roles."""

#: this package is the fault engine called so (:mod:`chaosdb.core.engines`)
ENGINE = "chaosmesh"
