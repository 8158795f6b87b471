"""``python -m tests.unit.support.spawn CODE``: run CODE, for tests of what a process leaves."""

import sys

exec(sys.argv[1])
