"""AWS glue (boto3): spot notices from EventBridge through SQS into the notices stream in Redis.

- `sqs_notices`: `SqsNoticePoller`, the long-polling reader behind ``plastic sqs-watch``, and
  `AgentMap` (EC2 instance id -> Mesos agent id, from the agent records in Redis).
- `eventbridge`: the one-time set-up (``plastic sqs-setup``): queue, rule, target, queue policy.
- `session`: clients, region resolution, and AWS errors as one-line plastic errors.

The event parsing itself is pure and lives in plastic.core.book.spot_events.
"""
