"""The engine: tools, the approval pipeline, the agent loop, sessions and MCP.

Pure Python on top of the anthropic and mcp SDKs. Nothing here may import IPython,
ipywidgets or ipykernel: the notebook front consumes the engine's events, never the reverse.
"""
