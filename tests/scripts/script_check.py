"""What the tests of scripts/ share: the script under test, checks that collect their failures,
and the exit status. Each test runs as `python3 tests/scripts/NAME_test.py SOURCE_DIR`."""
import os
import sys

failures = []


def script(name):
    """The path of scripts/NAME in the source tree the test was given."""
    return os.path.join(sys.argv[1], "scripts", name)


def check(ok, what):
    if not ok:
        failures.append(what)


def finish():
    """Prints every failed check and exits 1 if there was one, else 0."""
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)
