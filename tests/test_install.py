"""`meson install`: the analyzer, the shim, gputrace.h and a gputrace.pc land
under the prefix, pkg-config finds the header for a program that includes it,
and the installed `gputrace run` finds the installed shim."""
import glob
import os
import subprocess

from gtlib import BUILD, TraceTest, base_env, prog, query


class InstallTest(TraceTest):
    def setUp(self):
        super().setUp()
        self.dest = os.path.join(self.dir, 'stage')
        p = subprocess.run(['meson', 'install', '-C', BUILD, '--destdir', self.dest, '--no-rebuild'],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def installed(self, pattern):
        """The one file under the staging directory that matches pattern."""
        hits = glob.glob(os.path.join(self.dest, '**', pattern), recursive=True)
        self.assertEqual(len(hits), 1, 'expected one %s under the prefix, found %s' % (pattern, hits))
        return hits[0]

    def pkg_config(self, *args):
        pc_dir = os.path.dirname(self.installed('gputrace.pc'))
        env = dict(os.environ, PKG_CONFIG_PATH=pc_dir, PKG_CONFIG_SYSROOT_DIR=self.dest)
        p = subprocess.run(['pkg-config'] + list(args) + ['gputrace'], env=env, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split()

    def test_install_puts_binary_shim_header_and_pc_under_the_prefix(self):
        exe = self.installed('gputrace')
        self.assertTrue(exe.endswith('/bin/gputrace') and os.access(exe, os.X_OK), exe)
        self.assertIn('/lib', self.installed('libgputrace.so'))
        self.assertTrue(self.installed('gputrace.h').endswith('/include/gputrace.h'))
        self.assertTrue(self.installed('gputrace.pc').endswith('/pkgconfig/gputrace.pc'))
        # no test double is ever installed
        self.assertEqual(glob.glob(os.path.join(self.dest, '**', '*fake*'), recursive=True), [])

    def test_pkg_config_cflags_name_the_installed_header_directory(self):
        header_dir = os.path.dirname(self.installed('gputrace.h'))
        self.assertEqual(self.pkg_config('--cflags'), ['-I' + header_dir])

    def test_a_program_including_gputrace_h_builds_with_pkg_config_flags(self):
        src = os.path.join(self.dir, 'marks.c')
        with open(src, 'w') as f:
            f.write('#include <gputrace.h>\n#include <stdio.h>\n'
                    'int main(void) { gputrace_iteration(0, 8); gputrace_mark("m");\n'
                    '  printf("recording %d\\n", gputrace_recording()); return 0; }\n')
        exe = os.path.join(self.dir, 'marks')
        p = subprocess.run(['cc', '-Wall', '-Werror', src, '-o', exe] + self.pkg_config('--cflags', '--libs'),
                           capture_output=True, text=True, cwd=self.dir)   # cwd: no header found by accident
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(subprocess.run([exe], capture_output=True, text=True).stdout, 'recording 0\n')

    def test_installed_gputrace_run_preloads_the_installed_shim(self):
        db = os.path.join(self.dir, 'out.db')
        p = subprocess.run([self.installed('gputrace'), 'run', '-o', db, '--', prog('output')],
                           env=base_env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(20,)])


class ToolkitOptionTest(TraceTest):
    def test_a_named_toolkit_without_headers_is_refused_not_replaced_by_another(self):
        source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        bad = os.path.join(self.dir, 'no-cuda-here')
        os.mkdir(bad)
        p = subprocess.run(['meson', 'setup', os.path.join(self.dir, 'b'), source, '-Dcudatoolkit=' + bad],
                           capture_output=True, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn('-Dcudatoolkit=%s: no include/cuda_runtime_api.h there' % bad, p.stdout + p.stderr)
        self.assertNotIn('CUDA headers:', p.stdout)
