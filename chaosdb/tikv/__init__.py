"""TiKV through PD: stores, regions and their leaders, PD members and health, leader transfer and eviction.

``keys`` encodes user keys the way TiKV stores them (raw, transactional, API V2); ``records`` normalises
PD's JSON (tolerant of the zero values PD omits); ``pd`` talks to PD's HTTP API; ``probes`` and
``actions`` are the Chaos Toolkit activities.
What is in it:

* ``adapter``: TiKV's answer to "which node has this role", asked of PD
* ``cluster``: Reading a TiKV cluster through PD
* ``store_processes``: TiKV stores running on this machine (a local PD cluster is :mod:`chaosdb.clusters.pd`)
"""
