"""The shim's files call one another without a loop: the graph derived from
the symbols each object defines and uses (scripts/shim_callgraph.py, nm on the
build's objects) has no cycle but the allowed pair."""
import os
import subprocess
import sys
import unittest

from gtlib import BUILD

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ShimStructureTest(unittest.TestCase):
    def test_shim_files_have_no_call_cycle(self):
        p = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'shim_callgraph.py'), BUILD, '--check'],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn('writer.c', p.stdout)


if __name__ == '__main__':
    unittest.main()
