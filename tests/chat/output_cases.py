#!/usr/bin/env python3
"""Test cases for the chat output parser, rendered by the models' own chat templates.

For each template in TEMPLATE_DIR (argv[1]) an assistant message with known tool calls, reasoning
and content is rendered the way Hugging Face's apply_chat_template does (jinja2 with trim_blocks,
lstrip_blocks, tojson = json.dumps(ensure_ascii=False), raise_exception, strftime_now). The text
the model generates is the rendered conversation after the generation prompt, up to and including
the end-of-turn marker: what a model trained on the template writes. The expected parse is the
message that was rendered. Prints a JSON list of cases; exits 2 when jinja2 is missing.

Where a template does not render the reasoning of the turn being generated (QwQ, DeepSeek-R1,
SmolLM3), the reasoning is put where the template itself expects it: QwQ and DeepSeek-R1 strip
everything before "</think>" from an assistant message's content, and their generation prompt
opens "<think>\n", so the output is "REASONING\n</think>\n\n" + the rendered turn; SmolLM3's
/think mode has the model write "<think>...</think>" in its content.
"""
import datetime
import json
import os
import sys

try:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit(2)

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer", "description": "Forecast days"},
            "metric": {"type": "boolean", "description": "Metric units"},
        }, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "The query"},
            "options": {"type": "object", "description": "Options"},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"},
            "score": {"type": "number", "description": "Minimum score"},
        }, "required": ["query"]}}},
]

WEATHER = {"city": "Paris", "days": 3, "metric": True}
TRICKY = {
    "query": 'say "hi" </tool_call> ünïcødé ✓ 日本語 back\\slash',
    "options": {"nested": {"list": [1, 2.5, True, None], "empty": {}}, "k": "v"},
    "tags": ["a", "b c"],
    "score": 0.75,
}
MULTILINE = {"query": "line one\nline two\n  indented", "score": 2}

REASONING = "The user wants the weather. I should call the tool."
CONTENT = 'Sure — here is "the answer": 42 ✓'


