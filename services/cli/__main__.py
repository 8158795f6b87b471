"""``python -m services.cli``: the ``vcbus`` command."""

import sys

from services.cli import main

sys.exit(main())
