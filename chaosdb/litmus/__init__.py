"""LitmusChaos: run a ChaosEngine, wait for its ChaosResult verdict, report probeSuccessPercentage.

What is in it:

* ``actions``: LitmusChaos actions
* ``probes``: LitmusChaos probes
* ``results``: ChaosResult records (``<engine>-<experiment>``) read and summarised
"""

#: this package is the fault engine called so (:mod:`chaosdb.core.engines`)
ENGINE = "litmus"
