"""A fake plugin whose `crab iterations-cli` sub-command prints the config it was added under."""

import crab


@crab.hookimpl
def crab_cli(app, config):
    @app.command("iterations-cli")
    def iterations_cli() -> None:
        """Print the run's max_iterations."""
        print(config.get("crab.max_iterations"))
