"""Every AWS call any Python process makes, appended to the file $PLASTIC_TEST_AWS_CALLS names, one line
each: ``signing-name Operation``.  Put on PYTHONPATH by tests/aws (Python imports sitecustomize at
start), it reaches every process a run starts (plastic run, Toil's leader, the workers on the agents),
so the IAM policy is checked against what they all do.  Tests only: never on a user's path."""

import os

_PATH = os.environ.get("PLASTIC_TEST_AWS_CALLS")

if _PATH:
    from botocore.client import BaseClient

    _real = BaseClient._make_api_call

    def _recorded(self, operation_name, api_params):
        model = self.meta.service_model
        line = f"{model.signing_name or model.endpoint_prefix} {operation_name}\n".encode()
        fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        return _real(self, operation_name, api_params)

    BaseClient._make_api_call = _recorded
