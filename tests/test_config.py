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


class FlagValues(unittest.TestCase):
    """A flag reads 1/true/yes/on as on and 0/false/no/off as off (GPUTRACE_DISABLE=false
    turned tracing off: any value but "0" was on); anything else is on, with a warning."""

    def run_demo(self, **env):
        import tempfile
        import gtlib
        with tempfile.TemporaryDirectory() as d:
            e = gtlib.base_env(GPUTRACE_OUTPUT=os.path.join(d, 't.db'), GPUTRACE_CUPTI=0, **env)
            p = gtlib.run([prog('demo_loop')], env=e, cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            return p.stderr, os.path.exists(os.path.join(d, 't.db'))

    def test_false_no_off_are_off_and_true_yes_on_are_on(self):
        for off in ('false', 'No', 'OFF', '0'):
            self.assertEqual(self.run_demo(GPUTRACE_DISABLE=off)[1], True, off)
            self.assertIn('gputrace: wrote', self.run_demo(GPUTRACE_QUIET=off)[0], off)
        for on in ('true', 'YES', 'on', '1'):
            self.assertEqual(self.run_demo(GPUTRACE_DISABLE=on)[1], False, on)
            self.assertEqual(self.run_demo(GPUTRACE_QUIET=on)[0], '', on)

    def test_another_value_is_on_and_said(self):
        err, written = self.run_demo(GPUTRACE_QUIET='maybe')
        self.assertTrue(written)
        self.assertEqual(err, 'gputrace: GPUTRACE_QUIET=maybe read as on (expected 1, true, yes, on or 0, false, no, off)\n')
        # a disabled shim starts no trace: the warning was never said, and a
        # typo turned tracing off in silence; its first CUDA call says it
        err, written = self.run_demo(GPUTRACE_DISABLE='fasle')
        self.assertFalse(written)
        self.assertEqual(err, 'gputrace: GPUTRACE_DISABLE=fasle read as on (expected 1, true, yes, on or 0, false, no, off)\n')


class UnknownNames(unittest.TestCase):
    """A GPUTRACE_ name that is no setting was ignored in silence (GPUTRACE_STACKDEPTH=8
    traced 32 frames): a process that traces says so, once a name, with the nearest
    setting; one that never calls CUDA says nothing."""

    def run_prog(self, name, **env):
        import tempfile
        import gtlib
        with tempfile.TemporaryDirectory() as d:
            e = gtlib.base_env(GPUTRACE_OUTPUT=os.path.join(d, 't.db'), GPUTRACE_CUPTI=0, GPUTRACE_QUIET=1, **env)
            p = gtlib.run([name if name.startswith('/') else prog(name)], env=e, cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            return p.stderr

    def test_a_misspelt_name_is_said_with_the_setting_meant(self):
        err = self.run_prog('demo_loop', GPUTRACE_STACKDEPTH=8, GPUTRACE_CUPTI_OFF=1, GPUTRACE_FROBNICATE=1)
        self.assertEqual(sorted(err.splitlines()), sorted([
            'gputrace: ignoring GPUTRACE_STACKDEPTH: not a gputrace setting (did you mean GPUTRACE_STACK_DEPTH?)',
            'gputrace: ignoring GPUTRACE_CUPTI_OFF: not a gputrace setting (did you mean GPUTRACE_CUPTI?)',
            'gputrace: ignoring GPUTRACE_FROBNICATE: not a gputrace setting (the README\'s Configuration table lists them)',
        ]))

    def test_settings_and_the_other_tools_names_are_not_said(self):
        self.assertEqual(self.run_prog('demo_loop', GPUTRACE_STACK_DEPTH=8, GPUTRACE_TIMING=1, GPUTRACE_BUILD='/x'), '')

    def test_a_process_without_cuda_says_nothing(self):
        self.assertEqual(self.run_prog('/bin/true', GPUTRACE_STACKDEPTH=8), '')

    def test_many_names_are_counted_after_three_and_the_values_warnings_come_first(self):
        names = {'GPUTRACE_X%d' % i: 1 for i in range(8)}
        names['GPUTRACE_\x1b[2J'] = 1   # not shown: no escape reaches the terminal
        err = self.run_prog('demo_loop', GPUTRACE_STACK_DEPTH='deep', **names).splitlines()
        self.assertTrue(err[0].startswith('gputrace: ignoring GPUTRACE_STACK_DEPTH=deep'), err)
        self.assertEqual(len([e for e in err if 'not a gputrace setting' in e]), 3, err)
        self.assertEqual(err[-1], 'gputrace: ignoring 6 more GPUTRACE_ names that are no setting')
        self.assertNotIn('\x1b', '\n'.join(err))
