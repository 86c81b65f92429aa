"""Test kit for crab and for third-party plugins: scripted provider, fixtures, contract suites."""
