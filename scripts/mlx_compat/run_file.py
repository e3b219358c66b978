"""Runs one MLX test module and writes one JSON line per event.

    python run_file.py MODULE EVENTS_PATH [SKIP_PATH]

Called by mlx_tests_runner.py in a subprocess whose PYTHONPATH already holds
the test folder (and, for ferrox, the shim first). Events are appended and
flushed as they happen, so a crash or a hang still leaves the results of the
tests before it; SKIP_PATH (a JSON list of test ids) lets the runner resume
after such a test without running it again.
"""

import importlib
import json
import sys
import time
import traceback
import unittest


def main():
    module_name, events_path = sys.argv[1], sys.argv[2]
    skip = set()
    if len(sys.argv) > 3:
        with open(sys.argv[3]) as f:
            skip = set(json.load(f))
    out = open(events_path, "a", buffering=1)

    def emit(**event):
        event["t"] = time.time()
        out.write(json.dumps(event) + "\n")
        out.flush()

    try:
        module = importlib.import_module(module_name)
    except BaseException:
        emit(event="import_error", tb=traceback.format_exc())
        return 3

    def flatten(suite):
        for item in suite:
            if isinstance(item, unittest.TestSuite):
                yield from flatten(item)
            else:
                yield item

    tests = list(flatten(unittest.defaultTestLoader.loadTestsFromModule(module)))
    emit(event="collected", ids=[t.id() for t in tests])
    suite = unittest.TestSuite([t for t in tests if t.id() not in skip])

    class Result(unittest.TestResult):
        def _tb(self, test, err):
            return self._exc_info_to_string(err, test)

        def startTest(self, test):
            super().startTest(test)
            self._in_test = True
            self._outcome_of = {"failure": [], "error": []}
            self._skip = None
            emit(event="start", id=test.id())

        def stopTest(self, test):
            super().stopTest(test)
            self._in_test = False
            o = self._outcome_of
            if o["error"]:
                outcome, tb = "error", o["error"][0]
            elif o["failure"]:
                outcome, tb = "failure", o["failure"][0]
            elif self._skip is not None:
                outcome, tb = "skip", self._skip
            else:
                outcome, tb = "pass", None
            emit(event="end", id=test.id(), outcome=outcome, tb=tb)

        def addError(self, test, err):
            super().addError(test, err)
            if not self._in_test:
                # setUpClass/tearDownClass errors arrive without startTest.
                emit(event="fixture_error", id=str(test), tb=self._tb(test, err))
                return
            self._outcome_of["error"].append(self._tb(test, err))

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._outcome_of["failure"].append(self._tb(test, err))

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                kind = "failure" if issubclass(err[0], test.failureException) else "error"
                self._outcome_of[kind].append(self._tb(test, err))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            if self._in_test:
                self._skip = reason
            else:
                emit(event="fixture_skip", id=str(test), reason=reason)

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._outcome_of["failure"].append("unexpected success\n")

    result = Result()
    result._in_test = False
    suite.run(result)
    emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
