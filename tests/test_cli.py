"""The analyzer's command line: one table of commands and one option parser
(analyzer/commands.c, cli_options.c, cli.c). A mistake is one line on stderr
naming what was wrong, with the nearest command or option for a typo, and exit
status 2; the exit statuses in analyzer/exitcodes.h are the README's."""
import os
import re
import resource
import subprocess
import unittest

import analyzer_traces as T
import gtlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORTS = ('summary', 'leaks', 'growth', 'peak', 'oom', 'top')


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

    @unittest.skipIf(gtlib.SANITIZER, 'a sanitizer reserves terabytes of address space: no 16 MiB RLIMIT_AS')
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


class UsageErrors(T.AnalyzerTest):

    def usage_error(self, *args):
        """Runs gputrace ARGS, expects exit 2 and one line; returns it."""
        p = self.gputrace(*args)
        self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 1, (args, p.stderr))
        self.assertTrue(lines[0].startswith('gputrace: '), lines[0])
        self.assertEqual(p.stdout, '')
        return lines[0]

    def test_an_option_given_twice_with_two_values_is_refused(self):
        # run -o a.db -o b.db wrote b.db without a word
        line = self.usage_error('run', '-o', os.path.join(self.dir, 'a.db'), '-o', os.path.join(self.dir, 'b.db'),
                                '--', 'true')
        self.assertIn("option '-o' given twice, with two values: give it once", line)
        self.assertIn("option '--top' given twice", self.usage_error('summary', '--top', '3', '--top=5', 'x.db'))
        self.assertFalse(os.path.exists(os.path.join(self.dir, 'b.db')))

    def test_an_option_given_twice_alike_is_taken(self):
        db = T.leak_retained(self.dir)
        self.assertEqual(self.gputrace('summary', '--top', '3', '--top=3', db).returncode, 0)

    def test_mistyped_option_after_the_file_is_unknown_not_missing_a_value(self):
        db = T.leak_fixed(self.dir)
        line = self.usage_error('summary', db, '--jsn')
        self.assertIn("unknown option '--jsn'", line)
        self.assertIn("did you mean '--json'?", line)
        self.assertNotIn('needs a value', line)

    def test_run_o_without_a_value_says_it_needs_one(self):
        for opt in ('-o', '--output', '--stack-depth'):
            line = self.usage_error('run', opt)
            self.assertIn("option '%s' needs a value" % opt, line)

    def test_report_option_without_a_value_says_it_needs_one(self):
        self.assertIn("option '--top' needs a value", self.usage_error('top', 'x.db', '--top'))

    def test_mistyped_command_suggests_the_nearest(self):
        for typo, meant in (('leak', 'leaks'), ('sumary', 'summary'), ('gorwth', 'growth'), ('exprot', 'export'),
                            ('symbolise', 'symbolize')):
            line = self.usage_error(typo, 'x.db')
            self.assertIn("unknown command '%s'" % typo, line)
            self.assertIn("did you mean '%s'?" % meant, line)
        self.assertIn("did you mean 'peak'?", self.usage_error('help', 'peek'))

    def test_command_far_from_every_name_gets_no_suggestion(self):
        line = self.usage_error('frobnicate', 'x.db')
        self.assertIn("unknown command 'frobnicate'", line)
        self.assertNotIn('did you mean', line)

    def test_mistyped_option_suggests_the_nearest_option_of_that_command(self):
        self.assertIn("did you mean '--fail-above'?", self.usage_error('growth', '--fail-abvoe', '1M', 'x.db'))
        self.assertIn("did you mean '--no-kernels'?", self.usage_error('export', '--no-kernel', 'x.db'))
        self.assertIn("did you mean '--addr2line'?", self.usage_error('symbolize', '--adr2line', 'a', 'x.db'))
        self.assertIn("did you mean '--quiet'?", self.usage_error('run', '--quite', 'true'))
        self.assertNotIn('did you mean', self.usage_error('peak', '--frobnicate', 'x.db'))

    def test_option_of_another_command_names_the_commands_that_take_it(self):
        self.assertIn("option '--fail-above' is for growth, not gputrace leaks",
                      self.usage_error('leaks', '--fail-above', '1M', 'x.db'))
        self.assertIn("option '--json' is for sweep, summary, leaks, growth, peak, oom, top, ranks, not gputrace export",
                      self.usage_error('export', '--json', 'x.db'))
        self.assertIn("option '-o' is for run, export, report, not gputrace summary",
                      self.usage_error('summary', '-o', 'out', 'x.db'))

    def test_flag_given_a_value_and_bad_values_name_the_option(self):
        self.assertIn("option '--json' takes no value", self.usage_error('summary', '--json=yes', 'x.db'))
        self.assertIn('--frames needs a number from 1 to 1000000000, not "0"', self.usage_error('top', '--frames=0', 'x.db'))
        # an empty output name was taken as the default one (a helper's probe)
        self.assertIn('-o needs a file name (to export and report, -o - is stdout)', self.usage_error('export', '-o', '', 'x.db'))
        # a positive number past the limit says the limit (it said "needs a positive number": a helper's probe)
        self.assertIn('--top needs a number from 1 to 1000000000, not "99999999999"',
                      self.usage_error('top', '--top', '99999999999', 'x.db'))
        self.assertIn('--stack-depth takes 0 to 128, not "129"', self.usage_error('run', '--stack-depth', '129', 'true'))

    def test_every_usage_error_points_at_the_commands_help(self):
        self.assertTrue(self.usage_error('leaks', '--bogus', 'x.db').endswith('see gputrace leaks --help'))
        self.assertTrue(self.usage_error('report').endswith('see gputrace report --help'))
        self.assertTrue(self.usage_error('nope').endswith('see gputrace --help'))


