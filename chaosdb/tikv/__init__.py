"""TiKV through PD: stores, regions and their leaders, PD members and health, leader transfer and eviction.

``keys`` encodes user keys the way TiKV stores them (raw, transactional, API V2); ``records`` normalises
PD's JSON (tolerant of the zero values PD omits); ``pd`` talks to PD's HTTP API; ``probes`` and
``actions`` are the Chaos Toolkit activities.
"""
