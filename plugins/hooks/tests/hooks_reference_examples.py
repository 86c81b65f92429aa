"""Examples copied unchanged from Claude Code's "Hooks reference" (https://code.claude.com/docs/en/hooks,
the page as published in 2026 with the events PostToolUseFailure, StopFailure, InstructionsLoaded,
PostCompact and HTTP hooks; the WorktreeCreate and WorktreeRemove sections from the same page's
zh-TW edition, whose JSON blocks are the English page's): each entry names the section it comes
from. Inputs are what Claude Code sends a hook; the tests check that crab sends every field they
have. Outputs are what a hook prints (or an HTTP hook answers); the tests' hooks print them as they are.
"""

# ruff: noqa: E501  (the reference's one-line commands stay as they are)

from __future__ import annotations

import json
from typing import Any

# "SessionStart input"
SESSION_START_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "hook_event_name": "SessionStart",
  "source": "startup",
  "model": "claude-sonnet-4-6"
}"""

# "PermissionRequest input"
PERMISSION_REQUEST_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "permission_mode": "default",
  "hook_event_name": "PermissionRequest",
  "tool_name": "Bash",
  "tool_input": {
    "command": "rm -rf node_modules",
    "description": "Remove node_modules directory"
  },
  "permission_suggestions": [
    {
      "type": "addRules",
      "rules": [{ "toolName": "Bash", "ruleContent": "rm -rf node_modules" }],
      "behavior": "allow",
      "destination": "localSettings"
    }
  ]
}"""

# "PermissionRequest decision control"
PERMISSION_REQUEST_ALLOW_OUTPUT = """{
  "hookSpecificOutput": {
    "hookEventName": "PermissionRequest",
    "decision": {
      "behavior": "allow",
      "updatedInput": {
        "command": "npm run lint"
      }
    }
  }
}"""

# "Notification input"
NOTIFICATION_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "hook_event_name": "Notification",
  "message": "Claude needs your permission to use Bash",
  "title": "Permission needed",
  "notification_type": "permission_prompt"
}"""

# "PostToolUseFailure input"
POST_TOOL_USE_FAILURE_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "permission_mode": "default",
  "hook_event_name": "PostToolUseFailure",
  "tool_name": "Bash",
  "tool_input": {
    "command": "npm test",
    "description": "Run test suite"
  },
  "tool_use_id": "toolu_01ABC123...",
  "error": "Command exited with non-zero status code 1",
  "is_interrupt": false
}"""

# "PostToolUseFailure decision control"
POST_TOOL_USE_FAILURE_OUTPUT = """{
  "hookSpecificOutput": {
    "hookEventName": "PostToolUseFailure",
    "additionalContext": "Additional information about the failure for Claude"
  }
}"""

# "Stop input"
STOP_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "~/.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "permission_mode": "default",
  "hook_event_name": "Stop",
  "stop_hook_active": true,
  "last_assistant_message": "I've completed the refactoring. Here's a summary..."
}"""

# "Stop decision control" (SubagentStop uses the same format)
STOP_BLOCK_OUTPUT = """{
  "decision": "block",
  "reason": "Must be provided when Claude is blocked from stopping"
}"""

# "SubagentStart input"
SUBAGENT_START_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "hook_event_name": "SubagentStart",
  "agent_id": "agent-abc123",
  "agent_type": "Explore"
}"""

# "SubagentStart" output
SUBAGENT_START_OUTPUT = """{
  "hookSpecificOutput": {
    "hookEventName": "SubagentStart",
    "additionalContext": "Follow security guidelines for this task"
  }
}"""

# "SubagentStop input"
SUBAGENT_STOP_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "~/.claude/projects/.../abc123.jsonl",
  "cwd": "/Users/...",
  "permission_mode": "default",
  "hook_event_name": "SubagentStop",
  "stop_hook_active": false,
  "agent_id": "def456",
  "agent_type": "Explore",
  "agent_transcript_path": "~/.claude/projects/.../abc123/subagents/agent-def456.jsonl",
  "last_assistant_message": "Analysis complete. Found 3 potential issues..."
}"""

# "StopFailure input"
STOP_FAILURE_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "hook_event_name": "StopFailure",
  "error": "rate_limit",
  "error_details": "429 Too Many Requests",
  "last_assistant_message": "API Error: Rate limit reached"
}"""

# "PreCompact input"
PRE_COMPACT_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "hook_event_name": "PreCompact",
  "trigger": "manual",
  "custom_instructions": ""
}"""

# "PostCompact input"
POST_COMPACT_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "hook_event_name": "PostCompact",
  "trigger": "manual",
  "compact_summary": "Summary of the compacted conversation..."
}"""

# "SessionEnd input"
SESSION_END_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "hook_event_name": "SessionEnd",
  "reason": "other"
}"""

# "InstructionsLoaded input"
INSTRUCTIONS_LOADED_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../transcript.jsonl",
  "cwd": "/Users/my-project",
  "hook_event_name": "InstructionsLoaded",
  "file_path": "/Users/my-project/CLAUDE.md",
  "memory_type": "Project",
  "load_reason": "session_start"
}"""

# "WorktreeCreate input"
WORKTREE_CREATE_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "hook_event_name": "WorktreeCreate",
  "name": "feature-auth"
}"""

# "WorktreeCreate": the example configuration (an SVN checkout: its `svn checkout URL "$DIR"` is
# the one part a test replaces, with `mkdir -p "$DIR"`, as no SVN server runs here)
WORKTREE_CREATE_CONFIG = """{
  "hooks": {
    "WorktreeCreate": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "bash -c 'NAME=$(jq -r .name); DIR=\\"$HOME/.claude/worktrees/$NAME\\"; svn checkout https://svn.example.com/repo/trunk \\"$DIR\\" >&2 && echo \\"$DIR\\"'"
          }
        ]
      }
    ]
  }
}"""

# "WorktreeRemove": the example configuration
WORKTREE_REMOVE_CONFIG = """{
  "hooks": {
    "WorktreeRemove": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "bash -c 'jq -r .worktree_path | xargs rm -rf'"
          }
        ]
      }
    ]
  }
}"""

# "WorktreeRemove input"
WORKTREE_REMOVE_INPUT = """{
  "session_id": "abc123",
  "transcript_path": "/Users/.../.claude/projects/.../00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
  "cwd": "/Users/...",
  "hook_event_name": "WorktreeRemove",
  "worktree_path": "/Users/.../my-project/.claude/worktrees/feature-auth"
}"""

# "HTTP hook fields": the example configuration (its URL is replaced by the test server's)
HTTP_HOOK_CONFIG = """{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "http",
            "url": "http://localhost:8080/hooks/pre-tool-use",
            "timeout": 30,
            "headers": {
              "Authorization": "Bearer $MY_TOKEN"
            },
            "allowedEnvVars": ["MY_TOKEN"]
          }
        ]
      }
    ]
  }
}"""

# "Decision control", the PreToolUse tab
PRE_TOOL_USE_DENY_OUTPUT = """{
  "hookSpecificOutput": {
    "hookEventName": "PreToolUse",
    "permissionDecision": "deny",
    "permissionDecisionReason": "Database writes are not allowed"
  }
}"""


def fields(example: str) -> set[str]:
    """The top-level field names of an example input."""
    data: dict[str, Any] = json.loads(example)
    return set(data)
