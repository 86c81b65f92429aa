"""crab-eval: ``crab replay`` (a recorded session re-run, tools live) and ``crab eval`` (task suites measured).

Hook implementations only; the logic lives in the modules beside this one, imported when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from crab import Config, ConfigTable, Provider

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_config_table() -> ConfigTable:
    """``[plugins.eval]``: see ``crab_eval.settings.TABLE``."""
    from crab_eval.settings import TABLE

    return TABLE


@crab.hookimpl
def crab_providers(config: Config) -> list[Provider]:
    """``replay``: serves a running replay's recorded replies (and refuses any other use)."""
    from crab_eval.replay_provider import ReplayProvider

    return [ReplayProvider(config)]


@crab.hookimpl
def crab_cli(app: Any, config: Config) -> None:
    """``crab replay SESSION`` and ``crab eval SUITE`` (each imports its module when run)."""
    import typer

    cli: typer.Typer = app

    @cli.command("replay")
    def replay_command(
        session: str = typer.Argument(
            ..., metavar="SESSION", help="session id, or a file `crab sessions export` wrote"
        ),
        until: int = typer.Option(None, "--until", metavar="N", help="stop after the N-th tool call"),
        tool: str = typer.Option(None, "--tool", metavar="NAME", help="report only the calls of this tool"),
        in_place: bool = typer.Option(False, "--in-place", help="run in the workspace itself, not a scratch copy"),
        workspace: str = typer.Option(None, "--workspace", metavar="DIR", help="copy this folder instead"),
        keep: bool = typer.Option(False, "--keep", help="keep the scratch copy (its path is printed)"),
        as_script: str = typer.Option(
            None, "--as-script", metavar="PATH", help="write the session as a mock-provider script ('-': stdout)"
        ),
        json_path: str = typer.Option(None, "--json", metavar="PATH", help="also write every call's results as JSON"),
        store: str = typer.Option(None, "--store", help="the store holding the session"),
        plugins: str = typer.Option(None, "--plugins", help="comma list of plugins to load"),
        trust_recording: bool = typer.Option(
            False, "--trust-recording", help="a session file is yours: allow what it allowed without asking"
        ),
    ) -> None:
        """Re-run a session: its recorded replies played back, the tools run live; exit 1 if any result differs."""
        from crab_eval import replay_cli

        code = replay_cli.run(
            config,
            session,
            until=until,
            tool=tool,
            in_place=in_place,
            keep=keep,
            workspace=workspace,
            as_script=as_script,
            json_path=json_path,
            store=store,
            plugins=plugins,
            trust_recording=trust_recording,
        )
        raise typer.Exit(code)

    @cli.command("eval")
    def eval_command(
        suite: str = typer.Argument(..., metavar="SUITE", help="a folder of task files, or `starter`"),
        models: list[str] = typer.Option(
            [], "-m", "--model", metavar="MODEL[,KEY=VALUE…]", help="a configuration (repeat to compare)"
        ),
        sets: list[str] = typer.Option([], "--set", metavar="KEY=VALUE", help="a config override for every run"),
        prompt_file: str = typer.Option(None, "--prompt-file", help="text added to the system prompt"),
        repeat: int = typer.Option(1, "-n", "--repeat", min=1, help="runs of each task per configuration"),
        jobs: int = typer.Option(None, "-j", "--jobs", min=1, help="runs at once (default [plugins.eval] jobs)"),
        tasks: list[str] = typer.Option([], "--task", help="only this task (repeatable)"),
        scripted: bool = typer.Option(
            False, "--scripted", help="run the tasks' scripted solutions on the mock provider"
        ),
        resume: bool = typer.Option(False, "--resume", help="keep finished runs in --out, run the rest"),
        out: str = typer.Option(
            None, "--out", metavar="DIR", help="where runs are recorded (default .crab-eval/SUITE)"
        ),
        json_path: str = typer.Option(None, "--json", metavar="PATH", help="write the report as JSON"),
        html_path: str = typer.Option(None, "--html", metavar="PATH", help="write a self-contained HTML report"),
        judge_model: str = typer.Option(None, "--judge-model", help="model judging tasks with a `judge` rubric"),
        output: str = typer.Option("text", "--output", help="text, or jsonl (one event per finished run)"),
        store: str = typer.Option(None, "--store", help="session store the runs write (keep them for replay)"),
        keep: bool = typer.Option(False, "--keep-workspaces", help="keep each run's temporary workspace"),
    ) -> None:
        """Run a suite of tasks against one or more configurations and report pass rates, cost and time."""
        from crab_eval import eval_cli

        code = eval_cli.run(
            config,
            eval_cli.EvalOptions(
                suite=suite,
                models=list(models),
                sets=list(sets),
                prompt_file=prompt_file,
                repeat=repeat,
                jobs=jobs,
                tasks=list(tasks),
                scripted=scripted,
                resume=resume,
                out=out,
                json_path=json_path,
                html_path=html_path,
                judge_model=judge_model,
                output=output,
                store=store,
                keep=keep,
            ),
        )
        raise typer.Exit(code)
