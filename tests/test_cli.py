"""The analyzer's command line: the exit statuses in analyzer/exitcodes.h are
the README's and gputrace --help's."""
import os
import re
import resource
import subprocess

import analyzer_traces as T
import gtlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def header_exit_codes():
    """[(status, text)] from the X(NAME, STATUS, "text") rows of exitcodes.h."""
    with open(os.path.join(ROOT, 'analyzer', 'exitcodes.h')) as f:
        src = f.read()
    return [(int(code), text) for code, text in re.findall(r'X\(GT_EXIT_\w+,\s*(\d+),\s*"([^"]*)"\)', src)]


def readme_exit_codes():
    """[(status, text)] from the table after **Exit status** in README.md."""
    with open(os.path.join(ROOT, 'README.md')) as f:
        lines = f.read().split('\n')
    start = next(i for i, line in enumerate(lines) if line.startswith('**Exit status**'))
    rows, in_table = [], False
    for line in lines[start + 1:]:
        m = re.match(r'^\|\s*(\d+)\s*\|\s*(.*?)\s*\|$', line)
        if m:
            rows.append((int(m.group(1)), m.group(2).replace('`', '')))
            in_table = True
        elif in_table and not line.startswith('|'):
            break
    return rows


class ExitStatusDocs(T.AnalyzerTest):

    def test_readme_exit_status_table_matches_exitcodes_header(self):
        header = header_exit_codes()
        self.assertGreaterEqual(len(header), 12)
        self.assertEqual(readme_exit_codes(), header)

    def test_usage_lists_every_exit_status_of_the_header(self):
        usage = self.ok('--help').stdout
        for code, text in header_exit_codes():
            self.assertIn('\n  %-2d %s\n' % (code, text), usage)

    def test_out_of_memory_exits_70_with_one_line(self):
        db = T.leak_retained(self.dir, iterations=20000)   # ~640k events: more than 16 MiB to load

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (16 << 20, 16 << 20))
        for extra in ([], ['--json']):
            p = subprocess.run([gtlib.GPUTRACE, 'summary'] + extra + [db], capture_output=True, text=True,
                               preexec_fn=limit, timeout=120)
            self.assertOneErrorLine(p, 70)
            self.assertIn('out of memory', p.stderr)
            self.assertEqual(p.stdout, '')
