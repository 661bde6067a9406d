"""Agent profiles and sub-agents: who an agent is, and dispatch_agent to run one for another.
"""
