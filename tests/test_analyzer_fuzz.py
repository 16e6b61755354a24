"""Fuzz test of the analyzer (issue 15): traces written by the shim against
the CUDA and CUPTI stand-ins, mutated (byte flips, truncations, and SQL-level
changes: NULLs, negative and huge values, duplicate rows, rows and tables and
columns gone, strings that are not UTF-8, a wrong schema version), then every
report command, with and without --json, export and report, on each. Promise
4 of the README: no signal, a documented exit status, valid UTF-8 output,
--json output that parses, and on failure one stderr line. Deterministic
(fixed seed): a failure names the trace's seed and mutations to replay it.
In the address stage of scripts/test.sh the analyzer runs under ASan+UBSan,
so a memory error is a failure too (run_tests.py --sanitizer)."""
import concurrent.futures
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

import gtlib
from gtlib import base_env, prog

SEED = 20261125
PER_BASE = 64          # mutated traces per base trace: 6 bases, 384 traces
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORTS = ('summary', 'leaks', 'growth', 'peak', 'oom', 'top')


def documented_exit_codes():
    with open(os.path.join(ROOT, 'analyzer', 'exitcodes.h')) as f:
        return {int(m) for m in re.findall(r'X\(GT_EXIT_\w+, (\d+),', f.read())}


# The real traces mutated: what the shim writes for programs of tests/progs.
BASES = {
    'demo_loop': [prog('demo_loop')],                       # iterations, a leak, growth
    'cupti': [prog('cupti_activity'), 'plant'],            # kernels, copies, memsets, pools
    'nvtx': [prog('nvtx_ranges'), 'threads'],              # ranges on several threads
    'vmm': [prog('vmm')],                                  # VMM handles and mappings
    'oom': [prog('oom')],                                  # failed allocations
    'batches': [prog('seed_batches'), 'marker', '1000', '4096', '512,256', '8', '16', '32', '8'],
}

