"""plastic's own client of the Mesos v1 scheduler HTTP API (pymesos does not install on Python 3.11+)."""
