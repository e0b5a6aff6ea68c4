#!/usr/bin/env python3
"""Writes a tiny random Hugging Face checkpoint folder for ridge pull's tests: a Qwen3ForCausalLM
of 1 layer (hidden 64, 4 heads of 16, 2 KV heads, FFN 128) with F32 weights in model.safetensors
(the format: an 8-byte little-endian header length, a JSON header of dtype, shape and data
offsets, then the bytes), and a byte-level BPE tokenizer.json of the 256 byte tokens (GPT-2's
byte-to-character map) and no merges.

usage: make_checkpoint.py DIR
"""
import json
import os
import random
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(5)
hidden, layers, heads, kv, hd, ff, vocab = 64, 1, 4, 2, 16, 128, 256

config = {"architectures": ["Qwen3ForCausalLM"], "hidden_size": hidden, "intermediate_size": ff,
          "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
          "head_dim": hd, "vocab_size": vocab, "max_position_embeddings": 512, "rope_theta": 10000.0,
          "rms_norm_eps": 1e-6, "tie_word_embeddings": True}
json.dump(config, open(os.path.join(out, "config.json"), "w"))

shapes = {"model.embed_tokens.weight": [vocab, hidden], "model.norm.weight": [hidden]}
for i in range(layers):
    p = f"model.layers.{i}."
    shapes.update({p + "input_layernorm.weight": [hidden], p + "post_attention_layernorm.weight": [hidden],
                   p + "self_attn.q_proj.weight": [heads * hd, hidden], p + "self_attn.k_proj.weight": [kv * hd, hidden],
                   p + "self_attn.v_proj.weight": [kv * hd, hidden], p + "self_attn.o_proj.weight": [hidden, heads * hd],
                   p + "self_attn.q_norm.weight": [hd], p + "self_attn.k_norm.weight": [hd],
                   p + "mlp.gate_proj.weight": [ff, hidden], p + "mlp.up_proj.weight": [ff, hidden],
                   p + "mlp.down_proj.weight": [hidden, ff]})
header, data = {}, b""
for name, shape in shapes.items():
    n = 1
    for d in shape:
        n *= d
    norm = name.endswith("norm.weight")
    values = [1.0 + rng.gauss(0, 0.05) if norm else rng.gauss(0, 0.2) for _ in range(n)]
    blob = struct.pack(f"<{n}f", *values)
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
    data += blob
text = json.dumps(header).encode()
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)

# GPT-2's map of the 256 bytes to printable characters.
printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
chars, extra = {}, 0
for b in range(256):
    if b in printable:
        chars[b] = chr(b)
    else:
        chars[b] = chr(256 + extra)
        extra += 1
tokenizer = {"version": "1.0", "added_tokens": [], "normalizer": None,
             "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
             "model": {"type": "BPE", "vocab": {chars[b]: b for b in range(256)}, "merges": []}}
json.dump(tokenizer, open(os.path.join(out, "tokenizer.json"), "w"))
json.dump({"eos_token": chars[10]}, open(os.path.join(out, "tokenizer_config.json"), "w"))