NUMBERS = (None, -1, 0, -(1 << 63), (1 << 63) - 1, 1 << 62, (1 << 64) // 3, 1.5e300, -0.5, 'x')
BAD_TEXT = (b'\xff\x80\x80', b'\xc0\xaf', b'\xed\xa0\x80', b'a\x00b', b'\xf8\x88\x80\x80\x80', b'')


def columns(con, table):
    return [(r[1], (r[2] or '').upper(), r[5]) for r in con.execute('PRAGMA table_info("%s")' % table)]


def sql_mutation(con, rng):
    """One SQL-level change of the open trace; returns what it did, or None
    when the change was refused (a constraint): the caller tries another."""
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                        "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    if not tables:
        return None
    t = rng.choice(tables)
    cols = columns(con, t)
    n = con.execute('SELECT count(*) FROM "%s"' % t).fetchone()[0]
    m, r = rng.choice((1, 2, 3, 7)), 0
    r = rng.randrange(m)
    where = 'WHERE rowid %% %d = %d' % (m, r)
    kind = rng.choice(('value', 'value', 'value', 'text', 'dup', 'delete', 'empty', 'drop_table',
                       'drop_column', 'pragma'))
    c = rng.choice(cols)[0] if cols else None
    try:
        if kind == 'value' and c:
            v = rng.choice(NUMBERS)
            con.execute('UPDATE "%s" SET "%s" = ? %s' % (t, c, where), (v,))
            return '%s.%s = %r (rows %s)' % (t, c, v, where)
        if kind == 'text' and c:
            b = rng.choice(BAD_TEXT)
            con.execute('UPDATE "%s" SET "%s" = CAST(? AS TEXT) %s' % (t, c, where), (b,))
            return '%s.%s = text %r (rows %s)' % (t, c, b, where)
        if kind == 'dup' and n:
            keep = [name for name, typ, pk in cols if not (pk and typ == 'INTEGER')]
            names = ', '.join('"%s"' % k for k in keep)
            con.execute('INSERT INTO "%s" (%s) SELECT %s FROM "%s" %s' % (t, names, names, t, where))
            return 'duplicate rows of %s (%s)' % (t, where)
        if kind == 'delete':
            con.execute('DELETE FROM "%s" %s' % (t, where))
            return 'delete rows of %s (%s)' % (t, where)
        if kind == 'empty':
            con.execute('DELETE FROM "%s"' % t)
            return 'empty %s' % t
        if kind == 'drop_table':
            con.execute('DROP TABLE "%s"' % t)
            return 'drop table %s' % t
        if kind == 'drop_column' and len(cols) > 1:
            keep = ', '.join('"%s"' % name for name, _, _ in cols if name != c)
            con.execute('PRAGMA legacy_alter_table = ON')
            con.execute('ALTER TABLE "%s" RENAME TO "gt_fuzz_old"' % t)
            con.execute('CREATE TABLE "%s" AS SELECT %s FROM "gt_fuzz_old"' % (t, keep))
            con.execute('DROP TABLE "gt_fuzz_old"')
            return 'drop column %s.%s' % (t, c)
        if kind == 'pragma':
            which, v = rng.choice((('user_version', 0), ('user_version', 2), ('user_version', 999),
                                   ('application_id', 0)))
            con.execute('PRAGMA %s = %d' % (which, v))
            return 'PRAGMA %s = %d' % (which, v)
    except sqlite3.Error:
        return None
    return None


def mutate(base, path, rng):
    """Writes a mutation of BASE at PATH; returns the list of what was done."""
    shutil.copy(base, path)
    size = os.path.getsize(path)
    how = rng.random()
    done = []
    if how < 0.25:
        with open(path, 'r+b') as f:
            for _ in range(rng.randint(1, 16)):
                off = rng.randrange(size) if rng.random() < 0.9 else rng.randrange(100)
                f.seek(off)
                byte = f.read(1)
                f.seek(off)
                f.write(bytes([(byte[0] if byte else 0) ^ (1 << rng.randrange(8))]))
                done.append('flip byte %d' % off)
    elif how < 0.40:
        cut = rng.randrange(size)
        os.truncate(path, cut)
        done.append('truncate to %d of %d bytes' % (cut, size))
    else:
        con = sqlite3.connect(path, isolation_level=None)
        con.execute('PRAGMA ignore_check_constraints = ON')
        con.execute('PRAGMA foreign_keys = OFF')
        con.execute('BEGIN')
        for _ in range(rng.randint(1, 3)):
            for _try in range(8):
                what = sql_mutation(con, rng)
                if what:
                    done.append(what)
                    break
        con.execute('COMMIT')
        con.close()
    return done


class AnalyzerFuzz(unittest.TestCase):
    maxDiff = None
    """Each test runs one command over every mutated trace."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix='gputrace-fuzz-')
        d = cls._tmp.name
        cls.codes = documented_exit_codes()
        bases = {}
        for name, argv in BASES.items():
            db = os.path.join(d, 'base-%s.db' % name)
            p = gtlib.run(argv, env=base_env(GPUTRACE_OUTPUT=db, GPUTRACE_QUIET=1), cwd=d)
            if not os.path.exists(db) or os.path.exists(db + '-wal'):
                raise AssertionError('base trace %s not written whole: exit %d\n%s' % (name, p.returncode, p.stderr))
            bases[name] = db
        cls.traces = []   # (path, description)
        for name in sorted(bases):
            for i in range(PER_BASE):
                rng = random.Random('%d/%s/%d' % (SEED, name, i))
                path = os.path.join(d, 'm-%s-%03d.db' % (name, i))
                done = mutate(bases[name], path, rng)
                cls.traces.append((path, '%s #%d: %s' % (name, i, '; '.join(done) or 'unchanged')))
        cls.traces += [(db, '%s unmutated' % name) for name, db in sorted(bases.items())]

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def check_run(self, args, desc, out_file=None):
        """Runs gputrace ARGS; returns a list of what broke the promise."""
        try:
            p = subprocess.run([gtlib.GPUTRACE] + args, capture_output=True, timeout=120, cwd=self._tmp.name)
        except subprocess.TimeoutExpired:
            return ['%s: gputrace %s: no answer within 120 s' % (desc, ' '.join(args))]
        what = '%s: gputrace %s: exit %d' % (desc, ' '.join(args), p.returncode)
        bad = []
        if p.returncode < 0:
            return ['%s: killed by signal %d; stderr %r' % (what, -p.returncode, p.stderr[-500:])]
        if p.returncode not in self.codes:
            bad.append('%s: not a documented exit status; stderr %r' % (what, p.stderr[-1500:]))
        try:
            err = p.stderr.decode('utf-8')
            out = p.stdout.decode('utf-8')
        except UnicodeDecodeError as e:
            return bad + ['%s: output is not UTF-8 (%s)' % (what, e)]
        if p.returncode != 0 and p.returncode != 1:
            lines = err.splitlines()
            if len(lines) != 1 or not lines[0].startswith('gputrace: '):
                bad.append('%s: not one stderr line: %r' % (what, err[-1000:]))
        if '--json' in args and (p.returncode in (0, 1) or out):
            try:
                json.loads(out)
            except ValueError as e:
                bad.append('%s: --json output does not parse (%s): %r' % (what, e, out[:300]))
        if out_file and p.returncode == 0:
            try:
                with open(out_file, 'rb') as f:
                    text = f.read().decode('utf-8')
                if args[0] == 'export':
                    json.loads(text)
                else:
                    m = re.search(r'<script type="application/json" id="gt-data">(.*?)</script>', text, re.S)
                    if not m:
                        bad.append('%s: the page holds no data block' % what)
                    else:
                        json.loads(m.group(1))
            except (OSError, ValueError) as e:
                bad.append('%s: %s is not valid (%s)' % (what, out_file, e))
        return bad

    def over_traces(self, make_args):
        """make_args(i, path) -> [(args, out_file)]; runs them all (two at a
        time: CI has two cores) and fails with the first problems found."""
        jobs = []
        for i, (path, desc) in enumerate(self.traces):
            for args, out_file in make_args(i, path):
                jobs.append((args, desc, out_file))
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda j: self.check_run(*j), jobs))
        problems = [b for r in results for b in r]
        self.assertGreaterEqual(len(self.traces), 300)
        self.assertEqual(problems[:15], [], '%d of %d runs broke a promise' % (len(problems), len(jobs)))

    def reports(self, cmd):
        self.over_traces(lambda i, path: [([cmd, path], None), ([cmd, '--json', path], None)])

    def test_summary_on_mutated_traces(self):
        self.reports('summary')

    def test_leaks_on_mutated_traces(self):
        self.reports('leaks')

    def test_growth_on_mutated_traces(self):
        self.reports('growth')

    def test_peak_on_mutated_traces(self):
        self.reports('peak')

    def test_oom_on_mutated_traces(self):
        self.reports('oom')

    def test_top_on_mutated_traces(self):
        self.reports('top')

    def test_export_on_mutated_traces(self):
        self.over_traces(lambda i, path: [(['export', '-o', path + '.json', path], path + '.json')])

    def test_report_on_mutated_traces(self):
        self.over_traces(lambda i, path: [(['report', '-o', path + '.html', path], path + '.html')])

    def test_symbolize_then_summary_on_mutated_traces(self):
        # symbolize writes into the trace: on a copy, one trace in four (addr2line is slow)
        def args(i, path):
            if i % 4:
                return []
            copy = path + '.sym.db'
            shutil.copy(path, copy)
            return [(['symbolize', copy], None), (['summary', '--json', copy], None)]
        self.over_traces(args)


class FoundByFuzzing(unittest.TestCase):
    """Regressions the fuzz test found, each made deterministic."""

    def test_corrupt_schema_text_is_told_in_one_utf8_line(self):
        # A flipped byte in a table's CREATE text: SQLite's "malformed database
        # schema ... unrecognized token" message quoted the SQL after it, lines
        # and raw bytes (0xd9) included, into our one stderr line.
        with tempfile.TemporaryDirectory(prefix='gputrace-fuzz-') as d:
            db = os.path.join(d, 'schema.db')
            p = gtlib.run([prog('demo_loop')], env=base_env(GPUTRACE_OUTPUT=db, GPUTRACE_QUIET=1), cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            con = sqlite3.connect(db)
            con.execute('PRAGMA writable_schema = ON')
            sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'processes'").fetchone()[0]
            bad = sql.encode().replace(b'start_unix_ns', b'`\xd9 start_unix_ns', 1) + b'\n-- more\n'
            con.execute("UPDATE sqlite_master SET sql = CAST(? AS TEXT) WHERE name = 'processes'", (bad,))
            con.commit()
            con.close()
            for args in (['summary'], ['leaks', '--json'], ['report', '-o', db + '.html']):
                r = subprocess.run([gtlib.GPUTRACE] + args + [db], capture_output=True, timeout=60)
                err = r.stderr.decode('utf-8')   # raises if not UTF-8
                self.assertEqual(r.returncode, 4, err)
                self.assertEqual(len(err.splitlines()), 1, err)
                self.assertRegex(err, r'^gputrace: .*malformed database schema')
                self.assertLess(len(err), 600, err)


if __name__ == '__main__':
    unittest.main()
