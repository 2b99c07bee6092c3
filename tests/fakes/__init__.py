"""Shared fakes and test data of the suite, imported by test modules (which never import each other,
tests/test_suite_rules.py): catalogs, a recording driver, a manual clock, record listeners, a JobBook
harness and a hand-made run story."""
