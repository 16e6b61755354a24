"""Strings in a trace that are not valid UTF-8 (an NVTX range named
b"\\xff\\x80\\x80", a kernel name, a frame's function, the command line) come
out of `gputrace export`, `gputrace report` and every --json report as valid
UTF-8 that parses as JSON, each byte that does not begin a well-formed UTF-8
sequence shown as U+FFFD. Python's UTF-8 codec is strict (no overlongs,
surrogates or code points above U+10FFFF), so decoding is the check."""
import json
import os
import re
import sqlite3
import subprocess

import analyzer_traces as T
import gtlib

BAD_RANGE = b'\xff\x80\x80'             # lead bytes F5..FF were once taken as 3-byte leads
BAD_KERNEL = b'gemm_\xf8\x88\x80\x80\x80_kernel'
BAD_FUNCTION = b'layer_\xed\xa0\x80_forward'   # a surrogate
BAD_COMMAND = b'./train \xc0\xaf --bs=8'       # an overlong '/'
REPLACED_RANGE = '\ufffd' * 3


def bad_strings_trace(dirpath):
    """Six iterations of an NVTX range named BAD_RANGE, each allocating and
    freeing under a frame named BAD_FUNCTION and launching BAD_KERNEL, one
    allocation kept each time (a leak with that frame)."""
    t = T.Trace(os.path.join(dirpath, 'bad_strings.db'))
    for i in range(6):
        t.push('RANGE_PLACEHOLDER')
        a = t.alloc(4 * T.MiB, ['FUNCTION_PLACEHOLDER', 'main'])
        t.kernel('KERNEL_PLACEHOLDER')
        t.alloc(1 * T.MiB, ['FUNCTION_PLACEHOLDER', 'keep', 'main'])
        t.free(a)
        t.pop()
    path = t.close()
    con = sqlite3.connect(path)
    con.execute("UPDATE ranges SET message = CAST(? AS TEXT) WHERE message = 'RANGE_PLACEHOLDER'", (BAD_RANGE,))
    con.execute("UPDATE strings SET text = CAST(? AS TEXT) WHERE text = 'KERNEL_PLACEHOLDER'", (BAD_KERNEL,))
    con.execute("UPDATE frames SET function = CAST(? AS TEXT) WHERE function = 'FUNCTION_PLACEHOLDER'", (BAD_FUNCTION,))
    con.execute('UPDATE processes SET command_line = CAST(? AS TEXT)', (BAD_COMMAND,))
    con.commit()
    con.close()
    return path


