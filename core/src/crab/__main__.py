"""``python -m crab`` is the ``crab`` command."""

from crab.cli import main

main()
