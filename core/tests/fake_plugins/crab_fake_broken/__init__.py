"""A third-party plugin package that breaks in every way a plugin can, one entry point per way.

Each module is its own plugin (entry point ``broken-<way>`` in distribution ``crab-fake-broken``);
``core/tests/conftest.py`` installs the ones a test names. The tests assert the exact line a
user sees for each.
"""
