"""Pure values: canonical JSON, hashes, events, the dependency graph, divergence reports,
interventions, qualified names, redaction, runtime facts. Imports only `symtrace.errors`."""
