"""TPC-C-like workload: schema, loader, the five transactions, consistency checks."""
