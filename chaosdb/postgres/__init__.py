"""Patroni / PostgreSQL: REST and SQL clients, probes and actions for any Patroni cluster."""
