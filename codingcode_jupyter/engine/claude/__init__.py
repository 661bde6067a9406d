"""Claude Code's configuration read as it is: its tool names, its files, its hook protocol.

``names`` maps Claude Code's tool names (and ``mcp__server__tool``) to ours and back;
``tool_input`` translates a call's arguments and result into the shapes Claude Code's hooks
expect (and a hook's ``updatedInput`` back); ``files`` says where Claude Code keeps its
files; ``instructions`` reads ``CLAUDE.md`` with its ``@path`` imports. Nothing here decides
anything: the approval pipeline, the settings and the hooks use these translations.
"""

from .names import (
    CLAUDE_TOOLS,
    ClaudeTool,
    claude_name,
    claude_tool,
    mcp_display_name,
    our_tool_globs,
)

__all__ = ["CLAUDE_TOOLS", "ClaudeTool", "claude_name", "claude_tool", "mcp_display_name", "our_tool_globs"]
