"""``python -m crab`` is the ``crab`` command."""

from crab._cli import main

main()
