# SPDX-License-Identifier: MIT
"""Run rdma-core's run_tests.py unmodified and record every test's outcome as JSON.

usage: pyverbs_driver.py SUITE_DIR RESULT_JSON run_tests.py-arguments...

run_tests.py ends in unittest.main(); the only thing changed is the result
class of unittest's text runner, which also records each outcome (and the
reason of each skip) so the caller can count them without parsing the log.
"""

import faulthandler
import json
import os
import runpy
import signal
import sys
import unittest


def main():
    suite_dir, out_path = sys.argv[1], sys.argv[2]
    outcomes = []

    class Recording(unittest.TextTestResult):
        def addSuccess(self, test):
            super().addSuccess(test)
            outcomes.append({'id': test.id(), 'outcome': 'passed'})

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            outcomes.append({'id': test.id(), 'outcome': 'skipped', 'reason': reason})

        def addFailure(self, test, err):
            super().addFailure(test, err)
            outcomes.append({'id': test.id(), 'outcome': 'failed',
                             'detail': self.failures[-1][1]})

        def addError(self, test, err):
            super().addError(test, err)
            outcomes.append({'id': test.id(), 'outcome': 'errored',
                             'detail': self.errors[-1][1]})

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            outcomes.append({'id': test.id(), 'outcome': 'passed'})

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            outcomes.append({'id': test.id(), 'outcome': 'failed',
                             'detail': 'unexpected success'})

    unittest.TextTestRunner.resultclass = Recording
    # The rdmacm tests fork their two sides and SIGTERM a side that is stuck: it then prints
    # where each of its threads was before it ends.
    faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)
    script = os.path.join(suite_dir, 'run_tests.py')
    sys.argv = [script] + sys.argv[3:]
    sys.path.insert(0, suite_dir)
    status = 0
    try:
        runpy.run_path(script, run_name='__main__')
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
    with open(out_path, 'w') as f:
        json.dump({'status': status, 'tests': outcomes}, f)
    return 0


if __name__ == '__main__':
    sys.exit(main())
