#!/usr/bin/env python3
"""Request files (JSONL) for the engine benchmarks (bench/engine_bench.sh).

  engine_prompts.py mixed N LO HI SEED        N requests, prompt and output lengths uniform in [LO, HI]
  engine_prompts.py fixed N P G               N requests of P prompt tokens and G output tokens
  engine_prompts.py shared N SYS UNIQUE G     N requests sharing a SYS-token system prompt
  engine_prompts.py chunked N P G LONG AT     N decoding requests, one LONG-token prompt arriving at AT s
Token ids are random in [100, 1100) (valid in every preset's vocabulary); greedy, ignore_eos.
"""
import json
import random
import sys


def req(tokens, max_tokens, arrival=0.0):
    return {"tokens": tokens, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "arrival": arrival}


def ids(rng, n):
    return [rng.randrange(100, 1100) for _ in range(n)]


def main(argv):
    mode, args = argv[1], [float(a) if "." in a else int(a) for a in argv[2:]]
    rng = random.Random(1)
    out = []
    if mode == "mixed":
        n, lo, hi, seed = args
        rng = random.Random(seed)
        for _ in range(n):
            out.append(req(ids(rng, rng.randint(lo, hi)), rng.randint(lo, hi)))
    elif mode == "fixed":
        n, p, g = args
        out = [req(ids(rng, p), g) for _ in range(n)]
    elif mode == "shared":
        n, sys_len, uniq, g = args
        system = ids(rng, sys_len)
        out = [req(system + ids(rng, uniq), g) for _ in range(n)]
    elif mode == "chunked":
        n, p, g, long_len, at = args
        out = [req(ids(rng, p), g) for _ in range(n)]
        out.append(req(ids(rng, long_len), 4, at))
    else:
        sys.exit(f"unknown mode {mode}")
    for r in out:
        print(json.dumps(r))


if __name__ == "__main__":
    main(sys.argv)
