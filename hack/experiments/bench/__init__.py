"""`make bench` (hack/experiments/bench/bench.py) by job: settings, the /proc and API accounting, the watch tracker, the
cluster's objects, the two operator drivers, the scenario, the results and the report."""
