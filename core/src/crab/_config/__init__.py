"""Configuration: layered TOML, project trust and every CRAB_* environment variable. Private."""
