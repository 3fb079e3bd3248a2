"""`make bench`: performance figures measured side by side in one run (see docs/benchmarks.md).

Benchmarks report; tests never time anything.
"""
