"""The plasticity manager as a service: `plastic serve`, `submit`, `status`, `logs`."""
