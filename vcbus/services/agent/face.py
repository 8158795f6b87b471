"""The node agent's face: what the CLI (``vcbus agent``, ``up``, ``logs``) uses of it.

The CLI imports the agent only from here (docs/architecture.md#faces). A module of its own,
not the package's ``__init__``: the agent's packages import nothing, so that a pod's
supervisor (``python -m vcbus.services.agent.app.supervisor``) starts without loading the
shell. Importing this face loads the shell.
"""

from vcbus.services.agent.app import podman
from vcbus.services.agent.app.cgroups import DEFAULT_PIDS_MAX, detect
from vcbus.services.agent.app.drain import drain
from vcbus.services.agent.app.logserver import (
    ENV_CAFILE,
    ENV_CERTFILE,
    ENV_KEYFILE,
    ENV_TOKEN,
    ENV_TOKEN_FILE,
    TOKEN_FILE,
    ServerOptions,
    load_or_make_token,
)
from vcbus.services.agent.app.shell import AgentOptions, build_service
from vcbus.services.agent.core import AgentConf
from vcbus.services.agent.launch import Policy
from vcbus.services.agent.ports import parse_range

__all__ = [
    "DEFAULT_PIDS_MAX",
    "ENV_CAFILE",
    "ENV_CERTFILE",
    "ENV_KEYFILE",
    "ENV_TOKEN",
    "ENV_TOKEN_FILE",
    "TOKEN_FILE",
    "AgentConf",
    "AgentOptions",
    "Policy",
    "ServerOptions",
    "build_service",
    "detect",
    "drain",
    "load_or_make_token",
    "parse_range",
    "podman",
]
