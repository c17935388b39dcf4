"""The e2e tests' reader of JSON lines (a workload's truth, rankscope's --json output)."""
import json


def lines(path, ty):
    """Each line of the file at path that is a JSON object of type ty, parsed. mpirun forwards
    several ranks' output, and killed, a process's last line can be cut short or run into
    another's: such a line is no line."""
    out = []
    with open(path) as f:
        for line in f:
            if not line.startswith('{"type":"%s"' % ty):
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out