class CommandLine(T.AnalyzerTest):

    def test_V_prints_the_version_like_version(self):
        v = self.ok('--version').stdout
        self.assertRegex(v, r'^gputrace \S+ \(trace schema \d+\)\n$')
        self.assertEqual(self.ok('-V').stdout, v)
        self.assertEqual(self.ok('version').stdout, v)

    def test_options_go_before_or_after_the_files(self):
        db = T.leak_fixed(self.dir)
        before = self.ok('leaks', '--json', '--top', '2', db).stdout
        self.assertEqual(self.ok('leaks', db, '--top', '2', '--json').stdout, before)
        self.assertEqual(self.ok('leaks', '--top=2', db, '--json').stdout, before)

    def test_double_dash_ends_options(self):
        db = T.leak_fixed(self.dir)
        dash = os.path.join(self.dir, '--json')
        os.symlink(db, dash)
        d = self.json('summary', '--', dash)
        self.assertEqual(d['file'], dash)

    def test_help_for_each_command_three_ways(self):
        for cmd in REPORTS + ('symbolize', 'export', 'report', 'run'):
            text = self.ok(cmd, '--help').stdout
            self.assertTrue(text.startswith('usage: gputrace ' + cmd), cmd)
            self.assertEqual(self.ok(cmd, '-h').stdout, text)
            self.assertEqual(self.ok('help', cmd).stdout, text)
        # a report's help tells every shared option it takes (the README says it does): in its
        # own text, or listed after it, once; one the usage line alone names is listed (top's --top N
        # was named there and described nowhere: a first-hour probe)
        self.assertIn('\n  --top N            call sites listed', self.ok('top', '--help').stdout)
        for cmd in REPORTS:
            text = self.ok(cmd, '--help').stdout
            self.assertIn('Options it shares with other commands:', text, cmd)
            own, shared = text.split('Options it shares with other commands:')
            own = own.split('\n', 1)[1]   # (after the usage line)
            for opt in ('--memory', '--device', '--frames', '--iteration', '--json'):
                named = re.search(re.escape(opt) + r'(?![\w-])', own) is not None
                listed = re.search(r'\n  ' + re.escape(opt) + r'(?![\w-])', shared) is not None
                self.assertTrue(named != listed, (cmd, opt, named, listed))
        self.assertNotIn('--frames', self.ok('run', '--help').stdout)   # run takes none of them
        usage = self.ok('--help').stdout
        self.assertEqual(self.ok('-h').stdout, usage)
        self.assertEqual(self.ok('help').stdout, usage)
        self.assertIn('-V, --version', usage)

    def test_no_arguments_prints_usage_on_stderr_and_exits_2(self):
        p = self.gputrace()
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, '')
        self.assertIn('usage: gputrace COMMAND', p.stderr)
        self.assertTrue(p.stderr.startswith('gputrace: no command given;'), p.stderr[:200])   # says what is wrong

    def test_an_option_before_the_command_is_said_to_go_after_it(self):
        # it read as "unknown command '--json'" (a first-hour probe)
        p = self.gputrace('--json', 'summary', 'x.db')
        self.assertEqual((p.returncode, p.stdout), (2, ''))
        self.assertEqual(p.stderr, "gputrace: '--json' is an option: it goes after the command: gputrace summary "
                                   "--json x.db\n")
        # with its value, as typed (a review: "gputrace COMMAND --memory TRACE.db" failed when followed)
        p = self.gputrace('--memory', 'pool', 'summary', 'x.db')
        self.assertEqual((p.returncode, p.stderr), (2, "gputrace: '--memory' is an option: it goes after the "
                                                       "command: gputrace summary --memory pool x.db\n"))
        # no command anywhere: the general line
        p = self.gputrace('--json', 'x.db')
        self.assertEqual((p.returncode, p.stderr), (2, "gputrace: '--json' is an option: it goes after the command "
                                                       "(gputrace COMMAND --json TRACE.db); see gputrace --help\n"))
