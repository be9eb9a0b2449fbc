"""Performance runs of schedsearch; not part of the default test run."""
