"""MCP servers: ``.mcp.json``, one owner task per server, wire-safe tool names, and the client
side of the protocol (progress, logs, resources, prompts, sampling, elicitation, roots, OAuth).

Names are imported on first use: the client side pulls in the ``mcp`` SDK (and with it most of
its server side), which a session whose project configures no server never needs.
"""
