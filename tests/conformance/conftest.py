def pytest_configure(config):
    config.addinivalue_line("markers", "conformance: the CWL v1.2 conformance tests tagged `required`, run with "
                                       "cwltest through toil-cwl-runner --batchSystem plastic on a local cluster and "
                                       "through plastic run "
                                       "(several minutes each; the suite is in tests/data/cwl-v1.2)")
