"""LitmusChaos: run a ChaosEngine, wait for its ChaosResult verdict, report probeSuccessPercentage."""
