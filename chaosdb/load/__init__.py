"""Load generation: Locust users, the Chaos Toolkit load control, live-sample and integrity probes.

What is in it:

* ``actions``: Actions that prepare or drive the load
* ``calibrate``: capacity calibration in the spirit of the UPB method: the highest sustainable rate
* ``control``: Chaos Toolkit control that runs the load for the whole experiment (its hooks only)
* ``dsn``: where the load goes: its DSN, or the etcd URLs, with their TLS
* ``progress``: the load's progress lines in the run's log
* ``options``: the load's options as one typed model (``LoadOptions``), checked once, handed to the runner
* ``runner``: starting and stopping Locust (or a master with workers) and the load's record
* ``distributed``: Locust's master/worker mode for the pack's load
* ``distributed_control``: The load control's side of Locust's master/worker mode
* ``integrity``: Integrity probes for after the chaos
* ``histories``: probes over the operation history the load recorded (anomalies, linearizability)
* ``locust_common``: Plumbing shared by the pack's Locust users
* ``locust_tpcc``: Locust user class for the TPC-C workload (``locust -f load/tpcc.py``)
* ``locust_ycsb``: Locust user class for YCSB workload A on SQL (``locust -f load/ycsb.py``)
* ``locust_history``: Locust user class of the history workloads (list-append, rw-register, register)
* ``observer``: The run's watcher of the database
* ``probes``: Steady-state probes over the live load samples
* ``state``: The load running in this process (shared by the control, the live probes and the pause helpers)
* ``window``: Window arithmetic of the live-sample probes (pure functions, unit tested)
"""

#: activity modules besides ``probes``/``actions`` (:func:`chaosdb.activity_modules`)
ACTIVITY_MODULES = {"probe": ["integrity", "histories"]}
