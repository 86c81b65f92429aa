"""crab-core's version (kept here so ``crab --version`` needs no metadata lookup)."""

__version__ = "0.1.0"
