"""Session modes (crab's permission modes) and the permission question as the editor asks it.

The editor's modes are crab's four: ``ask`` (reads pass, the rest is asked), ``read-only``
(writes and commands refused), ``yolo`` (everything allowed) and ``plan`` (writes and commands
refused until the user approves a plan: ACP's plan session mode). A session starts in the mode
crab's config gives (``[crab] permissions``, with its trust rules) and its agent always runs
crab's gate in ``ask``: ``read-only`` refuses in crab-acp's interceptor before the gate
(``crab_acp.bridge``), ``yolo`` answers the gate's question "once" itself, and ``plan`` sets the
session's plan switch the gate reads (an approved plan, crab-plan's ``present_plan``, turns it off
and the editor's mode goes to ``ask``), so the user may move between all four at any time. A
question goes to ``session/request_permission`` with allow once / always allow / reject; a
cancelled question, or any answer that is not an allow, refuses. A tool's question with choices
(crab-ask's ``ask_user``, crab-plan's approval) is asked the same way, one option a choice; one
that wants free words only has no ACP form yet, so it gets no answer (the tool says so).
"""

from __future__ import annotations

from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse, SessionMode, SessionModeState

MODES = (
    SessionMode(
        id="ask", name="Ask", description="Reads pass; crab asks before it writes, runs or reaches the network"
    ),
    SessionMode(id="read-only", name="Read-only", description="Writes and commands are refused without asking"),
    SessionMode(id="yolo", name="Yolo", description="Every tool call is allowed without asking"),
    SessionMode(
        id="plan",
        name="Plan",
        description="Reads only: writes and commands are refused until you approve the model's plan",
    ),
)
MODE_IDS = tuple(mode.id for mode in MODES)


def mode_state(current: str) -> SessionModeState:
    return SessionModeState(current_mode_id=current, available_modes=list(MODES))


def options(permission: str) -> list[PermissionOption]:
    return [
        PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
        PermissionOption(option_id="always", name=f"Always allow {permission} in this session", kind="allow_always"),
        PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
    ]


def choice_options(choices: tuple[str, ...]) -> list[PermissionOption]:
    """A tool's question with choices (crab-ask's ``ask_user``), one option a choice, plus "no answer"."""
    listed = [PermissionOption(option_id=f"choice-{n}", name=text, kind="allow_once") for n, text in enumerate(choices)]
    return [*listed, PermissionOption(option_id="none", name="Don't answer", kind="reject_once")]


def chosen(response: RequestPermissionResponse, choices: tuple[str, ...]) -> str | None:
    """The choice the user picked, or None (cancelled, "no answer", an unknown option)."""
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome) or not outcome.option_id.startswith("choice-"):
        return None
    number = outcome.option_id.removeprefix("choice-")
    return choices[int(number)] if number.isdigit() and int(number) < len(choices) else None


def answer(response: RequestPermissionResponse) -> str:
    """crab's answer (once / always / deny) for the editor's."""
    outcome = response.outcome
    if isinstance(outcome, AllowedOutcome) and outcome.option_id in ("once", "always"):
        return outcome.option_id
    return "deny"
