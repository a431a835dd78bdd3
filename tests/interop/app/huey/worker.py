"""The Huey consumer with the z4j agent: python worker.py [huey_consumer options].

What `huey_consumer tasks.huey` does, plus the two lines that start the z4j
agent (install_agent with the Huey adapter, configured by the Z4J_*
environment variables) and a root log handler, so the agent's lines
("z4j agent connected: session=...") show beside Huey's at INFO level.
"""

import sys

from huey.consumer_options import ConsumerConfig, OptionParserHandler
from z4j_bare import install_agent
from z4j_huey import HueyEngineAdapter

from tasks import huey

options, _ = OptionParserHandler().get_option_parser().parse_args(sys.argv[1:])
config = ConsumerConfig(**{k: v for k, v in vars(options).items() if v is not None})
config.validate()
config.setup_logger()  # the root logger: Huey's lines and the agent's

# The agent runs in a background thread of this process; the adapter hooks
# Huey's signals, which the consumer's worker threads emit.
agent = install_agent(engines=[HueyEngineAdapter(huey=huey)])

huey.create_consumer(**config.values).run()
