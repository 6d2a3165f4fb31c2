# Tests of the compiled core (sparrow_core): scenarios run against the C++ binding and the
# pure-Python reference models in tests/core/reference/, property tests comparing the two,
# statistical tests of sampling, every bad-argument path, and pytest-benchmark cases.
