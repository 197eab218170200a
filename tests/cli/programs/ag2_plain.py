"""Imports AG2 (classic `autogen`) and makes one plain chat call: recorded with another
framework's adapter armed, the AG2 adapter is not, and symtrace must say so."""

import sys

import autogen  # noqa: F401 - the import is the point
from openai import OpenAI


def main() -> int:
    reply = OpenAI(max_retries=0).chat.completions.create(
        model="stub-model", messages=[{"role": "user", "content": "Hello"}]
    )
    print("REPLY:", reply.choices[0].message.content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
