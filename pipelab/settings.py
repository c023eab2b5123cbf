"""Where the lab listens, declared once. No figure depends on a port, so book/inputs.py leaves this
file out of every chapter's key: changing a port here measures nothing again. Only plain constants
belong here (a test holds that). The Java examples read the same values from the environment the
harness sets (PIPELAB_PORT), with java-examples/common/LabDefaults.java as their one fallback."""

DEFAULT_PORT = 16379  # away from 6379, so the lab never lands on a reader's own Redis
DEFAULT_CLUSTER_PORT = 17100  # masters on 17100-17102; docker-compose's cluster profile uses 17000-17002
