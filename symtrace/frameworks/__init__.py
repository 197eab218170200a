"""Framework adapters: the contract adapters build on (`contract`), the registry of installed
adapters (`registry`) and the refusal of frameworks symtrace cannot record (`refusals`)."""