def make_env():
    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    def tojson(x, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda f: datetime.datetime(2025, 7, 26).strftime(f)
    return env


def call(name, args, cid):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


# Per template: expected detection, end-of-turn markers, what it can render.
CHATML = "<|im_start|>assistant\n"
LLAMA = "<|start_header_id|>assistant<|end_header_id|>\n\n"
THINKING = {"enable_thinking": True}
SPECS = {
    "Qwen-Qwen3-0.6B.jinja": dict(
        header=CHATML, fmt="kHermes", think=True, ends=["<|im_end|>"], style="reasoning_field",
        multi=True),
    "Qwen3.5-4B.jinja": dict(
        header=CHATML, fmt="kQwenXml", think=True, ends=["<|im_end|>"], style="reasoning_field",
        multi=True),
    "Qwen-Qwen2.5-7B-Instruct.jinja": dict(
        header=CHATML, fmt="kHermes", think=False, ends=["<|im_end|>"], multi=True),
    "Qwen3-Coder.jinja": dict(
        header=CHATML, fmt="kQwenXml", think=False, ends=["<|im_end|>"], multi=True),
    "Qwen-QwQ-32B.jinja": dict(
        header=CHATML, fmt="kHermes", think=True, ends=["<|im_end|>"], style="think_in_content",
        multi=True, kwargs=THINKING),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": dict(
        header="<｜Assistant｜>", fmt="kDeepSeekR1", think=True, ends=["<｜end▁of▁sentence｜>"],
        style="think_in_content", multi=True, kwargs=THINKING, content_with_calls=False,
        null_content=True),
    "HuggingFaceTB-SmolLM3-3B.jinja": dict(
        header=CHATML, fmt="kContentOnly", think=True, ends=["<|im_end|>"],
        style="tags_in_content", calls=False),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": dict(
        header=CHATML, fmt="kHermes", think=False, ends=["<|im_end|>"], multi=True,
        content_with_calls=False),
    "ibm-granite-granite-4.0.jinja": dict(
        header="<|start_of_role|>assistant<|end_of_role|>", fmt="kHermes", think=False,
        ends=["<|end_of_text|>"], multi=True),
    "meta-llama-Llama-3.1-8B-Instruct.jinja": dict(
        header=LLAMA, fmt="kLlama3Json", think=False, ends=["<|eot_id|>", "<|eom_id|>"],
        content_with_calls=False, builtin=True),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": dict(
        header=LLAMA, fmt="kLlama3Json", think=False, ends=["<|eot_id|>"],
        content_with_calls=False),
    "meta-llama-Llama-3.3-70B-Instruct.jinja": dict(
        header=LLAMA, fmt="kLlama3Json", think=False, ends=["<|eot_id|>"],
        content_with_calls=False),
    # No generation prompt: the reply follows [/INST]. No system message: Nemo renders it with
    # the last user message, which the reply changes.
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": dict(
        header="", fmt="kMistralNemo", think=False, no_system=True, ends=["</s>"], multi=True,
        content_with_calls=False, ids=True),
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": dict(
        header="", fmt="kMistralSmall", think=False, ends=["</s>"], multi=True,
        content_with_calls=False, ids=True),
    "openai-gpt-oss-120b.jinja": dict(
        header="<|start|>assistant", fmt="kHarmony", think=False, ends=["<|return|>", "<|call|>"],
        style="harmony", content_with_calls=False),
    "google-gemma-4-31B-it.jinja": dict(
        header="<|turn>model\n", fmt="kGemma4", think=True, ends=["<turn|>", "<|tool_response>"],
        style="gemma4", multi=True, kwargs=THINKING),
    "google-gemma-2-2b-it.jinja": dict(
        header="<start_of_turn>model\n", fmt="kContentOnly", think=False, ends=["<end_of_turn>"],
        calls=False, no_system=True),
    "microsoft-Phi-3.5-mini-instruct.jinja": dict(
        header="<|assistant|>\n", fmt="kContentOnly", think=False, ends=["<|end|>"], calls=False),
}


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def render(tmpl, messages, gen, spec, extra=None):
    kw = dict(spec.get("kwargs", {}))
    kw.update(extra or {})
    eos = "<｜end▁of▁sentence｜>" if spec["fmt"] == "kDeepSeekR1" else "</s>"
    return tmpl.render(messages=messages, tools=TOOLS, add_generation_prompt=gen,
                       bos_token="<s>", eos_token=eos, **kw)


