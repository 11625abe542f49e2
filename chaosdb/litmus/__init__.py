"""LitmusChaos: run a ChaosEngine, wait for its ChaosResult verdict, report probeSuccessPercentage."""

#: this package is the fault engine called so (:mod:`chaosdb.core.engines`)
ENGINE = "litmus"
