"""The JobBook: every Toil job's record and every Mesos decision of a run (placement, notices, requeues, orphans, recovery), pure."""
