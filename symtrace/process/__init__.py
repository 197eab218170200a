"""Process mode: `symtrace record/replay -- CMD` (runner, parent side), the instrumented child
(child), and the sitecustomize bootstrap that hands the child over to symtrace."""
