"""Regenerates tensorlab/_config_keys.json from the installed torch: the names of torch._dynamo.config's,
torch._inductor.config's and torch.compiler.config's keys with their defaults (JSON values; a default JSON cannot hold is stored as null),
and their aliases (old names that read and write another key).
Usage: python tools/gen_config_keys.py tensorlab/_config_keys.json"""
import json
import sys

import torch._dynamo.config as dynamo
import torch._inductor.config as inductor
import torch.compiler.config as compiler

MODULES = {"dynamo": dynamo, "inductor": inductor, "compiler": compiler}
PREFIX = {"torch._dynamo.config.": "dynamo", "torch._inductor.config.": "inductor",
          "torch.compiler.config.": "compiler"}


def plain(v):
    try:
        json.dumps(v)
        return v
    except TypeError:
        if isinstance(v, (set, frozenset, tuple)):
            return plain(sorted(v, key=repr) if isinstance(v, (set, frozenset)) else list(v))
        return None


out = {}
for name, mod in MODULES.items():
    d = mod.get_config_copy()
    keys = {k: plain(d[k]) for k in sorted(d) if not k.startswith("_")}
    aliases = {}
    for k, entry in mod._config.items():
        if k in d or k.startswith("_"):
            continue
        if getattr(entry, "alias", None):
            target = entry.alias
            for p, kind in PREFIX.items():
                if target.startswith(p):
                    aliases[k] = [kind, target[len(p):]]
        else:
            keys[k] = plain(getattr(mod, k, None))
    out[name] = keys
    out[name + "_aliases"] = aliases
json.dump(out, open(sys.argv[1], "w"), indent=0, sort_keys=True)
print({k: len(v) for k, v in out.items()})