def make_case(name, tmpl, spec, label, reasoning, content, calls, extra=None):
    head = [] if spec.get("no_system") else [{"role": "system", "content": "You are helpful."}]
    head.append({"role": "user", "content": "What is the weather in Paris?"})
    if content is None and not spec.get("null_content"):
        content = ""
    msg = {"role": "assistant", "content": content}
    style = spec.get("style")
    if style == "think_in_content" and reasoning is None:
        reasoning = ""  # these models always think: an empty reasoning, as the template writes it
    if calls:
        msg["tool_calls"] = calls
    if reasoning is not None:
        if style == "reasoning_field":
            msg["reasoning_content"] = reasoning
        elif style == "harmony":
            msg["thinking"] = reasoning
        elif style == "gemma4":
            msg["reasoning_content"] = reasoning
        elif style == "tags_in_content":
            msg["content"] = "<think>\n" + reasoning + "\n</think>\n" + (content or "")
        elif style == "think_in_content" and name.startswith("Qwen-QwQ"):
            msg["content"] = reasoning + "\n</think>\n\n" + (content or "")
    prompt = render(tmpl, head, True, spec, extra)
    base = render(tmpl, head, False, spec, extra)
    full = render(tmpl, head + [msg], False, spec, extra)
    if not full.startswith(base) and base.endswith("</s>"):  # Phi-3.5 ends a prompt with EOS
        base = base[:-4]
    if not full.startswith(base) or not prompt.startswith(base):
        raise RuntimeError(f"{name}/{label}: the conversation renders differently with the reply")
    gen = full[len(base):]
    gen_prompt = prompt[len(base):]
    header = spec["header"]
    if gen.startswith(header):
        gen = gen[len(header):]
    if gen_prompt.startswith(header):
        gen_prompt = gen_prompt[len(header):]
    # What the generation prompt opens after the role header (e.g. "<think>\n") is not generated.
    if gen_prompt and gen.startswith(gen_prompt):
        gen = gen[len(gen_prompt):]
    starts_in_reasoning = spec["think"] and prompt.rstrip(" \n").endswith("<think>")
    if style == "think_in_content" and not name.startswith("Qwen-QwQ") and reasoning is not None:
        gen = reasoning + "\n</think>\n\n" + gen  # DeepSeek-R1 (see the module doc)
    cut = max((gen.rfind(e) + len(e)) if e in gen else -1 for e in spec["ends"])
    if cut < 0:
        raise RuntimeError(f"{name}/{label}: no end marker in {gen!r}")
    gen = gen[:cut]
    expected_calls = []
    for c in calls or []:
        e = {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        if spec.get("ids"):
            e["id"] = c["id"]
        expected_calls.append(e)
    return {
        "name": f"{name}/{label}",
        "template": name,
        "format": spec["fmt"],
        "think_tags": spec["think"],
        "starts_in_reasoning": bool(starts_in_reasoning),
        "prompt": prompt,
        "text": gen,
        "tools": TOOLS,
        "expected": {
            "content": content or "",
            "reasoning_content": reasoning if reasoning is not None and
            (spec["think"] or style == "harmony") else "",
            "tool_calls": expected_calls,
        },
    }


def cases_for(name, source, env):
    spec = SPECS[name]
    tmpl = env.from_string(source)
    out = []
    out.append(make_case(name, tmpl, spec, "content", None, CONTENT, None))
    if spec["think"] or spec.get("style") == "harmony":
        if spec.get("style") != "gemma4":  # Gemma 4 renders thinking only with tool calls
            out.append(make_case(name, tmpl, spec, "reasoning", REASONING, CONTENT, None))
    if not spec.get("calls", True):
        return out
    with_content = CONTENT if spec.get("content_with_calls", True) else None
    thinks = ("reasoning_field", "gemma4", "harmony", "think_in_content")
    r = REASONING if spec.get("style") in thinks else None
    out.append(make_case(name, tmpl, spec, "call", r, with_content,
                         [call("get_weather", WEATHER, "abcDEF123")]))
    out.append(make_case(name, tmpl, spec, "tricky", None, with_content,
                         [call("search", TRICKY, "xyzXYZ789")]))
    out.append(make_case(name, tmpl, spec, "multiline", None, None,
                         [call("search", MULTILINE, "mmmNNN456")]))
    if spec.get("multi"):
        out.append(make_case(name, tmpl, spec, "two_calls", r, with_content,
                             [call("get_weather", WEATHER, "abcDEF123"),
                              call("search", TRICKY, "xyzXYZ789")]))
    if spec.get("builtin"):
        out.append(make_case(name, tmpl, spec, "builtin", None, None,
                             [call("brave_search", {"query": "weather in Paris"}, "b1b2b3b4b")],
                             extra={"builtin_tools": ["brave_search", "wolfram_alpha"]}))
    return out


def main():
    tdir = sys.argv[1]
    env = make_env()
    cases = []
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".jinja"):
            continue
        if name not in SPECS:
            raise RuntimeError(f"no spec for {name}")
        with open(os.path.join(tdir, name), encoding="utf-8") as f:
            cases.extend(cases_for(name, f.read(), env))
    json.dump(cases, sys.stdout, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
