"""The seams where a program meets the outside: HTTP (LLM calls), tools, the egress guard."""
