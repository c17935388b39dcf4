#!/usr/bin/env python3
"""Put the last `make soak` run in tests/bench/results.md as its last section, "## 13. Soak",
replacing the one there: the run's table (every 5th minute; the whole of it is soak.tsv),
the verdicts, the load, and how it was run. bench.sh keeps the section when it rewrites the file.

usage: soak_record.py SOAK_DIR RESULTS_MD COMMIT"""
import datetime
import os
import sys

SECTION = '## 13. Soak (`make soak`)'


def main():
    soak_dir, results, commit = sys.argv[1:4]
    rows = [l.rstrip('\n').split('\t') for l in open(os.path.join(soak_dir, 'soak.tsv'))]
    head, rows = rows[0], rows[1:]
    md = open(os.path.join(soak_dir, 'soak.md')).read().splitlines()
    load = md[0]
    verdicts = [l for l in md if l.startswith('- ') or l.startswith('After ')]
    out = [SECTION, '',
           f'- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC; rankscope {commit}; '
           f'kernel {os.uname().release}',
           f'- {load}',
           '- the mix: real 2-rank OpenMPI jobs started every ~20 s, running 10-40 s, one in '
           'three with a rank killed (SIGKILL); ranks of the NCCL test double coming and going '
           '10 at a time, each living 0.1-5 s; a 2 s capture every 2 minutes; ~20 HTTP '
           'requests a second over /metrics and the API',
           '- sampled each minute: the daemon\'s RSS (KiB), open fds, entries of its hash maps '
           '(rs_tracked, rs_threads, rs_coll_seq, rs_io_inflight, rs_sock_owner), /metrics '
           'sample lines, and its counters (records received and dropped, attach results, '
           'steps of the jobs watched)',
           f'- every 5th minute below; all {len(rows)} samples and the plot are in '
           '`build/soak/soak.tsv` and `build/soak/soak.png` after a run', '',
           '| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for r in rows:
        if int(r[0]) % 5 == 0 or r is rows[-1]:
            out.append('| ' + ' | '.join(r) + ' |')
    out += [''] + verdicts + ['']
    text = open(results).read()
    at = text.find(SECTION)
    if at >= 0:
        text = text[:at]
    text = text.rstrip('\n') + '\n\n' + '\n'.join(out)
    open(results, 'w').write(text)


if __name__ == '__main__':
    main()
