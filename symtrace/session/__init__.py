"""The session every boundary talks to: attribution context, lane identities, the active
session and its hook-facing API (`symtrace.session.core`). Imports model and bundle."""
