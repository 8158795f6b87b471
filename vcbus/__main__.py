"""``python -m vcbus``: the ``vcbus`` command."""

import sys

from vcbus.services.cli import main

sys.exit(main())