class InvalidUtf8Test(T.AnalyzerTest):

    def setUp(self):
        super().setUp()
        self.db = bad_strings_trace(self.dir)

    def run_bytes(self, *args):
        """Runs gputrace ARGS; returns its stdout as bytes (exit status 0 or 8: no iterations)."""
        p = subprocess.run([gtlib.GPUTRACE] + list(args), capture_output=True, timeout=120)
        self.assertIn(p.returncode, (0, 8), 'gputrace %s: %s' % (' '.join(args), p.stderr.decode(errors='replace')))
        return p.stdout

    def written(self, *args):
        """Runs gputrace ARGS -o FILE; returns FILE decoded strictly as UTF-8."""
        out = os.path.join(self.dir, 'out')
        self.run_bytes(*args, '-o', out)
        with open(out, 'rb') as f:
            return f.read().decode('utf-8')   # raises on invalid UTF-8

    def test_planted_bytes_are_in_the_trace(self):
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute('SELECT DISTINCT CAST(message AS BLOB) FROM ranges').fetchall(), [(BAD_RANGE,)])
        con.close()

    def test_export_is_valid_utf8_json_with_the_range_name_replaced(self):
        text = self.written('export', '--format', 'chrome', self.db)
        events = json.loads(text)['traceEvents']
        names = {e.get('name') for e in events}
        self.assertIn(REPLACED_RANGE, names)
        self.assertTrue(any('\ufffd' in n and n.startswith('gemm_') for n in names if n), names)
        labels = [e['args']['labels'] for e in events if e.get('name') == 'process_labels']
        self.assertEqual(labels, ['./train \ufffd\ufffd --bs=8'])

    def test_report_page_is_valid_utf8_and_its_data_parses(self):
        text = self.written('report', self.db)
        m = re.search(r'<script type="application/json" id="gt-data">(.*?)</script>', text, re.S)
        self.assertIsNotNone(m)
        data = json.loads(m.group(1))
        self.assertIn(REPLACED_RANGE, json.dumps(data, ensure_ascii=False))
        self.assertIn('layer_\ufffd\ufffd\ufffd_forward', json.dumps(data, ensure_ascii=False))

    def test_json_reports_are_valid_utf8(self):
        docs = {}
        for cmd in ('summary', 'leaks', 'growth', 'peak', 'oom', 'top'):
            out = self.run_bytes(cmd, '--json', self.db)
            try:
                docs[cmd] = json.loads(out.decode('utf-8'))
            except ValueError as e:   # UnicodeDecodeError is one
                self.fail('gputrace %s --json: %s' % (cmd, e))
        self.assertIn('layer_\ufffd\ufffd\ufffd_forward', json.dumps(docs['leaks'], ensure_ascii=False))
        self.assertIn(REPLACED_RANGE, json.dumps(docs['growth'], ensure_ascii=False))


    def test_text_reports_are_valid_utf8_with_bad_bytes_replaced(self):
        # the text filter passed bytes >= 0x80 as they came: summary's command
        # line and leaks' frame reached a pipe as \xc0\xaf and \xed\xa0\x80 (a helper's probe)
        texts = {}
        for cmd in ('summary', 'leaks', 'growth', 'peak', 'oom', 'top'):
            out = self.run_bytes(cmd, self.db)
            try:
                texts[cmd] = out.decode('utf-8')
            except UnicodeDecodeError as e:
                self.fail('gputrace %s: %s' % (cmd, e))
        self.assertIn('./train \ufffd\ufffd --bs=8', texts['summary'])
        self.assertIn('layer_\ufffd\ufffd\ufffd_forward', texts['leaks'])
        # well-formed UTF-8 (a name in Greek, an emoji) passes unchanged
        con = sqlite3.connect(self.db)
        con.execute("UPDATE processes SET command_line = ?", ('./tr\u03b1in \U0001f680 --bs=8',))
        con.commit()
        con.close()
        self.assertIn('./tr\u03b1in \U0001f680 --bs=8', self.run_bytes('summary', self.db).decode('utf-8'))

def on_a_terminal(args):
    """(exit status, bytes) of args run with stdout on a pseudo-terminal."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.run(args, stdout=slave, stderr=subprocess.PIPE, timeout=60)
    os.close(slave)
    out = b''
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:   # EIO: the other side is closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.returncode, out


class TerminalEscapesTest(T.AnalyzerTest):
    """A trace's strings must not drive the reader's terminal: a command line
    that sets the window's title (OSC 0) and a frame's file that writes the
    clipboard (OSC 52) print as '?' on a terminal, and in a report's text
    anywhere; its JSON gets the bytes, escaped."""
    TITLE = '\x1b]0;TITLE\x07'
    CLIP = '\x1b]52;c;ZWNobyBwd25lZA==\x07'

    def trace(self):
        t = T.Trace(os.path.join(self.dir, 'esc.db'), command_line='./prog ' + self.TITLE + '\x9b31m')
        t.alloc(T.MiB, ['train_step', 'main'])
        db = t.close()
        con = sqlite3.connect(db)
        con.execute("UPDATE frames SET file=?, line=3 WHERE function='train_step'", ('/x/' + self.CLIP + 'train.py',))
        con.commit()
        con.close()
        return db

    def test_control_characters_print_as_question_marks_on_a_terminal(self):
        db = self.trace()
        for cmd in ('summary', 'top', 'leaks'):
            rc, out = on_a_terminal([gtlib.GPUTRACE, cmd, db])
            self.assertEqual(rc, 0, cmd)
            self.assertNotIn(b'\x1b', out, cmd)
            self.assertNotIn(b'\x07', out, cmd)
            self.assertNotIn(b'\xc2\x9b', out, cmd)   # a C1 CSI
        rc, out = on_a_terminal([gtlib.GPUTRACE, 'summary', db])
        self.assertIn(b'./prog ?]0;TITLE?', out)
        # a report's text through a pipe too (`summary t.db | head` reached the terminal: a helper's probe)
        for cmd in ('summary', 'top', 'leaks', 'peak', 'growth', 'oom'):
            out = self.gputrace(cmd, db).stdout
            self.assertNotIn('\x1b', out, cmd)
            self.assertNotIn('\x9b', out, cmd)
        self.assertIn('./prog ?]0;TITLE?', self.ok('summary', db).stdout)
        # its JSON keeps the bytes, escaped
        self.assertIn(self.TITLE, self.json('summary', db)['process']['command_line'])
