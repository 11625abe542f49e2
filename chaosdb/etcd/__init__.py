"""etcd v3 (through its JSON gateway): client and probes."""
