"""A z4j-bare agent that reports an older z4j release line than svc is tested against.

svc's hello_ack names the agent line it speaks; the agent compares its major.minor with its
own z4j-core version. Pretending to be 1.12 must still draw the upgrade warning, so the
warning keeps its meaning for agents that really are outdated. Settings come from Z4J_*.
"""

import logging
import time

import z4j_core.version

# The WebSocket transport reads the version at connect time, after this line.
z4j_core.version.__version__ = "1.12.0"

from z4j_bare import install_agent  # noqa: E402


class TinyEngine:
    """The smallest engine the runtime accepts: a name, a protocol and no capabilities."""

    name = "bare"
    protocol_version = "1"

    def capabilities(self):
        return set()


logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
runtime = install_agent(engines=[TinyEngine()])
while True:
    time.sleep(1)
