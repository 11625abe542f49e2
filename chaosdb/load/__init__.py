"""Load generation: Locust users, the Chaos Toolkit load control, live-sample and integrity probes."""
