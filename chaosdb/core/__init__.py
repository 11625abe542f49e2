"""Shared building blocks: errors, targets and the quorum rule, fault records, redaction."""
