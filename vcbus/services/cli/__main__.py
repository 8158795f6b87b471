"""``python -m vcbus.services.cli``: the ``vcbus`` command."""

import sys

from vcbus.services.cli import main

sys.exit(main())
