"""The agent over the Agent Client Protocol: ``codingcode acp``, its sessions run in a Jupyter kernel.

Two halves talk over one comm (:mod:`.wire` names its messages): the ACP process
(:mod:`.main`, :mod:`.agent`, :mod:`.kernel_link`, :mod:`.updates`) speaks JSON-RPC with the
editor on stdio and drives a kernel through jupyter_client; the kernel's half
(:mod:`.kernel_side`, :mod:`.kernel_front`) opens the sessions and runs each turn as a cell,
relaying its events and questions back. docs/acp.md says how.
"""
