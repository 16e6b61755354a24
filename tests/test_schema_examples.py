"""Every SQL example in schema/README.md runs on a trace the shim wrote, and the
examples that show a stack find one (the stack example picked event 42, a free:
a successful free has no stack, and the example printed nothing)."""
import os
import re
import sqlite3

from gtlib import TraceTest, prog

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def examples():
    """[(comment, statement)] from the ```sql block(s) of schema/README.md."""
    text = open(os.path.join(ROOT, 'schema', 'README.md'), encoding='utf-8').read()
    out = []
    for block in re.findall(r'```sql\n(.*?)```', text, re.S):
        comment, lines = '', []
        for line in block.splitlines():
            if line.startswith('--') and not lines:
                comment = line[2:].strip()
                continue
            lines.append(line)
            if line.rstrip().endswith(';'):   # (two on one line: split where each is complete)
                stmt = ''
                for part in '\n'.join(lines).split(';'):
                    stmt += part + ';'
                    if part.strip() and sqlite3.complete_statement(stmt):
                        out.append((comment, stmt.strip()))
                        stmt = ''
                lines = []
    return out


class SchemaExamples(TraceTest):
    def test_every_example_runs_and_the_stack_examples_find_frames(self):
        p, db = self.trace([prog('demo_loop')])
        self.assertEqual(p.returncode, 0, p.stderr)
        ex = examples()
        self.assertGreaterEqual(len(ex), 10)
        con = sqlite3.connect(db)
        for comment, sql in ex:
            with self.subTest(comment):
                rows = con.execute(sql).fetchall()
                if comment.startswith('the stack of'):
                    self.assertGreater(len(rows), 0, sql)
                    self.assertEqual(rows[0][:2], (0, 'alloc'), rows)   # demo_loop's alloc() calls CUDA
        con.close()
