"""The pytest plugin crab-core registers (entry point ``pytest11``): crab's fixtures."""
