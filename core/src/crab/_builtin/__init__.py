"""Core's own plugins, registered through the same hooks as any other: commands, the permission
gate, the memory store, the plain and jsonl renderers, the loop guard, compaction, the progressive
tool view and the prompt. Private."""
