#!/usr/bin/env python3
"""Embed schema/gputrace.sql into a C header (build step, used by shim and analyzer).

Emits the SQL text as a string, the schema version and application id read from
its PRAGMAs, and an enum + table of API ids generated from its `INSERT INTO apis`
rows, so the C code can never disagree with the schema.
usage: embed_schema.py SCHEMA.sql OUT.h
"""
import re
import sys


def c_string(text):
    out = []
    for line in text.splitlines(keepends=True):
        esc = line.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
        out.append('  "%s"' % esc)
    return '\n'.join(out)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    sql = open(src, encoding='utf-8').read()
    version = int(re.search(r'PRAGMA user_version\s*=\s*(\d+)', sql).group(1))
    app_id = int(re.search(r'PRAGMA application_id\s*=\s*(\d+)', sql).group(1))
    apis = re.findall(r"INSERT INTO apis VALUES \((\d+),\s*'(\w+)',\s*'(\w+)',\s*'(\w+)',\s*'(\w+)',\s*'(\w+)'\)", sql)
    if not apis:
        sys.exit('embed_schema: no apis rows found in ' + src)
    lines = [
        '/* Generated from schema/gputrace.sql by scripts/embed_schema.py. Do not edit. */',
        '#ifndef GPUTRACE_SCHEMA_SQL_H',
        '#define GPUTRACE_SCHEMA_SQL_H',
        '#define GT_SCHEMA_VERSION %d' % version,
        '#define GT_APPLICATION_ID %d' % app_id,
        'static const char gt_schema_sql[] =',
        c_string(sql) + ';',
        'enum gt_api {',
    ]
    lines += ['  GT_API_%s = %s,' % (name, i) for i, name, *_ in apis]
    # the analyzer marks a CUDA graph's calls in an api id's two high bits (analyzer/trace.h)
    too_high = [name for i, name, *_ in apis if not 0 < int(i) < 64]
    if too_high:
        sys.exit('embed_schema: apis ids must be 1-63 (analyzer/trace.h): %s' % ', '.join(too_high))
    lines += ['  GT_API_MAX = %d' % (max(int(a[0]) for a in apis) + 1), '};']
    lines += ['enum gt_op { GT_OP_ALLOC, GT_OP_FREE, GT_OP_MAP, GT_OP_UNMAP, GT_OP_DEFER, GT_OP_RESET };',
              '/* GT_MEM_GRAPH: no apis row has it; the analyzer gives it to a CUDA graph\'s allocation and free nodes (graph_calls) */',
              'enum gt_memory { GT_MEM_DEVICE, GT_MEM_POOL, GT_MEM_MANAGED, GT_MEM_HOST, GT_MEM_RESERVE, GT_MEM_MAPPING, GT_MEM_IMPORTED,',
              '                 GT_MEM_GRAPH };',
              'enum gt_space { GT_SPACE_ADDR, GT_SPACE_HANDLE, GT_SPACE_VA, GT_SPACE_MAP, GT_SPACE_ARRAY, GT_NSPACES };',
              'struct gt_api_info { int id; const char *name; unsigned char op, memory, space; };',
              'static const struct gt_api_info gt_api_table[] = {']
    ops = {'alloc': 'GT_OP_ALLOC', 'free': 'GT_OP_FREE', 'map': 'GT_OP_MAP', 'unmap': 'GT_OP_UNMAP', 'defer': 'GT_OP_DEFER',
           'reset': 'GT_OP_RESET'}
    mems = {'device': 'GT_MEM_DEVICE', 'pool': 'GT_MEM_POOL', 'managed': 'GT_MEM_MANAGED',
            'host': 'GT_MEM_HOST', 'reserve': 'GT_MEM_RESERVE', 'mapping': 'GT_MEM_MAPPING',
            'imported': 'GT_MEM_IMPORTED'}
    spaces = {'addr': 'GT_SPACE_ADDR', 'handle': 'GT_SPACE_HANDLE', 'va': 'GT_SPACE_VA', 'map': 'GT_SPACE_MAP',
              'array': 'GT_SPACE_ARRAY'}
    for i, name, _layer, op, mem, space in apis:
        lines.append('  {%s, "%s", %s, %s, %s},' % (i, name, ops[op], mems[mem], spaces[space]))
    lines += ['};', '#endif', '']
    open(dst, 'w', encoding='utf-8').write('\n'.join(lines))


if __name__ == '__main__':
    main()
