def pytest_configure(config):
    config.addinivalue_line("markers", "toil_e2e: end-to-end runs of toil-cwl-runner --batchSystem plastic "
                                       "on a local cluster (about 20-60 s each)")
