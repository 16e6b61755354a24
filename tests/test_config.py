"""The shim's configuration table (shim/config.c) and the README's
Configuration table list the same GPUTRACE_* variables with the same defaults,
and no other shim file reads a GPUTRACE_* variable from the environment."""
import glob
import os
import re
import subprocess
import unittest

from gtlib import prog

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme_table():
    """{variable: default} from README.md's Configuration table."""
    text = open(os.path.join(ROOT, 'README.md'), encoding='utf-8').read()
    section = text[text.index('### Configuration'):]
    rows = {}
    for line in section.splitlines()[1:]:
        if line.startswith('#'):
            break
        m = re.match(r'\|\s*`(GPUTRACE_\w+)`\s*\|([^|]*)\|', line)
        if m:
            default = re.sub(r'\(.*?\)', '', m.group(2)).replace('`', '').strip()
            rows[m.group(1)] = default
    return rows


def shim_table():
    out = subprocess.run([prog('config_table')], capture_output=True, text=True, check=True).stdout
    return {line.split('\t')[0]: line.split('\t')[1] for line in out.splitlines()}


class ConfigTableTest(unittest.TestCase):
    def test_readme_and_config_table_list_the_same_variables_and_defaults(self):
        readme, shim = readme_table(), shim_table()
        self.assertGreaterEqual(len(shim), 10)
        self.assertEqual(sorted(readme), sorted(shim))
        for name in shim:
            self.assertEqual(readme[name], shim[name], name)

    def test_only_config_c_reads_gputrace_variables(self):
        readers = []
        for path in glob.glob(os.path.join(ROOT, 'shim', '*.c')):
            if os.path.basename(path) == 'config.c':
                continue
            if re.search(r'getenv\s*\(\s*"GPUTRACE_', open(path, encoding='utf-8').read()):
                readers.append(os.path.basename(path))
        self.assertEqual(readers, [])


if __name__ == '__main__':
    unittest.main()
