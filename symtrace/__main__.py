import sys

from symtrace.cli import main

sys.exit(main())
