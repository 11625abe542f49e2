"""Workload logic (schema, loaders, transactions, checks), independent of Locust."""
