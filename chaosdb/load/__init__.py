"""Load generation: Locust users, the Chaos Toolkit load control, live-sample and integrity probes."""

#: activity modules besides ``probes``/``actions`` (:func:`chaosdb.activity_modules`)
ACTIVITY_MODULES = {"probe": ["integrity"]}
